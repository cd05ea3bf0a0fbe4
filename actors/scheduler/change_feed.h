#pragma once
// The runs that changed in each successful commit, numbered, for a client
// that follows every run at once (the HTTP node's live events, observability/
// event_pump.h): a bounded ring of the latest changes. Socket-free; the
// long-polled `changes` queries that wait for the next change are held by
// ClientSessions.
//
// A position is "FEED:SEQ". FEED names this ring: it is random and new in
// each coordinator process, so a client sees a restart or a failover. SEQ
// is the last change the client has. An answer holds the changes after the
// position (at most kMaxPerAnswer; the client asks again for the rest) and
// the position to ask from next. A position of another feed, or one whose
// next change has left the ring, is answered with reset = true, no changes
// and the current position: the client rereads what it shows instead of
// applying a partial list. An empty position asks where the feed is now.
//
// Answer: {"feed": FEED, "seq": N, "reset": bool, "changes": [{"seq",
// "run_id", "pipeline", "state", "tasks": {STATE: count, only non-zero}}]}.

#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/ids.h"
#include "engine/task_state.h"

namespace apollo11::actors {

// One run as it stands after a commit that changed it.
struct RunChange {
  std::string run_id, pipeline;
  RunStatus status = RunStatus::kPending;
  uint32_t tasks[kTaskStateCount] = {};  // by TaskState
};

class ChangeFeed {
 public:
  static constexpr size_t kCapacity = 4096;
  static constexpr size_t kMaxPerAnswer = 512;

  // `token` names the feed (FEED above); a fresh random one by default.
  explicit ChangeFeed(std::string token = NewTraceId());

  // The changes of one successful commit, numbered from the last SEQ + 1.
  void Append(std::vector<RunChange> changes);

  // Whether `since` has something to be answered with at once: a change
  // after it, a reset, or an empty position. False: hold the query.
  bool Ready(const std::string& since) const;
  // The answer for `since` (see above), possibly without changes.
  nlohmann::json Answer(const std::string& since) const;

  const std::string& token() const { return token_; }
  uint64_t seq() const { return next_seq_ - 1; }

 private:
  struct Entry {
    uint64_t seq;
    RunChange change;
  };
  // The SEQ of `since` when it names this feed and its next change is still
  // in the ring (or not yet made); nullopt otherwise (a reset).
  std::optional<uint64_t> Position(const std::string& since) const;

  const std::string token_;
  uint64_t next_seq_ = 1;
  std::deque<Entry> ring_;  // oldest first, at most kCapacity
};

}  // namespace apollo11::actors
