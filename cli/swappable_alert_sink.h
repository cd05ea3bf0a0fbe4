#pragma once
// The alert sink a node's coordinator emits into: it forwards to the
// node's current Notifier, which SIGHUP may replace (new alert rules)
// without the coordinator's actors knowing. With no notifier, events are
// dropped.

#include <memory>

#include "alerts/notifier.h"
#include "alerts/sink.h"
#include "common/mutex.h"

namespace apollo11::cli {

class SwappableAlertSink final : public alerts::Sink {
 public:
  // Forwards to the current notifier; never blocks longer than its Emit
  // (which never blocks). Any thread.
  void Emit(alerts::AlertEvent event) override;

  // Makes `next` (may be null) the notifier events go to and returns the
  // previous one, which no Emit uses once this returns: the caller stops it
  // (delivering what it holds).
  std::unique_ptr<alerts::Notifier> Swap(std::unique_ptr<alerts::Notifier> next);

  // True while a notifier receives the events.
  bool active() const;

 private:
  mutable Mutex mu_;
  std::unique_ptr<alerts::Notifier> notifier_ GUARDED_BY(mu_);
};

}  // namespace apollo11::cli
