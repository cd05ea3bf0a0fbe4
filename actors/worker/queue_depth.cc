#include "actors/worker/queue_depth.h"

#include <algorithm>

namespace apollo11::actors {

uint32_t PrefetchFloor(uint32_t slots) {
  return std::clamp<uint32_t>(slots > 128 ? 256 : 2 * slots, 4, 256);
}

uint32_t PrefetchCeiling(uint32_t slots) {
  return std::clamp<uint32_t>(slots > 8 ? 256 : 32 * slots, 32, 256);
}

QueueDepth::QueueDepth(uint32_t slots, uint32_t floor, uint32_t ceiling)
    : slots_(slots), floor_(std::min(floor, ceiling)), ceiling_(ceiling), depth_(floor_) {}

QueueDepth QueueDepth::Fixed(uint32_t slots, uint32_t prefetch) {
  return QueueDepth(slots, prefetch, prefetch);
}

QueueDepth QueueDepth::Adaptive(uint32_t slots, uint32_t floor, uint32_t ceiling) {
  return QueueDepth(slots, floor, ceiling);
}

void QueueDepth::Observe(Micros duration) {
  if (floor_ == ceiling_) return;
  duration = std::max<Micros>(duration, 0);
  mean_ = mean_ < 0 ? duration : mean_ + (duration - mean_) / 8;
  // slots x horizon / mean, in 64 bits; a mean under 1 µs counts as 1 µs.
  const uint64_t want = static_cast<uint64_t>(slots_) * static_cast<uint64_t>(kQueueHorizon) /
                        static_cast<uint64_t>(std::max<Micros>(mean_, 1));
  depth_ = static_cast<uint32_t>(std::clamp<uint64_t>(want, floor_, ceiling_));
}

void QueueDepth::Stop() {
  slots_ = 0;
  floor_ = ceiling_ = depth_ = 0;
}

uint32_t QueueDepth::OnHello(uint32_t held) {
  granted_capacity_ = capacity();
  // Holding more than the capacity (a shallower depth, or draining): the
  // surplus returns no credit as it finishes.
  debt_ = held > granted_capacity_ ? held - granted_capacity_ : 0;
  return granted_capacity_ > held ? granted_capacity_ - held : 0;
}

uint32_t QueueDepth::OnFreed(uint32_t freed) {
  const uint32_t now = capacity();
  if (now > granted_capacity_) {
    freed += now - granted_capacity_;
  } else {
    debt_ += granted_capacity_ - now;
  }
  granted_capacity_ = now;
  const uint32_t paid = std::min(freed, debt_);
  debt_ -= paid;
  return freed - paid;
}

}  // namespace apollo11::actors
