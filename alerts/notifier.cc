#include "alerts/notifier.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <cstdio>

#include "alerts/command_hook.h"
#include "alerts/webhook.h"
#include "common/json_dump.h"

namespace apollo11::alerts {

namespace {

// "a11-<ms since epoch, hex>-<n>": unique per node run, sortable by time.
std::string NewAlertId(Micros ts, uint64_t seq) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "a11-%llx-%llu",
                static_cast<unsigned long long>(ts / kMicrosPerMilli),
                static_cast<unsigned long long>(seq));
  return buf;
}

std::map<std::string, std::string> HookEnv(const AlertEvent& e, const std::string& rule) {
  return {{"APOLLO11_ALERT_ID", e.id},
          {"APOLLO11_ALERT_TYPE", ToString(e.type)},
          {"APOLLO11_ALERT_RULE", rule},
          {"APOLLO11_ALERT_PIPELINE", e.pipeline},
          {"APOLLO11_ALERT_RUN_ID", e.run_id},
          {"APOLLO11_ALERT_TASK_ID", e.task_id},
          {"APOLLO11_ALERT_EXEC_ID", e.exec_id},
          {"APOLLO11_ALERT_ATTEMPT", std::to_string(e.attempt)},
          {"APOLLO11_ALERT_REASON", e.reason},
          {"APOLLO11_ALERT_WORKER_ID", e.worker_id},
          {"APOLLO11_ALERT_COUNT", std::to_string(e.count)}};
}

}  // namespace

Notifier::Notifier(const Clock* clock, NotifierOptions options)
    : clock_(clock),
      options_(std::move(options)),
      queue_(options_.queue_capacity),
      fold_(options_.fold_window.count() * kMicrosPerMilli) {}

Result<std::unique_ptr<Notifier>> Notifier::Start(const Clock* clock, NotifierOptions options) {
  std::unique_ptr<Notifier> n(new Notifier(clock, std::move(options)));
  try {
    n->thread_ = std::jthread([self = n.get()](std::stop_token stop) { self->Run(stop); });
  } catch (const std::system_error& e) {
    return Status::Internal(std::string("alerts: cannot start the delivery thread: ") + e.what());
  }
  return n;
}

Notifier::~Notifier() { Stop(); }

void Notifier::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();  // wakes the condition variable waits too
  thread_.join();
}

void Notifier::Emit(AlertEvent event) {
  bool wanted = false;
  for (const AlertRule& rule : options_.rules) wanted = wanted || rule.Matches(event);
  if (event.pipeline_rules) {
    for (const AlertRule& rule : *event.pipeline_rules) wanted = wanted || rule.Matches(event);
  }
  if (!wanted) return;
  if (event.ts == 0) event.ts = clock_->Now();
  {
    MutexLock lock(&mu_);
    queue_.Push(std::move(event));
  }
  ++emitted_;
  wake_.Signal();
}

Notifier::Stats Notifier::stats() const {
  Stats s;
  s.emitted = emitted_;
  s.delivered = delivered_;
  s.failed = failed_;
  s.retries = retries_;
  MutexLock lock(&mu_);
  s.dropped = queue_.dropped();
  return s;
}

void Notifier::Run(std::stop_token stop) {
  pthread_setname_np(pthread_self(), "alerts");

  for (;;) {
    std::vector<AlertEvent> incoming;
    {
      MutexLock lock(&mu_);
      const Micros due = fold_.NextDue();
      if (due == 0) {
        while (queue_.size() == 0 && !stop.stop_requested()) wake_.Wait(mu_, stop);
      } else {
        const Micros wait = std::max<Micros>(0, due - clock_->Now());
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(wait);
        while (queue_.size() == 0 && wake_.WaitUntil(mu_, deadline, stop)) {
        }
      }
      incoming = queue_.TakeAll();
      if (queue_.dropped() > drops_logged_) {
        spdlog::warn("alerts: queue full ({} events): {} oldest alerts dropped undelivered",
                     options_.queue_capacity, queue_.dropped() - drops_logged_);
        drops_logged_ = queue_.dropped();
      }
    }
    const Micros now = clock_->Now();
    for (AlertEvent& e : incoming) fold_.Add(std::move(e), now);
    if (stop.stop_requested()) {
      const Micros deadline = now + options_.shutdown_budget.count() * kMicrosPerMilli;
      std::vector<AlertEvent> rest = fold_.TakeAll();
      PublishHeld({}, 0);  // each shows as delivering, then done
      for (AlertEvent& e : rest) Deliver(e, deadline, stop);
      return;
    }
    std::vector<AlertEvent> due = fold_.TakeDue(now);
    for (size_t i = 0; i < due.size(); ++i) {
      if (stop.stop_requested()) {  // the rest goes out with the final flush
        for (size_t j = i; j < due.size(); ++j) fold_.Add(std::move(due[j]), now);
        break;
      }
      PublishHeld(due, i + 1);
      Deliver(due[i], 0, stop);
    }
    PublishHeld({}, 0);
  }
}

void Notifier::PublishHeld(const std::vector<AlertEvent>& waiting, size_t from) {
  if (options_.history == nullptr) return;
  std::vector<AlertRecord> held;
  for (const AlertEvent& e : fold_.Held()) held.push_back(RecordOf(e));
  for (size_t i = from; i < waiting.size(); ++i) held.push_back(RecordOf(waiting[i]));
  for (AlertRecord& r : held) r.state = AlertRecordState::kFolding;
  options_.history->SetHeld(this, std::move(held));
}

void Notifier::Deliver(AlertEvent& event, Micros final_deadline, std::stop_token stop) {
  if (event.id.empty()) event.id = NewAlertId(event.ts, ++seq_);
  // An event carries a task's stderr tail: any bytes, replaced, never thrown on.
  const std::string json = SafeJsonDump(AlertJson(event));
  const bool final = final_deadline != 0;
  // At shutdown each attempt gets what is left of the budget, and nothing
  // aborts it (the stop that brought us here is already requested).
  auto cap = [&](Millis timeout) {
    if (!final) return timeout;
    const Micros left = final_deadline - clock_->Now();
    return std::min(timeout, Millis(std::max<Micros>(1, left / kMicrosPerMilli)));
  };
  std::stop_token abort = final ? std::stop_token{} : stop;
  AlertRecord record = RecordOf(event);
  if (options_.history != nullptr) {
    record.state = AlertRecordState::kDelivering;
    options_.history->Add(record);
  }
  // The record names a webhook by scheme and host only: its URL may hold a token.
  auto note = [&](std::string target, const Status& s, const std::string& url) {
    std::string error = s.message();
    if (!url.empty()) {
      for (size_t at = error.find(url); at != std::string::npos; at = error.find(url, at)) {
        error.replace(at, url.size(), RedactUrl(url));
      }
    }
    record.deliveries.push_back({std::move(target), s.ok(), s.ok() ? "" : std::move(error)});
  };
  auto deliver_to = [&](const AlertRule& rule) {
    if (!rule.Matches(event)) return;
    if (final && clock_->Now() >= final_deadline) {
      ++failed_;
      spdlog::error("alert {} ({}) to rule {} not delivered: the node stopped", event.id,
                    ToString(event.type), rule.name);
      note("rule " + rule.name, Status::Io("not delivered: the node stopped"), "");
      return;
    }
    if (rule.webhook) {
      WebhookTarget target = *rule.webhook;
      const Status s = Attempt(event, "rule " + rule.name + " webhook " + target.url,
                               final ? 0 : target.retries, target.backoff, stop, [&] {
                                 target.timeout = cap(rule.webhook->timeout);
                                 return PostWebhook(target, json, abort);
                               });
      note("rule " + rule.name + " webhook " + RedactUrl(target.url), s, target.url);
    }
    if (!rule.command.empty()) {
      const auto env = HookEnv(event, rule.name);
      const Status s = Attempt(
          event, "rule " + rule.name + " command", final ? 0 : options_.command_retries,
          options_.command_backoff, stop, [&] {
            return RunCommandHook(rule.command, json, env, cap(rule.command_timeout), abort);
          });
      note("rule " + rule.name + " command", s, "");
    }
  };
  for (const AlertRule& rule : options_.rules) deliver_to(rule);
  if (event.pipeline_rules) {
    for (const AlertRule& rule : *event.pipeline_rules) deliver_to(rule);
  }
  if (options_.history != nullptr) options_.history->Finish(event.id, std::move(record.deliveries));
}

Status Notifier::Attempt(const AlertEvent& event, const std::string& target, int retries,
                         Millis backoff, std::stop_token stop,
                         const std::function<Status()>& attempt) {
  Status s;
  for (int i = 0; i <= retries; ++i) {
    if (i > 0) {
      if (!Sleep(stop, backoff * (1 << std::min(i - 1, 10)))) {
        ++failed_;
        spdlog::error("alert {} ({}) to {} not delivered: the node stopped during its retries",
                      event.id, ToString(event.type), target);
        return Status::Io(
            "not delivered: the node stopped during the retries (last: " + s.message() + ")");
      }
      ++retries_;
    }
    s = attempt();
    if (s.ok()) {
      ++delivered_;
      spdlog::info("alert {} ({}, x{}, exec {}) delivered to {}{}", event.id, ToString(event.type),
                   event.count, event.exec_id.empty() ? "-" : event.exec_id, target,
                   i > 0 ? " after " + std::to_string(i) + " retries" : "");
      return s;
    }
    spdlog::warn("alert {} ({}) to {}: attempt {} of {} failed: {}", event.id, ToString(event.type),
                 target, i + 1, retries + 1, s.message());
  }
  ++failed_;
  spdlog::error("alert {} ({}) to {} given up after {} attempts: {}", event.id,
                ToString(event.type), target, retries + 1, s.message());
  return s;
}

bool Notifier::Sleep(std::stop_token stop, Millis d) {
  const auto deadline = std::chrono::steady_clock::now() + d;
  MutexLock lock(&mu_);
  // Woken early only by a stop request; Emit's notifications are ignored.
  while (wake_.WaitUntil(mu_, deadline, stop)) {
  }
  return !stop.stop_requested();
}

}  // namespace apollo11::alerts
