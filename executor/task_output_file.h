#pragma once
// A task's result as JSON ($APOLLO11_OUTPUT, docs/dsl.md "Task outputs"): a
// shell or python task may write one JSON document to the file that variable
// names; the executor reads it once the task has exited 0. The file lives in
// the execution's inputs directory, so it is removed with it.

#include <cstddef>
#include <string>

#include "common/status.h"

namespace apollo11::executor {

class TaskOutputFile {
 public:
  // The file name inside an execution's inputs directory.
  static constexpr const char* kFileName = "output.json";

  // The path to put in $APOLLO11_OUTPUT for an execution whose inputs
  // directory is `inputs_dir`.
  static std::string PathIn(const std::string& inputs_dir);

  // The compact JSON text of the file at `path`: empty when there is no such
  // file or it holds only white space (the task gave no output). A file over
  // `max_bytes` or nested deeper than kMaxJsonDepth (common/json_dump.h), or
  // one that is not one valid JSON document, is InvalidInput
  // with a sentence naming $APOLLO11_OUTPUT, the size or the parse error;
  // retrying the task cannot help. A file that exists and cannot be read is
  // Io. Never throws but std::bad_alloc.
  static Result<std::string> Read(const std::string& path, size_t max_bytes);
};

}  // namespace apollo11::executor
