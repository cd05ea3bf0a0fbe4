#pragma once
// Runs an alert's command hook: `/bin/sh -c COMMAND` in a process group of
// its own, the event JSON on its stdin, APOLLO11_ALERT_* variables in its
// environment; killed (the whole group) when it outlives `timeout`. Blocks
// the calling thread (the Notifier's) until the hook exits or is killed.

#include <map>
#include <stop_token>
#include <string>

#include "common/duration.h"
#include "common/status.h"

namespace apollo11::alerts {

// Ok only when the hook exits 0 in time; otherwise an error with the exit
// code, the signal, or "killed after TIMEOUT". A stop requested on `abort`
// kills the hook at once.
Status RunCommandHook(const std::string& command, const std::string& json,
                      const std::map<std::string, std::string>& env, Millis timeout,
                      std::stop_token abort = {});

}  // namespace apollo11::alerts
