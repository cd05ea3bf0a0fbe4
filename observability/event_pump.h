#pragma once
// What the live events say (event_hub.h), fetched from the coordinator on a
// backend link of the pump's own: the runs each commit changed, long-polled
// through the `changes` query (actors/scheduler/change_feed.h) and
// published one `run` event each; about once a second, the workers and the
// newest alert, published (`workers`, `alert`) when they differ from the
// last look. A feed the pump cannot continue (the coordinator restarted,
// or another one leads) and the pump's own start publish `reset`, so every
// client rereads; losing and finding the coordinator again publish
// `status` ({"live": false, "error"} / {"live": true}).
//
// `forget` is called before any event that says data changed, with what
// changed: a run id, "workers", "alerts", or "" for anything (a reset). The
// HTTP server forgets the shared answers that show it, so a client that
// rereads on the event sees the change and the other answers stay shared.
//
// Threads: one, started by Wake (a stream arrived) and ending a minute
// after the last stream closed, so an idle node pays nothing for it. Wake and
// the destructor from any thread.

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "observability/api_backend.h"
#include "observability/event_hub.h"

namespace apollo11::observability {

class EventPump {
 public:
  struct Sources {
    ApiBackend* backend = nullptr;  // used by the pump's thread only
    EventHub* hub = nullptr;
    std::function<void(const std::string& what)> forget;
    // The alerts delivered lately, newest first (HttpServerOptions::recent_alerts); may be null.
    std::function<nlohmann::json(uint32_t limit)> recent_alerts;
  };
  // The sources must outlive the pump.
  explicit EventPump(Sources sources);
  ~EventPump();
  EventPump(const EventPump&) = delete;
  EventPump& operator=(const EventPump&) = delete;

  // Starts the thread unless it runs.
  void Wake();

 private:
  void Loop(std::stop_token stop);
  // One long poll; false when the coordinator could not be asked.
  bool PollChanges(std::string* position);
  // PollChanges, false (and not live) when its answer throws.
  bool GuardedPoll(std::string* position);
  // The workers and the alerts delivered since the last look, published
  // when they changed.
  void LookAround();
  void LookAtAlerts();
  void SetLive(bool live, const std::string& error);

  const Sources sources_;
  Mutex mu_;
  std::jthread thread_ GUARDED_BY(mu_);
  std::atomic<bool> running_{false};
  // The pump thread's own state.
  bool live_ = false;
  std::string workers_seen_;
  int64_t alerts_recorded_ = -1;  // the alert history's count at the last look; -1: none yet
};

}  // namespace apollo11::observability
