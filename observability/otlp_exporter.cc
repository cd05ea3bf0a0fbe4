#include "observability/otlp_exporter.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "common/json_dump.h"

namespace apollo11::observability {
namespace {

using SteadyClock = std::chrono::steady_clock;

// How many exported run ids are remembered, so a run the feed names as
// final twice is exported once.
constexpr size_t kSeenRuns = 4096;
// The pause after the coordinator could not be asked, and while this node
// does not lead.
constexpr Millis kFeedPause{500};
// A question the coordinator did not answer is asked this many times.
constexpr int kReadAttempts = 3;
// Warnings: at most this many a minute.
constexpr int kWarningsPerMinute = 6;

bool IsFinalRunState(const std::string& state) {
  return state == "SUCCESS" || state == "FAILED" || state == "CANCELED";
}

Micros SteadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             SteadyClock::now().time_since_epoch())
      .count();
}

const char* const kDroppedHelp =
    "Spans not exported to the OTLP collector, by reason: queue_full (the oldest queued runs, "
    "while the collector is slow or down), export_failed (still refused after the last attempt), "
    "rejected (the collector refused them for good), run_too_large (attempt spans of a run over "
    "the 10,000 one run may export), unreadable (the run could not be read from the "
    "coordinator), stopped (still queued when the node stopped)";

}  // namespace

OtlpExporter::OtlpExporter(OtlpExporterOptions options)
    : options_(std::move(options)),
      warnings_(kWarningsPerMinute, 60 * kMicrosPerSecond),
      queue_(options_.max_queued_runs, options_.max_queued_spans) {}

Result<std::unique_ptr<OtlpExporter>> OtlpExporter::Start(OtlpExporterOptions options) {
  if (options.backend == nullptr || options.registry == nullptr) {
    return Status::InvalidInput("the OTLP exporter needs a backend and a metrics registry");
  }
  std::unique_ptr<OtlpExporter> exporter(new OtlpExporter(std::move(options)));
  exporter->RegisterMetrics();
  OtlpExporter* self = exporter.get();
  exporter->feed_ = std::jthread([self](std::stop_token stop) { self->FeedLoop(stop); });
  exporter->sender_ = std::jthread([self] { self->SendLoop(); });
  return exporter;
}

OtlpExporter::~OtlpExporter() { Stop(); }

void OtlpExporter::RegisterMetrics() {
  Registry& r = *options_.registry;
  metrics_.exported = &r.AddCounter("apollo11_otlp_spans_exported_total",
                                    "Spans the OTLP collector accepted (--otlp-endpoint)");
  metrics_.failures = &r.AddCounter(
      "apollo11_otlp_export_failures_total",
      "POSTs of spans to the OTLP collector that failed, each attempt counted (retries too)");
  metrics_.feed_gaps = &r.AddCounter(
      "apollo11_otlp_feed_gaps_total",
      "Times the span exporter lost its place in the coordinator's change feed (more than "
      "4,096 changes behind): runs that ended in the gap were not exported");
  auto dropped = [&r](const char* reason) {
    return &r.AddCounter("apollo11_otlp_spans_dropped_total", kDroppedHelp, {{"reason", reason}});
  };
  metrics_.dropped_queue_full = dropped("queue_full");
  metrics_.dropped_export_failed = dropped("export_failed");
  metrics_.dropped_rejected = dropped("rejected");
  metrics_.dropped_run_too_large = dropped("run_too_large");
  metrics_.dropped_unreadable = dropped("unreadable");
  metrics_.dropped_stopped = dropped("stopped");
  metrics_.queued = &r.AddGauge("apollo11_otlp_queued_spans",
                                "Spans of finished runs waiting to be sent to the OTLP collector");
}

void OtlpExporter::Stop() {
  if (feed_.joinable()) {
    feed_.request_stop();
    feed_.join();
  }
  {
    MutexLock lock(&mu_);
    if (!stopping_) {
      stopping_ = true;
      flush_deadline_ = SteadyClock::now() + options_.flush_on_stop;
    }
  }
  changed_.SignalAll();
  if (sender_.joinable()) sender_.join();
}

void OtlpExporter::Warn(const std::string& message) {
  uint64_t suppressed = 0;
  {
    MutexLock lock(&log_mu_);
    if (!warnings_.Allow(SteadyMicros(), &suppressed)) return;
  }
  if (suppressed > 0) {
    spdlog::warn("{} ({} more OTLP export warnings were not logged)", message, suppressed);
  } else {
    spdlog::warn("{}", message);
  }
}

// --- The feed thread.

void OtlpExporter::FeedLoop(std::stop_token stop) {
  pthread_setname_np(pthread_self(), "otlp-feed");
  std::string position;
  auto pause = [this, &stop] {
    const auto until = SteadyClock::now() + kFeedPause;
    MutexLock lock(&mu_);
    while (!stop.stop_requested() && changed_.WaitUntil(mu_, until, stop)) {
    }
  };
  while (!stop.stop_requested()) {
    if (options_.leading && !options_.leading()) {
      position.clear();  // leading again, it starts from where the feed is then
      pause();
      continue;
    }
    bool polled = false;
    try {
      polled = PollChanges(&position);
    } catch (const std::exception& e) {
      // A field of another type than the feed's (another version): the
      // feed thread goes on from where the feed is.
      position.clear();
      Warn(std::string("the coordinator's answer was not understood: ") + e.what());
    }
    if (!polled) pause();
  }
}

bool OtlpExporter::PollChanges(std::string* position) {
  auto answer = options_.backend->Changes(*position, options_.wait_ms);
  if (!answer.ok() || !answer->is_object()) {
    Warn("otlp: the coordinator's change feed could not be read: " +
         (answer.ok() ? std::string("not an object") : answer.status().message()));
    return false;
  }
  const bool fresh = position->empty();
  const bool reset = answer->value("reset", false);
  *position = answer->value("feed", std::string()) + ":" +
              std::to_string(answer->value("seq", uint64_t{0}));
  if (reset && !fresh) {
    metrics_.feed_gaps->Inc();
    Warn(
        "otlp: lost its place in the coordinator's change feed (a restart, or more changes "
        "than the feed holds): runs that ended meanwhile are not exported");
  }
  if (fresh || reset) return true;
  auto changes = answer->find("changes");
  if (changes == answer->end() || !changes->is_array()) return true;
  for (const nlohmann::json& change : *changes) {
    if (!change.is_object()) continue;
    const std::string run_id = change.value("run_id", std::string());
    if (run_id.empty() || !IsFinalRunState(change.value("state", std::string()))) continue;
    if (!SeenBefore(run_id)) ExportRun(run_id);
  }
  return true;
}

bool OtlpExporter::SeenBefore(const std::string& run_id) {
  if (!seen_.insert(run_id).second) return true;
  seen_order_.push_back(run_id);
  if (seen_order_.size() > kSeenRuns) {
    seen_.erase(seen_order_.front());
    seen_order_.pop_front();
  }
  return false;
}

void OtlpExporter::ExportRun(const std::string& run_id) {
  auto ask = [this](const char* kind, const std::string& id) {
    Result<nlohmann::json> answer = Status::Internal("not asked");
    for (int i = 0; i < kReadAttempts; ++i) {
      answer = options_.backend->Query(kind, id, 0);
      if (answer.ok() || answer.status().code() == StatusCode::kNotFound) break;
    }
    return answer;
  };
  auto unreadable = [&](const std::string& why) {
    metrics_.dropped_unreadable->Inc();
    Warn("otlp: run " + run_id + " not exported: " + why);
  };
  auto line = ask("run", run_id);
  if (!line.ok()) return unreadable(line.status().message());
  const uint64_t tasks = line->is_object() ? line->value("tasks", uint64_t{0}) : 0;
  if (tasks > options_.limits.max_attempt_spans) {
    // Its trace id is only in its executions, which only its status (up to
    // the whole client frame) names: not read for a run this large.
    metrics_.dropped_run_too_large->Inc(tasks + 1);
    Warn("otlp: run " + run_id + " not exported: its " + std::to_string(tasks) +
         " tasks are over the " + std::to_string(options_.limits.max_attempt_spans) +
         " a run may export");
    return;
  }
  auto status = ask("status", run_id);
  if (!status.ok()) return unreadable(status.status().message());
  // Every execution of the run carries the run's trace id.
  std::string trace_id;
  auto task_docs = status->find("tasks");
  if (task_docs != status->end() && task_docs->is_object() && !task_docs->empty() &&
      task_docs->begin()->is_object()) {
    auto execution = ask("execution", task_docs->begin()->value("exec_id", std::string()));
    if (execution.ok() && execution->is_object()) {
      trace_id = execution->value("trace_id", std::string());
    }
  }
  if (trace_id.empty()) return unreadable("no execution of it names its trace id");
  std::optional<nlohmann::json> history;
  if (AttemptsOf(*status) <= options_.limits.max_attempt_spans) {
    auto transitions = ask("history", run_id);
    if (!transitions.ok()) return unreadable(transitions.status().message());
    history = std::move(*transitions);
  }
  auto spans = BuildRunSpans(*status, history ? &*history : nullptr, trace_id, options_.limits);
  if (!spans.ok()) return unreadable(spans.status().message());
  metrics_.dropped_run_too_large->Inc(spans->omitted);
  Enqueue(std::move(*spans));
}

void OtlpExporter::Enqueue(RunSpans spans) {
  uint64_t dropped = 0;
  {
    MutexLock lock(&mu_);
    dropped = queue_.Push(std::move(spans.spans));
    metrics_.queued->Set(static_cast<int64_t>(queue_.spans()));
  }
  changed_.SignalAll();
  if (dropped > 0) {
    metrics_.dropped_queue_full->Inc(dropped);
    Warn("otlp: the span queue is full (the collector is slow or down): dropped the " +
         std::to_string(dropped) + " spans of the oldest runs");
  }
}

// --- The sender thread.

void OtlpExporter::SendLoop() {
  pthread_setname_np(pthread_self(), "otlp-send");
  OtlpHttpClient client(options_.endpoint, options_.timeout,
                        "apollo11/" + options_.resource.service_version);
  for (;;) {
    std::vector<nlohmann::json> batch;
    {
      MutexLock lock(&mu_);
      while (queue_.empty() && !stopping_) changed_.Wait(mu_);
      if (stopping_ && (queue_.empty() || SteadyClock::now() >= flush_deadline_)) {
        metrics_.dropped_stopped->Inc(queue_.spans());
        queue_.TakeBatch(queue_.spans());
        metrics_.queued->Set(0);
        return;
      }
      batch = queue_.TakeBatch(options_.max_batch_spans);
      metrics_.queued->Set(static_cast<int64_t>(queue_.spans()));
    }
    Send(std::move(batch), &client);
  }
}

void OtlpExporter::Send(std::vector<nlohmann::json> batch, OtlpHttpClient* client) {
  const uint64_t spans = batch.size();
  const std::string body = SafeJsonDump(TraceExportRequest(options_.resource, std::move(batch)));
  Millis backoff = options_.first_backoff;
  for (int attempt = 1;; ++attempt) {
    const OtlpPostOutcome out = client->Post(body);
    if (out.delivered) {
      const uint64_t rejected = std::min(out.rejected_spans, spans);
      metrics_.exported->Inc(spans - rejected);
      if (rejected > 0) {
        metrics_.dropped_rejected->Inc(rejected);
        Warn("otlp: the collector refused " + std::to_string(rejected) + " of " +
             std::to_string(spans) + " spans: " + out.error);
      }
      return;
    }
    metrics_.failures->Inc();
    if (!out.retryable || attempt >= options_.max_attempts) {
      (out.retryable ? metrics_.dropped_export_failed : metrics_.dropped_rejected)->Inc(spans);
      Warn("otlp: " + std::to_string(spans) + " spans dropped after " + std::to_string(attempt) +
           (attempt == 1 ? " attempt: " : " attempts: ") + out.error);
      return;
    }
    const Millis pause = std::max(backoff, std::min(out.retry_after, options_.max_retry_after));
    backoff = std::min(backoff * 2, options_.max_backoff);
    Warn("otlp: " + out.error + "; sending again in " + std::to_string(pause.count()) + " ms");
    if (!PauseUnlessStopping(pause)) {
      metrics_.dropped_stopped->Inc(spans);
      return;
    }
  }
}

bool OtlpExporter::PauseUnlessStopping(Millis pause) {
  const auto until = SteadyClock::now() + pause;
  MutexLock lock(&mu_);
  while (!stopping_ && changed_.WaitUntil(mu_, until)) {
  }
  return !stopping_;
}

}  // namespace apollo11::observability
