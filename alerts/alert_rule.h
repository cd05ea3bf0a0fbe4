#pragma once
// An alert rule from the node config: which events (by type and pipeline
// name) go where (a webhook, a command hook, or both).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alerts/alert_event.h"
#include "common/duration.h"

namespace apollo11::alerts {

struct WebhookTarget {
  std::string url;
  Millis timeout{5000};  // per attempt, connect included
  int retries = 3;       // attempts after the first one fails
  Millis backoff{500};   // before the first retry; doubles each time
};

struct AlertRule {
  std::string name;
  std::vector<AlertType> events;  // empty: every type but run_succeeded
  // Glob over the pipeline name (`*` any run of characters, `?` one);
  // empty: any. A rule with a pattern never matches node-wide events, which
  // have no pipeline: `order.*` is the order team's, not the on-call's.
  std::string pipelines;
  std::optional<WebhookTarget> webhook;
  std::string command;            // `/bin/sh -c COMMAND`, the event JSON on stdin
  Millis command_timeout{10000};  // then the hook's process group is killed

  bool Matches(const AlertEvent& event) const;
};

// Shell-style match of `text` against `pattern` with `*` and `?`.
bool GlobMatch(std::string_view pattern, std::string_view text);

}  // namespace apollo11::alerts
