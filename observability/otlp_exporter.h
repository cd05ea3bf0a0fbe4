#pragma once
// Span export over OTLP/HTTP JSON (--otlp-endpoint): every run that ends
// (SUCCESS, FAILED, CANCELED) becomes a trace (observability/otlp_spans.h)
// posted to the collector.
//
// Two threads of the exporter's own, so the coordinator never waits on a
// collector:
//  - the feed thread long-polls the coordinator's change feed (the
//    `changes` query, actors/scheduler/change_feed.h) on a backend link of
//    its own, reads each run that reached a final state (`run`, `status`,
//    `execution`, `history`) and queues its spans; it follows only while
//    `leading` says this node's coordinator leads, and starts from where the
//    feed is when it (re)starts: runs that ended before are not exported;
//  - the sender thread posts the queued spans in batches, retrying a batch
//    the collector could not take (429, 502, 503, 504, no answer) with
//    doubling pauses, and drops it after the last attempt.
// The queue is bounded (runs and spans); past it the oldest runs are
// dropped. What was exported, dropped (by reason) and failed is counted in
// the registry (apollo11_otlp_*), and failures are logged at most a few
// times a minute.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "common/duration.h"
#include "common/log_limiter.h"
#include "common/mutex.h"
#include "common/status.h"
#include "observability/api_backend.h"
#include "observability/metrics_registry.h"
#include "observability/otlp_http.h"
#include "observability/otlp_span_queue.h"
#include "observability/otlp_spans.h"

namespace apollo11::observability {

struct OtlpExporterOptions {
  OtlpEndpoint endpoint;
  // The coordinator's answers, on a link of the exporter's own (only the
  // feed thread uses it). Must outlive the exporter.
  ApiBackend* backend = nullptr;
  // Where the apollo11_otlp_* metrics are registered. Must outlive the exporter.
  Registry* registry = nullptr;
  OtlpResource resource;
  // Whether this node's coordinator leads (with HA a standby's queries are
  // answered by the leader, whose own exporter sends its runs); null: always.
  // Called on the feed thread.
  std::function<bool()> leading;
  OtlpSpanLimits limits;
  size_t max_queued_runs = 1000;
  size_t max_queued_spans = 100000;
  size_t max_batch_spans = 512;  // spans in one POST
  int max_attempts = 6;          // POSTs of one batch before it is dropped
  Millis first_backoff{1000};    // before the second POST; doubles, up to max_backoff
  Millis max_backoff{16000};
  Millis max_retry_after{30000};  // a collector's Retry-After is honoured up to this
  Millis timeout{5000};           // one POST: connecting, and each read and write
  uint32_t wait_ms = 1000;        // one long poll of the change feed
  Millis flush_on_stop{3000};     // how long Stop keeps sending what is queued
};

class OtlpExporter {
 public:
  // Registers the metrics and starts both threads. InvalidInput without a
  // backend or registry.
  static Result<std::unique_ptr<OtlpExporter>> Start(OtlpExporterOptions options);
  // Stop().
  ~OtlpExporter();
  OtlpExporter(const OtlpExporter&) = delete;
  OtlpExporter& operator=(const OtlpExporter&) = delete;

  // Stops following the feed, sends what is queued for up to flush_on_stop
  // (without retries), then joins both threads. What is left is counted as
  // dropped (reason "stopped"). Idempotent; from the thread that owns the
  // exporter.
  void Stop();

 private:
  struct Metrics {
    Counter* exported;
    Counter* failures;
    Counter* feed_gaps;
    Counter* dropped_queue_full;
    Counter* dropped_export_failed;
    Counter* dropped_rejected;
    Counter* dropped_run_too_large;
    Counter* dropped_unreadable;
    Counter* dropped_stopped;
    Gauge* queued;
  };
  explicit OtlpExporter(OtlpExporterOptions options);
  void RegisterMetrics();

  // Feed thread.
  void FeedLoop(std::stop_token stop);
  // One long poll; false when the coordinator could not be asked.
  bool PollChanges(std::string* position);
  // Reads run `run_id` and queues its spans (or counts why not).
  void ExportRun(const std::string& run_id);
  // Whether `run_id` was exported lately (a run may show up final twice).
  bool SeenBefore(const std::string& run_id);
  void Enqueue(RunSpans spans);

  // Sender thread.
  void SendLoop();
  // Posts `batch` until delivered, refused for good, out of attempts, or
  // (after the first attempt) the exporter stops.
  void Send(std::vector<nlohmann::json> batch, OtlpHttpClient* client);
  // Waits `pause` unless the exporter stops first; false when it stopped.
  bool PauseUnlessStopping(Millis pause);

  // Logs `message` as a warning unless too many were logged lately.
  void Warn(const std::string& message);

  const OtlpExporterOptions options_;
  Metrics metrics_{};
  Mutex log_mu_;
  LogLimiter warnings_ GUARDED_BY(log_mu_);

  Mutex mu_;
  CondVar changed_;
  OtlpSpanQueue queue_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point flush_deadline_ GUARDED_BY(mu_);

  // The feed thread's own.
  std::deque<std::string> seen_order_;
  std::unordered_set<std::string> seen_;

  std::jthread feed_, sender_;
};

}  // namespace apollo11::observability
