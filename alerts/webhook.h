#pragma once
// One HTTP POST of an alert's JSON to a webhook, through libcurl's easy
// interface (the delivery thread may block; the scheduler never waits on it).

#include <stop_token>
#include <string>

#include "alerts/alert_rule.h"
#include "common/status.h"

namespace apollo11::alerts {

// Posts `json` to target.url within target.timeout. Ok only for a 2xx
// answer; otherwise an error naming the status code or the transport error.
// No retries here: the Notifier's retry loop decides. A stop requested on
// `abort` ends the transfer within about a second.
Status PostWebhook(const WebhookTarget& target, const std::string& json,
                   std::stop_token abort = {});

}  // namespace apollo11::alerts
