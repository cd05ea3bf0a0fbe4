// The HTTP server over real sockets (httplib::Client against port 0): routes,
// methods, the bearer token rule, input checks and error mapping. The backend
// is a recording twin; the end-to-end tests run the real one.

#include "observability/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "tests/observability/prom_parser.h"
#include "tests/observability/raw_http.h"

using namespace apollo11::observability;  // NOLINT: test file
using apollo11::Result;
using apollo11::Status;
using apollo11::testing::Connect;
using apollo11::testing::ReadAll;
using apollo11::testing::SendText;

namespace {

class FakeBackend final : public ApiBackend {
 public:
  Result<nlohmann::json> Query(const std::string& kind, const std::string& id,
                               uint32_t limit) override {
    queries.push_back(kind + ":" + id + ":" + std::to_string(limit));
    if (id == "slow") std::this_thread::sleep_for(std::chrono::seconds(2));
    if (id == "missing") return Status::NotFound("no run missing");
    if (id == "done") return nlohmann::json{{"state", "SUCCESS"}};
    if (kind == "health") return nlohmann::json{{"ready", true}, {"journal_writable", healthy}};
    return nlohmann::json{{"kind", kind}, {"id", id}, {"state", "RUNNING"}};
  }
  Result<std::string> Trigger(const std::string& name,
                              const std::map<std::string, std::string>& params) override {
    if (name == "unknown.pipe") return Status::NotFound("no pipeline unknown.pipe");
    triggered = name;
    last_params = params;
    return std::string("r-new");
  }
  Status Cancel(const std::string& run_id, const std::string&) override {
    canceled = run_id;
    return Status::Ok();
  }
  Result<nlohmann::json> ChangeRegistry(const RegistryChange& c) override {
    changes.push_back(c);
    if (c.name == "unscheduled.pipe") return Status::NotFound("pipeline has no schedule");
    return nlohmann::json{{"name", c.name}, {"op", c.op}};
  }
  std::vector<RegistryChange> changes;
  std::vector<std::string> queries;
  std::string triggered, canceled;
  std::map<std::string, std::string> last_params;
  bool healthy = true;
};

constexpr const char* kToken = "s3cret-token-0123456789";

struct Server {
  explicit Server(std::string token, bool with_backend = true, HttpLimits limits = {}) {
    registry.AddCounter("apollo11_test_total", "A test counter.").Inc(5);
    HttpServerOptions o;
    o.bind = "127.0.0.1:0";
    o.api_token = std::move(token);
    o.registry = &registry;
    o.limits = limits;
    if (with_backend) {
      o.backend = &backend;
      o.ready = [this](std::string* why) {
        auto h = backend.Query("health", "", 0);
        if (!(*h)["journal_writable"].get<bool>()) *why = "journal not writable";
        return why->empty();
      };
    }
    auto s = HttpServer::Start(std::move(o));
    REQUIRE(s.ok());
    server = std::move(*s);
    const std::string& bound = server->bound();
    client = std::make_unique<httplib::Client>("127.0.0.1",
                                               std::stoi(bound.substr(bound.rfind(':') + 1)));
  }
  FakeBackend backend;
  Registry registry;
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<httplib::Client> client;
};

httplib::Headers Bearer(const std::string& token) { return {{"Authorization", "Bearer " + token}}; }

}  // namespace

TEST_CASE("/metrics serves the registry as Prometheus text", "[http]") {
  Server s("");
  auto res = s.client->Get("/metrics");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0) == 0);
  auto scrape = apollo11::testing::ParsePrometheusText(res->body);
  REQUIRE(scrape.error.empty());
  CHECK(scrape.Value("apollo11_test_total") == 5);
  CHECK(s.client->Get("/healthz")->status == 200);
}

TEST_CASE("/licenses serves the third-party notices on coordinators and workers alike",
          "[http][legal]") {
  for (bool coordinator : {true, false}) {
    Server s("", coordinator);
    auto res = s.client->Get("/licenses");
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(res->get_header_value("Content-Type") == "text/plain; charset=utf-8");
    // NOTICE first, then each bundled component's own notice.
    CHECK(res->body.starts_with("Apollo-11, a distributed task scheduler"));
    for (const char* part : {"\nuplot ", "Leon Sorokin", "\ncppzmq-dev ", "\nnlohmann-json3-dev ",
                             "Boost Software License"}) {
      CHECK(res->body.find(part) != std::string::npos);
    }
  }
}

TEST_CASE("/readyz says 503 and why while the journal cannot be written", "[http]") {
  Server s("");
  CHECK(s.client->Get("/readyz")->status == 200);
  s.backend.healthy = false;
  auto res = s.client->Get("/readyz");
  CHECK(res->status == 503);
  CHECK(res->body.find("journal not writable") != std::string::npos);
}

TEST_CASE("read-only API calls reach the backend and map its errors", "[http]") {
  Server s("");
  auto res = s.client->Get("/api/runs?limit=5");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(nlohmann::json::parse(res->body)["kind"] == "runs");
  CHECK(s.client->Get("/api/runs/r1/history")->status == 200);
  CHECK(s.client->Get("/api/executions/r1.task_a")->status == 200);
  CHECK(s.client->Get("/api/workers")->status == 200);
  CHECK(s.client->Get("/api/pipelines")->status == 200);
  CHECK(s.backend.queries == std::vector<std::string>{"runs::5", "history:r1:0",
                                                      "execution:r1.task_a:0", "workers::0",
                                                      "pipelines::0"});
  auto missing = s.client->Get("/api/runs/missing");
  CHECK(missing->status == 404);
  CHECK(nlohmann::json::parse(missing->body)["error"] == "no run missing");
  CHECK(s.client->Get("/api/runs?limit=0")->status == 400);
  CHECK(s.client->Get("/api/runs?limit=abc")->status == 400);
  CHECK(s.client->Get("/api/nothing")->status == 404);
}

TEST_CASE(
    "a path segment over 600 characters, or a path over 2048, is 404 before any route sees it",
    "[http]") {
  Server s(kToken);
  auto longest = s.client->Get("/api/runs/" + std::string(600, 'r'));
  CHECK(longest->status == 200);  // routed to the backend
  CHECK(nlohmann::json::parse(longest->body)["id"] == std::string(600, 'r'));
  auto over = s.client->Get("/api/runs/" + std::string(601, 'r'));
  CHECK(over->status == 404);
  CHECK(over->body.find("a path segment is longer than 600 characters") != std::string::npos);
  CHECK(s.client
            ->Post("/api/runs/" + std::string(601, 'r') + "/cancel", Bearer(kToken), "{}",
                   "application/json")
            ->status == 404);
  // Short segments, but a path past 2,048 characters: refused before any
  // regex runs over it.
  std::string deep = "/api/runs";
  while (deep.size() <= 2048) deep += "/r";
  auto too_deep = s.client->Get(deep);
  CHECK(too_deep->status == 404);
  CHECK(too_deep->body.find("the path is longer than 2048 characters") != std::string::npos);
  CHECK(s.backend.queries.size() == 1);  // the 600-character one alone
  CHECK(s.backend.canceled.empty());
}

TEST_CASE("a wrong method is 405 with Allow, not 404", "[http]") {
  Server s(kToken);
  auto post = s.client->Post("/api/runs", "", "application/json");
  CHECK(post->status == 405);
  CHECK(post->get_header_value("Allow") == "GET");
  auto get = s.client->Get("/api/runs/r1/cancel");
  CHECK(get->status == 405);
  CHECK(get->get_header_value("Allow") == "POST");
  CHECK(s.client->Delete("/api/runs/r1")->status == 405);
  CHECK(s.client->Post("/metrics", "", "text/plain")->status == 405);
  auto put = s.client->Put("/api/runs/r1/cancel", "", "application/json");
  CHECK(put->status == 405);
  CHECK(put->get_header_value("Allow") == "POST");
  CHECK(put->body.find("PUT is not allowed here; use POST") != std::string::npos);
  auto patch = s.client->Patch("/api/pipelines", "", "application/json");
  CHECK(patch->status == 405);
  CHECK(patch->get_header_value("Allow") == "GET, POST");
  CHECK(patch->body.find("use GET or POST") != std::string::npos);
  // A path no route has stays 404, whatever the method.
  auto nowhere = s.client->Delete("/api/nothing");
  CHECK(nowhere->status == 404);
  CHECK(nowhere->body.find("no such path: /api/nothing") != std::string::npos);
  CHECK(s.client->Put("/healthz/x", "", "text/plain")->status == 404);
  // The echoed path is never run or sniffed by a browser.
  auto echoed = s.client->Get("/api/<script>alert(1)</script>");
  CHECK(echoed->status == 404);
  CHECK(echoed->get_header_value("X-Content-Type-Options") == "nosniff");
  CHECK(echoed->get_header_value("Content-Security-Policy").find("default-src 'none'") == 0);
}

TEST_CASE("a form-encoded body over the library's 8 KiB says why and what to send instead",
          "[http]") {
  Server s(kToken);
  const std::string big(9000, 'x');
  httplib::Headers auth = Bearer(kToken);
  auto form = s.client->Post("/api/pipelines", auth, big, "application/x-www-form-urlencoded");
  REQUIRE(form);
  CHECK(form->status == 413);
  CHECK(form->body.find("application/x-www-form-urlencoded (curl -d's default) may be at most "
                        "8192 bytes") != std::string::npos);
  CHECK(form->body.find("--data-binary") != std::string::npos);
  // The same body with its own type is read (and refused by the fake
  // backend's parser, not by size).
  auto yaml = s.client->Post("/api/pipelines", auth, big, "application/yaml");
  REQUIRE(yaml);
  CHECK(yaml->status != 413);
}

TEST_CASE("mutating calls are refused (403) when no token is configured", "[http][security]") {
  Server s("");
  auto res =
      s.client->Post("/api/pipelines/demo.x/runs", Bearer("anything"), "{}", "application/json");
  CHECK(res->status == 403);
  CHECK(res->body.find("--api-token") != std::string::npos);
  CHECK(s.client->Post("/api/runs/r1/cancel", "", "application/json")->status == 403);
  CHECK(s.backend.triggered.empty());
  CHECK(s.backend.canceled.empty());
}

TEST_CASE("mutating calls need the exact bearer token (401 otherwise)", "[http][security]") {
  Server s(kToken);
  auto none = s.client->Post("/api/pipelines/demo.x/runs", "{}", "application/json");
  CHECK(none->status == 401);
  CHECK(none->get_header_value("WWW-Authenticate").rfind("Bearer", 0) == 0);
  CHECK(s.client
            ->Post("/api/pipelines/demo.x/runs", Bearer("s3cret-token-012345678"), "{}",
                   "application/json")
            ->status == 401);  // a prefix of the token
  CHECK(s.client
            ->Post("/api/pipelines/demo.x/runs", Bearer(std::string(kToken) + "9"), "{}",
                   "application/json")
            ->status == 401);
  CHECK(s.client
            ->Post("/api/pipelines/demo.x/runs", {{"Authorization", kToken}}, "{}",
                   "application/json")
            ->status == 401);  // no "Bearer "
  CHECK(s.backend.triggered.empty());

  auto ok = s.client->Post("/api/pipelines/demo.x/runs", Bearer(kToken),
                           R"({"params": {"day": "2026-11-29", "n": 3, "dry": true}})",
                           "application/json");
  REQUIRE(ok->status == 201);
  CHECK(nlohmann::json::parse(ok->body)["run_id"] == "r-new");
  CHECK(s.backend.triggered == "demo.x");
  CHECK(s.backend.last_params ==
        std::map<std::string, std::string>{{"day", "2026-11-29"}, {"n", "3"}, {"dry", "true"}});

  auto cancel = s.client->Post("/api/runs/r7/cancel", Bearer(kToken), "", "application/json");
  CHECK(cancel->status == 202);
  CHECK(s.backend.canceled == "r7");
  CHECK(s.client->Post("/api/runs/done/cancel", Bearer(kToken), "", "application/json")->status ==
        409);
  CHECK(
      s.client->Post("/api/runs/missing/cancel", Bearer(kToken), "", "application/json")->status ==
      404);
}

TEST_CASE("a trigger with a malformed body is 400 and reaches nobody", "[http]") {
  Server s(kToken);
  for (const char* body : {"not json", "[1]", R"({"params": 3})", R"({"params": {"a": [1]}})",
                           R"({"parameters": {}})"}) {
    INFO(body);
    auto res =
        s.client->Post("/api/pipelines/demo.x/runs", Bearer(kToken), body, "application/json");
    CHECK(res->status == 400);
  }
  CHECK(s.backend.triggered.empty());
  CHECK(s.client->Post("/api/pipelines/unknown.pipe/runs", Bearer(kToken), "", "application/json")
            ->status == 404);
}

TEST_CASE("pause, unpause and backfill reach the backend, and a bad backfill body is 400",
          "[http][schedule]") {
  Server s(kToken);
  for (const char* op : {"pause", "unpause"}) {
    auto res = s.client->Post(std::string("/api/pipelines/demo.x/") + op, Bearer(kToken), "",
                              "application/json");
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(nlohmann::json::parse(res->body)["op"] == op);
  }
  CHECK(s.client->Post("/api/pipelines/demo.x/pause", "", "application/json")->status == 401);
  auto filled = s.client->Post(
      "/api/pipelines/demo.x/backfill", Bearer(kToken),
      R"({"from": "2026-11-01", "to": "2026-11-01T01:00:00+01:00", "max_active": 3})",
      "application/json");
  REQUIRE(filled);
  CHECK(filled->status == 200);
  REQUIRE(s.backend.changes.size() == 3);
  const auto& b = s.backend.changes.back();
  CHECK(b.op == "backfill");
  CHECK(b.name == "demo.x");
  CHECK(b.from == 1793491200LL * apollo11::kMicrosPerSecond);  // 2026-11-01T00:00:00Z
  CHECK(b.to == b.from);
  CHECK(b.max_active == 3);
  for (const char* body :
       {"", "[]", R"({"from": "2026-11-01"})", R"({"from": "yesterday", "to": "2026-11-01"})",
        R"({"from": "2026-11-01", "to": "2026-11-02", "max_active": 0})",
        R"({"from": "2026-11-01", "to": "2026-11-02", "extra": 1})"}) {
    INFO(body);
    auto res =
        s.client->Post("/api/pipelines/demo.x/backfill", Bearer(kToken), body, "application/json");
    REQUIRE(res);
    CHECK(res->status == 400);
  }
  CHECK(s.backend.changes.size() == 3);
  CHECK(s.client
            ->Post("/api/pipelines/unscheduled.pipe/backfill", Bearer(kToken),
                   R"({"from": "2026-11-01", "to": "2026-11-02"})", "application/json")
            ->status == 404);
}

TEST_CASE("a worker's server has metrics and health but no API", "[http]") {
  Server s("", /*with_backend=*/false);
  CHECK(s.client->Get("/metrics")->status == 200);
  CHECK(s.client->Get("/readyz")->status == 200);
  CHECK(s.client->Get("/api/runs")->status == 404);
}

TEST_CASE("http bind addresses are parsed and checked", "[http]") {
  auto v4 = ParseHttpBind("0.0.0.0:8011");
  REQUIRE(v4.ok());
  CHECK(v4->host == "0.0.0.0");
  CHECK(v4->port == 8011);
  auto v6 = ParseHttpBind("[::1]:0");
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  CHECK(v6->port == 0);
  for (const char* bad : {"8011", ":8011", "host:", "host:99999", "host:8o11", "::1:80", "[::1]"}) {
    INFO(bad);
    CHECK(!ParseHttpBind(bad).ok());
  }
  CHECK(IsLoopbackHost("127.0.0.1"));
  CHECK(IsLoopbackHost("localhost"));
  CHECK(IsLoopbackHost("::1"));
  CHECK(!IsLoopbackHost("0.0.0.0"));
  CHECK(!IsLoopbackHost("10.0.0.5"));
}

TEST_CASE("a busy port is a clear error", "[http]") {
  Server first("");
  HttpServerOptions o;
  o.bind = first.server->bound();
  Registry r;
  o.registry = &r;
  auto second = HttpServer::Start(o);
  REQUIRE(!second.ok());
  CHECK(second.status().message().find("cannot bind") != std::string::npos);
}

namespace {

int PortOf(const Server& s) {
  const std::string& bound = s.server->bound();
  return std::stoi(bound.substr(bound.rfind(':') + 1));
}

}  // namespace

TEST_CASE("overlapping Range requests get one copy of the answer, not hundreds",
          "[http][security]") {
  Server s("");
  for (int i = 0; i < 50; ++i)
    s.registry.AddCounter("apollo11_pad_" + std::to_string(i) + "_total", "Padding.");
  const size_t plain = s.client->Get("/metrics")->body.size();
  std::string ranges = "bytes=0-";
  for (int i = 0; i < 299; ++i) ranges += ",0-";
  for (const char* path : {"/metrics", "/api/runs?limit=5", "/healthz"}) {
    INFO(path);
    const int fd = Connect(PortOf(s));
    SendText(fd, std::string("GET ") + path + " HTTP/1.1\r\nHost: x\r\nRange: " + ranges +
                     "\r\nIf-Range: x\r\n\r\n");
    const std::string answer = ReadAll(fd);
    ::close(fd);
    CHECK(answer.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
    CHECK(answer.size() < 4096 + (std::string(path) == "/metrics" ? plain : 1024));
  }
}

TEST_CASE("slow clients are cut off and never keep /healthz or the API from answering",
          "[http][security]") {
  HttpLimits limits;
  limits.threads = 6;
  limits.max_per_address = 3;
  limits.head_timeout = std::chrono::milliseconds(800);
  Server s("", true, limits);
  const int port = PortOf(s);
  // Eight connections from one address and eight from eight others, each
  // sending half a request and holding it.
  std::vector<int> slow;
  for (int i = 0; i < 8; ++i) slow.push_back(Connect(port, "127.0.0.2"));
  for (int i = 0; i < 8; ++i)
    slow.push_back(Connect(port, ("127.0.1." + std::to_string(i + 1)).c_str()));
  for (int fd : slow) SendText(fd, "GET /api/runs HTTP/1.1\r\nHost: x\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto start = std::chrono::steady_clock::now();
  auto health = s.client->Get("/healthz");
  auto runs = s.client->Get("/api/runs");
  auto metrics = s.client->Get("/metrics");
  const auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(health);
  CHECK(health->status == 200);
  REQUIRE(runs);
  CHECK(runs->status == 200);
  REQUIRE(metrics);
  CHECK(metrics->status == 200);
  CHECK(took < std::chrono::milliseconds(400));
  // Past its cap an address gets as many health-only slots (three here),
  // then is refused at once; the held ones are dropped with 408 once the
  // head deadline passes.
  std::string answers;
  for (int fd : slow) {
    answers += ReadAll(fd, 3000).substr(0, 12) + "|";
    ::close(fd);
  }
  size_t refused = 0, timed_out = 0;
  for (size_t at = 0; (at = answers.find("HTTP/1.1 503", at)) != std::string::npos; ++at) ++refused;
  for (size_t at = 0; (at = answers.find("HTTP/1.1 408", at)) != std::string::npos; ++at)
    ++timed_out;
  CHECK(refused == 2);
  CHECK(refused + timed_out == 16);
}

TEST_CASE("connections held from the probe's own address leave /healthz answered",
          "[http][security]") {
  Server s("", true);  // the default: four connections an address
  const int port = PortOf(s);
  std::vector<int> slow;
  for (int i = 0; i < 4; ++i) slow.push_back(Connect(port, "127.0.0.1"));
  for (int fd : slow) SendText(fd, "GET /api/runs HTTP/1.1\r\nHost: x\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int healthy = 0;
  for (int i = 0; i < 20; ++i) {  // the probe, from the same address
    auto health = s.client->Get("/healthz");
    healthy += health && health->status == 200;
  }
  CHECK(healthy == 20);
  auto metrics = s.client->Get("/metrics");  // anything else waits for a slot
  REQUIRE(metrics);
  CHECK(metrics->status == 503);
  CHECK(metrics->body.find("past that only GET /healthz is answered") != std::string::npos);
  for (int fd : slow) ::close(fd);
}

TEST_CASE("a request head trickled byte by byte is dropped at the head deadline",
          "[http][security]") {
  HttpLimits limits;
  limits.head_timeout = std::chrono::milliseconds(500);
  Server s("", true, limits);
  const int fd = Connect(PortOf(s));
  const std::string head =
      "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
  const auto start = std::chrono::steady_clock::now();
  bool cut = false;
  for (char c : head) {
    if (::send(fd, &c, 1, MSG_NOSIGNAL) != 1) {
      cut = true;
      break;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) > 0) {
      cut = true;
      break;
    }
  }
  const std::string answer = ReadAll(fd, 2000);
  ::close(fd);
  CHECK(cut);
  CHECK(answer.rfind("HTTP/1.1 408", 0) == 0);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2500));
}

TEST_CASE("only real loopback addresses count as loopback", "[http][security]") {
  CHECK(IsLoopbackHost("127.0.0.1"));
  CHECK(IsLoopbackHost("127.255.0.9"));
  CHECK(IsLoopbackHost("::ffff:127.0.0.1"));
  CHECK(!IsLoopbackHost("127.evil.example.com"));
  CHECK(!IsLoopbackHost("127.0.0.1.nip.io"));
  CHECK(!IsLoopbackHost("127."));
  CHECK(!IsLoopbackHost("128.0.0.1"));
  CHECK(!IsLoopbackHost("::2"));
}

TEST_CASE("a bind failure names its real cause", "[http]") {
  Registry r;
  HttpServerOptions o;
  o.registry = &r;
  Server first("");
  o.bind = first.server->bound();
  auto busy = HttpServer::Start(o);
  REQUIRE(!busy.ok());
  CHECK(busy.status().message().find("Address already in use") != std::string::npos);
  o.bind = "192.0.2.1:0";  // TEST-NET-1: no interface has it
  auto absent = HttpServer::Start(o);
  REQUIRE(!absent.ok());
  CHECK(absent.status().message().find("Cannot assign requested address") != std::string::npos);
  CHECK(absent.status().message().find("address in use") == std::string::npos);
  o.bind = "no-such-host.invalid:0";
  auto unresolved = HttpServer::Start(o);
  REQUIRE(!unresolved.ok());
  CHECK(unresolved.status().message().find("cannot resolve") != std::string::npos);
}

TEST_CASE("/healthz is answered while every worker is busy", "[http][security]") {
  HttpLimits limits;
  limits.threads = 1;
  Server s("", true, limits);
  // The one worker waits 2 s on the backend for this query.
  const int busy = Connect(PortOf(s), "127.0.0.3");
  SendText(busy, "GET /api/runs/slow HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  auto health = s.client->Get("/healthz");
  const auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(health);
  CHECK(health->status == 200);
  CHECK(health->body == "ok\n");
  CHECK(took < std::chrono::milliseconds(500));
  CHECK(ReadAll(busy).rfind("HTTP/1.1 200 OK", 0) == 0);
  ::close(busy);
}
