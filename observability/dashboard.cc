#include "observability/dashboard.h"

#include <memory>

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

// index.html as served under `base`: its absolute links ("/assets/...",
// "/runs") moved below the base, and the base named for the scripts. The
// tag names the base too (a base is ETag-safe: ParseBasePath's characters).
struct RebasedPage {
  std::string body, etag;
};
RebasedPage Rebased(const DashboardAsset& index, const std::string& base) {
  RebasedPage page{std::string(index.body), std::string(index.etag)};
  std::string& body = page.body;
  if (!base.empty()) {
    for (const char* attr : {"href=\"/", "src=\"/"}) {
      const std::string from = attr;
      const std::string to = from.substr(0, from.size() - 1) + base + "/";
      for (size_t at = body.find(from); at != std::string::npos;
           at = body.find(from, at + to.size())) {
        body.replace(at, from.size(), to);
      }
    }
  }
  const std::string meta = "<meta name=\"apollo11-base\" content=\"" + base + "\">";
  if (const size_t head = body.find("<head>"); head != std::string::npos) {
    body.insert(head + 6, "\n" + meta);
  }
  if (!base.empty()) page.etag.insert(page.etag.size() - 1, "-" + base);
  return page;
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

void Dashboard::SendEmbedded(std::string_view stem, const httplib::Request& req,
                             httplib::Response& res) {
  const std::string prefix = "/assets/" + std::string(stem);
  for (const DashboardAsset& a : DashboardAssets()) {
    if (a.path.starts_with(prefix)) return Send(a, false, req, res);
  }
  res.status = 500;
  res.set_content("this build does not embed " + std::string(stem) + "\n", "text/plain");
}

void Dashboard::Register(httplib::Server& server, const std::string& base) {
  const DashboardAsset* index = Find("/index.html");
  // The page as served here, made once; null in a build without a dashboard.
  std::shared_ptr<const RebasedPage> rebased;
  if (index != nullptr) rebased = std::make_shared<RebasedPage>(Rebased(*index, base));
  auto page = [rebased, index](const httplib::Request& req, httplib::Response& res) {
    if (!rebased) {
      res.status = 500;
      res.set_content("this build has no dashboard\n", "text/plain");
      return;
    }
    Send(DashboardAsset{index->path, index->content_type, rebased->etag, rebased->body}, false, req,
         res);
  };
  for (const char* path : {"/", "/index.html", "/runs", "/workers", "/pipelines", "/login"}) {
    server.Get(base + path, page);
  }
  if (!base.empty()) server.Get(base, page);
  server.Get(base + R"(/run/([A-Za-z0-9_.:@-]+))", page);
  server.Get(base + R"(/exec/([A-Za-z0-9_.:@/-]+))", page);
  server.Get(base + R"(/assets/([A-Za-z0-9_.-]+))",
             [base](const httplib::Request& req, httplib::Response& res) {
               const DashboardAsset* asset = Find(req.path.substr(base.size()));
               if (asset == nullptr) {
                 res.status = 404;
                 res.set_content("{\"error\":\"no such asset\"}", "application/json");
                 return;
               }
               Send(*asset, true, req, res);
             });
}

}  // namespace apollo11::observability
