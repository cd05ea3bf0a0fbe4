#pragma once
// Notifier: the node's alert delivery. Producers Emit events (any thread,
// never blocking: a bounded queue that drops its oldest entry when full);
// one delivery thread folds repeats (FoldWindow), matches the rules and
// delivers to each matching rule's webhook and command hook, retrying with
// exponential backoff and logging every failure. A slow or dead webhook
// delays other alerts, never the scheduler.

#include <atomic>
#include <functional>
#include <memory>
#include <stop_token>
#include <thread>
#include <vector>

#include "alerts/alert_history.h"
#include "alerts/alert_queue.h"
#include "alerts/alert_rule.h"
#include "alerts/fold_window.h"
#include "alerts/sink.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"

namespace apollo11::alerts {

struct NotifierOptions {
  std::vector<AlertRule> rules;
  Millis fold_window{60000};     // repeats within it become one delivery with a count
  size_t queue_capacity = 1000;  // events waiting for the delivery thread
  int command_retries = 2;       // a failing command hook is run again this often
  Millis command_backoff{500};
  // At Stop, what is still queued or folded gets one attempt per target,
  // each cut short to fit in this budget; the rest is logged as undelivered.
  Millis shutdown_budget{2000};
  // Where each delivered alert and its per-target outcome are recorded; null:
  // nowhere. Must outlive the notifier (the node owns it across reloads).
  AlertHistory* history = nullptr;
};

class Notifier final : public Sink {
 public:
  // Starts the delivery thread ("alerts"). `clock` must outlive the notifier.
  static Result<std::unique_ptr<Notifier>> Start(const Clock* clock, NotifierOptions options);
  // Stop().
  ~Notifier() override;
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  // Queues `event` when some rule matches it; any thread, never blocks on
  // delivery.
  void Emit(AlertEvent event) override;
  // Interrupts a delivery in progress, delivers what is queued and folded
  // within shutdown_budget (a node shutting down must not hang on a dead
  // webhook), then joins the thread.
  void Stop();

  struct Stats {
    uint64_t emitted = 0;    // matched at least one rule and were queued
    uint64_t dropped = 0;    // pushed out of a full queue
    uint64_t delivered = 0;  // (alert, target) pairs that succeeded
    uint64_t failed = 0;     // (alert, target) pairs given up after all attempts
    uint64_t retries = 0;    // attempts after a first failure
  };
  Stats stats() const;

 private:
  Notifier(const Clock* clock, NotifierOptions options);
  void Run(std::stop_token stop);
  // Delivers to every matching rule's targets. With `final_deadline` set
  // (shutdown): one attempt each, cut to the time left; else retries that
  // `stop` interrupts.
  void Deliver(AlertEvent& event, Micros final_deadline, std::stop_token stop);
  // Runs `attempt` (given the per-attempt time cap) up to 1 + retries times
  // with doubling backoff; returns the last attempt's status.
  Status Attempt(const AlertEvent& event, const std::string& target, int retries, Millis backoff,
                 std::stop_token stop, const std::function<Status()>& attempt);
  // Tells the history what the fold window holds, plus `waiting` (taken from
  // it, not yet delivered).
  void PublishHeld(const std::vector<AlertEvent>& waiting, size_t from);
  // Sleeps `d` unless stop is requested first; false when stopped.
  bool Sleep(std::stop_token stop, Millis d);

  const Clock* clock_;
  const NotifierOptions options_;
  mutable Mutex mu_;
  CondVar wake_;
  AlertQueue queue_ GUARDED_BY(mu_);
  uint64_t drops_logged_ GUARDED_BY(mu_) = 0;
  FoldWindow fold_;   // delivery thread only
  uint64_t seq_ = 0;  // delivery thread only
  std::atomic<uint64_t> emitted_{0}, delivered_{0}, failed_{0}, retries_{0};
  std::jthread thread_;
};

}  // namespace apollo11::alerts
