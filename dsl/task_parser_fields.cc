// The readers of the db, secret and foreach task fields (TaskParser's other
// readers are in task_parser.cc; the key table is dsl/task_fields.h).
#include <cerrno>
#include <cstring>
#include <optional>

#include "common/small_file.h"
#include "dsl/credentials.h"
#include "dsl/secret_ref.h"
#include "dsl/task_parser.h"

namespace apollo11::dsl::internal {
namespace {

const std::vector<std::string> kForeachKeys = {"task", "items"};

}  // namespace

bool TaskParser::ReadSecretMap(const Field& f, std::map<std::string, std::string>* out) {
  bool ok = report_->GetStringMap(f, /*env_names=*/true, out);
  if (!f.value.IsMap()) return false;
  for (YamlPair it : f.value.pairs()) {
    const YamlNode v = it.value;
    if (!v.IsScalar() && !v.IsNull()) continue;  // reported by GetStringMap
    auto ref = ParseSecretRef(v.IsNull() ? "" : v.Scalar());
    if (!ref.ok()) {
      report_->Error(f.file, v, "secret " + Quote(it.key.Scalar()) + ": " + ref.status().message());
      ok = false;
    }
  }
  return ok;
}

bool TaskParser::ReadDbUrl(const Field& f, std::string* out) {
  if (!report_->GetString(f, out)) return false;
  for (const char* scheme : {"postgres://", "postgresql://", "mysql://", "mariadb://"}) {
    if (!StartsWith(*out, scheme) || out->size() <= std::strlen(scheme)) continue;
    const std::string found = CredentialInUrl(*out, UrlField::kDbHost);
    if (!found.empty()) {
      report_->Error(FieldReader::At(f),
                     "'host' must not hold a password (it has " + found +
                         "; credentials never sit in the pipeline); name the variable that "
                         "holds it with 'password_env:' or use 'secrets:'");
      return false;
    }
    return true;
  }
  if (StartsWith(*out, "sqlite:///") && out->size() > std::strlen("sqlite:///")) return true;
  report_->Error(FieldReader::At(f),
                 "'host' must be a URL postgres://..., mysql://..., mariadb://... or "
                 "sqlite:///PATH, found " +
                     Quote(*out));
  return false;
}

bool TaskParser::ReadEnvName(const Field& f, std::string* out) {
  if (!report_->GetString(f, out)) return false;
  if (IsEnvName(*out)) return true;
  report_->Error(FieldReader::At(f),
                 Quote(f.key) + " must name an environment variable, found " + Quote(*out));
  return false;
}

void TaskParser::LoadDbScript(TaskSpec* task, const std::map<std::string, const Field*>& by_key) {
  auto script = by_key.find("script");
  if (script == by_key.end() || task->script.empty()) return;
  if (by_key.count("sql") > 0) {
    report_->Error(FieldReader::KeyAt(*script->second),
                   "a db task takes 'sql' or 'script', not both");
    return;
  }
  if (!library_->reads_files()) {
    report_->Error(FieldReader::At(*script->second),
                   std::string(kNoFilesRead) + ": write the SQL in 'sql:' instead of 'script:'");
    return;
  }
  constexpr size_t kMaxSqlScriptBytes = size_t{1} << 20;
  // One byte over the limit tells a file at the limit from a larger one.
  std::optional<std::string> text = ReadSmallFile(task->script, kMaxSqlScriptBytes + 1);
  if (!text.has_value()) {
    report_->Error(FieldReader::At(*script->second),
                   "cannot read " + Quote(task->script.get()) + ": " + std::strerror(errno));
    return;
  }
  if (text->size() > kMaxSqlScriptBytes) {
    report_->Error(FieldReader::At(*script->second),
                   "SQL script " + Quote(task->script.get()) + " is larger than the limit of " +
                       std::to_string(kMaxSqlScriptBytes) + " bytes");
    return;
  }
  task->sql = std::move(*text);
  if (task->sql.empty()) {
    report_->Error(FieldReader::At(*script->second),
                   "SQL script " + Quote(task->script.get()) + " is empty");
  }
}

void TaskParser::RequireWorkerScriptPath(const TaskSpec& task,
                                         const std::map<std::string, const Field*>& by_key) {
  auto script = by_key.find("script");
  if (script == by_key.end() || task.script.empty()) return;
  const std::filesystem::path path(task.script.get());
  if (path.is_absolute() && path.lexically_normal() == path) return;
  report_->Error(FieldReader::At(*script->second),
                 std::string(kNoFilesRead) +
                     ": a python 'script:' must be a plain absolute path, which the worker runs");
}

bool TaskParser::ReadForeach(const Field& f, std::string* out) {
  if (!f.value.IsMap()) return report_->GetString(f, out);
  for (const Field& e : report_->Fields(f.value, f.file, kForeachKeys, "foreach (task, items)")) {
    if (e.key == "task") return report_->GetString(e, out);
  }
  report_->Error(FieldReader::At(f), "foreach needs 'task' (the upstream task to fan out over)");
  return false;
}

bool TaskParser::ReadForeachItems(const Field& f, std::string* out) {
  const YamlNode items = f.value["items"];
  if (!items.IsDefined()) return false;
  Field e{"items", items, items, f.file};
  if (!report_->GetString(e, out)) return false;
  const std::string& path = *out;
  const bool ok = path == "output" || (StartsWith(path, "output.") && path.size() > 7 &&
                                       path.back() != '.' && path.find("..") == std::string::npos);
  if (!ok) {
    report_->Error(FieldReader::At(e), "foreach items " + Quote(path) +
                                           " must be 'output' or 'output.PATH' (a JSON array "
                                           "in the upstream's $APOLLO11_OUTPUT output)");
    out->clear();
    return false;
  }
  return true;
}

bool TaskParser::ReadMaxParallel(const Field& f, int* out) {
  return report_->GetInt(f, 1, 1'000'000, out);
}

}  // namespace apollo11::dsl::internal
