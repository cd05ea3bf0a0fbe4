#pragma once
// The `alerts:` a pipeline declares, as rules the Notifier matches and
// delivers exactly like the node's own (same folding, retries, payload).

#include <memory>
#include <vector>

#include "alerts/alert_rule.h"
#include "dsl/pipeline.h"

namespace apollo11::alerts {

// The pipeline's rules, named "pipeline NAME #N" (1-based) in logs; null when
// it declares none. DSL event names map to alert types: task_failed and
// retries_exhausted -> retries_exhausted, task_timeout -> timeout, slow_task,
// run_failed, run_canceled, run_succeeded and run_failures_handled as named. A webhook gets the
// node's default attempts (WebhookTarget); an unknown event name (the parser
// refuses them) is skipped.
std::shared_ptr<const std::vector<AlertRule>> PipelineAlertRules(const dsl::PipelineSpec& spec);

}  // namespace apollo11::alerts
