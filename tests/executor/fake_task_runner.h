#pragma once
// A TaskRunner for tests: nothing runs; a launched attempt stays running
// until the test finishes it (Complete), and Cancel finishes it as canceled
// at once. Outcomes wait in Take() until the test hands them to the core,
// as the worker actor does with Executor::Process.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "executor/task_runner.h"

namespace apollo11::testing {

class FakeTaskRunner final : public executor::TaskRunner {
 public:
  using Key = std::pair<std::string, uint32_t>;

  Status Launch(const executor::ExecRequest& request) override {
    if (!refuse_launch.ok()) return refuse_launch;
    Key key{request.exec_id, request.attempt};
    if (running_.count(key)) return Status::Busy("already running");
    running_[key] = request;
    launched.push_back(request);
    return Status::Ok();
  }
  void Cancel(const std::string& exec_id, uint32_t attempt) override {
    Complete(exec_id, attempt, executor::ExecOutcomeKind::kCanceled);
  }
  size_t running() const override { return running_.size(); }
  Result<executor::OutputSlice> ReadOutput(const std::string& exec_id, uint32_t attempt,
                                           bool stderr_stream, uint64_t offset,
                                           uint64_t max_bytes) const override {
    auto it = output.find({exec_id + (stderr_stream ? ".err" : ".out"), attempt});
    if (it == output.end()) return Status::NotFound("no output");
    executor::OutputSlice slice;
    slice.size = it->second.size();
    if (offset < slice.size) slice.data = it->second.substr(offset, max_bytes);
    return slice;
  }

  // Ends a running attempt with `kind` (exit code 0 for success, 1 else);
  // false when it is not running.
  bool Complete(const std::string& exec_id, uint32_t attempt,
                executor::ExecOutcomeKind kind = executor::ExecOutcomeKind::kSuccess,
                Micros at = 0) {
    auto it = running_.find({exec_id, attempt});
    if (it == running_.end()) return false;
    executor::ExecOutcome o;
    o.exec_id = exec_id;
    o.attempt = attempt;
    o.kind = kind;
    o.exit_code = kind == executor::ExecOutcomeKind::kSuccess ? 0 : 1;
    o.started_at = at;
    o.finished_at = at;
    finished_.push_back(std::move(o));
    running_.erase(it);
    return true;
  }
  // The outcomes completed since the last call.
  std::vector<executor::ExecOutcome> Take() { return std::exchange(finished_, {}); }
  bool IsRunning(const std::string& exec_id, uint32_t attempt) const {
    return running_.count({exec_id, attempt}) > 0;
  }

  Status refuse_launch = Status::Ok();          // Launch returns this when not Ok
  std::vector<executor::ExecRequest> launched;  // every accepted Launch, in order
  std::map<Key, std::string> output;  // ("<exec_id>.out"/".err", attempt) -> captured bytes

 private:
  std::map<Key, executor::ExecRequest> running_;
  std::vector<executor::ExecOutcome> finished_;
};

}  // namespace apollo11::testing
