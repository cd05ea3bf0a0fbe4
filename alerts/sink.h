#pragma once
// Where producers (the scheduler, dispatcher and coordinator loops) hand
// alerts. Emit only enqueues: it never blocks on delivery, never fails, and
// may be called from any thread. With alerts off, producers hold a NullSink
// instead of checking for null.

#include "alerts/alert_event.h"

namespace apollo11::alerts {

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void Emit(AlertEvent event) = 0;
};

// The sink of a node without alerts: drops every event.
class NullSink final : public Sink {
 public:
  void Emit(AlertEvent) override {}
  // A shared instance; stateless, so any thread may use it.
  static NullSink* Instance() {
    static NullSink sink;
    return &sink;
  }
};

}  // namespace apollo11::alerts
