#include "observability/event_pump.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <utility>

namespace apollo11::observability {
namespace {

using SteadyClock = std::chrono::steady_clock;
// How long one `changes` query waits for a commit; the pump looks at the
// workers and alerts between two.
constexpr uint32_t kWaitMs = 1000;
constexpr auto kLookEvery = std::chrono::seconds(1);
constexpr auto kIdleEnd = std::chrono::seconds(60);
constexpr auto kRetryAfter = std::chrono::milliseconds(500);

// The workers as the Workers page shows them, without what changes at every
// heartbeat.
std::string WorkersDigest(nlohmann::json workers) {
  auto strip = [](nlohmann::json& w) {
    if (w.is_object()) w.erase("last_heartbeat");
  };
  if (workers.is_array()) {
    for (auto& w : workers) strip(w);
  } else if (workers.is_object() && workers.contains("workers") && workers["workers"].is_array()) {
    for (auto& w : workers["workers"]) strip(w);
  }
  return workers.dump();
}

}  // namespace

EventPump::EventPump(Sources sources) : sources_(std::move(sources)) {}

EventPump::~EventPump() {
  MutexLock lock(&mu_);
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

void EventPump::Wake() {
  if (running_.load()) return;
  MutexLock lock(&mu_);
  if (running_.load()) return;
  if (thread_.joinable()) thread_.join();  // ended on its own
  running_ = true;
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

void EventPump::SetLive(bool live, const std::string& error) {
  if (live == live_) return;
  live_ = live;
  sources_.hub->SetLive(live);
  nlohmann::json status{{"live", live}};
  if (!live) status["error"] = error;
  sources_.hub->Publish("status", status.dump());
}

bool EventPump::PollChanges(std::string* position) {
  auto answer = sources_.backend->Changes(*position, kWaitMs);
  if (!answer.ok() || !answer->is_object()) {
    SetLive(false, answer.ok() ? "the coordinator's changes are not an object"
                               : answer.status().message());
    return false;
  }
  SetLive(true, "");
  const bool fresh = position->empty();
  const bool reset = answer->value("reset", false);
  *position = answer->value("feed", std::string()) + ":" +
              std::to_string(answer->value("seq", uint64_t{0}));
  if (fresh || reset) {
    // What was missed before this position cannot be listed: reread all.
    if (sources_.forget) sources_.forget("");
    sources_.hub->Publish(
        "reset", fresh ? R"({"reason":"the live events (re)started: reread what is shown"})"
                       : R"({"reason":"the coordinator restarted or another one leads: reread"})");
    return true;
  }
  const auto& changes = (*answer)["changes"];
  if (!changes.is_array() || changes.empty()) return true;
  for (const auto& c : changes) {
    if (sources_.forget) sources_.forget(c.value("run_id", std::string()));
    nlohmann::json event = c;
    event.erase("seq");  // the coordinator's numbering; events carry the hub's
    sources_.hub->Publish("run", event.dump());
  }
  return true;
}

void EventPump::LookAround() {
  auto workers = sources_.backend->Query("workers", "", 0);
  if (workers.ok()) {
    std::string digest = WorkersDigest(*workers);
    if (digest != workers_seen_) {
      const bool first = workers_seen_.empty();
      workers_seen_ = std::move(digest);
      if (!first) {
        if (sources_.forget) sources_.forget("workers");
        sources_.hub->Publish("workers", "{}");
      }
    }
  }
  LookAtAlerts();
}

void EventPump::LookAtAlerts() {
  if (!sources_.recent_alerts) return;
  // The history counts every alert it recorded: those past the last look
  // are new, oldest first (at most the newest kMaxAlertsPerLook of them).
  constexpr int64_t kMaxAlertsPerLook = 20;
  nlohmann::json head = sources_.recent_alerts(1);
  const int64_t recorded = head.value("recorded", int64_t{-1});
  if (recorded < 0) return;
  const int64_t before = std::exchange(alerts_recorded_, recorded);
  if (before < 0 || recorded <= before) return;  // the first look only counts
  const int64_t fresh = std::min(recorded - before, kMaxAlertsPerLook);
  nlohmann::json list = sources_.recent_alerts(static_cast<uint32_t>(fresh))["alerts"];
  if (!list.is_array()) return;
  if (sources_.forget) sources_.forget("alerts");
  for (auto it = list.rbegin(); it != list.rend(); ++it) sources_.hub->Publish("alert", it->dump());
}

bool EventPump::GuardedPoll(std::string* position) {
  try {
    return PollChanges(position);
  } catch (const std::exception& e) {
    // An answer whose fields have other types than the feed's (another
    // version): the thread goes on, the pages poll meanwhile.
    position->clear();
    SetLive(false, std::string("the coordinator's changes were not understood: ") + e.what());
    return false;
  }
}

void EventPump::Loop(std::stop_token stop) {
  pthread_setname_np(pthread_self(), "http-pump");
  std::string position;
  auto last_look = SteadyClock::now() - kLookEvery;
  auto idle_since = SteadyClock::now();
  while (!stop.stop_requested()) {
    const auto now = SteadyClock::now();
    if (sources_.hub->streams() > 0) {
      idle_since = now;
    } else if (now - idle_since >= kIdleEnd) {
      break;
    }
    if (!GuardedPoll(&position)) {
      for (auto waited = std::chrono::milliseconds(0);
           waited < kRetryAfter && !stop.stop_requested();
           waited += std::chrono::milliseconds(50)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      continue;
    }
    if (SteadyClock::now() - last_look >= kLookEvery) {
      last_look = SteadyClock::now();
      try {
        LookAround();
      } catch (const std::exception& e) {  // a field of an unexpected type
        spdlog::warn("live events: the workers or alerts answer was not understood: {}", e.what());
      }
    }
  }
  // A later Wake starts afresh (and publishes a reset for what was missed).
  SetLive(false, "no one watches");
  running_ = false;
}

}  // namespace apollo11::observability
