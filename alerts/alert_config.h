#pragma once
// The `alerts:` list of a node's YAML config, read into rules. Every unknown
// key, bad event name or bad value is refused with the rule and line it is on:
// a typo must not silently mute the pager.
//
//   alerts:
//     - name: order-team
//       events: [retries_exhausted, timeout, run_failed]
//       pipelines: "order.*"
//       webhook: {url: "http://127.0.0.1:9000/hook", timeout: 5s, retries: 3}
//     - name: pager
//       events: [worker_lost, backlog_at_cap, journal_error]
//       command: "/usr/local/bin/page-oncall"

#include <vector>

#include "alerts/alert_rule.h"
#include "common/status.h"
#include "dsl/yaml_tree.h"

namespace apollo11::alerts {

// Parses the value of the `alerts` key (a sequence of rule mappings).
// Never throws.
Result<std::vector<AlertRule>> ParseAlertRules(const dsl::YamlNode& list);

// The rules under the `alerts` key of the YAML file at `path`; none when the
// key is absent. Errors name the file.
Result<std::vector<AlertRule>> LoadAlertRules(const std::string& path);

}  // namespace apollo11::alerts
