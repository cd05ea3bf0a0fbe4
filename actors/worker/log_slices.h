#pragma once
// A worker's answers to LOG_REQUEST (`apollo11 logs`, `apollo11 trace`): a
// bounded slice of an attempt's captured stdout or stderr, read through the
// task runner, or of this node's own log lines about an execution
// (NodeLogReader). One slice per request, never more than the dispatcher's
// string limit allows, so a log viewer never stalls the worker.
//
// Socket-free; the worker actor's thread.

#include <string>

#include "actors/worker/node_log_reader.h"
#include "executor/task_runner.h"
#include "transport/messages.h"

namespace apollo11::actors {

class LogSlices {
 public:
  // `runner` must outlive this; `node_log` too, or be null (no log file).
  LogSlices(const executor::TaskRunner* runner, const NodeLogReader* node_log,
            std::string worker_id)
      : runner_(runner), node_log_(node_log), worker_id_(std::move(worker_id)) {}

  // The reply to `request`; `running` says whether the attempt still runs
  // here. An attempt that wrote nothing yet answers an empty slice.
  transport::LogReply Answer(const transport::LogRequest& request, bool running) const;

 private:
  transport::LogReply NodeLines(const transport::LogRequest& request) const;

  const executor::TaskRunner* runner_;
  const NodeLogReader* node_log_;
  std::string worker_id_;
};

}  // namespace apollo11::actors
