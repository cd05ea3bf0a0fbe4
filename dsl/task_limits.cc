#include "dsl/task_limits.h"

#include "common/wire_limits.h"

namespace apollo11::dsl {
namespace {

std::string Bytes(size_t n) { return std::to_string(n) + " bytes"; }

// The largest of a task's text fields that travel to the worker, by name.
struct SizedField {
  const char* name = "";
  size_t size = 0;
};

size_t MapBytes(const std::map<std::string, std::string>& m, SizedField* largest,
                const char* name) {
  size_t total = 0;
  for (const auto& [k, v] : m) {
    total += k.size() + v.size();
    if (v.size() > largest->size) *largest = SizedField{name, v.size()};
  }
  return total;
}

// The bytes of what a task sends to its worker, and its largest single text.
size_t TaskBytes(const TaskSpec& t, SizedField* largest) {
  size_t total = 0;
  for (SizedField f :
       {SizedField{"command", t.command.size()}, SizedField{"workdir", t.workdir.size()},
        SizedField{"script", t.script.size()}, SizedField{"code", t.code.size()},
        SizedField{"url", t.url.size()}, SizedField{"method", t.method.size()},
        SizedField{"body", t.body.size()}, SizedField{"precheck", t.precheck.size()},
        SizedField{"host", t.db_host.size()}, SizedField{"sql", t.sql.size()},
        SizedField{"password_env", t.db_password_env.size()}}) {
    total += f.size;
    if (f.size > largest->size) *largest = f;
  }
  for (const std::string& a : t.args) {
    total += a.size();
    if (a.size() > largest->size) *largest = SizedField{"args", a.size()};
  }
  for (const std::string& p : t.sql_params) {
    total += p.size();
    if (p.size() > largest->size) *largest = SizedField{"params", p.size()};
  }
  total += MapBytes(t.headers, largest, "headers") + MapBytes(t.env, largest, "env");
  for (const Dependency& d : t.depends_on) total += d.task.size();
  return total;
}

void TaskError(const TaskSpec& t, const std::string& what, std::vector<Diagnostic>* out) {
  out->push_back(Diagnostic{Diagnostic::Severity::kError, t.where, "task '" + t.id + "' " + what});
}

void CheckOne(const TaskSpec& t, std::vector<Diagnostic>* out) {
  auto count = [&](const char* what, size_t n, size_t limit) {
    if (n <= limit) return;
    TaskError(t,
              "has " + std::to_string(n) + " " + what + ", above the limit of " +
                  std::to_string(limit) + " (see Limits in docs/dsl.md)",
              out);
  };
  count("dependencies", t.depends_on.size(), kMaxTaskDependencies);
  count("env entries", t.env.size(), kMaxTaskMapEntries);
  count("headers", t.headers.size(), kMaxTaskMapEntries);
  count("args", t.args.size(), kMaxTaskArgs);
  count("params", t.sql_params.size(), kMaxTaskArgs);
  SizedField largest;
  const size_t total = TaskBytes(t, &largest);
  if (largest.size > kWireMaxStringBytes) {
    TaskError(t,
              "has a " + std::string(largest.name) + " value of " + Bytes(largest.size) +
                  ", above the limit of " + Bytes(kWireMaxStringBytes) +
                  " for one value (see Limits in docs/dsl.md)",
              out);
  } else if (total > kMaxTaskBytes) {
    TaskError(t,
              "holds " + Bytes(total) + " in its fields and dependency names, above the limit of " +
                  Bytes(kMaxTaskBytes) + " (see Limits in docs/dsl.md)",
              out);
  }
}

}  // namespace

Status CheckParamLimits(const std::map<std::string, std::string>& params) {
  if (params.size() > kMaxParams) {
    return Status::InvalidInput(std::to_string(params.size()) + " params, above the limit of " +
                                std::to_string(kMaxParams));
  }
  size_t total = 0;
  for (const auto& [name, value] : params) {
    if (value.size() > kWireMaxStringBytes) {
      return Status::InvalidInput("param '" + name + "' is " + Bytes(value.size()) +
                                  ", above the limit of " + Bytes(kWireMaxStringBytes) +
                                  " for one value");
    }
    total += name.size() + value.size();
  }
  if (total > kMaxParamsBytes) {
    return Status::InvalidInput("params hold " + Bytes(total) + ", above the limit of " +
                                Bytes(kMaxParamsBytes) + " for all of them together");
  }
  return Status::Ok();
}

void CheckTaskLimits(const PipelineSpec& spec, std::vector<Diagnostic>* out) {
  for (const TaskSpec& t : spec.tasks) CheckOne(t, out);
  Status params = CheckParamLimits(spec.params);
  if (!params.ok()) {
    out->push_back(Diagnostic{Diagnostic::Severity::kError, SourceLocation{spec.source_file},
                              params.message() + " (see Limits in docs/dsl.md)"});
  }
}

}  // namespace apollo11::dsl
