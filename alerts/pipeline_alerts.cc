#include "alerts/pipeline_alerts.h"

#include <algorithm>
#include <optional>
#include <string_view>

namespace apollo11::alerts {
namespace {

std::optional<AlertType> DslEventType(std::string_view name) {
  if (name == "task_failed") return AlertType::kRetriesExhausted;
  if (name == "task_timeout") return AlertType::kTimeout;
  return ParseAlertType(name);
}

}  // namespace

std::shared_ptr<const std::vector<AlertRule>> PipelineAlertRules(const dsl::PipelineSpec& spec) {
  if (spec.alerts.empty()) return nullptr;
  auto rules = std::make_shared<std::vector<AlertRule>>();
  for (size_t i = 0; i < spec.alerts.size(); ++i) {
    const dsl::AlertRule& declared = spec.alerts[i];
    AlertRule rule;
    rule.name = "pipeline " + spec.name + " #" + std::to_string(i + 1);
    for (const std::string& name : declared.events) {
      std::optional<AlertType> type = DslEventType(name);
      if (type && std::find(rule.events.begin(), rule.events.end(), *type) == rule.events.end()) {
        rule.events.push_back(*type);
      }
    }
    if (rule.events.empty()) continue;  // would mean "every type"
    if (!declared.webhook.empty()) {
      WebhookTarget target;
      target.url = declared.webhook;
      rule.webhook = std::move(target);
    }
    rule.command = declared.command;
    rules->push_back(std::move(rule));
  }
  if (rules->empty()) return nullptr;
  return rules;
}

}  // namespace apollo11::alerts
