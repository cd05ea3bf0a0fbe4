#include "executor/db_password.h"

#include <cstdlib>

namespace apollo11::executor {

Result<std::string> ResolveDbPassword(const ExecRequest& request) {
  const std::string& name = request.db_password_env;
  if (name.empty()) return std::string();
  if (auto it = request.env.find(name); it != request.env.end()) return it->second;
  if (const char* value = std::getenv(name.c_str())) return std::string(value);
  return Status::InvalidInput("password_env " + name +
                              " is set neither in the task's env nor in the worker's "
                              "environment");
}

}  // namespace apollo11::executor
