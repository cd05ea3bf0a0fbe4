#pragma once
// A small lock-free metrics registry: counters, gauges and fixed-bucket
// histograms on std::atomic, written as Prometheus text (version 0.0.4).
//
// Threads: metrics are registered at start-up (Add* takes a mutex; the
// returned references live as long as the registry). Any thread may then bump
// them: an update is one or two relaxed atomic operations, with no lock and no
// allocation, so actors call them on their hot paths. WriteText may run on
// any thread at any time; it reads each value once, so a scrape is a
// consistent-enough snapshot (a histogram's _count is the sum of the bucket
// counts it printed, so the two always agree).

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/mutex.h"

namespace apollo11::observability {

// A monotonically increasing count.
class Counter {
 public:
  void Inc(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A value that goes up and down (integers: counts of things).
class Gauge {
 public:
  void Set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  void Add(int64_t n) { value_.fetch_add(n, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// Observations counted into fixed buckets (upper bounds, ascending, in base
// units), plus their sum.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  // Non-cumulative count of bucket i (i == bounds().size() is +Inf).
  uint64_t bucket(size_t i) const { return buckets_[i].load(std::memory_order_relaxed); }
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<double> sum_{0.0};
};

// Label pairs of one time series, e.g. {{"state", "READY"}}.
using Labels = std::vector<std::pair<std::string, std::string>>;

// Bucket bounds for latencies from 50 µs to 10 s.
std::vector<double> FastLatencyBuckets();
// Bucket bounds for task durations from 1 ms to 1 h.
std::vector<double> SlowLatencyBuckets();

class Registry {
 public:
  // Registers one series of family `name` (registering the family on first
  // use). Every series of a family must have the same type and help; names
  // and label names must match Prometheus' grammar. Violations are programming
  // errors and abort.
  Counter& AddCounter(const std::string& name, const std::string& help, Labels labels = {});
  Gauge& AddGauge(const std::string& name, const std::string& help, Labels labels = {});
  Histogram& AddHistogram(const std::string& name, const std::string& help,
                          std::vector<double> bounds, Labels labels = {});
  // A gauge computed at scrape time (e.g. a ratio of two counters). `read`
  // runs on the scraping thread: it may only read atomics.
  void AddComputedGauge(const std::string& name, const std::string& help,
                        std::function<double()> read, Labels labels = {});
  // A counter computed at scrape time (e.g. CPU seconds read from /proc);
  // `read` must never decrease within a process.
  void AddComputedCounter(const std::string& name, const std::string& help,
                          std::function<double()> read, Labels labels = {});

  // The Prometheus text exposition of every family, in registration order.
  std::string WriteText() const;
  // The sum of every series of counter or gauge family `name` (0 when none
  // is registered, or for a histogram).
  double Sum(const std::string& name) const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Series {
    Labels labels;
    const Counter* counter = nullptr;
    const Gauge* gauge = nullptr;
    const Histogram* histogram = nullptr;
    std::function<double()> computed;
  };
  struct Family {
    std::string name, help;
    Type type;
    std::vector<Series> series;
  };
  Family& FamilyFor(const std::string& name, const std::string& help, Type type,
                    const Labels& labels) REQUIRES(mu_);

  mutable Mutex mu_;  // guards the family list, never the values
  std::vector<Family> families_ GUARDED_BY(mu_);
  // Deques: references stay valid as they grow.
  std::deque<Counter> counters_ GUARDED_BY(mu_);
  std::deque<Gauge> gauges_ GUARDED_BY(mu_);
  std::deque<Histogram> histograms_ GUARDED_BY(mu_);
};

}  // namespace apollo11::observability
