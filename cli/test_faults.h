#pragma once
// The fault port of a node started with $APOLLO11_TEST_FAULT (tests only;
// common/fault_port.h): the process tests make a real apollo11-node fail at
// one named point, to prove what a crash or a dying actor there costs.
//
//   scheduler-query      the scheduler's query handler throws (a dying actor
//                        takes its node down with the reason)
//   sched-before-commit  SIGKILL once a schedule's fire is staged, before
//                        its commit
//   sched-after-commit   SIGKILL once that commit succeeded, before the
//                        run's first dispatch

#include <memory>
#include <string>

#include "common/fault_port.h"
#include "common/status.h"

namespace apollo11::cli {

// The port for `name`: null when `name` is empty (no fault), InvalidInput
// naming the known faults when it is none of them.
Result<std::unique_ptr<FaultPort>> TestFaultPort(const std::string& name);

}  // namespace apollo11::cli
