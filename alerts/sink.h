#pragma once
// Where producers (the scheduler, dispatcher and coordinator loops) hand
// alerts. Emit only enqueues: it never blocks on delivery, never fails, and
// may be called from any thread. A null Sink* means alerts are off.

#include "alerts/alert_event.h"

namespace apollo11::alerts {

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void Emit(AlertEvent event) = 0;
};

}  // namespace apollo11::alerts
