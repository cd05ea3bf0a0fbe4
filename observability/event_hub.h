#pragma once
// The node's live events (GET /api/v1/events, Server-Sent Events): the
// streams open, what each has yet to receive, and the latest events for a
// client that reconnects with Last-Event-ID. One thread writes to every
// stream without ever waiting on one: a client whose unread events pass
// Limits::max_pending bytes is cut off (it reconnects and resumes), and a
// stream that says nothing for Limits::keepalive gets a comment line, so
// proxies keep it and a dead peer is found.
//
// Event ids are "HUB.SEQ": HUB is random in each process, SEQ counts the
// events published. A Last-Event-ID of this hub whose next event is still
// kept gets the events after it; any other gets a `reset` event first (the
// client rereads what it shows). Every stream then gets a `hello` event
// ({"id", "live"}), and every event published after.
//
// Thread-safe: every method may be called from any thread.

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "observability/held_connection.h"

namespace apollo11::observability {

class EventHub {
 public:
  struct Limits {
    size_t max_streams = 256;  // open at once, in all
    size_t per_address = 16;   // open at once from one client address
    size_t keep_events = 1024;
    // Bytes a stream may have unread: 256 streams that never read hold at
    // most 64 MiB; a reading client is far below it (an event is ~200 bytes).
    size_t max_pending = 256 << 10;
    std::chrono::milliseconds keepalive{15000};
  };
  explicit EventHub(Limits limits);
  EventHub() : EventHub(Limits{}) {}
  // Closes every stream and joins the thread.
  ~EventHub();
  EventHub(const EventHub&) = delete;
  EventHub& operator=(const EventHub&) = delete;

  // Whether a stream from `ip` is taken now; false with the reason.
  bool HasRoom(const std::string& ip, std::string* why) const;
  // Takes `conn`, whose answer has not begun: writes the head (with
  // `extra_headers`, each "Name: value\r\n"), the replay or reset for
  // `last_event_id` ("" = none) and the hello, then every event published.
  // Past the limits it is closed at once.
  void Add(std::unique_ptr<HeldConnection> conn, const std::string& last_event_id,
           const std::string& extra_headers);
  // Numbers event `type` with `data` (one line of JSON), keeps it for
  // replays and queues it on every stream.
  void Publish(const std::string& type, const std::string& data);
  // Whether the events are live (the pump hears the coordinator): said in
  // each hello.
  void SetLive(bool live);

  size_t streams() const;
  // The id of the last event published ("HUB.0" before any).
  std::string last_id() const;

 private:
  struct Stream {
    std::unique_ptr<HeldConnection> conn;
    std::string out;  // queued bytes; out[0, sent) already written
    size_t sent = 0;
    std::chrono::steady_clock::time_point last_write;
  };
  struct Kept {
    uint64_t seq;
    std::string text;  // the event as written
  };
  void Loop(std::stop_token stop);
  // Writes what each stream takes now; drops the failed and the too slow.
  void Flush() REQUIRES(mu_);
  // The replay (or reset) for `last_event_id`, then the hello.
  std::string Greeting(const std::string& last_event_id) const REQUIRES(mu_);
  void Wake();

  const Limits limits_;
  const std::string token_;
  int wake_[2] = {-1, -1};
  mutable Mutex mu_;
  std::vector<Stream> streams_ GUARDED_BY(mu_);
  std::deque<Kept> kept_ GUARDED_BY(mu_);  // oldest first
  uint64_t seq_ GUARDED_BY(mu_) = 0;
  bool live_ GUARDED_BY(mu_) = false;
  std::jthread thread_;
};

}  // namespace apollo11::observability
