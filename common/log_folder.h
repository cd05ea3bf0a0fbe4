#pragma once
// Folds repeats of one log line (issue 36: a worker logged the same "is not
// the leader" line 5 to 15 times a millisecond around a failover). The first
// line with a given key is let through; its repeats within `interval` of
// the steady clock are counted instead, and the first one after the
// interval is let through with that count. TakeStale hands back the counts
// of floods that stopped, so none is lost. The key is the line itself, or
// the line without its varying parts (an epoch, a count).
//
// Unlike LogLimiter (a budget of lines per period for everything a peer can
// provoke), it keeps one count per distinct line. At most `max_keys` are
// kept (a peer can vary a line): a new key beyond that evicts the one let
// through longest ago, whose held-back count is then lost. Single-threaded:
// one owner calls it.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace apollo11 {

class LogFolder {
 public:
  explicit LogFolder(Micros interval, size_t max_keys = 256);

  // True when the line keyed `key` may be logged at `now` (Clock::Steady()):
  // its first time, or its first repeat `interval` or more after it was last
  // let through. *folded is then the number of repeats held back meanwhile.
  bool Allow(const std::string& key, Micros now, uint64_t* folded);

  // Every key with repeats held back that was let through `interval` or
  // more before `now`, with the count (which starts again at 0).
  std::vector<std::pair<std::string, uint64_t>> TakeStale(Micros now);

  // " (N more like it in the last S s)" for N held back, "" for none.
  std::string Suffix(uint64_t folded) const;

  // A key for lines that differ only in their numbers (an epoch, a count, a
  // port): `line` with each run of digits as one '#'.
  static std::string NumbersFolded(std::string_view line);

 private:
  struct Entry {
    Micros let_through = 0;  // when the line was last logged
    uint64_t held = 0;       // repeats since
  };
  Micros interval_;
  size_t max_keys_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace apollo11
