#pragma once
// Retention inside a coordinator: every `interval`, removes the runs that
// finished more than `older_than` ago (Journal::CollectGarbage) and their log
// files, then the audit records older than `audit_older_than`
// (Journal::PruneAudit): each by its own age, either may be off. It runs in the scheduler thread,
// the journal's only writer, one bounded chunk per loop turn, so a big collection never stalls
// scheduling. Scheduler thread only; time is passed in.

#include <string>

#include "common/clock.h"
#include "common/duration.h"
#include "storage/journal.h"

namespace apollo11::actors {

struct RetentionOptions {
  Millis older_than{0};             // 0: runs are kept
  Millis audit_older_than{0};       // 0: audit records are kept
  Millis interval{3'600'000};       // between passes; the first is at start
  size_t records_per_turn = 10000;  // one write transaction per loop turn
  std::string state_dir;            // whose log dirs to clean ("" = journal only)
};

class Retention {
 public:
  // `journal` must outlive this.
  Retention(storage::Journal* journal, RetentionOptions options);

  bool enabled() const {
    return options_.older_than.count() > 0 || options_.audit_older_than.count() > 0;
  }
  // When RunDue has work, as a Steady() time: 0 when disabled; `now` or
  // earlier while a pass is part-way.
  Micros NextDue() const;
  // Does one chunk of the pass when due (`steady_now` against the interval);
  // removes what finished before `wall_now` - older_than; logs what a
  // finished pass removed.
  void RunDue(Micros wall_now, Micros steady_now);
  uint64_t runs_removed() const { return runs_removed_; }
  uint64_t audit_removed() const { return audit_removed_; }

 private:
  // One chunk of the runs' part of the pass; true once it is complete (or
  // failed, and the pass ends).
  bool CollectRuns(Micros now);
  // One chunk of the audit part; true once it is complete.
  bool PruneAudit();
  // The end of a pass: the next is due an interval after `now`.
  void EndPass(Micros now);

  storage::Journal* journal_;
  RetentionOptions options_;
  bool in_pass_ = false;
  Micros next_due_ = 0;  // Steady(); 0: at the first call
  Micros cutoff_ = 0;
  Micros audit_cutoff_ = 0;
  bool runs_done_ = false;  // this pass's runs part is complete
  uint64_t pass_audit_ = 0;
  storage::Journal::GcReport pass_;
  uint64_t log_files_ = 0, log_bytes_ = 0;
  uint64_t runs_removed_ = 0;
  uint64_t audit_removed_ = 0;
};

}  // namespace apollo11::actors
