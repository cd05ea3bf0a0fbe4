// The code a task runs, read at parse time so that it is part of the
// pipeline's snapshot (docs/dsl.md, "The code in a version"): a python
// task's `script:` file or inline `code:`, a db task's `script:` file.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "common/small_file.h"
#include "common/wire_limits.h"
#include "dsl/task_parser.h"

namespace apollo11::dsl::internal {
namespace {

// A script keeps only its file name once read: where the file was is not
// what the task does, and the same content from another path or directory
// must make the same snapshot.
std::string FileNameOf(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

}  // namespace

std::optional<std::string> TaskParser::ReadTaskFile(const Field& f, const std::string& path,
                                                    const std::string& what, bool allow_empty) {
  // One byte over the limit tells a file at the limit from a larger one.
  std::optional<std::string> text = ReadSmallFile(path, kMaxTaskCodeBytes + 1);
  if (!text.has_value()) {
    report_->Error(FieldReader::At(f), "cannot read " + Quote(path) + ": " + std::strerror(errno));
    return std::nullopt;
  }
  if (text->size() > kMaxTaskCodeBytes) {
    report_->Error(FieldReader::At(f), what + " " + Quote(path) + " is larger than the limit of " +
                                           std::to_string(kMaxTaskCodeBytes) + " bytes");
    return std::nullopt;
  }
  if (text->empty() && !allow_empty) {
    report_->Error(FieldReader::At(f), what + " " + Quote(path) + " is empty: it would do nothing");
    return std::nullopt;
  }
  return text;
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
  std::optional<std::string> text =
      ReadTaskFile(*script->second, task->script, "SQL script", false);
  if (!text.has_value()) return;
  task->sql = std::move(*text);
  task->script = FileNameOf(task->script);
}

void TaskParser::LoadPythonScript(TaskSpec* task,
                                  const std::map<std::string, const Field*>& by_key) {
  auto script = by_key.find("script");
  if (script == by_key.end() || task->script.empty()) return;
  auto code = by_key.find("code");
  if (code != by_key.end()) {
    report_->Error(FieldReader::KeyAt(*code->second),
                   "a python task takes 'script' (a file, read now) or 'code' (the source "
                   "inline), not both");
    return;
  }
  if (!library_->reads_files()) {
    RequireWorkerScriptPath(*task, by_key);
    return;
  }
  std::optional<std::string> text = ReadTaskFile(*script->second, task->script, "script", true);
  if (!text.has_value()) return;
  task->code = std::move(*text);
  task->script = FileNameOf(task->script);
}

void TaskParser::RequireWorkerScriptPath(const TaskSpec& task,
                                         const std::map<std::string, const Field*>& by_key) {
  auto script = by_key.find("script");
  if (script == by_key.end() || task.script.empty()) return;
  const std::filesystem::path path(task.script.get());
  if (path.is_absolute() && path.lexically_normal() == path) return;
  report_->Error(FieldReader::At(*script->second),
                 std::string(kNoFilesRead) +
                     ": a python 'script:' must be a plain absolute path, which the worker runs "
                     "(its code is then not part of the version), or give the source inline "
                     "as 'code:'");
}

}  // namespace apollo11::dsl::internal
