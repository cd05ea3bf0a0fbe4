// Retention: Journal::CollectGarbage removes finished runs older than a
// cutoff in bounded write transactions (see journal.h for the contract).

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "common/ids.h"
#include "storage/journal.h"
#include "storage/journal_internal.h"
#include "storage/record_codec.h"

namespace apollo11::storage {
namespace {

// The smallest key after `key` (memcmp order): where a scan resumes.
std::string After(std::string_view key) {
  std::string next(key);
  next.push_back('\0');
  return next;
}

// Whether the run under `run_id` may be collected: final, finished before the
// cutoff, and not listed as active. Returns an LMDB code; sets *eligible and
// *hash (its pipeline).
int CheckEligible(MDB_txn* txn, MDB_dbi active_runs, MDB_dbi runs, std::string_view run_id,
                  Micros finished_before, bool* eligible, std::string* hash) {
  *eligible = false;
  MDB_val k = Val(run_id), v;
  int rc = mdb_get(txn, active_runs, &k, &v);
  if (rc == 0) return 0;  // live: never touched
  if (rc != MDB_NOTFOUND) return rc;
  rc = mdb_get(txn, runs, &k, &v);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc != 0) return rc;
  Result<RunRecord> run = codec::DecodeRun(run_id, View(v));
  if (!run.ok()) return MDB_CORRUPTED;
  const Micros ended = run->finished_at != 0 ? run->finished_at : run->created_at;
  *eligible = IsFinal(run->status) && ended < finished_before;
  *hash = run->pipeline_hash;
  return 0;
}

// Every execution id of `run_id` (keys "run_id.task"), up to `limit`.
int ExecutionsOf(MDB_txn* txn, MDB_dbi executions, const std::string& run_id, size_t limit,
                 std::vector<std::string>* out) {
  const std::string prefix = run_id + ".";
  Cursor cursor;
  int rc = cursor.Open(txn, executions);
  if (rc != 0) return rc;
  MDB_val k = Val(prefix), v;
  for (rc = cursor.Get(&k, &v, MDB_SET_RANGE); rc == 0 && out->size() < limit;
       rc = cursor.Get(&k, &v, MDB_NEXT)) {
    std::string_view id = View(k);
    if (id.substr(0, prefix.size()) != prefix) break;
    out->emplace_back(id);
  }
  return rc == MDB_NOTFOUND ? 0 : rc;
}

// The next runs_by_time key at or after `resume` ("" = the first), into
// `*time_key`; MDB_NOTFOUND past the last.
int NextRunByTime(MDB_txn* txn, MDB_dbi runs_by_time, const std::string& resume,
                  std::string* time_key) {
  Cursor cursor;
  int rc = cursor.Open(txn, runs_by_time);
  if (rc != 0) return rc;
  MDB_val k = Val(resume), v;
  rc = cursor.Get(&k, &v, resume.empty() ? MDB_FIRST : MDB_SET_RANGE);
  if (rc != 0) return rc;
  time_key->assign(View(k));
  return 0;
}

}  // namespace

// What one write transaction did; applied to the report only once it commits
// (RunWrite may replay the body after growing the map). Its Remove* steps
// delete one eligible run in `txn`, oldest records first, counting what goes
// against `budget` (the records this transaction may delete); each returns
// an LMDB code.
struct Journal::GcStep {
  std::string resume;  // runs_by_time key to continue from ("" = the start)
  bool finished = false;
  size_t deleted = 0;
  GcReport report;
  std::set<std::string> hashes;  // pipelines of the runs removed

  // The run under `time_key` (pipeline `hash`): its transitions, then its
  // executions, then the run itself, as far as the budget goes.
  int RemoveRun(MDB_txn* txn, const Env& e, const std::string& time_key, const std::string& hash,
                size_t budget);
  // 1. Transitions and their index entries, oldest first, within budget.
  int RemoveTransitions(MDB_txn* txn, const Env& e, const std::string& run_id, size_t budget);
  // One transition with its exec_index and run_index entries (its
  // run_index entry alone when the transition is gone already).
  int RemoveTransition(MDB_txn* txn, const Env& e, const std::string& run_id,
                       const std::string& seq);
  // 2. Execution records (and any exec_index entry left without its
  // transition).
  int RemoveExecutions(MDB_txn* txn, const Env& e, const std::string& run_id, size_t budget);
};

int Journal::GcDeleteStep(MDB_txn* txn, Micros finished_before, size_t budget, GcStep* step) {
  const Env& e = *env_;
  // The newest transitions may go: remember the last seq so it never repeats.
  const std::string floor = codec::EncodeSeqKey(last_seq_.load());
  MDB_val fk = Val(kSeqFloorKey), fv = Val(floor);
  if (int rc = mdb_put(txn, e.meta, &fk, &fv, 0); rc != 0) return rc;
  while (step->deleted < budget) {
    std::string time_key;
    int rc = NextRunByTime(txn, e.runs_by_time, step->resume, &time_key);
    if (rc == MDB_NOTFOUND) {
      step->finished = true;
      return 0;
    }
    if (rc != 0) return rc;
    if (time_key.size() < 8) return MDB_CORRUPTED;
    // Ordered by creation: a run created at or after the cutoff cannot have
    // finished before it, and neither can any later one.
    if (static_cast<Micros>(codec::DecodeSeqKey(time_key.substr(0, 8))) >= finished_before) {
      step->finished = true;
      return 0;
    }
    bool eligible = false;
    std::string hash;
    rc = CheckEligible(txn, e.active_runs, e.runs, time_key.substr(8), finished_before, &eligible,
                       &hash);
    if (rc != 0) return rc;
    if (!eligible) {
      step->resume = After(time_key);
      continue;
    }
    if ((rc = step->RemoveRun(txn, e, time_key, hash, budget)) != 0) return rc;
  }
  return 0;
}

int Journal::GcStep::RemoveRun(MDB_txn* txn, const Env& e, const std::string& time_key,
                               const std::string& hash, size_t budget) {
  const std::string run_id = time_key.substr(8);
  resume = time_key;  // until the run is gone, continue with it
  int rc = RemoveTransitions(txn, e, run_id, budget);
  if (rc != 0 || deleted >= budget) return rc;  // more transitions may remain
  rc = RemoveExecutions(txn, e, run_id, budget);
  if (rc != 0 || deleted >= budget) return rc;

  // 3. The run itself, last: until this commits the next GC finds it.
  MDB_val rk = Val(run_id), tk = Val(time_key);
  if ((rc = mdb_del(txn, e.runs, &rk, nullptr)) != 0) return rc;
  if ((rc = mdb_del(txn, e.runs_by_time, &tk, nullptr)) != 0) return rc;
  ++deleted;
  report.run_ids.push_back(run_id);
  if (!hash.empty()) hashes.insert(hash);
  resume = After(time_key);
  return 0;
}

int Journal::GcStep::RemoveTransitions(MDB_txn* txn, const Env& e, const std::string& run_id,
                                       size_t budget) {
  std::vector<std::string> seqs;
  {
    Cursor cursor;
    int rc = cursor.Open(txn, e.run_index);
    if (rc != 0) return rc;
    MDB_val k = Val(run_id), v;
    for (rc = cursor.Get(&k, &v, MDB_SET_KEY); rc == 0 && deleted + seqs.size() < budget;
         rc = cursor.Get(&k, &v, MDB_NEXT_DUP)) {
      seqs.emplace_back(View(v));
    }
    if (rc != 0 && rc != MDB_NOTFOUND) return rc;
  }
  for (const std::string& seq : seqs) {
    if (int rc = RemoveTransition(txn, e, run_id, seq); rc != 0) return rc;
  }
  return 0;
}

int Journal::GcStep::RemoveTransition(MDB_txn* txn, const Env& e, const std::string& run_id,
                                      const std::string& seq) {
  MDB_val sk = Val(seq), tv;
  int rc = mdb_get(txn, e.transitions, &sk, &tv);
  if (rc == 0) {
    Result<TransitionRecord> t = codec::DecodeTransition(codec::DecodeSeqKey(seq), View(tv));
    if (!t.ok()) return MDB_CORRUPTED;
    const std::string exec_id = t->exec_id.empty() ? MakeExecId(t->run_id, t->task_id) : t->exec_id;
    MDB_val ek = Val(exec_id), ev = Val(seq);
    rc = mdb_del(txn, e.exec_index, &ek, &ev);
    if (rc == 0) ++report.index_entries;
    if (rc != 0 && rc != MDB_NOTFOUND) return rc;
    if ((rc = mdb_del(txn, e.transitions, &sk, nullptr)) != 0) return rc;
    ++report.transitions;
  } else if (rc != MDB_NOTFOUND) {
    return rc;
  }
  MDB_val rk = Val(run_id), rv = Val(seq);
  if ((rc = mdb_del(txn, e.run_index, &rk, &rv)) != 0) return rc;
  ++report.index_entries;
  ++deleted;
  return 0;
}

int Journal::GcStep::RemoveExecutions(MDB_txn* txn, const Env& e, const std::string& run_id,
                                      size_t budget) {
  std::vector<std::string> execs;
  int rc = ExecutionsOf(txn, e.executions, run_id, budget - deleted, &execs);
  if (rc != 0) return rc;
  for (const std::string& exec_id : execs) {
    MDB_val k = Val(exec_id);
    if ((rc = mdb_del(txn, e.executions, &k, nullptr)) != 0) return rc;
    rc = mdb_del(txn, e.exec_index, &k, nullptr);
    if (rc != 0 && rc != MDB_NOTFOUND) return rc;
    ++report.executions;
    ++deleted;
  }
  return 0;
}

int Journal::GcRemoveUnreferencedPipelines(MDB_txn* txn, const std::set<std::string>& candidates,
                                           uint64_t* removed) {
  *removed = 0;
  if (candidates.empty()) return 0;
  std::set<std::string> unreferenced = candidates;
  {
    Cursor cursor;
    int rc = cursor.Open(txn, env_->runs);
    if (rc != 0) return rc;
    MDB_val k, v;
    for (rc = cursor.Get(&k, &v, MDB_FIRST); rc == 0 && !unreferenced.empty();
         rc = cursor.Get(&k, &v, MDB_NEXT)) {
      Result<RunRecord> run = codec::DecodeRun(View(k), View(v));
      if (!run.ok()) return MDB_CORRUPTED;
      unreferenced.erase(run->pipeline_hash);
    }
    if (rc != 0 && rc != MDB_NOTFOUND) return rc;
  }
  if (int rc = KeepRegisteredHashes(txn, &unreferenced); rc != 0) return rc;
  for (const std::string& hash : unreferenced) {
    MDB_val k = Val(hash);
    int rc = mdb_del(txn, env_->pipelines, &k, nullptr);
    if (rc == 0) ++*removed;
    if (rc != 0 && rc != MDB_NOTFOUND) return rc;
  }
  return 0;
}

Result<Journal::GcReport> Journal::CollectGarbage(Micros finished_before,
                                                  const GcOptions& options) {
  if (options.dry_run) return GcDryRun(finished_before);
  if (options_.read_only) {
    return Status::Unsupported("journal " + dir_ + " is open read-only: cannot collect garbage");
  }
  if (options.records_per_txn == 0) {
    return Status::InvalidInput("records_per_txn must be at least 1");
  }
  GcReport report;
  GcStep done;  // what committed so far
  size_t total = 0;
  while (!done.finished) {
    if (total >= options.max_records) {
      report.complete = false;
      break;
    }
    const size_t budget = std::min(options.records_per_txn, options.max_records - total);
    GcStep step;
    APOLLO11_RETURN_IF_ERROR(RunWrite("collect garbage", [&](MDB_txn* txn) {
      step = GcStep{};
      step.resume = done.resume;
      return GcDeleteStep(txn, finished_before, budget, &step);
    }));
    ++report.transactions;
    total += step.deleted;
    done.resume = step.resume;
    done.finished = step.finished;
    report.run_ids.insert(report.run_ids.end(), step.report.run_ids.begin(),
                          step.report.run_ids.end());
    report.transitions += step.report.transitions;
    report.executions += step.report.executions;
    report.index_entries += step.report.index_entries;
    done.hashes.insert(step.hashes.begin(), step.hashes.end());
  }
  if (!done.hashes.empty()) {
    uint64_t removed = 0;
    APOLLO11_RETURN_IF_ERROR(RunWrite("collect unreferenced pipelines", [&](MDB_txn* txn) {
      return GcRemoveUnreferencedPipelines(txn, done.hashes, &removed);
    }));
    ++report.transactions;
    report.pipelines = removed;
  }
  return report;
}

Result<Journal::GcReport> Journal::GcDryRun(Micros finished_before) {
  GcReport report;
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  const Env& e = *env_;
  std::set<std::string> removed_runs, hashes;
  Cursor runs;
  int rc = runs.Open(txn.get(), e.runs_by_time);
  if (rc != 0) return Error(rc, "open a cursor");
  MDB_val k, v;
  for (rc = runs.Get(&k, &v, MDB_FIRST); rc == 0; rc = runs.Get(&k, &v, MDB_NEXT)) {
    std::string_view time_key = View(k);
    if (time_key.size() < 8) return Status::Corrupt("journal " + dir_ + ": bad runs_by_time key");
    if (static_cast<Micros>(codec::DecodeSeqKey(time_key.substr(0, 8))) >= finished_before) break;
    const std::string run_id(time_key.substr(8));
    bool eligible = false;
    std::string hash;
    int erc =
        CheckEligible(txn.get(), e.active_runs, e.runs, run_id, finished_before, &eligible, &hash);
    if (erc != 0) return Error(erc, "check a run");
    if (!eligible) continue;
    report.run_ids.push_back(run_id);
    removed_runs.insert(run_id);
    if (!hash.empty()) hashes.insert(hash);
    {
      Cursor index;
      int irc = index.Open(txn.get(), e.run_index);
      if (irc != 0) return Error(irc, "open a cursor");
      MDB_val rk = Val(run_id), rv;
      irc = index.Get(&rk, &rv, MDB_SET_KEY);
      if (irc == 0) {
        size_t count = 0;
        irc = mdb_cursor_count(index.get(), &count);
        if (irc != 0) return Error(irc, "count a run's transitions");
        report.transitions += count;
        report.index_entries += count;  // run_index
      } else if (irc != MDB_NOTFOUND) {
        return Error(irc, "scan the run index");
      }
    }
    std::vector<std::string> execs;
    int xrc = ExecutionsOf(txn.get(), e.executions, run_id, SIZE_MAX, &execs);
    if (xrc != 0) return Error(xrc, "scan executions");
    report.executions += execs.size();
    for (const std::string& exec_id : execs) {
      Cursor index;  // exec_index: entries of execution values older than schema 2
      int irc = index.Open(txn.get(), e.exec_index);
      if (irc != 0) return Error(irc, "open a cursor");
      MDB_val ek = Val(exec_id), ev;
      if (index.Get(&ek, &ev, MDB_SET_KEY) != 0) continue;
      size_t count = 0;
      if ((irc = mdb_cursor_count(index.get(), &count)) != 0) return Error(irc, "count an index");
      report.index_entries += count;
    }
  }
  if (rc != 0 && rc != MDB_NOTFOUND) return Error(rc, "scan runs");
  // Pipelines of those runs that no other run references.
  if (!hashes.empty()) {
    Cursor all;
    rc = all.Open(txn.get(), e.runs);
    if (rc != 0) return Error(rc, "open a cursor");
    for (rc = all.Get(&k, &v, MDB_FIRST); rc == 0; rc = all.Get(&k, &v, MDB_NEXT)) {
      if (removed_runs.count(std::string(View(k)))) continue;
      Result<RunRecord> run = codec::DecodeRun(View(k), View(v));
      if (!run.ok()) return run.status();
      hashes.erase(run->pipeline_hash);
    }
    if (rc != MDB_NOTFOUND) return Error(rc, "scan runs");
    for (const std::string& hash : hashes) {
      auto found = txn.Find(e.pipelines, hash);
      if (!found.ok()) return found.status();
      if (found->has_value()) ++report.pipelines;
    }
  }
  return report;
}

}  // namespace apollo11::storage
