// The journal's reads of runs: a run's record and transitions, its
// executions (whole or one at a time), the newest runs and the unfinished
// ones, and pipeline snapshots. Each read is one read transaction (ReadTxn):
// any thread, see journal.h.

#include <lmdb.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "storage/journal.h"
#include "storage/journal_internal.h"
#include "storage/record_codec.h"
#include "storage/snapshot_pack.h"

namespace apollo11::storage {

Result<std::vector<TransitionRecord>> Journal::HistoryByIndex(unsigned dbi,
                                                              const std::string& key) {
  std::vector<TransitionRecord> out;
  if (key.empty() || key.size() > 511) return out;
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  Cursor cursor;
  int rc = cursor.Open(txn.get(), dbi);
  if (rc != 0) return Error(rc, "open a cursor");
  MDB_val k = Val(key), v;
  for (rc = cursor.Get(&k, &v, MDB_SET_KEY); rc == 0; rc = cursor.Get(&k, &v, MDB_NEXT_DUP)) {
    MDB_val tv;
    int found = mdb_get(txn.get(), env_->transitions, &v, &tv);
    if (found == MDB_NOTFOUND) continue;  // pruned by retention
    if (found != 0) return Error(found, "read a transition");
    Result<TransitionRecord> record =
        codec::DecodeTransition(codec::DecodeSeqKey(View(v)), View(tv));
    if (!record.ok()) return record.status();
    out.push_back(std::move(record).value());
  }
  if (rc != MDB_NOTFOUND) return Error(rc, "scan an index");
  return out;
}

Result<std::vector<TransitionRecord>> Journal::HistoryOfRun(const std::string& run_id) {
  return HistoryByIndex(env_->run_index, run_id);
}

Result<std::optional<RunRecord>> Journal::GetRun(const std::string& run_id) {
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  auto found = txn.Find(env_->runs, run_id);
  if (!found.ok()) return found.status();
  if (!found->has_value()) return std::optional<RunRecord>();
  Result<RunRecord> run = codec::DecodeRun(run_id, **found);
  if (!run.ok()) return run.status();
  return std::optional<RunRecord>(std::move(run).value());
}

Result<std::string> Journal::LastCreatedRunId() {
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  auto last = txn.Find(env_->meta, kLastRunIdKey);
  if (!last.ok()) return last.status();
  if (last->has_value()) return std::string(**last);
  // A journal written before the key existed: its greatest run id.
  Cursor cursor;
  int rc = cursor.Open(txn.get(), env_->runs);
  if (rc != 0) return Error(rc, "open a cursor");
  MDB_val k, v;
  rc = cursor.Get(&k, &v, MDB_LAST);
  if (rc == MDB_NOTFOUND) return std::string();
  if (rc != 0) return Error(rc, "find the last run id");
  return std::string(View(k));
}

Result<std::vector<RunRecord>> Journal::ListRuns(size_t limit) {
  // The newest `limit` runs are the first page of an unfiltered walk.
  if (limit == 0) return std::vector<RunRecord>{};
  RunFilter newest;
  newest.limit = limit;
  newest.max_scan = SIZE_MAX;
  auto page = ListRunsPage(newest);
  if (!page.ok()) return page.status();
  return std::move(page->runs);
}

Result<RunPage> Journal::ListRunsPage(const RunFilter& f) {
  // The walk starts just below the cursor, or below `until` if that is
  // lower: a time key is (created_at, run id), and `until` alone sorts
  // before every key of that instant.
  std::string start;
  if (!f.cursor.empty()) {
    auto below = ParseRunCursor(f.cursor);
    if (!below.ok()) return below.status();
    start = codec::EncodeSeqKey(static_cast<uint64_t>(below->first)) + below->second;
  }
  if (f.until != 0) {
    std::string until = codec::EncodeSeqKey(static_cast<uint64_t>(f.until));
    if (start.empty() || until < start) start = std::move(until);
  }
  RunPage page;
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  Cursor cursor;
  int rc = cursor.Open(txn.get(), env_->runs_by_time);
  if (rc != 0) return Error(rc, "open a cursor");
  MDB_val k, v;
  if (start.empty()) {
    rc = cursor.Get(&k, &v, MDB_LAST);
  } else {
    k = Val(start);
    rc = cursor.Get(&k, &v, MDB_SET_RANGE);  // the first key >= start: step below it
    rc = rc == 0 ? cursor.Get(&k, &v, MDB_PREV) : cursor.Get(&k, &v, MDB_LAST);
  }
  for (; rc == 0; rc = cursor.Get(&k, &v, MDB_PREV)) {
    const std::string_view key = View(k);
    if (key.size() <= 8) continue;
    const auto created = static_cast<Micros>(codec::DecodeSeqKey(key.substr(0, 8)));
    if (f.since != 0 && created < f.since) break;
    if (page.scanned == f.max_scan) {
      page.complete = false;  // page.next: the last run read
      return page;
    }
    ++page.scanned;
    const std::string_view run_id = key.substr(8);
    page.next = RunCursor(created, run_id);
    auto found = txn.Find(env_->runs, run_id);
    if (!found.ok()) return found.status();
    if (!found->has_value()) continue;
    Result<RunRecord> run = codec::DecodeRun(run_id, **found);
    if (!run.ok()) return run.status();
    if (!MatchesRunFilter(f, *run)) continue;
    page.runs.push_back(std::move(run).value());
    if (page.runs.size() == f.limit) {
      page.complete = false;
      return page;
    }
  }
  if (rc != 0 && rc != MDB_NOTFOUND) return Error(rc, "list runs");
  page.next.clear();
  return page;
}

Result<std::vector<ExecutionRecord>> Journal::ExecutionsOfRun(const std::string& run_id) {
  std::vector<ExecutionRecord> out;
  APOLLO11_RETURN_IF_ERROR(ForEachExecutionOfRun(run_id, [&out](ExecutionRecord& record) {
    out.push_back(std::move(record));
    return Status::Ok();
  }));
  return out;
}

Status Journal::ForEachExecutionOfRun(const std::string& run_id,
                                      const std::function<Status(ExecutionRecord&)>& visit) {
  const std::string prefix = run_id + ".";
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  Cursor cursor;
  int rc = cursor.Open(txn.get(), env_->executions);
  if (rc != 0) return Error(rc, "open a cursor");
  MDB_val k = Val(prefix), v;
  // A 100k-task run's records are tens of MB of pages (RssFile grew 12 MB
  // in one status read): let them go from the RSS as the scan passes (the
  // cursor's pages are mapped again on use).
  constexpr size_t kReleaseEvery = 4096;
  size_t seen = 0;
  for (rc = cursor.Get(&k, &v, MDB_SET_RANGE); rc == 0; rc = cursor.Get(&k, &v, MDB_NEXT)) {
    std::string_view exec_id = View(k);
    if (exec_id.substr(0, prefix.size()) != prefix) break;
    Result<ExecutionRecord> record = codec::DecodeExecution(exec_id, View(v));
    if (!record.ok()) return record.status();
    APOLLO11_RETURN_IF_ERROR(visit(*record));
    if (++seen % kReleaseEvery == 0) ReleaseMappedPagesLocked();
  }
  if (seen >= kReleaseEvery) ReleaseMappedPagesLocked();
  if (rc != 0 && rc != MDB_NOTFOUND) return Error(rc, "scan executions");
  return Status::Ok();
}

Result<std::optional<ExecutionRecord>> Journal::GetExecution(const std::string& exec_id) {
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  auto found = txn.Find(env_->executions, exec_id);
  if (!found.ok()) return found.status();
  if (!found->has_value()) return std::optional<ExecutionRecord>();
  Result<ExecutionRecord> record = codec::DecodeExecution(exec_id, **found);
  if (!record.ok()) return record.status();
  return std::optional<ExecutionRecord>(std::move(record).value());
}

Result<std::optional<std::string>> Journal::GetPipeline(const std::string& hash) {
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  auto found = txn.Find(env_->pipelines, hash);
  if (!found.ok()) return found.status();
  if (!found->has_value()) return std::optional<std::string>();
  auto text = UnpackSnapshot(**found);
  if ((*found)->size() >= (1u << 20)) ReleaseMappedPagesLocked();
  if (!text.ok()) {
    return Status::Corrupt("journal " + dir_ + ": pipeline snapshot " + hash + ": " +
                           text.status().message());
  }
  return std::optional<std::string>(std::move(text).value());
}

Result<std::vector<RunRecord>> Journal::UnfinishedRuns() {
  std::vector<RunRecord> out;
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  Cursor cursor;
  int rc = cursor.Open(txn.get(), env_->active_runs);
  if (rc != 0) return Error(rc, "open a cursor");
  MDB_val k, v;
  for (rc = cursor.Get(&k, &v, MDB_FIRST); rc == 0; rc = cursor.Get(&k, &v, MDB_NEXT)) {
    auto found = txn.Find(env_->runs, View(k));
    if (!found.ok()) return found.status();
    if (!found->has_value()) continue;
    Result<RunRecord> run = codec::DecodeRun(View(k), **found);
    if (!run.ok()) return run.status();
    out.push_back(std::move(run).value());
  }
  if (rc != MDB_NOTFOUND) return Error(rc, "list unfinished runs");
  return out;
}

}  // namespace apollo11::storage
