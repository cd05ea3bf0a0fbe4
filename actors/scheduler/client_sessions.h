#pragma once
// The scheduler's clients: who subscribed to which run, the replies held
// until the commit that makes them true, and `logs` queries waiting for a
// worker. Socket-free: it takes events and appends encoded frames, each
// addressed to a client identity, for the loop to send (TakeFrames).
//
// Rules: a submission is answered only once its run is journaled, a
// confirmation only once the decision is (OnCommitted); progress and the end
// of a run go to the client that submitted it, which is forgotten after the
// end; a log request not answered by its deadline is answered with an error.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/client_protocol.h"
#include "actors/internal_messages.h"
#include "actors/scheduler/change_feed.h"
#include "common/clock.h"
#include "transport/codec.h"

namespace apollo11::actors {

// One frame for one client of the scheduler's ROUTER.
struct ClientFrame {
  std::string identity;
  std::string frame;
};

class ClientSessions {
 public:
  // How long a `logs` query waits for the worker's answer.
  static constexpr Micros kLogFetchTimeout = 5 * kMicrosPerSecond;

  // Answers `identity` now. An answer larger than the client accepts
  // (ClientLimits: it would be dropped and the client would wait for
  // nothing) is replaced by the same reply type carrying an error that names
  // the size and the limit. Every client reply is flat strings and small
  // vectors, and a string may be as large as a frame, so the frame's size
  // is the one limit to check.
  template <class T>
  void Reply(const std::string& identity, ClientType type, const T& body) {
    ClientFrame f{identity, {}};
    transport::Encode(static_cast<uint16_t>(type), body, &f.frame);
    const size_t limit = ClientLimits().max_frame;
    if constexpr (requires(T t) {
                    t.code = uint8_t{0};
                    t.error = std::string();
                  }) {
      NoteOutcome(body.code == 0, body.error);
      if (f.frame.size() > limit) {
        T refused{};
        refused.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
        refused.error = "the answer is " + std::to_string(f.frame.size()) +
                        " bytes, above the client limit of " + std::to_string(limit) +
                        " bytes; ask for less (a smaller --limit, one task)";
        f.frame.clear();
        transport::Encode(static_cast<uint16_t>(type), refused, &f.frame);
      }
    }
    frames_.push_back(std::move(f));
  }

  // What came of the request being answered, for the audit trail: set by
  // every answer (Reply of a type with a code, Accepted, Confirmed,
  // Registered) and by NoteOutcome for a request without one (a cancel);
  // TakeOutcome returns it and forgets it (nullopt: none since the last).
  struct Outcome {
    bool ok = false;
    std::string text;  // the error, or what was done
  };
  void NoteOutcome(bool ok, std::string text) { outcome_ = Outcome{ok, std::move(text)}; }
  std::optional<Outcome> TakeOutcome() { return std::exchange(outcome_, std::nullopt); }

  // Run `run_id` was accepted from `identity`: its SubmitReply is held until
  // the next successful commit, and `identity` gets the run's progress.
  void Accepted(const std::string& identity, const std::string& run_id);
  // An operator's decision, answered once the next commit succeeds.
  void Confirmed(const std::string& identity, ConfirmReply reply);
  // registry: a registry change or trigger, answered once the next commit
  // succeeds.
  void Registered(const std::string& identity, RegistryReply reply);
  // `identity` gets the progress and the end of run `run_id` (a trigger
  // that follows its run), from the next commit on.
  void Subscribe(const std::string& identity, const std::string& run_id) {
    subscribers_[run_id] = identity;
  }
  // The commit succeeded: releases every held reply, then the progress and
  // ends of runs to their subscribers, then numbers `changes` (the runs the
  // commit changed) in the feed and answers the `changes` queries waiting.
  void OnCommitted(const std::vector<RunProgress>& progress,
                   const std::vector<RunFinished>& finished, std::vector<RunChange> changes = {});

  // A `changes` query from `identity` for position `since` (change_feed.h):
  // answered at once when the feed has something newer, else at the next
  // commit that changes a run or at `deadline`, with what is there then.
  // At most kMaxChangeWaiters wait at once; past that the query is refused
  // (kBusy) rather than held.
  static constexpr size_t kMaxChangeWaiters = 32;
  void AwaitChanges(const std::string& identity, const std::string& since, Micros deadline);
  const ChangeFeed& feed() const { return feed_; }

  // A `logs` query from `identity`, answered by OnLogFetched or, after
  // `deadline` (Steady(), as every time here), by ExpireLogs. Returns the request id to send the
  // worker.
  uint64_t AwaitLog(const std::string& identity, nlohmann::json meta, Micros deadline);
  // The worker's (or the dispatcher's) answer; a late one is dropped.
  void OnLogFetched(LogFetched fetched);
  // Answers the log requests and `changes` queries whose deadline is at or
  // before `now`.
  void ExpireLogs(Micros now);
  // The earliest log or `changes` deadline, 0 when none.
  Micros NextDeadline() const;

  // The frames produced since the last call, in order.
  std::vector<ClientFrame> TakeFrames() { return std::exchange(frames_, {}); }

  size_t held_replies() const { return accepted_.size() + confirmed_.size() + registered_.size(); }
  size_t pending_logs() const { return pending_logs_.size(); }
  size_t subscribers() const { return subscribers_.size(); }

 private:
  struct PendingLog {
    std::string identity;
    nlohmann::json meta;  // exec_id, attempt, worker, stream, offset
    Micros deadline = 0;
  };

  std::map<std::string, std::string> subscribers_;  // run id -> client identity
  std::vector<std::pair<std::string, SubmitReply>> accepted_;
  std::vector<std::pair<std::string, ConfirmReply>> confirmed_;
  std::vector<std::pair<std::string, RegistryReply>> registered_;
  std::map<uint64_t, PendingLog> pending_logs_;  // by request id
  struct ChangeWaiter {
    std::string identity, since;
    Micros deadline = 0;
  };
  void AnswerChanges(const ChangeWaiter& w);
  ChangeFeed feed_;
  std::vector<ChangeWaiter> change_waiters_;
  uint64_t next_log_request_ = 1;
  std::vector<ClientFrame> frames_;
  std::optional<Outcome> outcome_;
};

}  // namespace apollo11::actors
