#pragma once
// The spans of finished runs waiting to be sent to the collector, oldest
// first, bounded in runs and in spans: a collector that is down for long
// costs the node a bounded amount of memory, and what no longer fits is
// dropped oldest first (the newest runs are what an operator looks at).
// Not thread-safe: its owner (observability/otlp_exporter.h) guards it.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <vector>

namespace apollo11::observability {

class OtlpSpanQueue {
 public:
  OtlpSpanQueue(size_t max_runs, size_t max_spans) : max_runs_(max_runs), max_spans_(max_spans) {}

  // Appends one run's spans, dropping the oldest runs (or what is left of
  // them) until both bounds hold. Returns the number of spans dropped: the
  // run's own when it alone holds more than max_spans.
  uint64_t Push(std::vector<nlohmann::json> spans);
  // Takes up to `max` spans from the front, in order; a run's spans may
  // be split over two batches.
  std::vector<nlohmann::json> TakeBatch(size_t max);

  bool empty() const { return runs_.empty(); }
  size_t runs() const { return runs_.size(); }
  size_t spans() const { return spans_; }

 private:
  const size_t max_runs_, max_spans_;
  std::deque<std::deque<nlohmann::json>> runs_;  // oldest first, none empty
  size_t spans_ = 0;
};

}  // namespace apollo11::observability
