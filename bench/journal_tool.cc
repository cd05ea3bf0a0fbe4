// apollo11_journal_tool: what the benchmark harness needs from a journal that
// the CLI does not (yet) print.
//
//   apollo11_journal_tool history STATE_DIR RUN_ID
//       one JSON object per line: {"seq","ts_us","task_id","attempt","from","to"}
//       (`apollo11 history --json` prints ts with millisecond resolution only).
//   apollo11_journal_tool reopen DIR N
//       writes N transitions (batches of 1000, one unfinished run) into a fresh
//       journal in DIR, closes it, then times reopening it and reading what a
//       restarting coordinator reads first (last seq, epoch, unfinished runs
//       and their executions). Prints one JSON line. A proxy for "restart after
//       kill -9"; `seed` below feeds the real recovery path.
//   apollo11_journal_tool seed STATE_DIR N UNFINISHED_TASKS
//       writes a state dir as a coordinator killed mid-run leaves it: N
//       transitions in all, most of them finished runs of 1,000 noop tasks,
//       and one unfinished run of UNFINISHED_TASKS shell tasks (half SUCCESS,
//       a tenth RUNNING on worker w1, a tenth READY, the rest PENDING) with
//       its pipeline snapshot. Start `apollo11-node --role=coordinator` on it
//       to time recovery (its listening line reports recovery_ms).

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "dsl/pipeline.h"
#include "dsl/pipeline_json.h"
#include "storage/journal.h"

namespace {

using apollo11::storage::Journal;
using apollo11::storage::JournalOptions;

int History(const std::string& state_dir, const std::string& run_id) {
  JournalOptions options;
  options.read_only = true;
  auto journal = Journal::Open(state_dir + "/journal", options);
  if (!journal.ok()) {
    std::fprintf(stderr, "journal_tool: %s\n", journal.status().ToString().c_str());
    return 1;
  }
  auto records = (*journal)->HistoryOfRun(run_id);
  if (!records.ok()) {
    std::fprintf(stderr, "journal_tool: %s\n", records.status().ToString().c_str());
    return 1;
  }
  for (const apollo11::storage::TransitionRecord& r : *records) {
    nlohmann::json line = {{"seq", r.seq},
                           {"ts_us", r.ts},
                           {"task_id", r.task_id},
                           {"attempt", r.attempt},
                           {"from", ToString(r.from)},
                           {"to", ToString(r.to)}};
    std::printf("%s\n", line.dump().c_str());
  }
  return 0;
}

int Reopen(const std::string& dir, long n) {
  using Clock = std::chrono::steady_clock;
  const std::string run_id = "rbench";
  const auto fill_start = Clock::now();
  {
    JournalOptions options;
    options.sync = JournalOptions::Sync::kNoMetaSync;
    auto journal = Journal::Open(dir, options);
    if (!journal.ok()) {
      std::fprintf(stderr, "journal_tool: %s\n", journal.status().ToString().c_str());
      return 1;
    }
    Journal::Batch batch;
    apollo11::storage::RunRecord run;
    run.run_id = run_id;
    run.pipeline_name = "bench.reopen";
    run.status = apollo11::RunStatus::kRunning;
    batch.PutRun(run);
    const apollo11::TaskState kCycle[] = {
        apollo11::TaskState::kPending, apollo11::TaskState::kReady, apollo11::TaskState::kRunning,
        apollo11::TaskState::kSuccess};
    for (long i = 0; i < n; ++i) {
      const long task = i / 3;
      apollo11::storage::TransitionRecord t;
      t.ts = 1700000000000000 + i;
      t.run_id = run_id;
      t.task_id = "t" + std::to_string(task);
      t.exec_id = run_id + "." + t.task_id;
      t.attempt = 1;
      t.from = kCycle[i % 3];
      t.to = kCycle[i % 3 + 1];
      t.reason = "benchmark transition";
      t.actor = "scheduler";
      if (i % 3 == 2 || i == n - 1) {
        apollo11::storage::ExecutionRecord e;
        e.exec_id = t.exec_id;
        e.run_id = run_id;
        e.task_id = t.task_id;
        e.attempt = 1;
        e.state = t.to;
        batch.PutExecution(e);
      }
      batch.Append(std::move(t));
      if (batch.transitions() == 1000 || i == n - 1) {
        auto s = (*journal)->Commit(batch);
        if (!s.ok()) {
          std::fprintf(stderr, "journal_tool: %s\n", s.ToString().c_str());
          return 1;
        }
      }
    }
  }
  const double fill_s = std::chrono::duration<double>(Clock::now() - fill_start).count();

  const auto open_start = Clock::now();
  auto journal = Journal::Open(dir, JournalOptions{});
  if (!journal.ok()) {
    std::fprintf(stderr, "journal_tool: %s\n", journal.status().ToString().c_str());
    return 1;
  }
  const auto opened = Clock::now();
  const uint64_t last_seq = (*journal)->last_seq();
  auto epoch = (*journal)->Epoch();
  auto unfinished = (*journal)->UnfinishedRuns();
  size_t execs = 0;
  if (unfinished.ok()) {
    for (const auto& r : *unfinished) {
      auto e = (*journal)->ExecutionsOfRun(r.run_id);
      if (e.ok()) execs += e->size();
    }
  }
  const auto read = Clock::now();
  nlohmann::json out = {
      {"transitions", n},
      {"last_seq", last_seq},
      {"epoch_ok", epoch.ok()},
      {"unfinished_runs", unfinished.ok() ? unfinished->size() : 0},
      {"executions_read", execs},
      {"fill_s", fill_s},
      {"open_ms", std::chrono::duration<double, std::milli>(opened - open_start).count()},
      {"open_and_read_ms", std::chrono::duration<double, std::milli>(read - open_start).count()}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

// Appends one transition and the execution's new current state.
void Step(Journal::Batch& batch, apollo11::storage::ExecutionRecord& e, apollo11::TaskState to,
          long* seq_budget) {
  apollo11::storage::TransitionRecord t;
  t.ts = 1700000000000000 + *seq_budget;
  t.run_id = e.run_id;
  t.task_id = e.task_id;
  t.exec_id = e.exec_id;
  t.attempt = e.attempt;
  t.from = e.state;
  t.to = to;
  t.reason = "seeded transition";
  t.actor = "scheduler";
  batch.Append(std::move(t));
  e.state = to;
  --*seq_budget;
}

int Seed(const std::string& state_dir, long n, long unfinished_tasks) {
  using apollo11::TaskState;
  JournalOptions options;
  options.sync = JournalOptions::Sync::kNoMetaSync;
  auto journal = Journal::Open(state_dir + "/journal", options);
  if (!journal.ok()) {
    std::fprintf(stderr, "journal_tool: %s\n", journal.status().ToString().c_str());
    return 1;
  }
  Journal::Batch batch;
  auto commit = [&]() {
    auto s = (*journal)->Commit(batch);
    if (!s.ok()) std::fprintf(stderr, "journal_tool: %s\n", s.ToString().c_str());
    return s.ok();
  };
  // The unfinished run: independent shell tasks, in every live state.
  apollo11::dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = "bench.recovery";
  for (long i = 0; i < unfinished_tasks; ++i) {
    apollo11::dsl::TaskSpec t;
    t.id = "t" + std::to_string(i);
    t.type = apollo11::dsl::TaskType::kShell;
    t.command = "true";
    spec.tasks.push_back(std::move(t));
  }
  const std::string hash = apollo11::dsl::ContentHash(spec);
  batch.PutPipeline(hash, apollo11::dsl::CanonicalJson(spec));
  apollo11::storage::RunRecord live;
  live.run_id = "r20261129T000000-live";
  live.pipeline_name = spec.name;
  live.pipeline_hash = hash;
  live.status = apollo11::RunStatus::kRunning;
  live.task_count = static_cast<uint32_t>(unfinished_tasks);
  batch.PutRun(live);
  long budget = n;
  for (long i = 0; i < unfinished_tasks; ++i) {
    apollo11::storage::ExecutionRecord e;
    e.run_id = live.run_id;
    e.task_id = "t" + std::to_string(i);
    e.exec_id = live.run_id + "." + e.task_id;
    const long slice = i * 10 / std::max(1L, unfinished_tasks);
    if (slice < 7) {
      e.attempt = 1;
      Step(batch, e, TaskState::kReady, &budget);
      if (slice < 6) {
        e.worker_id = "w1";
        Step(batch, e, TaskState::kRunning, &budget);
      }
      if (slice < 5) Step(batch, e, TaskState::kSuccess, &budget);
    }
    batch.PutExecution(e);
    if (batch.transitions() >= 1000 && !commit()) return 1;
  }
  // Finished runs of 1,000 noop tasks fill the rest.
  for (long r = 0; budget > 0; ++r) {
    apollo11::storage::RunRecord run;
    char id[40];
    std::snprintf(id, sizeof(id), "r20261128T%06ld-done", r);
    run.run_id = id;
    run.pipeline_name = "bench.done";
    run.pipeline_hash = hash;
    run.status = apollo11::RunStatus::kSuccess;
    run.task_count = 1000;
    batch.PutRun(run);
    for (int i = 0; i < 1000 && budget > 0; ++i) {
      apollo11::storage::ExecutionRecord e;
      e.run_id = run.run_id;
      e.task_id = "t" + std::to_string(i);
      e.exec_id = run.run_id + "." + e.task_id;
      e.attempt = 1;
      Step(batch, e, TaskState::kReady, &budget);
      Step(batch, e, TaskState::kRunning, &budget);
      Step(batch, e, TaskState::kSuccess, &budget);
      batch.PutExecution(e);
      if (batch.transitions() >= 3000 && !commit()) return 1;
    }
  }
  if (!commit()) return 1;
  nlohmann::json out = {{"transitions", (*journal)->last_seq()},
                        {"unfinished_tasks", unfinished_tasks},
                        {"map_bytes", (*journal)->map_size()}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "history" && argc == 4) return History(argv[2], argv[3]);
  if (cmd == "reopen" && argc == 4) return Reopen(argv[2], std::stol(argv[3]));
  if (cmd == "seed" && argc == 5) return Seed(argv[2], std::stol(argv[3]), std::stol(argv[4]));
  std::fprintf(stderr,
               "usage: apollo11_journal_tool history STATE_DIR RUN_ID\n"
               "       apollo11_journal_tool reopen DIR N\n"
               "       apollo11_journal_tool seed STATE_DIR N UNFINISHED_TASKS\n");
  return 2;
}
