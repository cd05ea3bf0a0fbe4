#pragma once
// Where a db task's password comes from: the one place to change when
// secrets (`secrets:`) resolve on the worker. Called on the executor's thread
// in Launch.

#include <string>

#include "common/status.h"
#include "executor/exec_types.h"

namespace apollo11::executor {

// The password for `request`'s connection: empty when the task names no
// variable (password_env:) — sqlite, trust or peer authentication, or
// libpq's own PGPASSWORD / ~/.pgpass; otherwise the value of that variable in
// the task's environment as resolved on the worker (request.env, where
// secrets land), then in the worker's own environment. InvalidInput naming
// the variable (never a value) when it is set in neither.
Result<std::string> ResolveDbPassword(const ExecRequest& request);

}  // namespace apollo11::executor
