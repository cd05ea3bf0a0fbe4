#include "common/log_limiter.h"

namespace apollo11 {

bool LogLimiter::Allow(Micros now, uint64_t* suppressed) {
  if (in_window_ == 0 || now - window_start_ >= period_) {
    window_start_ = now;
    in_window_ = 0;
  }
  if (in_window_ >= burst_) {
    ++suppressed_;
    return false;
  }
  ++in_window_;
  *suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

}  // namespace apollo11
