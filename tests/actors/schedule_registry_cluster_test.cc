// Schedules of registered pipelines on a real node, through the CLI and the
// HTTP API: fires start pinned runs, pause skips fires, backfill runs past
// times once, `pipelines` shows next and last fire, and a kill -9 at each
// point between "fire journaled" and "run started" runs each time once.

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/timestamp_parse.h"
#include "tests/actors/cli_harness.h"
#include "tests/actors/node_harness.h"

namespace apollo11::testing {
namespace {

using namespace std::chrono_literals;

std::string EverySecond(const std::string& name, const std::string& extra = "") {
  return "version: \"1.0\"\nname: " + name + "\nschedule: \"* * * * * *\"\noverlap: allow\n" +
         extra + "pipeline:\n  - {id: a, type: noop}\n";
}

std::vector<std::string> NodeArgs(const std::string& state) {
  return {"--role",      "all",
          "--state-dir", state,
          "--bind",      "tcp://127.0.0.1:0",
          "--api-bind",  "tcp://127.0.0.1:0",
          "--slots",     "4",
          "--worker-id", "w1"};
}

// The runs of `pipeline` the node lists, by run id.
std::map<std::string, nlohmann::json> RunsOf(const NodeProcess& node, const std::string& pipeline) {
  std::map<std::string, nlohmann::json> out;
  auto listed = ParseJson(node.Cli({"runs", "--json", "--limit", "1000"}).out);
  if (!listed.is_array()) return out;
  for (const auto& r : listed) {
    if (r.value("pipeline", "") == pipeline) out[r.value("run_id", "")] = r;
  }
  return out;
}

// `pipelines show NAME --json`'s fires, newest first.
nlohmann::json FiresOf(const NodeProcess& node, const std::string& name) {
  auto shown = ParseJson(node.Cli({"pipelines", "show", name, "--json", "--fires", "1000"}).out);
  return shown.is_object() && shown.contains("fires") ? shown["fires"] : nlohmann::json::array();
}

// How many fires of `name` were skipped because the pipeline is paused: each
// one is a scheduled time the schedule decided while the pause held.
size_t PausedFires(const NodeProcess& node, const std::string& name) {
  size_t n = 0;
  for (const auto& f : FiresOf(node, name)) {
    n += f.value("state", "") == "skipped" &&
         f.value("reason", "").find("paused") != std::string::npos;
  }
  return n;
}

std::string Stamp(Micros t) { return FormatTimestamp(t); }

Micros NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
             .count() *
         kMicrosPerSecond;
}

// Every started fire names a distinct run of the pipeline, every run of the
// pipeline is named by exactly one fire, and no scheduled time is twice.
void CheckOneRunPerTime(const nlohmann::json& fires,
                        const std::map<std::string, nlohmann::json>& runs) {
  std::set<std::string> times, fired_runs;
  for (const auto& f : fires) {
    INFO(f.dump());
    CHECK(times.insert(f.value("scheduled_at", "")).second);
    if (f.value("state", "") != "started") continue;
    CHECK(fired_runs.insert(f.value("run_id", "")).second);
    CHECK(runs.count(f.value("run_id", "")) == 1);
  }
  CHECK(fired_runs.size() == runs.size());
}

}  // namespace

TEST_CASE("a registered schedule fires pinned runs, pauses, backfills and shows its fires",
          "[schedule][registry][cluster]") {
  ScratchDir dir;
  NodeProcess node(dir, "node", NodeArgs(dir.path() + "/state"));
  INFO(node.Log());
  const std::string file = dir.Write("reg.yaml", EverySecond("t.reg"));
  CmdResult added = node.Cli({"pipelines", "add", file});
  INFO(added.err);
  REQUIRE(added.exit_code == 0);
  // Registering runs nothing; the schedule does, pinned to version 1.
  REQUIRE(WaitFor([&] { return RunsOf(node, "t.reg").size() >= 3; }, 15000));
  for (const auto& [id, run] : RunsOf(node, "t.reg")) CHECK(run.value("pipeline_version", 0) == 1);
  CHECK(node.Log().find("schedule of t.reg@1") != std::string::npos);

  auto listed = ParseJson(node.Cli({"pipelines", "--json"}).out);
  nlohmann::json entry;
  for (const auto& p : listed) {
    if (p.value("name", "") == "t.reg") entry = p;
  }
  INFO(listed.dump());
  REQUIRE(entry.contains("schedule"));
  CHECK(entry["schedule"].value("cron", "") == "* * * * * *");
  CHECK(entry["schedule"]["next_fire"].is_string());
  CHECK(entry["schedule"]["last_fire"].is_string());
  CmdResult table = node.Cli({"pipelines"});
  CHECK(table.out.find("NEXT FIRE") != std::string::npos);

  SECTION("pause skips fires with a reason; unpause resumes them") {
    REQUIRE(node.Cli({"pause", "t.reg"}).exit_code == 0);
    // The first fire skipped as paused: the pause holds, and every fire
    // decided before it has its run (committed with the fire's record).
    REQUIRE(WaitFor([&] { return PausedFires(node, "t.reg") >= 1; }, 10000));
    const size_t paused_at = RunsOf(node, "t.reg").size();
    // Two more scheduled times decided while paused; none may start a run.
    const size_t skipped_at = PausedFires(node, "t.reg");
    REQUIRE(WaitFor([&] { return PausedFires(node, "t.reg") >= skipped_at + 2; }, 10000));
    CHECK(RunsOf(node, "t.reg").size() == paused_at);
    bool skipped = false;
    for (const auto& f : FiresOf(node, "t.reg")) {
      if (f.value("state", "") == "skipped" &&
          f.value("reason", "").find("paused") != std::string::npos) {
        skipped = true;
      }
    }
    CHECK(skipped);
    // A trigger while paused is refused as the request's fault (exit 2),
    // not an internal error; the HTTP API says 409 (the same refusal).
    CmdResult trigger = node.Cli({"trigger", "t.reg"});
    CHECK(trigger.exit_code == 2);
    CHECK(trigger.err.find("is paused") != std::string::npos);
    // The table shows no next fire for it: nothing will start.
    CmdResult paused_table = node.Cli({"pipelines"});
    CHECK(paused_table.out.find("(paused)") != std::string::npos);
    REQUIRE(node.Cli({"unpause", "t.reg"}).exit_code == 0);
    CHECK(WaitFor([&] { return RunsOf(node, "t.reg").size() >= paused_at + 2; }, 10000));
  }

  SECTION("backfill runs each past time once, with the schedule's fires") {
    const Micros now = NowSeconds();
    // A dry run lists the 6 times and queues none of them.
    CmdResult preview =
        node.Cli({"backfill", "t.reg", "--from", Stamp(now - 120 * kMicrosPerSecond), "--to",
                  Stamp(now - 115 * kMicrosPerSecond), "--dry-run"});
    INFO(preview.out << preview.err);
    REQUIRE(preview.exit_code == 0);
    CHECK_THAT(preview.out, Catch::StartsWith("backfill of t.reg would queue 6 scheduled time(s) "
                                              "(dry run: nothing queued)\n  "));
    CHECK(std::count(preview.out.begin(), preview.out.end(), '\n') == 7);
    CmdResult filled =
        node.Cli({"backfill", "t.reg", "--from", Stamp(now - 120 * kMicrosPerSecond), "--to",
                  Stamp(now - 115 * kMicrosPerSecond), "--max-active", "2", "--json"});
    INFO(filled.out << filled.err);
    REQUIRE(filled.exit_code == 0);
    CHECK(ParseJson(filled.out).value("queued", 0) == 6);
    // Again: every time has a fire record now, nothing more is queued.
    CmdResult again = node.Cli({"backfill", "t.reg", "--from", Stamp(now - 120 * kMicrosPerSecond),
                                "--to", Stamp(now - 115 * kMicrosPerSecond), "--json"});
    CHECK(ParseJson(again.out).value("queued", -1) == 0);
    REQUIRE(WaitFor(
        [&] {
          size_t started = 0;
          for (const auto& f : FiresOf(node, "t.reg")) {
            started += f.value("origin", "") == "backfill" && f.value("state", "") == "started";
          }
          return started == 6;
        },
        15000));
    CmdResult future = node.Cli(
        {"backfill", "t.reg", "--from", Stamp(now), "--to", Stamp(now + 3600 * kMicrosPerSecond)});
    CHECK(future.exit_code != 0);
    CHECK(future.err.find("in the future") != std::string::npos);
    CmdResult garbage = node.Cli({"backfill", "t.reg", "--from", "yesterday", "--to", "today"});
    CHECK(garbage.exit_code != 0);
    CHECK(garbage.err.find("not a timestamp") != std::string::npos);
    // Paused, no fire lands between the two listings (one did, on a slow
    // sanitizer build: a fire listed whose run the runs listing before it
    // did not have yet).
    REQUIRE(node.Cli({"pause", "t.reg"}).exit_code == 0);
    // A fire skipped as paused: every fire decided before it has its run.
    REQUIRE(WaitFor([&] { return PausedFires(node, "t.reg") >= 1; }, 10000));
    const nlohmann::json fires = FiresOf(node, "t.reg");
    CheckOneRunPerTime(fires, RunsOf(node, "t.reg"));
  }

  SECTION("a version without a schedule, or rm, stops the fires") {
    // t.tick fires every second as t.reg did, in the same pass over the
    // schedules: each fire it gains shows a time at which t.reg, had it kept
    // its schedule, would have fired too.
    REQUIRE(
        node.Cli({"pipelines", "add", dir.Write("tick.yaml", EverySecond("t.tick"))}).exit_code ==
        0);
    auto ticks_past = [&](size_t n) {
      const size_t from = FiresOf(node, "t.tick").size();
      return WaitFor([&] { return FiresOf(node, "t.tick").size() >= from + n; }, 10000);
    };
    const std::string plain = dir.Write(
        "plain.yaml", "version: \"1.0\"\nname: t.reg\npipeline:\n  - {id: b, type: noop}\n");
    REQUIRE(node.Cli({"pipelines", "add", plain}).exit_code == 0);
    REQUIRE(ticks_past(1));  // a pass after the change: what came before it has landed
    const size_t after = RunsOf(node, "t.reg").size();
    REQUIRE(ticks_past(2));
    CHECK(RunsOf(node, "t.reg").size() == after);
    CHECK(node.Log().find("schedule of t.reg removed") != std::string::npos);
    REQUIRE(node.Cli({"pipelines", "add", file}).exit_code == 0);  // version 3, scheduled
    REQUIRE(WaitFor([&] { return RunsOf(node, "t.reg").size() >= after + 2; }, 10000));
    REQUIRE(node.Cli({"pipelines", "rm", "t.reg"}).exit_code == 0);
    REQUIRE(ticks_past(1));
    const size_t removed = RunsOf(node, "t.reg").size();
    REQUIRE(ticks_past(2));
    CHECK(RunsOf(node, "t.reg").size() == removed);
  }
}

// $APOLLO11_TEST_FAULT kills the node (SIGKILL) at the first fire: after
// the fire and its run are staged and before their commit, or after the
// commit and before the run's first dispatch. A restart must run that time
// once: again (catch-up) when the kill came before the commit, never again
// when it came after.
TEST_CASE("a kill -9 between a fire's journaling and its run runs that time once",
          "[schedule][registry][cluster][chaos]") {
  const std::string fault =
      GENERATE(std::string("sched-before-commit"), std::string("sched-after-commit"));
  INFO(fault);
  ScratchDir dir;
  const std::string state = dir.path() + "/state";
  const std::string file =
      dir.Write("f.yaml", EverySecond("t.fault", "catchup: all\ncatchup_window: 10m\n"));
  ::setenv("APOLLO11_TEST_FAULT", fault.c_str(), 1);
  {
    NodeProcess doomed(dir, "doomed", NodeArgs(state));
    ::unsetenv("APOLLO11_TEST_FAULT");
    REQUIRE(doomed.Cli({"pipelines", "add", file}).exit_code == 0);
    REQUIRE(WaitFor([&] { return doomed.Log().find("test fault: killed") != std::string::npos; },
                    10000));
  }
  std::this_thread::sleep_for(1500ms);  // at least one more time passes while it is down
  NodeProcess node(dir, "node", NodeArgs(state));
  INFO(node.Log());
  REQUIRE(WaitFor([&] { return RunsOf(node, "t.fault").size() >= 4; }, 15000));
  REQUIRE(node.Cli({"pause", "t.fault"}).exit_code == 0);
  // Every run ends SUCCESS (the one committed before the kill included).
  REQUIRE(WaitFor(
      [&] {
        for (const auto& [id, run] : RunsOf(node, "t.fault")) {
          if (run.value("state", "") != "SUCCESS") return false;
        }
        return true;
      },
      15000));
  const nlohmann::json fires = FiresOf(node, "t.fault");
  INFO(fires.dump(1));
  CheckOneRunPerTime(fires, RunsOf(node, "t.fault"));
  // The time the kill interrupted and the times while the node was down were
  // caught up (catchup: all): the fires cover every second from the first
  // to the last, each once.
  std::vector<Micros> times;
  for (const auto& f : fires) times.push_back(*ParseTimestamp(f.value("scheduled_at", "")));
  std::sort(times.begin(), times.end());
  REQUIRE(times.size() >= 4);
  for (size_t i = 1; i < times.size(); ++i) CHECK(times[i] - times[i - 1] == kMicrosPerSecond);
}

}  // namespace apollo11::testing
