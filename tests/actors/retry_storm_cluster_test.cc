// Retry-storm control through real processes (brief 5.3): 500 tasks fail at
// once against a fake "database down" (a shell task that fails until a file
// exists). With --max-retrying 50 the coordinator never has more than 50
// retries waiting with a timer (apollo11_retrying, scraped during the storm),
// the others queue, and the retry start times (RETRYING -> READY in the
// journal) spread over seconds instead of landing together. Figures are
// printed and asserted loosely: the machine is shared.

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <thread>

#include "tests/actors/cluster_harness.h"
#include "tests/observability/prom_parser.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

constexpr int kTasks = 500;
constexpr int kCap = 50;

httplib::Client Http(const NodeProc& node) {
  const std::string addr = node.listening["http"].get<std::string>();
  httplib::Client c(addr.substr(0, addr.rfind(':')), std::stoi(addr.substr(addr.rfind(':') + 1)));
  c.set_read_timeout(30, 0);
  return c;
}

std::string StormPipeline(const std::string& flag) {
  std::string yaml = R"(version: "1.0"
name: shop.storm
pipeline:
)";
  for (int i = 0; i < kTasks; ++i) {
    yaml += "  - {id: t" + std::to_string(i) + ", type: shell, command: \"test -f " + flag +
            "\", retry: {max_retries: 30, delay: 500ms}}\n";
  }
  return yaml;
}

}  // namespace

TEST_CASE("500 tasks failing at once retry under the --max-retrying cap, spread over time",
          "[retry][storm][cluster]") {
  ScratchDir dir;
  const std::string flag = dir.path() + "/db-up";
  NodeProc coord = StartNode(
      dir, "coord",
      {"--role", "coordinator", "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
       "--max-retrying", std::to_string(kCap), "--max-backlog", "1000"});
  NodeProc worker = StartWorker(dir, coord, "w1", 16);
  Nodes nodes{{&coord, &worker}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 10000));

  // Scrape apollo11_retrying while the storm lasts.
  std::atomic<bool> done{false};
  std::atomic<double> max_retrying{0}, max_queued{0};
  std::jthread scraper([&] {
    while (!done) {
      auto res = Http(coord).Get("/metrics");
      if (res && res->status == 200) {
        PromScrape s = ParsePrometheusText(res->body);
        max_retrying = std::max(max_retrying.load(), s.Value("apollo11_retrying"));
        max_queued = std::max(max_queued.load(), s.Value("apollo11_retries_queued"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });

  const std::string file = dir.Write("storm.yaml", StormPipeline(flag));
  CmdResult submitted = Cli(coord, {"submit", file});
  INFO(submitted.out << submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string run_id = submitted.out.substr(0, submitted.out.find('\n'));
  // While the storm lasts, `explain` says why a queued retry waits.
  std::string explained;
  const bool queued_seen = WaitFor(
      [&] {
        for (int i = kTasks - 1; i >= kTasks - 20; --i) {
          explained = Cli(coord, {"explain", run_id, "t" + std::to_string(i)}).out;
          if (explained.find("waits for a retry slot") != std::string::npos) return true;
        }
        return false;
      },
      3000);
  INFO(explained);
  CHECK(queued_seen);
  CHECK_THAT(explained, Catch::Contains("retries already wait with a timer (--max-retrying 50)"));
  // The database comes back 4 s after the submission.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  dir.Write("db-up", "");
  std::string state;
  REQUIRE(WaitFor(
      [&] {
        auto doc = ParseJson(Cli(coord, {"status", run_id, "--json"}).out);
        state = doc.is_object() ? doc.value("state", "") : "";
        return state == "SUCCESS" || state == "FAILED";
      },
      120000));
  done = true;
  scraper.join();
  CHECK(state == "SUCCESS");

  auto res = Http(coord).Get("/api/runs/" + run_id + "/history");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  auto history = ParseJson(res->body);
  REQUIRE(history.is_array());
  std::vector<int64_t> starts;  // RETRYING -> READY: a retry's timer came due
  size_t deferred = 0;
  for (const auto& t : history) {
    if (t.value("from", "") == "RETRYING" && t.value("to", "") == "READY") {
      starts.push_back(t.value("ts_us", int64_t{0}));
    }
    if (t.value("note", false) &&
        t.value("reason", "").find("retry deferred") != std::string::npos) {
      ++deferred;
    }
  }
  REQUIRE(starts.size() >= static_cast<size_t>(kTasks));
  std::sort(starts.begin(), starts.end());
  // Retries per 100 ms: a 500 ms delay means no 100 ms window can see more
  // than the cap come due.
  std::map<int64_t, int> per_bucket;
  for (int64_t ts : starts) ++per_bucket[(ts - starts.front()) / 100'000];
  int busiest = 0;
  for (const auto& [bucket, n] : per_bucket) busiest = std::max(busiest, n);
  // The first retry of all 500: how long until the last of them started.
  const double first_wave_s =
      static_cast<double>(starts[kTasks - 1] - starts.front()) / 1'000'000.0;
  std::printf(
      "retry storm: %d tasks, cap %d: %zu retries started over %.2f s (first %d over %.2f s), "
      "busiest 100 ms: %d, max apollo11_retrying %.0f, max queued %.0f, deferred notes %zu\n",
      kTasks, kCap, starts.size(),
      static_cast<double>(starts.back() - starts.front()) / 1'000'000.0, kTasks, first_wave_s,
      busiest, max_retrying.load(), max_queued.load(), deferred);
  CHECK(max_retrying.load() <= kCap);
  CHECK(max_retrying.load() >= kCap / 2);  // it was scraped while the cap was in use
  CHECK(max_queued.load() > 0);
  CHECK(deferred >= static_cast<size_t>(kTasks - kCap));
  CHECK(busiest <= kCap);
  // 500 retries through 50 slots of >= 500 ms each need >= 4.5 s.
  CHECK(first_wave_s >= 3.0);
}
