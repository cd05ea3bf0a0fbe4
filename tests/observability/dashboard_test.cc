// The dashboard's HTTP side over real sockets: the embedded page and assets
// (CSP, content types, ETags), the answers shared by every client, and the
// routes the dashboard adds (graph, logs). The backend is a recording twin;
// web/tests/dashboard_test.mjs drives the real thing in a browser.

#include <httplib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "observability/dashboard_api.h"
#include "observability/http_server.h"

using namespace apollo11::observability;  // NOLINT: test file
using apollo11::FakeClock;
using apollo11::Result;
using apollo11::Status;

namespace {

class CountingBackend final : public ApiBackend {
 public:
  Result<nlohmann::json> Query(const std::string& kind, const std::string& id, uint32_t) override {
    ++asked[kind + ":" + id];
    if (kind == "run") return nlohmann::json{{"run_id", id}, {"pipeline", "p.one"}};
    if (kind == "pipeline") {
      return nlohmann::json{
          {"name", id},
          {"hash", "h1"},
          {"snapshot",
           {{"tasks",
             {{{"id", "a"}, {"type", "shell"}, {"command", "echo s3cret"}},
              {{"id", "b"},
               {"type", "shell"},
               {"env", {{"PASSWORD", "s3cret"}}},
               {"depends_on", {{{"task", "a"}}, {{"task", "x"}, {"on", "failure"}}}}}}}}}};
    }
    if (id == "big") return nlohmann::json{{"run_id", id}, {"padding", std::string(1 << 20, 'a')}};
    return nlohmann::json{{"run_id", id}, {"state", "RUNNING"}, {"n", asked[kind + ":" + id]}};
  }
  Result<std::string> Trigger(const std::string&,
                              const std::map<std::string, std::string>&) override {
    return std::string("r-new");
  }
  Status Cancel(const std::string&, const std::string&) override { return Status::Ok(); }
  Result<nlohmann::json> Logs(const std::string& exec_id, const std::string& stream,
                              uint32_t attempt, uint64_t offset, uint32_t max_bytes,
                              std::string* data) override {
    const std::string log(200 << 10, 'x');
    *data = offset < log.size() ? log.substr(offset, max_bytes) : "";
    return nlohmann::json{{"exec_id", exec_id},
                          {"stream", stream},
                          {"attempt", attempt},
                          {"size", log.size()},
                          {"running", false}};
  }
  Result<std::string> Confirm(const std::string& exec_id, bool kill) override {
    confirmed = exec_id + (kill ? ":kill" : ":keep");
    return std::string("answered");
  }
  std::map<std::string, int> asked;
  std::string confirmed;
};

struct Server {
  Server() {
    HttpServerOptions o;
    o.bind = "127.0.0.1:0";
    o.api_token = "dashboard-token-0123456789";
    o.registry = &registry;
    o.backend = &backend;
    o.clock = &clock;
    o.node_info = {{"role", "all"}, {"epoch", 7}};
    auto s = HttpServer::Start(std::move(o));
    REQUIRE(s.ok());
    server = std::move(*s);
    const std::string& bound = server->bound();
    client = std::make_unique<httplib::Client>("127.0.0.1",
                                               std::stoi(bound.substr(bound.rfind(':') + 1)));
  }
  CountingBackend backend;
  FakeClock clock;
  Registry registry;
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<httplib::Client> client;
};

}  // namespace

TEST_CASE("the dashboard page and its assets carry a strict CSP, types and ETags", "[dashboard]") {
  Server s;
  for (const char* path : {"/", "/runs", "/run/r1", "/exec/r1.a", "/workers", "/pipelines"}) {
    auto page = s.client->Get(path);
    REQUIRE(page);
    CHECK(page->status == 200);
    CHECK(page->get_header_value("Content-Type") == "text/html; charset=utf-8");
    const std::string csp = page->get_header_value("Content-Security-Policy");
    CHECK(csp.find("script-src 'self'") != std::string::npos);
    CHECK(csp.find("style-src 'self'") != std::string::npos);
    CHECK(csp.find("unsafe-inline") == std::string::npos);
    CHECK(page->body.find("<script>") == std::string::npos);  // no inline script
  }
  auto page = s.client->Get("/");
  std::smatch m;
  std::string body = page->body;
  int assets = 0;
  while (std::regex_search(body, m, std::regex(R"re("(/assets/[A-Za-z0-9_.-]+)")re"))) {
    const std::string path = m[1];
    auto asset = s.client->Get(path);
    REQUIRE(asset);
    CHECK(asset->status == 200);
    const std::string type = asset->get_header_value("Content-Type");
    if (path.ends_with(".js")) CHECK(type == "text/javascript; charset=utf-8");
    if (path.ends_with(".css")) CHECK(type == "text/css; charset=utf-8");
    CHECK(asset->get_header_value("Cache-Control").find("immutable") != std::string::npos);
    const std::string etag = asset->get_header_value("ETag");
    REQUIRE(!etag.empty());
    auto again = s.client->Get(path, {{"If-None-Match", etag}});
    CHECK(again->status == 304);
    CHECK(again->body.empty());
    ++assets;
    body = m.suffix();
  }
  CHECK(assets >= 3);  // the script, the styles, the icon
  CHECK(s.client->Get("/assets/nothing.js")->status == 404);
  CHECK(s.client->Get("/", {{"If-None-Match", page->get_header_value("ETag")}})->status == 304);
}

TEST_CASE("ten clients polling one run within a second cost the coordinator one query",
          "[dashboard]") {
  Server s;
  std::string etag;
  for (int i = 0; i < 10; ++i) {
    auto res = s.client->Get("/api/runs/r1");
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(nlohmann::json::parse(res->body)["n"] == 1);
    etag = res->get_header_value("ETag");
  }
  CHECK(s.backend.asked["status:r1"] == 1);
  CHECK(s.client->Get("/api/runs/r1", {{"If-None-Match", etag}})->status == 304);
  s.clock.Advance(1'000'001);
  auto fresh = s.client->Get("/api/runs/r1", {{"If-None-Match", etag}});
  CHECK(fresh->status == 200);
  CHECK(s.backend.asked["status:r1"] == 2);
  // A cancel forgets the shared answers: the next read asks again.
  auto cancel = s.client->Post("/api/runs/r1/cancel",
                               {{"Authorization", "Bearer dashboard-token-0123456789"}}, "",
                               "application/json");
  CHECK(cancel->status == 202);
  s.client->Get("/api/runs/r1");
  CHECK(s.backend.asked["status:r1"] == 4);  // the cancel's own check, then the read
}

TEST_CASE("the graph route sends ids, types and edges, never commands or env", "[dashboard]") {
  Server s;
  auto res = s.client->Get("/api/runs/r1/graph");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  CHECK(res->body.find("s3cret") == std::string::npos);
  auto g = nlohmann::json::parse(res->body);
  CHECK(g["pipeline"] == "p.one");
  CHECK(g["hash"] == "h1");
  REQUIRE(g["tasks"].size() == 2);
  CHECK(g["tasks"][1]["deps"] ==
        nlohmann::json::parse(R"([{"task":"a"},{"task":"x","on":"failure"}])"));
  CHECK(s.client->Get("/api/node")->body == R"({"epoch":7,"mutations":true,"role":"all"})");
}

TEST_CASE("task logs come in slices of at most 64 KiB, paged by offset, Range ignored",
          "[dashboard]") {
  Server s;
  auto first = s.client->Get("/api/executions/r1.a/logs?stream=err", {{"Range", "bytes=0-10"}});
  REQUIRE(first);
  REQUIRE(first->status == 200);
  auto j = nlohmann::json::parse(first->body);
  CHECK(j["data"].get<std::string>().size() == DashboardApi::kMaxLogSlice);
  CHECK(j["offset"] == 0);
  CHECK(j["next_offset"] == DashboardApi::kMaxLogSlice);
  CHECK(j["size"] == 200 << 10);
  auto last = nlohmann::json::parse(
      s.client->Get("/api/executions/r1.a/logs?offset=196608&max_bytes=100")->body);
  CHECK(last["data"].get<std::string>().size() == 100);
  CHECK(last["stream"] == "out");
  CHECK(s.client->Get("/api/executions/r1.a/logs?stream=both")->status == 400);
  CHECK(s.client->Get("/api/executions/r1.a/logs?max_bytes=100000")->status == 400);
  CHECK(s.client->Get("/api/executions/r1.a/logs?offset=-1")->status == 400);
}

TEST_CASE("a browser asking for brotli gets gzip, not seconds of compression", "[dashboard]") {
  Server s;
  const auto t0 = std::chrono::steady_clock::now();
  auto res = s.client->Get("/api/runs/big", {{"Accept-Encoding", "gzip, deflate, br, zstd"}});
  const auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->get_header_value("Content-Encoding") == "gzip");
  CHECK(took < std::chrono::seconds(2));
  auto plain = s.client->Get("/api/runs/big", {{"Accept-Encoding", "br"}});
  CHECK(plain->get_header_value("Content-Encoding").empty());
}

TEST_CASE("a slow-task flag is answered over HTTP with the token only", "[dashboard]") {
  Server s;
  const httplib::Headers bearer = {{"Authorization", "Bearer dashboard-token-0123456789"}};
  auto refused =
      s.client->Post("/api/executions/r1.a/confirm", R"({"action":"kill"})", "application/json");
  CHECK(refused->status == 401);
  CHECK(s.backend.confirmed.empty());
  CHECK(s.client
            ->Post("/api/executions/r1.a/confirm", bearer, R"({"action":"maybe"})",
                   "application/json")
            ->status == 400);
  auto kept = s.client->Post("/api/executions/r1.a/confirm", bearer, R"({"action":"keep"})",
                             "application/json");
  CHECK(kept->status == 202);
  CHECK(s.backend.confirmed == "r1.a:keep");
  CHECK(nlohmann::json::parse(kept->body)["answer"] == "answered");
}
