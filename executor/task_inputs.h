#pragma once
// How a shell or python task receives its inputs (run parameters and
// upstream outputs) without ever overflowing exec's limits (docs/dsl.md,
// "Task inputs"):
// - every execution gets a fresh directory, $APOLLO11_INPUTS_DIR, holding
//   params/<name> and outputs/<upstream task id>: one file per input whose
//   content is exactly the value;
// - APOLLO11_PARAM_<NAME> and APOLLO11_OUTPUT_<TASK> (upper-cased) are also
//   set in the environment when the value is at most kInlineValueBytes and
//   the inline entries so far stay within kInlineTotalBytes; otherwise the
//   variable is not set and the file is the only copy;
// - a python task's captured source is written to code/<script name> there;
// - the directory is removed when the TaskInputs is destroyed, that is when
//   the execution has ended.

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "executor/exec_types.h"

namespace apollo11::executor {

class TaskInputs {
 public:
  // Values above this are passed through their file only.
  static constexpr size_t kInlineValueBytes = 4 << 10;
  // Name, value and pointer of every inline variable together.
  static constexpr size_t kInlineTotalBytes = 128 << 10;

  TaskInputs() = default;
  // Removes the directory and everything in it (errors ignored).
  ~TaskInputs();
  TaskInputs(const TaskInputs&) = delete;
  TaskInputs& operator=(const TaskInputs&) = delete;

  // Creates a directory under `root` (empty: $TMPDIR, else /tmp) for this
  // attempt, writes one file per input, and adds APOLLO11_INPUTS_DIR and the
  // inline variables to *env. Call once. An input name that cannot be a file
  // name is InvalidInput; a directory or file that cannot be written (a full
  // disk) is Io; either way the sentence names the input and nothing is left
  // behind.
  Status Prepare(const std::string& root, const std::string& exec_id, uint32_t attempt,
                 const std::vector<TaskInput>& inputs, std::map<std::string, std::string>* env);

  // Writes `code` (a python task's source) to code/NAME in the directory
  // and returns the file's path, which the task is run from; removed with
  // the rest. After a successful Prepare. NAME must be a plain file name
  // (else InvalidInput); a file that cannot be written is Io.
  Result<std::string> WriteCode(const std::string& name, const std::string& code);

  // The directory; empty before a successful Prepare.
  const std::string& dir() const { return dir_; }

  // Ok when exec can take `argv` and this process's environment overridden
  // by `env`: no string above the kernel's per-string limit (MAX_ARG_STRLEN)
  // and all of them within ARG_MAX. Otherwise InvalidInput naming the sizes
  // and the limit: the sentence a task fails with instead of E2BIG.
  static Status CheckExecSize(const std::vector<std::string>& argv,
                              const std::map<std::string, std::string>& env);

  // The variable an input is inlined as: APOLLO11_PARAM_<NAME> or
  // APOLLO11_OUTPUT_<TASK>, upper-cased.
  static std::string VariableName(const TaskInput& input);

  // The root for the worker whose own directory is `worker_dir`: a
  // directory on /dev/shm named after worker_dir's absolute path when
  // /dev/shm exists (a tmpfs: 10,000 input files take ~0.1 s there, seconds
  // on a busy disk, and the worker's loop waits for them), else
  // worker_dir/inputs. Empty for an empty worker_dir.
  static std::string DefaultRoot(const std::string& worker_dir);

  // Removes what executions of an earlier process left under `root` (a
  // worker killed before it could clean up). For a root of its own only.
  static void ClearRoot(const std::string& root);

 private:
  Status WriteAll(const std::vector<TaskInput>& inputs);
  // Unlinks the files WriteAll made and removes the folders and dir_,
  // through descriptors opened without following symbolic links (a task may
  // have swapped a folder for a link to elsewhere). False when something
  // else is left: the caller falls back to remove_all.
  bool RemoveOwnFiles() const;

  std::string dir_;
  // The inputs WriteAll made files for, as (folder, name): what the
  // destructor unlinks, so an execution that added nothing is removed
  // without listing a directory.
  std::vector<std::pair<const char*, std::string>> written_;
};

}  // namespace apollo11::executor
