#pragma once
// The port between the worker's logic (actors/WorkerCore) and whatever runs
// task attempts. executor::Executor is the real implementation (processes and
// HTTP transfers); tests use a fake whose attempts finish when the test says.
// How finished attempts come back is the owner's business: the worker actor
// polls the Executor and hands WorkerCore::OnFinished what it reports.
//
// Single-threaded: the worker actor's thread (or the test) makes every call.

#include <cstdint>
#include <string>

#include "common/status.h"
#include "executor/exec_types.h"

namespace apollo11::executor {

// A slice of one attempt's captured output, as LOG_REQUEST asks for it.
struct OutputSlice {
  std::string data;   // bytes [offset, offset + data.size())
  uint64_t size = 0;  // the stream's whole size so far
};

class TaskRunner {
 public:
  virtual ~TaskRunner() = default;

  // Starts one attempt without blocking. A refusal (same attempt still
  // running, log files that cannot be opened) is returned; everything that
  // goes wrong later is reported as an ExecOutcome.
  virtual Status Launch(const ExecRequest& request) = 0;
  // Stops a running attempt; its outcome (kCanceled) is reported later.
  // Unknown or finished attempts are ignored.
  virtual void Cancel(const std::string& exec_id, uint32_t attempt) = 0;
  // Attempts launched and not yet reported.
  virtual size_t running() const = 0;
  // At most `max_bytes` of the captured stdout (`stderr_stream` false) or
  // stderr of one attempt, from `offset`. Unsupported when this runner keeps
  // no output files (or `exec_id` cannot name one); NotFound when the attempt
  // wrote nothing there (yet, or it was removed).
  virtual Result<OutputSlice> ReadOutput(const std::string& exec_id, uint32_t attempt,
                                         bool stderr_stream, uint64_t offset,
                                         uint64_t max_bytes) const = 0;
};

}  // namespace apollo11::executor
