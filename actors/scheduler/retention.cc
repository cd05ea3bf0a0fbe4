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
    audit_cutoff_ = wall_now - options_.audit_older_than.count() * kMicrosPerMilli;
    runs_done_ = options_.older_than.count() == 0;
    pass_ = {};
    pass_audit_ = 0;
    log_files_ = log_bytes_ = 0;
  }
  if (!runs_done_) {
    if (!CollectRuns(now)) return;  // the next loop turn continues
    runs_done_ = true;
    if (!in_pass_) return;  // it failed: the pass ended
  }
  if (options_.audit_older_than.count() > 0 && !PruneAudit()) return;
  EndPass(now);
}

bool Retention::CollectRuns(Micros now) {
  storage::Journal::GcOptions chunk;
  chunk.records_per_txn = options_.records_per_turn;
  chunk.max_records = options_.records_per_turn;
  auto report = journal_->CollectGarbage(cutoff_, chunk);
  if (!report.ok()) {
    spdlog::warn("retention: {}; next attempt in {}", report.status().message(),
                 FormatDuration(options_.interval));
    EndPass(now);
    return true;
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
  if (!report->complete) return false;
  if (pass_.run_ids.empty()) {
    spdlog::debug("retention: no run finished before {}", FormatTimestamp(cutoff_));
    return true;
  }
  spdlog::info(
      "retention: removed {} runs finished before {} ({} transitions, {} executions, {} "
      "pipelines, {} log files, {} bytes of logs) in {} transactions",
      pass_.run_ids.size(), FormatTimestamp(cutoff_), pass_.transitions, pass_.executions,
      pass_.pipelines, log_files_, log_bytes_, pass_.transactions);
  return true;
}

bool Retention::PruneAudit() {
  auto removed = journal_->PruneAudit(audit_cutoff_, options_.records_per_turn);
  if (!removed.ok()) {
    spdlog::warn("retention: the audit trail: {}; next attempt in {}", removed.status().message(),
                 FormatDuration(options_.interval));
    return true;
  }
  pass_audit_ += *removed;
  audit_removed_ += *removed;
  if (*removed >= options_.records_per_turn) return false;
  if (pass_audit_ > 0) {
    spdlog::info("retention: removed {} audit records from before {}", pass_audit_,
                 FormatTimestamp(audit_cutoff_));
  }
  return true;
}

void Retention::EndPass(Micros now) {
  in_pass_ = false;
  next_due_ = now + options_.interval.count() * kMicrosPerMilli;
}

}  // namespace apollo11::actors
