#pragma once
// Which of its coordinators a worker talks to (HA, issue 14): it keeps a
// connection to each and sends only to the current one, which should be the
// leader. The current one moves when a coordinator says it is not the leader
// (to the leader it names), when the current one has been silent for the
// liveness timeout (to the next in the list), and when another coordinator
// speaks to the worker in the newest epoch (to that one: the term's leader). Frames
// from the others are looked at only for what tells the worker about the
// leader; the epoch fence (WorkerCore) still sees every DISPATCH and CANCEL.
//
// Socket-free and single-threaded (the worker actor's thread).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "transport/codec.h"

namespace apollo11::actors {

class CoordinatorFollower {
 public:
  // What to do with a frame that arrived from one of the coordinators.
  enum class Admit : uint8_t {
    kDeliver,           // handle it as usual
    kSwitchAndDeliver,  // a newer term speaks: make its sender current, HELLO, then handle it
    kDrop,              // from a coordinator that is not current: nothing for the worker
  };

  // `endpoints` as given (--connect); empty reads as one unnamed endpoint.
  // The first is current.
  explicit CoordinatorFollower(std::vector<std::string> endpoints);

  size_t size() const { return endpoints_.size(); }
  size_t current() const { return current_; }
  const std::string& endpoint(size_t i) const { return endpoints_[i]; }
  const std::string& current_endpoint() const { return endpoints_[current_]; }

  // Coordinator `from` refused as "not the leader", naming `leader` (""
  // when it does not know). Moves the current one to `leader` when it is
  // another of the list (returns true: say HELLO there at once); else to the
  // next after `from` (returns false: wait a heartbeat before the HELLO, so
  // that coordinators with no leader among them are not asked in a loop).
  bool OnNotLeader(size_t from, const std::string& leader);
  // The current coordinator has been silent past the liveness timeout: the
  // next one becomes current.
  void OnSilent();
  // Whether to handle `envelope`, which came from coordinator `from`, when
  // the newest epoch seen so far is `epoch_seen`. From the current one:
  // always. From another: a REFUSED (its answer to an earlier HELLO); a
  // DISPATCH or CANCEL in an older epoch (for the fence to refuse and log);
  // a DISPATCH or HEARTBEAT in the newest epoch or a newer one
  // (kSwitchAndDeliver: only that term's leader speaks in it, and the sender
  // becomes current); nothing else. Never throws.
  Admit OnFrame(size_t from, const transport::Envelope& envelope, uint64_t epoch_seen);

 private:
  std::vector<std::string> endpoints_;
  size_t current_ = 0;
};

}  // namespace apollo11::actors
