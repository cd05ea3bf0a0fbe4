// Who may call which HTTP route: the tokens file, principals from bearer
// tokens, and every row of http_access.cc's table checked through a real
// HttpServer (httplib::Client on port 0) for each role.

#include "observability/http_access.h"

#include <httplib.h>

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "common/clock.h"
#include "observability/api_tokens.h"
#include "observability/http_server.h"

using namespace apollo11::observability;  // NOLINT: test file
using apollo11::Micros;
using apollo11::Result;
using apollo11::Status;
namespace transport = apollo11::transport;

namespace {

// Answers everything: the access check, not the backend, decides the status.
class AnyBackend final : public ApiBackend {
 public:
  Result<nlohmann::json> Query(const std::string& kind, const std::string& id, uint32_t) override {
    return nlohmann::json{{"kind", kind}, {"id", id}, {"state", "RUNNING"}};
  }
  Result<std::string> Trigger(const std::string&,
                              const std::map<std::string, std::string>&) override {
    return std::string("r-new");
  }
  Status Cancel(const std::string&, const std::string& reason) override {
    cancel_reasons.push_back(reason);
    return Status::Ok();
  }
  void ActAs(const Principal& caller) override {
    actors.push_back(caller.name);
    request_ids.push_back(caller.request_id);
  }
  Status Record(const Principal& caller, const Note& note) override {
    notes.emplace_back(caller.name, note);
    return Status::Ok();
  }
  Result<nlohmann::json> Audit(const apollo11::storage::AuditFilter& filter) override {
    return nlohmann::json{{"records", nlohmann::json::array()},
                          {"principal", filter.principal},
                          {"since", filter.since},
                          {"limit", filter.limit}};
  }
  std::vector<std::string> cancel_reasons, actors, request_ids;
  std::vector<std::pair<std::string, Note>> notes;
};

class ManualClock final : public apollo11::Clock {
 public:
  Micros Now() const override { return now; }
  Micros Steady() const override { return now; }
  Micros now = 1'000'000;
};

struct Tokens {
  std::string viewer = *NewApiToken(), op = *NewApiToken(), admin = *NewApiToken();
  std::vector<ApiToken> Lines() const {
    auto parsed = ParseApiTokens(TokenLine("vera", "viewer", viewer) + "\n" +
                                     TokenLine("otto", "operator", op) + "\n" +
                                     TokenLine("ada", "admin", admin) + "\n",
                                 "tokens");
    REQUIRE(parsed.ok());
    return *parsed;
  }
};

struct Server {
  explicit Server(std::optional<std::vector<ApiToken>> tokens, double rate = 0,
                  const apollo11::Clock* clock = nullptr, std::string base = "") {
    HttpServerOptions o;
    o.base_path = std::move(base);
    o.bind = "127.0.0.1:0";
    o.registry = &registry;
    o.backend = &backend;
    o.api_tokens = std::move(tokens);
    o.api_rate_limit = rate;
    o.api_cache_ttl_us = 0;
    o.clock = clock;
    o.cluster = [] { return nlohmann::json::object(); };
    o.resign = [] { return Status::Ok(); };
    auto s = HttpServer::Start(std::move(o));
    REQUIRE(s.ok());
    server = std::move(*s);
    const std::string& bound = server->bound();
    client = std::make_unique<httplib::Client>("127.0.0.1",
                                               std::stoi(bound.substr(bound.rfind(':') + 1)));
  }
  int Call(const HttpRule& rule, const std::string& token) {
    const std::string path =
        std::regex_replace(std::string(rule.path), std::regex("\\{id\\}"), "demo.x");
    httplib::Headers h;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    auto res = rule.method == "GET" ? client->Get(path.c_str(), h)
                                    : client->Post(path.c_str(), h, "{}", "application/json");
    REQUIRE(res);
    return res->status;
  }
  AnyBackend backend;
  Registry registry;
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<httplib::Client> client;
};

bool Refused(int status) { return status == 401 || status == 403; }

}  // namespace

TEST_CASE("a tokens file holds names, roles and hashes, and says which line is wrong",
          "[http][security][tokens]") {
  const std::string token = *NewApiToken();
  CHECK(token.size() == 4 + 43);
  CHECK(token.starts_with("a11_"));
  CHECK(token.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
                                4) == std::string::npos);
  CHECK(*NewApiToken() != token);
  auto ok = ParseApiTokens("# people\n\n" + TokenLine("alice", "operator", token) +
                               "  # on-call\nbob.ci@example viewer " +
                               FormatTokenHash(HashToken("x")) + "\n",
                           "t");
  REQUIRE(ok.ok());
  REQUIRE(ok->size() == 2);
  CHECK((*ok)[0].name == "alice");
  CHECK((*ok)[0].role == transport::kRoleOperator);
  CHECK(FindToken(*ok, token)->name == "alice");
  CHECK(FindToken(*ok, "x")->name == "bob.ci@example");
  CHECK_FALSE(FindToken(*ok, token + "x"));
  CHECK_FALSE(FindToken(*ok, ""));
  CHECK_FALSE(FindToken(*ok, std::string(kMaxPresentedToken + 1, 'a')));
  // The file never holds the token itself.
  CHECK(TokenLine("alice", "operator", token).find(token) == std::string::npos);

  const std::string hash = FormatTokenHash(HashToken("y"));
  const std::pair<std::string, std::string> bad[] = {
      {"alice worker " + hash, "t:1: want a role (viewer, operator or admin)"},
      {"alice root " + hash, "t:1: want a role"},
      {"al ice viewer " + hash, "t:1: want a role"},
      {"ali/ce viewer " + hash, "t:1: 'ali/ce' is not a principal name"},
      {"alice viewer sha256:abc", "t:1: want the token's hash"},
      {"alice viewer " + hash + " extra", "t:1: unexpected text after the hash"},
      {"alice viewer " + hash + "\nalice admin " + hash, "t:2: principal 'alice' is listed twice"},
  };
  for (const auto& [text, why] : bad) {
    INFO(text);
    auto parsed = ParseApiTokens(text, "t");
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().message().find(why) == 0);
  }
}

TEST_CASE("every HTTP route allows exactly the roles of its action, route by route",
          "[http][security][roles]") {
  Tokens t;
  Server s(t.Lines());
  const std::map<std::string, transport::KeyRoles> callers = {{"", 0},
                                                              {t.viewer, transport::kRoleViewer},
                                                              {t.op, transport::kRoleOperator},
                                                              {t.admin, transport::kRoleAdmin}};
  std::set<std::string> methods;
  for (const HttpRule& rule : HttpRules()) {
    methods.insert(std::string(rule.method));
    for (const auto& [token, roles] : callers) {
      const bool may = !rule.action || transport::Allows(roles, *rule.action);
      const int status = s.Call(rule, token);
      INFO(rule.method << " " << rule.path << " as "
                       << (roles ? transport::FormatRoles(roles) : "anonymous") << ": " << status);
      CHECK(Refused(status) == !may);
      // The row is a route the server serves.
      if (may) CHECK((status != 404 && status != 405));
      // Anonymous is asked for a token; a known principal is told no.
      if (!may) CHECK(status == (token.empty() ? 401 : 403));
    }
  }
  CHECK(methods == std::set<std::string>{"GET", "POST"});
  // A token that is no principal's is refused even on public routes.
  CHECK(s.Call(*FindHttpRule("GET", "/api/whoami"), "a11_not-a-token") == 401);
}

TEST_CASE("without a tokens file reads stay open and nobody may change anything",
          "[http][security][roles]") {
  Server s(std::nullopt);
  for (const HttpRule& rule : HttpRules()) {
    const bool read = !rule.action || *rule.action == transport::Action::kRead;
    const int status = s.Call(rule, "");
    INFO(rule.method << " " << rule.path << ": " << status);
    CHECK(Refused(status) == !read);
    if (!read) CHECK(status == 403);
  }
}

TEST_CASE("the caller's name reaches the backend and the cancel's reason", "[http][security]") {
  Tokens t;
  Server s(t.Lines());
  auto res = s.client->Post("/api/runs/r1/cancel", {{"Authorization", "Bearer " + t.op}}, "",
                            "application/json");
  REQUIRE(res);
  CHECK(res->status == 202);
  REQUIRE(s.backend.cancel_reasons.size() == 1);
  CHECK(s.backend.cancel_reasons[0] ==
        "canceled by otto (operator) from 127.0.0.1 through the HTTP API");
  CHECK(s.backend.actors == std::vector<std::string>{"otto"});
  REQUIRE(s.backend.request_ids.size() == 1);
  CHECK(s.backend.request_ids[0].size() == 16);
  CHECK(res->get_header_value("X-Request-Id") == s.backend.request_ids[0]);
  auto who = s.client->Get("/api/whoami", {{"Authorization", "Bearer " + t.admin}});
  REQUIRE(who);
  auto doc = nlohmann::json::parse(who->body);
  CHECK(doc["name"] == "ada");
  CHECK(doc["roles"] == "admin");
}

TEST_CASE("changing requests are limited per principal, with Retry-After", "[http][security]") {
  Tokens t;
  ManualClock clock;
  Server s(t.Lines(), /*rate=*/2, &clock);
  auto cancel = [&](const std::string& token) {
    auto res = s.client->Post("/api/runs/r1/cancel", {{"Authorization", "Bearer " + token}}, "",
                              "application/json");
    REQUIRE(res);
    return res;
  };
  // A burst of twice the rate passes, the next is refused.
  for (int i = 0; i < 4; ++i) CHECK(cancel(t.op)->status == 202);
  auto limited = cancel(t.op);
  CHECK(limited->status == 429);
  CHECK(limited->get_header_value("Retry-After") == "1");
  CHECK(limited->body.find("otto sent more than 2 changing requests a second") !=
        std::string::npos);
  // Another principal has its own bucket; reads are not limited.
  CHECK(cancel(t.admin)->status == 202);
  for (int i = 0; i < 10; ++i) {
    CHECK(s.client->Get("/api/runs", {{"Authorization", "Bearer " + t.op}})->status == 200);
  }
  // Half a second later one more fits.
  clock.now += 500'000;
  CHECK(cancel(t.op)->status == 202);
  CHECK(cancel(t.op)->status == 429);
}

TEST_CASE("a reload replaces the principals for the next request", "[http][security]") {
  Tokens t;
  Server s(t.Lines());
  const HttpRule* runs = FindHttpRule("GET", "/api/runs");
  REQUIRE(runs != nullptr);
  CHECK(s.Call(*runs, t.viewer) == 200);
  const std::string fresh = *NewApiToken();
  s.server->SetApiTokens(*ParseApiTokens(TokenLine("newcomer", "viewer", fresh), "t"));
  CHECK(s.Call(*runs, t.viewer) == 401);
  CHECK(s.Call(*runs, fresh) == 200);
}

TEST_CASE("under a base path (--http-base-path) every path is served below it, none above",
          "[http][base]") {
  Tokens t;
  Server s(t.Lines(), 0, nullptr, "/tools/apollo");
  const httplib::Headers auth = {{"Authorization", "Bearer " + t.viewer}};
  CHECK(s.client->Get("/tools/apollo/api/runs", auth)->status == 200);
  CHECK(s.client->Get("/api/runs", auth)->status == 404);
  // The health probe the reader answers, and the public routes, move too.
  CHECK(s.client->Get("/tools/apollo/healthz")->status == 200);
  CHECK(s.client->Get("/tools/apollo/licenses")->status == 200);
  CHECK(s.client->Get("/licenses")->status == 404);
  // The access check still applies below the base.
  CHECK(s.client->Get("/tools/apollo/api/runs")->status == 401);
  // The page names its base and links its assets below it, which are served.
  for (const char* page : {"/tools/apollo", "/tools/apollo/", "/tools/apollo/run/r1"}) {
    auto res = s.client->Get(page);
    REQUIRE(res);
    INFO(page);
    CHECK(res->status == 200);
    CHECK(res->body.find("<meta name=\"apollo11-base\" content=\"/tools/apollo\">") !=
          std::string::npos);
    CHECK(res->body.find("src=\"/assets/") == std::string::npos);
  }
  const std::string body = s.client->Get("/tools/apollo/")->body;
  std::smatch script;
  REQUIRE(std::regex_search(body, script,
                            std::regex("src=\"(/tools/apollo/assets/app\\.[0-9a-f]+\\.js)\"")));
  CHECK(s.client->Get(script[1].str().c_str())->status == 200);
  CHECK(s.client
            ->Get("/assets/" + script[1].str().substr(std::string("/tools/apollo/assets/").size()))
            ->status == 404);
}

TEST_CASE("a base path is checked", "[http][base]") {
  CHECK(*ParseBasePath("") == "");
  CHECK(*ParseBasePath("/") == "");
  CHECK(*ParseBasePath("/apollo") == "/apollo");
  CHECK(*ParseBasePath("/tools/apollo-11_x.y~z") == "/tools/apollo-11_x.y~z");
  for (const char* bad : {"apollo", "/apollo/", "//apollo", "/a//b", "/a/../b", "/a/./b", "/a b",
                          "/a?b", "/a%2fb", "/a\"b"}) {
    INFO(bad);
    auto parsed = ParseBasePath(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().message().find("--http-base-path") == 0);
  }
}

TEST_CASE("a browser page of another origin may not change anything, and refusals are logged",
          "[http][security][csrf]") {
  Tokens t;
  Server s(t.Lines());
  const std::string port = s.server->bound().substr(s.server->bound().rfind(':') + 1);
  auto cancel = [&](const std::string& origin) {
    httplib::Headers h = {{"Authorization", "Bearer " + t.op}};
    if (!origin.empty()) h.emplace("Origin", origin);
    auto res = s.client->Post("/api/runs/r1/cancel", h, "", "application/json");
    REQUIRE(res);
    return res;
  };
  // A script (no Origin) and the dashboard itself (its own origin) may.
  CHECK(cancel("")->status == 202);
  CHECK(cancel("http://127.0.0.1:" + port)->status == 202);
  CHECK(cancel("HTTP://127.0.0.1:" + port)->status == 202);
  // Another site's page may not, even with a valid token.
  const std::vector<std::string> others = {"http://evil.example", "http://127.0.0.1:1", "null",
                                           "http://127.0.0.1:" + port + ".evil.example",
                                           "127.0.0.1:" + port};
  for (const std::string& other : others) {
    INFO(other);
    auto res = cancel(other);
    CHECK(res->status == 403);
    CHECK(res->body.find("may not change anything here") != std::string::npos);
  }
  CHECK(s.backend.cancel_reasons.size() == 3);
  // Reads are not changes: a foreign Origin may read (CORS keeps the answer
  // from its page).
  auto read = s.client->Get(
      "/api/runs", {{"Authorization", "Bearer " + t.viewer}, {"Origin", "http://evil.example"}});
  CHECK(read->status == 200);
}

TEST_CASE("a request's X-Request-Id is kept when clean, made when not, and reaches the backend",
          "[http][security][audit]") {
  Tokens t;
  Server s(t.Lines());
  const std::string auth = "Bearer " + t.op;
  auto given = s.client->Post("/api/runs/r1/cancel",
                              {{"Authorization", auth}, {"X-Request-Id", "deploy-7.retry_2"}}, "",
                              "application/json");
  REQUIRE(given);
  CHECK(given->get_header_value("X-Request-Id") == "deploy-7.retry_2");
  auto odd = s.client->Post("/api/runs/r1/cancel",
                            {{"Authorization", auth}, {"X-Request-Id", "two words"}}, "",
                            "application/json");
  REQUIRE(odd);
  const std::string made = odd->get_header_value("X-Request-Id");
  CHECK(made.size() == 16);
  CHECK(s.backend.request_ids == std::vector<std::string>{"deploy-7.retry_2", made});
}

TEST_CASE("a changing request the access check refuses is recorded for the audit trail",
          "[http][security][audit]") {
  Tokens t;
  Server s(t.Lines());
  auto viewer = s.client->Post("/api/runs/r1/cancel", {{"Authorization", "Bearer " + t.viewer}}, "",
                               "application/json");
  REQUIRE(viewer);
  CHECK(viewer->status == 403);
  auto forged = s.client->Post("/api/pipelines/p/pause", {{"Authorization", "Bearer a11_nope"}}, "",
                               "application/json");
  REQUIRE(forged);
  CHECK(forged->status == 401);
  auto read = s.client->Get("/api/runs", {{"Authorization", "Bearer a11_nope"}});
  REQUIRE(read);
  CHECK(read->status == 401);  // a read: not recorded
  REQUIRE(s.backend.notes.size() == 2);
  CHECK(s.backend.notes[0].first == "vera");
  CHECK(s.backend.notes[0].second.action == "cancel");
  CHECK(s.backend.notes[0].second.target == "/api/runs/r1/cancel");
  CHECK_FALSE(s.backend.notes[0].second.ok);
  CHECK(s.backend.notes[0].second.outcome.rfind("HTTP 403: vera (viewer)", 0) == 0);
  CHECK(s.backend.notes[1].first == "(unknown token)");
  CHECK(s.backend.notes[1].second.action == "pause");
  CHECK(s.backend.notes[1].second.outcome.rfind("HTTP 401: ", 0) == 0);
  CHECK(s.backend.cancel_reasons.empty());
}

TEST_CASE("GET /api/audit is the admin's, and its parameters are checked",
          "[http][security][audit]") {
  Tokens t;
  Server s(t.Lines());
  auto op = s.client->Get("/api/audit", {{"Authorization", "Bearer " + t.op}});
  REQUIRE(op);
  CHECK(op->status == 403);
  auto admin =
      s.client->Get("/api/audit?principal=otto&limit=5", {{"Authorization", "Bearer " + t.admin}});
  REQUIRE(admin);
  REQUIRE(admin->status == 200);
  auto doc = nlohmann::json::parse(admin->body);
  CHECK(doc["principal"] == "otto");
  CHECK(doc["limit"] == 5);
  for (const char* bad : {"/api/audit?limit=0", "/api/audit?limit=x", "/api/audit?since=soon",
                          "/api/audit?who=otto"}) {
    auto res = s.client->Get(bad, {{"Authorization", "Bearer " + t.admin}});
    REQUIRE(res);
    INFO(bad);
    CHECK(res->status == 400);
  }
  auto since = s.client->Get("/api/audit?since=1h", {{"Authorization", "Bearer " + t.admin}});
  REQUIRE(since);
  CHECK(since->status == 200);
  CHECK(nlohmann::json::parse(since->body)["since"].get<int64_t>() > 0);
}
