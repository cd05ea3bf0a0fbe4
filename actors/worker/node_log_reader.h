#pragma once
// Where WorkerCore finds this node's own log lines about one execution (the
// LOG_REQUEST stream kLogStreamEvents, for `apollo11 trace`), so that the
// core reads no file itself.

#include <string>
#include <vector>

#include "common/log_scan.h"
#include "common/status.h"

namespace apollo11::actors {

class NodeLogReader {
 public:
  virtual ~NodeLogReader() = default;
  // The lines that mention `exec_id`, oldest first; empty when none.
  virtual Result<std::vector<std::string>> LinesAbout(const std::string& exec_id) const = 0;
};

// Reads them from a node's JSON log file and its rotated predecessors,
// bounded as ScanLogLines is.
class FileNodeLogReader final : public NodeLogReader {
 public:
  explicit FileNodeLogReader(std::string path) : path_(std::move(path)) {}
  Result<std::vector<std::string>> LinesAbout(const std::string& exec_id) const override {
    return ScanLogLines(path_, exec_id);
  }

 private:
  std::string path_;
};

}  // namespace apollo11::actors
