#include "observability/otlp_span_queue.h"

#include <utility>

namespace apollo11::observability {

uint64_t OtlpSpanQueue::Push(std::vector<nlohmann::json> spans) {
  if (spans.empty()) return 0;
  if (spans.size() > max_spans_ || max_runs_ == 0) return spans.size();
  uint64_t dropped = 0;
  while (!runs_.empty() && (runs_.size() + 1 > max_runs_ || spans_ + spans.size() > max_spans_)) {
    dropped += runs_.front().size();
    spans_ -= runs_.front().size();
    runs_.pop_front();
  }
  spans_ += spans.size();
  runs_.emplace_back(std::make_move_iterator(spans.begin()), std::make_move_iterator(spans.end()));
  return dropped;
}

std::vector<nlohmann::json> OtlpSpanQueue::TakeBatch(size_t max) {
  std::vector<nlohmann::json> batch;
  while (!runs_.empty() && batch.size() < max) {
    std::deque<nlohmann::json>& run = runs_.front();
    while (!run.empty() && batch.size() < max) {
      batch.push_back(std::move(run.front()));
      run.pop_front();
      --spans_;
    }
    if (run.empty()) runs_.pop_front();
  }
  return batch;
}

}  // namespace apollo11::observability
