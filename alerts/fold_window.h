#pragma once
// Folds repeated alerts: events of the same type, pipeline and task (for
// worker_lost: the same worker) within `window` of the first become one
// delivery carrying a count (like
// Alertmanager's group_wait). The first event opens a group; the group is
// delivered when its window closes, with the latest occurrence's details.
// No clock of its own: callers pass `now`. Not thread-safe.

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "alerts/alert_event.h"

namespace apollo11::alerts {

class FoldWindow {
 public:
  explicit FoldWindow(Micros window) : window_(window) {}

  // Adds one occurrence (its `ts` is when it happened).
  void Add(AlertEvent event, Micros now);
  // Groups whose window has closed by `now`, oldest first.
  std::vector<AlertEvent> TakeDue(Micros now);
  // Every open group, closed or not (at shutdown).
  std::vector<AlertEvent> TakeAll();
  // A copy of every open group's folded event, in no particular order.
  std::vector<AlertEvent> Held() const;
  // When the next group closes; 0 when none is open.
  Micros NextDue() const;
  size_t open() const { return groups_.size(); }

 private:
  using Key = std::tuple<AlertType, std::string, std::string>;  // type, pipeline, task or worker
  static Key KeyOf(const AlertEvent& event);
  struct Group {
    AlertEvent event;
    Micros due = 0;
  };
  Micros window_;
  std::map<Key, Group> groups_;
};

}  // namespace apollo11::alerts
