#include "cli/swappable_alert_sink.h"

#include <utility>

namespace apollo11::cli {

void SwappableAlertSink::Emit(alerts::AlertEvent event) {
  MutexLock lock(&mu_);
  if (notifier_) notifier_->Emit(std::move(event));
}

std::unique_ptr<alerts::Notifier> SwappableAlertSink::Swap(std::unique_ptr<alerts::Notifier> next) {
  MutexLock lock(&mu_);
  std::swap(notifier_, next);
  return next;
}

bool SwappableAlertSink::active() const {
  MutexLock lock(&mu_);
  return notifier_ != nullptr;
}

}  // namespace apollo11::cli
