// A real coordinator and worker whose wall clock is stepped at runtime, with
// libfaketime (Debian package `faketime`): FAKETIME_TIMESTAMP_FILE holds the
// offset and is re-read on every call (FAKETIME_NO_CACHE), and
// FAKETIME_DONT_FAKE_MONOTONIC leaves CLOCK_MONOTONIC alone, as an NTP or
// `date -s` step would. Skipped, with a warning, where libfaketime is absent.

#include <signal.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/clock.h"
#include "common/timestamp_parse.h"
#include "tests/actors/cluster_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

const char* const kLibFaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

// Sets the faked offset ("+60s", "-60s", "+0"), atomically for the readers.
void StepWall(const ScratchDir& dir, const std::string& offset) {
  dir.Write("faketime.tmp", offset + "\n");
  std::filesystem::rename(dir.path() + "/faketime.tmp", dir.path() + "/faketime");
}

// Starts a node through `start` with the faked wall clock in its environment
// only (the test's own CLI calls keep the real one).
template <class Start>
NodeProc WithFaketime(const ScratchDir& dir, Start start) {
  // Under ASan the preloaded library comes before ASan's runtime, which ASan
  // refuses unless told not to check; it intercepts nothing libfaketime does.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_before = asan != nullptr ? asan : "";
  ::setenv("ASAN_OPTIONS", (asan_before + ":verify_asan_link_order=0").c_str(), 1);
  ::setenv("LD_PRELOAD", kLibFaketime, 1);
  ::setenv("FAKETIME_TIMESTAMP_FILE", (dir.path() + "/faketime").c_str(), 1);
  ::setenv("FAKETIME_NO_CACHE", "1", 1);
  ::setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
  NodeProc p = start();
  for (const char* name : {"LD_PRELOAD", "FAKETIME_TIMESTAMP_FILE", "FAKETIME_NO_CACHE",
                           "FAKETIME_DONT_FAKE_MONOTONIC"}) {
    ::unsetenv(name);
  }
  if (asan != nullptr) {
    ::setenv("ASAN_OPTIONS", asan_before.c_str(), 1);
  } else {
    ::unsetenv("ASAN_OPTIONS");
  }
  return p;
}

// The coordinator's wall time of w1's last heartbeat ("" when not listed):
// shows the faked step took effect.
std::string LastHeartbeat(const NodeProc& coord) {
  auto doc = ParseJson(Cli(coord, {"workers", "--json"}).out);
  if (!doc.is_array()) return "";
  for (const auto& w : doc) {
    if (w.value("id", "") == "w1") return w.value("last_heartbeat", "");
  }
  return "";
}

// Real wall time `offset_s` from now, formatted as the coordinator does.
std::string RealWall(int offset_s) {
  apollo11::SystemClock clock;
  return apollo11::FormatTimestamp(clock.Now() + offset_s * apollo11::kMicrosPerSecond);
}

// Waits until w1's last heartbeat, as the coordinator stamps it, is on the
// stepped side of `real_offset_s` from real time (the step took effect), then
// until one stamped a second later: ten heartbeats and three liveness windows
// past the step, in each of which a worker could have been declared lost.
bool WaitPastStep(const NodeProc& coord, int real_offset_s) {
  std::string first;
  const bool stepped = WaitFor(
      [&] {
        first = LastHeartbeat(coord);
        if (first.empty()) return false;
        return real_offset_s > 0 ? first > RealWall(real_offset_s)
                                 : first < RealWall(real_offset_s);
      },
      10000);
  if (!stepped) return false;
  const apollo11::Micros from = *apollo11::ParseTimestamp(first);
  return WaitFor(
      [&] {
        auto at = apollo11::ParseTimestamp(LastHeartbeat(coord));
        return at.ok() && *at >= from + apollo11::kMicrosPerSecond;
      },
      10000);
}

bool HasWorker(const NodeProc& coord, const std::string& id) {
  auto doc = ParseJson(Cli(coord, {"workers", "--json"}).out);
  if (!doc.is_array()) return false;
  for (const auto& w : doc) {
    if (w.value("id", "") == id) return true;
  }
  return false;
}

}  // namespace

TEST_CASE(
    "stepping a node's wall clock 60 s either way loses no worker, runs nothing twice and "
    "still finds a stopped worker in time",
    "[cluster][clock]") {
  if (!std::filesystem::exists(kLibFaketime)) {
    WARN("libfaketime is not installed (Debian package faketime): skipped");
    return;
  }
  ScratchDir dir;
  StepWall(dir, "+0");
  // The coordinator and one worker see the stepped clock; w2 keeps the real one.
  NodeProc coord = WithFaketime(dir, [&] { return StartCoordinator(dir); });
  NodeProc w1 = WithFaketime(dir, [&] { return StartWorker(dir, coord, "w1", 2); });
  NodeProc w2 = StartWorker(dir, coord, "w2", 2);
  Nodes guard{{&coord, &w1, &w2}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 2; }, 5000));

  const std::string d = dir.path();
  std::string yaml = "version: \"1.0\"\nname: test.clock_step\npipeline:\n";
  for (const char* id : {"a", "b", "c", "d"}) {
    yaml += std::string("  - id: ") + id +
            "\n    type: shell\n    timeout: 20s\n    command: \"touch " + d +
            "/started_$APOLLO11_TASK_ID.$APOLLO11_ATTEMPT; sleep 4\"\n";
  }
  CmdResult sub = Cli(coord, {"submit", dir.Write("step.yaml", yaml)});
  REQUIRE(sub.exit_code == 0);
  const std::string run_id = sub.out.substr(0, sub.out.find('\n'));
  REQUIRE(WaitFor(
      [&] {
        auto s = ParseJson(Cli(coord, {"status", run_id, "--json"}).out);
        if (!s.is_object()) return false;
        for (const char* id : {"a", "b", "c", "d"}) {
          if (s["tasks"][id]["state"] != "RUNNING") return false;
        }
        return true;
      },
      10000));

  // Forward 60 s (past every deadline of 20 s + grace + slack), then back
  // to 60 s behind real time.
  StepWall(dir, "+60s");
  CHECK(WaitPastStep(coord, +50));
  CHECK(WorkerCount(coord) == 2);
  CHECK(LastHeartbeat(coord) > RealWall(+50));  // the coordinator is 60 s ahead
  StepWall(dir, "-60s");
  CHECK(WaitPastStep(coord, -50));
  CHECK(WorkerCount(coord) == 2);
  CHECK(LastHeartbeat(coord) < RealWall(-50));  // and now 60 s behind

  CmdResult done = Cli(coord, {"status", run_id, "--wait", "--json"});
  INFO(done.out << done.err);
  auto s = ParseJson(done.out.substr(done.out.find('{')));
  REQUIRE(s.is_object());
  CHECK(s["state"] == "SUCCESS");
  for (const char* id : {"a", "b", "c", "d"}) {
    INFO(id);
    CHECK(s["tasks"][id]["attempts"] == 1);
    CHECK(dir.Exists(std::string("started_") + id + ".1"));
    CHECK_FALSE(dir.Exists(std::string("started_") + id + ".2"));
  }
  CHECK(dir.Read("coord.err").find("lost") == std::string::npos);

  // Still 60 s behind: a worker that stops answering is lost within
  // liveness (3 x 100 ms) and a little, not 60 s later.
  REQUIRE(::kill(w2.pid, SIGSTOP) == 0);
  const auto stopped = std::chrono::steady_clock::now();
  const bool lost = WaitFor([&] { return !HasWorker(coord, "w2"); }, 10000);
  const double after =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();
  ::kill(w2.pid, SIGCONT);
  CHECK(lost);
  WARN("a stopped worker was found lost after " << after << " s");
  CHECK(after < 3.0);
  CHECK(HasWorker(coord, "w1"));
}
