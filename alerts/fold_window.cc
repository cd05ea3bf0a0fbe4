#include "alerts/fold_window.h"

#include <algorithm>

namespace apollo11::alerts {

FoldWindow::Key FoldWindow::KeyOf(const AlertEvent& event) {
  // A lost worker is about the worker, whatever task it happened to hold.
  if (event.type == AlertType::kWorkerLost) return {event.type, "", event.worker_id};
  return {event.type, event.pipeline, event.task_id};
}

void FoldWindow::Add(AlertEvent event, Micros now) {
  Key key = KeyOf(event);
  auto it = groups_.find(key);
  if (it == groups_.end()) {
    if (event.first_ts == 0) event.first_ts = event.ts;
    groups_.emplace(std::move(key), Group{std::move(event), now + window_});
    return;
  }
  // The latest occurrence describes the group best (its run, attempt and
  // stderr); the first one's time and the count say how long it has gone on.
  AlertEvent& folded = it->second.event;
  const uint32_t count = folded.count + event.count;
  const Micros first = folded.first_ts;
  folded = std::move(event);
  folded.count = count;
  folded.first_ts = first;
}

std::vector<AlertEvent> FoldWindow::TakeDue(Micros now) {
  std::vector<std::pair<Micros, AlertEvent>> due;
  for (auto it = groups_.begin(); it != groups_.end();) {
    if (it->second.due <= now) {
      due.emplace_back(it->second.due, std::move(it->second.event));
      it = groups_.erase(it);
    } else {
      ++it;
    }
  }
  std::stable_sort(due.begin(), due.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<AlertEvent> out;
  out.reserve(due.size());
  for (auto& [at, event] : due) out.push_back(std::move(event));
  return out;
}

std::vector<AlertEvent> FoldWindow::TakeAll() {
  Micros latest = 0;
  for (const auto& [key, group] : groups_) latest = std::max(latest, group.due);
  return TakeDue(latest);
}

std::vector<AlertEvent> FoldWindow::Held() const {
  std::vector<AlertEvent> out;
  out.reserve(groups_.size());
  for (const auto& [key, group] : groups_) out.push_back(group.event);
  return out;
}

Micros FoldWindow::NextDue() const {
  Micros next = 0;
  for (const auto& [key, group] : groups_) {
    if (next == 0 || group.due < next) next = group.due;
  }
  return next;
}

}  // namespace apollo11::alerts
