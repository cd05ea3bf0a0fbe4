// GET /api/v1/events over real sockets against a scripted coordinator feed:
// the stream's head, the reset a fresh pump publishes, one `run` event per
// changed run, resuming with Last-Event-ID, the per-address cap, and the
// overview's server-side history. The real feed is tested end to end by
// tests/observability/live_events_test.py.

#include <catch2/catch.hpp>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "observability/http_server.h"
#include "tests/observability/raw_http.h"

using namespace apollo11::observability;  // NOLINT: test file
using apollo11::Result;
using apollo11::Status;
using apollo11::testing::Connect;
using apollo11::testing::SendText;

namespace {

// The coordinator's `changes` answers, handed out one per long poll as the
// test pushes them; a poll with nothing pushed waits out its wait.
class ScriptedFeed final : public ApiBackend {
 public:
  Result<nlohmann::json> Query(const std::string& kind, const std::string&, uint32_t) override {
    if (kind == "workers") return nlohmann::json::array();
    return nlohmann::json::object();
  }
  Result<std::string> Trigger(const std::string&,
                              const std::map<std::string, std::string>&) override {
    return Status::Unsupported("no");
  }
  Status Cancel(const std::string&, const std::string&) override {
    return Status::Unsupported("no");
  }
  Result<nlohmann::json> Changes(const std::string& since, uint32_t wait_ms) override {
    std::unique_lock lock(mu_);
    positions_.push_back(since);
    if (since.empty())
      return nlohmann::json{{"feed", "F"}, {"seq", seq_}, {"changes", nlohmann::json::array()}};
    cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] { return !pushed_.empty(); });
    nlohmann::json changes = nlohmann::json::array();
    while (!pushed_.empty()) {
      changes.push_back(pushed_.front());
      pushed_.pop_front();
    }
    return nlohmann::json{{"feed", "F"}, {"seq", seq_}, {"reset", false}, {"changes", changes}};
  }
  void Push(const std::string& run, const std::string& state) {
    std::lock_guard lock(mu_);
    ++seq_;
    pushed_.push_back({{"seq", seq_},
                       {"run_id", run},
                       {"pipeline", "p"},
                       {"state", state},
                       {"tasks", {{"RUNNING", 1}}}});
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<nlohmann::json> pushed_;
  std::vector<std::string> positions_;
  uint64_t seq_ = 0;
};

struct EventServer {
  explicit EventServer(bool with_feed = true) {
    HttpServerOptions o;
    o.bind = "127.0.0.1:0";
    o.registry = &registry;
    o.backend = &api;
    if (with_feed) o.feed_backend = &feed;
    // As alerts::AlertHistory answers: the newest first, and how many it
    // ever recorded.
    o.recent_alerts = [this](uint32_t limit) {
      std::lock_guard lock(alerts_mu);
      nlohmann::json list = nlohmann::json::array();
      for (auto it = alerts.rbegin(); it != alerts.rend() && list.size() < limit; ++it) {
        list.push_back(*it);
      }
      return nlohmann::json{{"alerts", list}, {"recorded", alerts.size()}};
    };
    auto s = HttpServer::Start(std::move(o));
    REQUIRE(s.ok());
    server = std::move(*s);
    port = std::stoi(server->bound().substr(server->bound().rfind(':') + 1));
  }
  void Alert(const std::string& type) {
    std::lock_guard lock(alerts_mu);
    alerts.push_back({{"type", type}});
  }
  std::mutex alerts_mu;
  std::vector<nlohmann::json> alerts;
  ScriptedFeed api, feed;
  Registry registry;
  std::unique_ptr<HttpServer> server;
  int port = 0;
};

// Reads from `fd` until `needle` has arrived (true) or `timeout_ms` passed.
bool ReadUntil(int fd, std::string* got, const std::string& needle, int timeout_ms = 5000) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buf[4096];
  while (got->find(needle) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    got->append(buf, static_cast<size_t>(n));
  }
  return true;
}

int OpenStream(int port, const std::string& last_id = "", const char* from = "127.0.0.1") {
  const int fd = Connect(port, from);
  std::string req = "GET /api/v1/events HTTP/1.1\r\nHost: x\r\n";
  if (!last_id.empty()) req += "Last-Event-ID: " + last_id + "\r\n";
  SendText(fd, req + "\r\n");
  return fd;
}

// The id line of the first event of `type` in `text`.
std::string IdOf(const std::string& text, const std::string& type) {
  const size_t at = text.find("event: " + type + "\n");
  REQUIRE(at != std::string::npos);
  const size_t id = text.rfind("id: ", at);
  REQUIRE(id != std::string::npos);
  return text.substr(id + 4, text.find('\n', id) - id - 4);
}

}  // namespace

TEST_CASE("an event stream gets its head, a reset, then one event per changed run", "[events]") {
  EventServer s;
  const int fd = OpenStream(s.port);
  std::string got;
  REQUIRE(ReadUntil(fd, &got, "event: hello\n"));
  CHECK(got.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(got.find("Content-Type: text/event-stream") != std::string::npos);
  CHECK(got.find("Cache-Control: no-store") != std::string::npos);
  CHECK(got.find("Content-Length") == std::string::npos);  // a stream, until close
  // The pump started with this stream: what it missed is announced as a reset.
  REQUIRE(ReadUntil(fd, &got, "event: reset\n"));
  REQUIRE(ReadUntil(fd, &got, "\"live\":true"));

  const auto pushed = std::chrono::steady_clock::now();
  s.feed.Push("r1", "RUNNING");
  REQUIRE(ReadUntil(fd, &got, "\"run_id\":\"r1\""));
  const auto took = std::chrono::steady_clock::now() - pushed;
  CHECK(took < std::chrono::seconds(1));  // pushed at once, not on a poll's period
  CHECK(got.find("event: run\ndata: {") != std::string::npos);
  CHECK(got.find("\"seq\"") == std::string::npos);  // events carry the hub's ids only
  ::close(fd);
}

TEST_CASE("every alert delivered while a stream is open is an alert event, oldest first",
          "[events]") {
  EventServer s;
  const int fd = OpenStream(s.port);
  std::string got;
  REQUIRE(ReadUntil(fd, &got, "\"live\":true"));
  // The pump's first look only counts what is there; give it a look or two.
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  s.Alert("run_failed");
  s.Alert("retries_exhausted");
  REQUIRE(ReadUntil(fd, &got, "retries_exhausted"));
  const size_t first = got.find("event: alert\ndata: {\"type\":\"run_failed\"}");
  const size_t second = got.find("event: alert\ndata: {\"type\":\"retries_exhausted\"}");
  REQUIRE(first != std::string::npos);
  REQUIRE(second != std::string::npos);
  CHECK(first < second);
  ::close(fd);
}

TEST_CASE("a stream that comes back with Last-Event-ID gets what it missed, else a reset",
          "[events]") {
  EventServer s;
  int fd = OpenStream(s.port);
  std::string got;
  REQUIRE(ReadUntil(fd, &got, "\"live\":true"));
  s.feed.Push("r1", "RUNNING");
  REQUIRE(ReadUntil(fd, &got, "\"run_id\":\"r1\""));
  const std::string seen = IdOf(got, "run");
  ::close(fd);

  // r2 changes after the first stream left; another client sees it go by.
  fd = OpenStream(s.port, "", "127.0.0.5");
  got.clear();
  REQUIRE(ReadUntil(fd, &got, "event: hello\n"));
  s.feed.Push("r2", "SUCCESS");
  REQUIRE(ReadUntil(fd, &got, "\"run_id\":\"r2\""));
  ::close(fd);

  fd = OpenStream(s.port, seen);
  got.clear();
  REQUIRE(ReadUntil(fd, &got, "event: hello\n"));
  CHECK(got.find("\"run_id\":\"r2\"") != std::string::npos);  // replayed
  CHECK(got.find("\"run_id\":\"r1\"") == std::string::npos);  // already seen
  CHECK(got.find("event: reset") == std::string::npos);
  ::close(fd);

  fd = OpenStream(s.port, "0123456789abcdef.7");  // another hub's id
  got.clear();
  REQUIRE(ReadUntil(fd, &got, "event: hello\n"));
  CHECK(got.find("event: reset\n") != std::string::npos);
  CHECK(got.find("\"run_id\"") == std::string::npos);
  ::close(fd);
}

TEST_CASE("one address holds only so many event streams, and past that a 503 says to poll",
          "[events]") {
  EventServer s;
  std::vector<int> open;
  for (int i = 0; i < 16; ++i) {
    open.push_back(OpenStream(s.port, "", "127.0.0.3"));
    std::string got;
    REQUIRE(ReadUntil(open.back(), &got, "event: hello\n"));
  }
  const int refused = OpenStream(s.port, "", "127.0.0.3");
  std::string got;
  ReadUntil(refused, &got, "poll the API", 5000);
  CHECK(got.rfind("HTTP/1.1 503", 0) == 0);
  ::close(refused);
  const int other = OpenStream(s.port, "", "127.0.0.4");  // another address still may
  got.clear();
  CHECK(ReadUntil(other, &got, "event: hello\n"));
  ::close(other);
  for (int fd : open) ::close(fd);
}

TEST_CASE("without a feed the events route says to poll, and the overview history is served",
          "[events]") {
  EventServer s(/*with_feed=*/false);
  const int fd = OpenStream(s.port);
  std::string got;
  ReadUntil(fd, &got, "poll the API");
  CHECK(got.rfind("HTTP/1.1 503", 0) == 0);
  ::close(fd);

  const int h = Connect(s.port);
  SendText(h, "GET /api/v1/overview/history HTTP/1.1\r\nHost: x\r\n\r\n");
  got = apollo11::testing::ReadAll(h);
  ::close(h);
  const size_t body = got.find("\r\n\r\n");
  REQUIRE(body != std::string::npos);
  auto doc = nlohmann::json::parse(got.substr(body + 4));
  CHECK(doc["interval_ms"] == 5000);
  CHECK(doc["columns"][0] == "time_ms");
  CHECK(doc["columns"][1] == "apollo11_tasks_waiting");
  // The reader samples on its first tick, before any request.
  CHECK(doc["samples"].size() >= 1);
}
