#include "executor/task_output_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/json_dump.h"
#include "common/small_file.h"

namespace apollo11::executor {

std::string TaskOutputFile::PathIn(const std::string& inputs_dir) {
  return inputs_dir + "/" + kFileName;
}

Result<std::string> TaskOutputFile::Read(const std::string& path, size_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::string();
    return Status::Io("could not read $APOLLO11_OUTPUT (" + path + "): " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidInput("$APOLLO11_OUTPUT is not a regular file");
  }
  if (static_cast<size_t>(st.st_size) > max_bytes) {
    return Status::InvalidInput("$APOLLO11_OUTPUT holds " + std::to_string(st.st_size) +
                                " bytes, over the " + std::to_string(max_bytes) +
                                "-byte limit for a task's output");
  }
  std::optional<std::string> text = ReadSmallFile(path, max_bytes + 1);
  if (!text.has_value()) {
    return Status::Io("could not read $APOLLO11_OUTPUT (" + path + "): " + std::strerror(errno));
  }
  if (text->size() > max_bytes) {
    return Status::InvalidInput("$APOLLO11_OUTPUT grew over the " + std::to_string(max_bytes) +
                                "-byte limit for a task's output");
  }
  if (text->find_first_not_of(" \t\r\n") == std::string::npos) return std::string();
  if (JsonNestingDepth(*text) > kMaxJsonDepth) {
    return Status::InvalidInput("$APOLLO11_OUTPUT nests arrays and objects over the " +
                                std::to_string(kMaxJsonDepth) + "-level limit");
  }
  nlohmann::json doc = ParseJsonBounded(*text);
  if (doc.is_discarded()) {
    return Status::InvalidInput("$APOLLO11_OUTPUT is not valid JSON (" +
                                std::to_string(text->size()) + " bytes)");
  }
  return SafeJsonDump(doc);
}

}  // namespace apollo11::executor
