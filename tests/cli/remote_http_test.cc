// The CLI's link to a node's HTTP API (cli/remote_http.h) against a real
// httplib server on a loopback port: the bearer goes with every call, the
// routes are the API's, and each refusal comes back as the StatusCode the
// ZeroMQ port would give, with the node's sentence. And the flags: CURVE
// keys are refused for an HTTP coordinator, a token for a ZeroMQ one.

#include "cli/remote_http.h"

#include <httplib.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <thread>

#include "cli/client_flags.h"

namespace apollo11::cli {
namespace {

// A stand-in node: answers what each path is told to, records the last
// request's path, body and Authorization.
struct StandIn {
  httplib::Server server;
  std::thread thread;
  int port = 0;
  std::string last_path, last_body, last_auth;
  StandIn() {
    auto answer = [this](const httplib::Request& req, httplib::Response& res) {
      last_path = req.path + (req.params.empty() ? "" : "?" + req.get_param_value("limit"));
      last_body = req.body;
      last_auth = req.get_header_value("Authorization");
      if (req.path == "/base/api/runs/r-1") {
        res.set_content(R"({"run_id": "r-1", "state": "SUCCESS"})", "application/json");
      } else if (req.path == "/base/api/pipelines/p/runs") {
        res.status = 403;
        res.set_content(R"({"error": "eve (viewer) may not trigger"})", "application/json");
      } else if (req.path == "/base/api/runs/r-1/cancel") {
        res.status = 409;
        res.set_content(R"({"error": "run r-1 already finished: SUCCESS"})", "application/json");
      } else if (req.path == "/base/api/runs/r-1/rerun") {
        res.status = 429;
        res.set_header("Retry-After", "3");
        res.set_content(R"({"error": "too many"})", "application/json");
      } else {
        res.status = 404;
        res.set_content(R"({"error": "no such thing"})", "application/json");
      }
    };
    server.Get(".*", answer);
    server.Post(".*", answer);
    port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
    while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~StandIn() {
    server.stop();
    thread.join();
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port) + "/base"; }
};

TEST_CASE("the HTTP link sends the bearer to the API's routes and maps refusals back",
          "[cli][http]") {
  StandIn node;
  ::setenv("APOLLO11_API_TOKEN", "a11_secret\n", 1);
  auto link = HttpApiLink::Open(node.Url(), "", "", std::chrono::milliseconds(5000));
  ::unsetenv("APOLLO11_API_TOKEN");
  REQUIRE(link.ok());
  auto run = (*link)->Query("status", "r-1", "", 0);
  REQUIRE(run.ok());
  CHECK((*run)["state"] == "SUCCESS");
  CHECK(node.last_auth == "Bearer a11_secret");
  actors::RegistryRequest trigger;
  trigger.op = static_cast<uint8_t>(actors::RegistryOp::kTrigger);
  trigger.name = "p";
  trigger.params = {{"day", "2026-12-01"}};
  auto refused = (*link)->Registry(trigger);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kPermissionDenied);
  CHECK(refused.status().message() == "eve (viewer) may not trigger");
  CHECK(nlohmann::json::parse(node.last_body)["params"]["day"] == "2026-12-01");
  Status cancel = (*link)->Cancel("r-1");
  CHECK(cancel.code() == StatusCode::kConflict);
  actors::RerunRun rerun;
  rerun.run_id = "r-1";
  auto busy = (*link)->Rerun(rerun);
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.status().code() == StatusCode::kPermissionDenied);  // exit 5, as a role's refusal
  CHECK(busy.status().message() == "too many (retry after 3 s)");
  CHECK(nlohmann::json::parse(node.last_body) == nlohmann::json{{"failed", true}});
  auto missing = (*link)->Query("history", "r-2", "", 0);
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(node.last_path == "/base/api/runs/r-2/history");
  // What the API has no route for is refused before anything is sent.
  CHECK((*link)->Query("explain", "r-1", "", 0).status().code() == StatusCode::kUnsupported);
  CHECK((*link)->Submit().code() == StatusCode::kUnsupported);
}

TEST_CASE("the HTTP link refuses what cannot work", "[cli][http]") {
  const auto wait = std::chrono::milliseconds(1000);
  CHECK_FALSE(HttpApiLink::Open("http://", "", "", wait).ok());
  CHECK_FALSE(HttpApiLink::Open("http://h:1/a b", "", "", wait).ok());
  CHECK(HttpApiLink::Open("https://h:1", "/nonexistent/token", "", wait).status().message() ==
        "--api-token-file /nonexistent/token cannot be read");
  ::setenv("APOLLO11_API_TOKEN", "one\ntwo", 1);
  CHECK(HttpApiLink::Open("https://h:1", "", "", wait).status().message().find("line break") !=
        std::string::npos);
  ::unsetenv("APOLLO11_API_TOKEN");
  auto down = HttpApiLink::Open("http://127.0.0.1:1", "", "", wait);
  REQUIRE(down.ok());
  CHECK((*down)->Query("runs", "", "", 5).status().code() == StatusCode::kIo);

  ClientFlags f;
  f.coordinator = "https://apollo.example.org";
  f.key = "me.key";
  CHECK(f.Connect().status().message().find("--key and --server-key are for the coordinator's "
                                            "ZeroMQ client port") == 0);
  f = ClientFlags{};
  f.coordinator = "tcp://127.0.0.1:7012";
  f.api_token_file = "token";
  CHECK(f.Connect().status().message().find("--api-token-file and --cacert are for a node's "
                                            "HTTP API") == 0);
  CHECK(IsHttpEndpoint("https://a:1"));
  CHECK_FALSE(IsHttpEndpoint("tcp://a:1"));
}

}  // namespace
}  // namespace apollo11::cli
