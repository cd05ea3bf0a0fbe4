// HTTP tasks through the Executor against a real cpp-httplib server on a
// loopback port chosen by the kernel.

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/ids.h"
#include "executor/executor.h"
#include "tests/executor/executor_test_util.h"

namespace {

using apollo11::Millis;
using apollo11::SystemClock;
using apollo11::dsl::TaskType;
using apollo11::executor::ExecOutcome;
using apollo11::executor::ExecOutcomeKind;
using apollo11::executor::ExecRequest;
using apollo11::executor::Executor;
using apollo11::executor::ExecutorOptions;
using apollo11::executor::testing::ReadFile;
using apollo11::executor::testing::RunToCompletion;
using apollo11::executor::testing::TempDir;
using std::chrono::milliseconds;

// An HTTP server on 127.0.0.1:<port 0> in its own thread, stopped and joined
// on destruction. /slow waits until the test ends (or 10 s).
class TestServer {
 public:
  TestServer() {
    server_.Get("/ok", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("hello body", "text/plain");
    });
    server_.Get("/missing",
                [](const httplib::Request&, httplib::Response& res) { res.status = 404; });
    server_.Get("/unavailable",
                [](const httplib::Request&, httplib::Response& res) { res.status = 503; });
    server_.Get("/redirect",
                [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/ok"); });
    server_.Get("/slow", [this](const httplib::Request&, httplib::Response& res) {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::seconds(10), [this] { return stopping_; });
      res.set_content("late", "text/plain");
    });
    auto echo = [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      seen_method_ = req.method;
      seen_body_ = req.body;
      seen_token_ = req.get_header_value("X-Token");
      seen_traceparent_ = req.get_header_value("traceparent");
      seen_key_ = req.get_param_value("key");
      ++echoes_;
      res.status = 201;
      res.set_content("stored", "text/plain");
    };
    server_.Post("/echo", echo);
    server_.Put("/echo", echo);
    port_ = server_.bind_to_any_port("127.0.0.1");  // listening from here on
    thread_ = std::jthread([this] { server_.listen_after_bind(); });
  }
  ~TestServer() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    server_.stop();
  }

  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::string seen_method() {
    std::lock_guard l(mu_);
    return seen_method_;
  }
  std::string seen_body() {
    std::lock_guard l(mu_);
    return seen_body_;
  }
  std::string seen_token() {
    std::lock_guard l(mu_);
    return seen_token_;
  }
  std::string seen_key() {  // the query parameter `key`, decoded
    std::lock_guard l(mu_);
    return seen_key_;
  }
  std::string seen_traceparent() {
    std::lock_guard l(mu_);
    return seen_traceparent_;
  }
  int echoes() {  // requests to /echo so far
    std::lock_guard l(mu_);
    return echoes_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::string seen_method_, seen_body_, seen_token_, seen_key_, seen_traceparent_;
  int echoes_ = 0;
  std::jthread thread_;  // last: joined before the members it uses go away
};

ExecRequest Http(const std::string& id, const std::string& url) {
  ExecRequest r;
  r.exec_id = "r1." + id;
  r.attempt = 1;
  r.type = TaskType::kHttp;
  r.url = url;
  return r;
}

ExecOutcome RunOne(Executor& ex, const SystemClock& clock, const ExecRequest& r) {
  REQUIRE(ex.Launch(r).ok());
  auto out = RunToCompletion(ex, clock, milliseconds(10000));
  REQUIRE(out.size() == 1);
  return out[0];
}

}  // namespace

TEST_CASE("an HTTP 2xx is success with the body as output and in the log", "[executor][http]") {
  TestServer server;
  TempDir dir;
  SystemClock clock;
  Executor ex(ExecutorOptions{dir.path(), 1 << 20, 5}, clock);
  auto o = RunOne(ex, clock, Http("ok", server.Url("/ok")));
  CHECK(o.kind == ExecOutcomeKind::kSuccess);
  CHECK(o.exit_code == 200);
  CHECK(o.output == "hello");  // the first output_tail_bytes of the body
  CHECK(ReadFile(o.stdout_path) == "hello body");

  auto redirected = RunOne(ex, clock, Http("redir", server.Url("/redirect")));
  CHECK(redirected.kind == ExecOutcomeKind::kSuccess);
  CHECK(redirected.exit_code == 200);
}

TEST_CASE("HTTP 4xx fails for good and 5xx fails retryably", "[executor][http]") {
  TestServer server;
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  auto missing = RunOne(ex, clock, Http("404", server.Url("/missing")));
  CHECK(missing.kind == ExecOutcomeKind::kFailed);
  CHECK(missing.exit_code == 404);
  CHECK_FALSE(missing.retryable);
  CHECK(missing.error == "HTTP 404 from " + server.Url("/missing"));

  auto down = RunOne(ex, clock, Http("503", server.Url("/unavailable")));
  CHECK(down.kind == ExecOutcomeKind::kFailed);
  CHECK(down.exit_code == 503);
  CHECK(down.retryable);

  auto expected = Http("exp", server.Url("/missing"));
  expected.expect_status = {404};
  CHECK(RunOne(ex, clock, expected).kind == ExecOutcomeKind::kSuccess);
  auto unexpected = Http("unexp", server.Url("/ok"));
  unexpected.expect_status = {201};
  CHECK(RunOne(ex, clock, unexpected).kind == ExecOutcomeKind::kFailed);
}

TEST_CASE("a refused connection is a retryable failure", "[executor][http]") {
  // A bound socket that never listens: connecting to its port is refused.
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  socklen_t len = sizeof(addr);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/";

  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  auto o = RunOne(ex, clock, Http("refused", url));
  ::close(fd);
  CHECK(o.kind == ExecOutcomeKind::kFailed);
  CHECK(o.retryable);
  CHECK(o.exit_code == 0);
  CHECK(o.error.rfind("could not reach " + url + ": ", 0) == 0);
}

TEST_CASE("a slow HTTP request times out, and Cancel aborts one", "[executor][http]") {
  TestServer server;
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  auto r = Http("slow", server.Url("/slow"));
  r.timeout = Millis(300);
  auto o = RunOne(ex, clock, r);
  CHECK(o.kind == ExecOutcomeKind::kTimeout);
  CHECK(o.retryable);
  CHECK((o.finished_at - o.started_at) < 3 * apollo11::kMicrosPerSecond);

  auto c = Http("cancel", server.Url("/slow"));
  REQUIRE(ex.Launch(c).ok());
  CHECK(ex.RunningExecs().size() == 1);
  ex.Cancel(c.exec_id, c.attempt);
  auto out = RunToCompletion(ex, clock, milliseconds(5000));
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == ExecOutcomeKind::kCanceled);
  CHECK(ex.running() == 0);
}

TEST_CASE("method, headers and body reach the server", "[executor][http]") {
  TestServer server;
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  auto r = Http("put", server.Url("/echo"));
  r.method = "PUT";
  r.headers = {{"X-Token", "secret-42"}, {"Content-Type", "application/json"}};
  r.body = R"({"order": 7})";
  auto o = RunOne(ex, clock, r);
  CHECK(o.kind == ExecOutcomeKind::kSuccess);
  CHECK(o.exit_code == 201);
  CHECK(o.output == "stored");
  CHECK(server.seen_method() == "PUT");
  CHECK(server.seen_body() == R"({"order": 7})");
  CHECK(server.seen_token() == "secret-42");

  auto post = Http("post", server.Url("/echo"));
  post.method = "POST";
  post.headers = {{"X-Token", "t2"}};
  post.body = "a=1&b=2";
  CHECK(RunOne(ex, clock, post).kind == ExecOutcomeKind::kSuccess);
  CHECK(server.seen_method() == "POST");
  CHECK(server.seen_body() == "a=1&b=2");
  CHECK(server.seen_token() == "t2");
}

TEST_CASE("an http task sends its attempt's traceparent, unless it sets one itself",
          "[executor][http][trace]") {
  TestServer server;
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  const std::string parent = apollo11::TraceParent("0af7651916cd43dd", "r1.call", 1);
  auto r = Http("call", server.Url("/echo"));
  r.method = "POST";
  r.env["TRACEPARENT"] = parent;
  CHECK(RunOne(ex, clock, r).kind == ExecOutcomeKind::kSuccess);
  CHECK(server.seen_traceparent() == parent);
  r.headers = {{"TraceParent", "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"}};
  CHECK(RunOne(ex, clock, r).kind == ExecOutcomeKind::kSuccess);
  CHECK(server.seen_traceparent() == "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01");
}

TEST_CASE("an http task's secrets are put in its url, headers and body on the worker",
          "[executor][http][secrets]") {
  TestServer server;
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  ::setenv("APOLLO11_TEST_HTTP_TOKEN", "s3cr&t \"q\"", 1);
  auto r = Http("secret", server.Url("/echo?key=$API_TOKEN&other=$NOT_A_SECRET"));
  r.method = "POST";
  r.secrets = {{"API_TOKEN", "env:APOLLO11_TEST_HTTP_TOKEN"}};
  r.headers = {{"X-Token", "Bearer ${API_TOKEN}"}, {"Content-Type", "application/json"}};
  r.body = R"({"t": "$API_TOKEN", "cost": "$5"})";
  auto o = RunOne(ex, clock, r);
  INFO(o.error);
  CHECK(o.kind == ExecOutcomeKind::kSuccess);
  CHECK(server.seen_token() == "Bearer s3cr&t \"q\"");
  CHECK(server.seen_key() == "s3cr&t \"q\"");  // percent-encoded in the url, decoded by the server
  CHECK(server.seen_body() == R"({"t": "s3cr&t \"q\"", "cost": "$5"})");  // JSON-escaped

  // A value that would split a header fails the attempt, naming the secret, not its value.
  ::setenv("APOLLO11_TEST_HTTP_TOKEN", "line1\r\nX-Evil: 1", 1);
  auto bad = Http("badsecret", server.Url("/echo"));
  bad.method = "POST";
  bad.secrets = r.secrets;
  bad.headers = {{"X-Token", "$API_TOKEN"}};
  const int before = server.echoes();
  auto refused = RunOne(ex, clock, bad);
  CHECK(refused.kind == ExecOutcomeKind::kFailed);
  CHECK(refused.error.find("secret API_TOKEN cannot go in header X-Token") != std::string::npos);
  CHECK(refused.error.find("line1") == std::string::npos);
  CHECK(server.echoes() == before);
  ::unsetenv("APOLLO11_TEST_HTTP_TOKEN");
}

TEST_CASE("an http task asked to run its precheck runs it before the request",
          "[executor][http][precheck]") {
  TestServer server;
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  auto with = [&](const std::string& id, const std::string& precheck) {
    auto r = Http(id, server.Url("/echo"));
    r.method = "POST";
    r.body = "x";
    r.precheck = precheck;
    r.run_precheck = true;
    return r;
  };
  // Exit 3: done already, nothing sent.
  auto done = RunOne(ex, clock, with("done", "echo already posted; exit 3"));
  CHECK(done.kind == ExecOutcomeKind::kAlreadyDone);
  CHECK(server.echoes() == 0);
  // Any other failure refuses the rerun, for good, and sends nothing.
  auto refused = RunOne(ex, clock, with("refused", "exit 1"));
  CHECK(refused.kind == ExecOutcomeKind::kFailed);
  CHECK_FALSE(refused.retryable);
  CHECK(refused.error == "precheck exited 1: refusing to rerun");
  CHECK(server.echoes() == 0);
  // Exit 0: the request goes out; the body stays the task's output, what the
  // precheck printed goes to its stderr.
  auto ran = RunOne(ex, clock, with("ran", "echo checked; echo warn >&2"));
  INFO(ran.error);
  CHECK(ran.kind == ExecOutcomeKind::kSuccess);
  CHECK(ran.output == "stored");
  CHECK(server.echoes() == 1);
  // Not asked (a first attempt): no precheck, whatever it says.
  auto first = with("first", "exit 1");
  first.run_precheck = false;
  CHECK(RunOne(ex, clock, first).kind == ExecOutcomeKind::kSuccess);
  CHECK(server.echoes() == 2);
}
