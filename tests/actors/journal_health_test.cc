// JournalHealth: the scheduler's backoff and reporting while journal commits
// fail, stepped with explicit times.

#include "actors/scheduler/journal_health.h"

#include <catch2/catch.hpp>

namespace apollo11::actors {
namespace {

constexpr Micros kMs = kMicrosPerMilli;
const Status kDiskFull =
    Status::Full("journal /s/journal: commit a batch: No space left on device");

TEST_CASE("failed commits back off exponentially up to the cap, then recover", "[health]") {
  JournalHealth health("/s/journal", {Millis(250), Millis(2000), Millis(60000)});
  CHECK_FALSE(health.failing());
  CHECK(health.RetryDue(0));
  CHECK(health.retry_at() == 0);
  CHECK(health.Summary(0).empty());
  CHECK(health.ToJson(0).is_null());

  Micros now = 1'000'000;
  std::vector<Micros> delays;
  for (int i = 0; i < 6; ++i) {
    health.OnFailure(kDiskFull, 42, now);
    CHECK_FALSE(health.RetryDue(now));
    delays.push_back(health.retry_at() - now);
    now = health.retry_at();
    CHECK(health.RetryDue(now));
  }
  CHECK(delays ==
        std::vector<Micros>{250 * kMs, 500 * kMs, 1000 * kMs, 2000 * kMs, 2000 * kMs, 2000 * kMs});
  CHECK(health.failures() == 6);

  health.OnSuccess(now);
  CHECK_FALSE(health.failing());
  CHECK(health.failures() == 0);
  // A new outage starts again from the first delay.
  health.OnFailure(kDiskFull, 1, now);
  CHECK(health.retry_at() - now == 250 * kMs);
}

TEST_CASE("a failing journal is described for operators and clients", "[health]") {
  JournalHealth health("/s/journal");
  health.OnFailure(kDiskFull, 301, 5'000'000);
  const std::string summary = health.Summary(5'100'000);
  CHECK(summary.find("disk full at /s/journal") == 0);
  CHECK(summary.find("promotion paused, 301 transitions waiting") != std::string::npos);
  CHECK(summary.find("No space left on device") != std::string::npos);
  nlohmann::json j = health.ToJson(5'100'000);
  CHECK(j["kind"] == "disk_full");
  CHECK(j["waiting_transitions"] == 301);
  CHECK(j["failures"] == 1);
  CHECK(j["next_retry_in_ms"] == 150);

  JournalHealth map("/s/journal");
  map.OnFailure(Status::Full("journal /s/journal: the map is full at its maximum of 512 MiB "
                             "(max_map_size); nothing was written"),
                3, 0);
  CHECK(map.ToJson(0)["kind"] == "map_full");
  JournalHealth io("/s/journal");
  io.OnFailure(Status::Io("journal /s/journal: commit a batch: Input/output error"), 3, 0);
  CHECK(io.ToJson(0)["kind"] == "commit_failed");
  CHECK(io.Summary(0).find("commit failed at /s/journal") == 0);
}

}  // namespace
}  // namespace apollo11::actors
