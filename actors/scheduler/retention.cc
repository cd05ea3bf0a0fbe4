#include "actors/scheduler/retention.h"

#include <spdlog/spdlog.h>

#include <set>

#include "storage/run_logs.h"

namespace apollo11::actors {

Retention::Retention(storage::Journal* journal, RetentionOptions options)
    : journal_(journal), options_(std::move(options)) {}

Micros Retention::NextDue() const {
  if (!enabled()) return 0;
  return in_pass_ || next_due_ == 0 ? 1 : next_due_;  // 1: as soon as possible
}

void Retention::RunDue(Micros wall_now, Micros now) {
  if (!enabled() || (!in_pass_ && now < next_due_)) return;
  if (!in_pass_) {
    in_pass_ = true;
    cutoff_ = wall_now - options_.older_than.count() * kMicrosPerMilli;
    pass_ = {};
    log_files_ = log_bytes_ = 0;
  }
  storage::Journal::GcOptions chunk;
  chunk.records_per_txn = options_.records_per_turn;
  chunk.max_records = options_.records_per_turn;
  auto report = journal_->CollectGarbage(cutoff_, chunk);
  if (!report.ok()) {
    spdlog::warn("retention: {}; next attempt in {}", report.status().message(),
                 FormatDuration(options_.interval));
    in_pass_ = false;
    next_due_ = now + options_.interval.count() * kMicrosPerMilli;
    return;
  }
  if (!options_.state_dir.empty() && !report->run_ids.empty()) {
    const std::set<std::string> ids(report->run_ids.begin(), report->run_ids.end());
    storage::LogRemoval logs =
        storage::RemoveRunLogs(storage::RunLogDirs(options_.state_dir), ids, /*dry_run=*/false);
    log_files_ += logs.files;
    log_bytes_ += logs.bytes;
    for (const std::string& error : logs.errors) spdlog::warn("retention: {}", error);
  }
  runs_removed_ += report->run_ids.size();
  pass_.run_ids.insert(pass_.run_ids.end(), report->run_ids.begin(), report->run_ids.end());
  pass_.transitions += report->transitions;
  pass_.executions += report->executions;
  pass_.pipelines += report->pipelines;
  pass_.transactions += report->transactions;
  if (!report->complete) return;  // the next loop turn continues
  in_pass_ = false;
  next_due_ = now + options_.interval.count() * kMicrosPerMilli;
  if (pass_.run_ids.empty()) {
    spdlog::debug("retention: no run finished before {}", FormatTimestamp(cutoff_));
    return;
  }
  spdlog::info(
      "retention: removed {} runs finished before {} ({} transitions, {} executions, {} "
      "pipelines, {} log files, {} bytes of logs) in {} transactions",
      pass_.run_ids.size(), FormatTimestamp(cutoff_), pass_.transitions, pass_.executions,
      pass_.pipelines, log_files_, log_bytes_, pass_.transactions);
}

}  // namespace apollo11::actors
