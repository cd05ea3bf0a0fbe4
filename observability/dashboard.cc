#include "observability/dashboard.h"

#include "observability/dashboard_assets.h"

namespace apollo11::observability {
namespace {

const DashboardAsset* Find(std::string_view path) {
  for (const DashboardAsset& a : DashboardAssets()) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

// Answers `asset`, or 304 when the client's copy is the same. `immutable`
// assets are named per build, so a browser may keep them; the page itself
// must be revalidated so that a new build's page is seen. Asset names carry
// a hash of their content (the embed step renames them).
void Send(const DashboardAsset& asset, bool immutable, const httplib::Request& req,
          httplib::Response& res) {
  Dashboard::SecurityHeaders(res);
  res.set_header("ETag", std::string(asset.etag));
  res.set_header("Cache-Control", immutable ? "public, max-age=31536000, immutable" : "no-cache");
  if (req.get_header_value("If-None-Match") == asset.etag) {
    res.status = 304;
    return;
  }
  res.set_content(asset.body.data(), asset.body.size(), std::string(asset.content_type));
}

}  // namespace

const char* Dashboard::kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'";

void Dashboard::SecurityHeaders(httplib::Response& res) {
  res.set_header("Content-Security-Policy", kContentSecurityPolicy);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("X-Frame-Options", "DENY");
}

void Dashboard::RegisterNotices(httplib::Server& server) {
  server.Get("/licenses", [](const httplib::Request& req, httplib::Response& res) {
    for (const DashboardAsset& a : DashboardAssets()) {
      if (a.path.starts_with("/assets/licenses.")) return Send(a, false, req, res);
    }
    res.status = 500;
    res.set_content("this build has no notices\n", "text/plain");
  });
}

void Dashboard::Register(httplib::Server& server) {
  auto page = [](const httplib::Request& req, httplib::Response& res) {
    const DashboardAsset* index = Find("/index.html");
    if (index == nullptr) {
      res.status = 500;
      res.set_content("this build has no dashboard\n", "text/plain");
      return;
    }
    Send(*index, false, req, res);
  };
  for (const char* path : {"/", "/index.html", "/runs", "/workers", "/pipelines", "/login"}) {
    server.Get(path, page);
  }
  server.Get(R"(/run/([A-Za-z0-9_.:@-]+))", page);
  server.Get(R"(/exec/([A-Za-z0-9_.:@/-]+))", page);
  server.Get(R"(/assets/([A-Za-z0-9_.-]+))",
             [](const httplib::Request& req, httplib::Response& res) {
               const DashboardAsset* asset = Find(req.path);
               if (asset == nullptr) {
                 res.status = 404;
                 res.set_content("{\"error\":\"no such asset\"}", "application/json");
                 return;
               }
               Send(*asset, true, req, res);
             });
}

}  // namespace apollo11::observability
