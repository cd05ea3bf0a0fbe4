// `apollo11 logs EXEC_ID [--stderr] [--attempt N] [--follow]`: the captured
// output of one execution. With a coordinator (--coordinator or
// $APOLLO11_COORDINATOR) it is fetched, through the coordinator, from the
// worker that ran the attempt, whether the task is still running or long
// finished (the worker keeps the files in STATE_DIR/worker-ID/logs, across
// its restarts). Without one, the files are read from the local state dir
// (an embedded `run`, or a `--role=all` node on this machine).

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/client_flags.h"
#include "cli/command.h"
#include "cli/remote.h"
#include "cli/state_dir.h"
#include "storage/journal.h"

namespace apollo11::cli {
namespace {

struct LogsFlags : ClientFlags {
  std::string exec_id;
  bool stderr_stream = false;
  uint32_t attempt = 0;
  bool follow = false;
};

constexpr uint32_t kSlice = 1 << 20;
constexpr auto kFollowPoll = std::chrono::milliseconds(300);

int Fail(const Status& s) { return FailCommand("logs", s); }

void Write(const std::string& data) {
  std::fwrite(data.data(), 1, data.size(), stdout);
  std::fflush(stdout);
}

// The exit code once an attempt's output has been printed. When the worker
// could not write all of the shown stream (`logs_truncated` is the
// execution's), says so on stderr rather than leave an empty or short log
// looking complete.
int Finished(const LogsFlags& f, uint32_t attempt, const std::string& logs_truncated) {
  // "stdout: ...; stderr: ...": only the shown stream's part concerns us.
  const std::string stream = f.stderr_stream ? "stderr: " : "stdout: ";
  const size_t at = logs_truncated.find(stream);
  if (at == std::string::npos) return kExitOk;
  const size_t end = logs_truncated.find("; ", at);
  const std::string why = logs_truncated.substr(
      at + stream.size(), end == std::string::npos ? std::string::npos : end - at - stream.size());
  std::fprintf(stderr,
               "apollo11 logs: warning: the log of %s attempt %u is incomplete: %s (the task's "
               "outcome is unaffected; see docs/operations.md, \"Incomplete task logs\")\n",
               f.exec_id.c_str(), attempt, why.c_str());
  return kExitLogsIncomplete;
}

// Says on stderr that the attempt wrote nothing to the shown stream (no log
// file: the executor creates it with the first byte), naming where it looked
// (`holder`: "worker W" or "the state dir") and where to look instead.
void SayNothingWritten(const LogsFlags& f, uint32_t attempt, const std::string& holder) {
  const char* stream = f.stderr_stream ? "stderr" : "stdout";
  std::fprintf(stderr,
               "apollo11 logs: %s has no %s log for %s attempt %u: the task wrote nothing to %s "
               "(or the file was removed); how it ended: apollo11 trace %s\n",
               holder.c_str(), stream, f.exec_id.c_str(), attempt, stream, f.exec_id.c_str());
}

// The latest attempt's logs_truncated as the coordinator journaled it; empty
// when it cannot tell (an older attempt, a failed query).
std::string RemoteTruncation(RemoteCoordinator& remote, const std::string& exec_id,
                             uint32_t attempt) {
  auto exec = remote.Query("execution", exec_id);
  if (!exec.ok() || !exec->is_object() || exec->value("attempt", 0u) != attempt) return "";
  const auto it = exec->find("logs_truncated");
  return it != exec->end() && it->is_string() ? it->get<std::string>() : "";
}

int Remote(const LogsFlags& f) {
  auto remote = f.Connect();
  if (!remote.ok()) return Fail(remote.status());
  const std::string stream = f.stderr_stream ? "err" : "out";
  uint64_t offset = 0;
  uint32_t attempt = f.attempt;
  for (;;) {
    nlohmann::json meta;
    auto data = (*remote)->FetchLog(f.exec_id, stream, attempt, offset, kSlice, &meta);
    if (!data.ok()) {
      const int code = Fail(data.status());
      // An unreachable worker or an unreadable file: the journal and the
      // coordinator's log still say how the attempt ended.
      std::fprintf(stderr, "apollo11 logs: how it ended: apollo11 trace %s\n", f.exec_id.c_str());
      return code;
    }
    attempt = meta.value("attempt", attempt);  // stay on the attempt first shown
    offset += data->size();
    Write(*data);
    const uint64_t size = meta.value("size", uint64_t{0});
    if (offset < size) continue;  // more already written: next slice now
    // An older attempt is over; the latest one may still write.
    const bool more_may_come =
        meta.value("running", false) ||
        (attempt == meta.value("latest_attempt", attempt) && !meta.value("final", true));
    if (!f.follow || !more_may_come) {
      if (more_may_come) return kExitOk;
      if (offset == 0) SayNothingWritten(f, attempt, "worker " + meta.value("worker", "?"));
      return Finished(f, attempt, RemoteTruncation(**remote, f.exec_id, attempt));
    }
    std::this_thread::sleep_for(kFollowPoll);
  }
}

// Where a local state dir keeps an attempt's output: an embedded run's
// logs/, or a worker's of a node started on this state dir.
std::string LocalLogFile(const std::string& state_dir, const storage::ExecutionRecord& e,
                         uint32_t attempt, const std::string& ext) {
  const std::string name = e.exec_id + "." + std::to_string(attempt) + "." + ext;
  for (const std::string& dir : {LogDir(state_dir), state_dir + "/worker-" + e.worker_id + "/logs",
                                 state_dir + "/worker-local/logs"}) {
    if (std::filesystem::exists(dir + "/" + name)) return dir + "/" + name;
  }
  return "";
}

int Local(const LogsFlags& f) {
  const std::string state_dir = ResolveStateDir(f.state_dir);
  auto journal = OpenJournalReadOnly(state_dir);
  if (!journal.ok()) return Fail(journal.status());
  const std::string ext = f.stderr_stream ? "err" : "out";
  uint64_t offset = 0;
  for (;;) {
    auto rec = (*journal)->GetExecution(f.exec_id);
    if (!rec.ok()) return Fail(rec.status());
    if (!rec->has_value()) return Fail(Status::NotFound("no execution " + f.exec_id));
    const storage::ExecutionRecord& e = **rec;
    const uint32_t attempt = f.attempt ? f.attempt : e.attempt;
    if (attempt == 0) return Fail(Status::NotFound(f.exec_id + " never ran: it has no logs"));
    const bool final = IsFinal(e.state) || (f.attempt != 0 && f.attempt < e.attempt);
    const std::string path = LocalLogFile(state_dir, e, attempt, ext);
    // logs_truncated describes the latest attempt, once it has ended.
    const std::string why = final && attempt == e.attempt ? e.logs_truncated.get() : "";
    if (!path.empty()) {
      if (FILE* in = std::fopen(path.c_str(), "rb")) {
        std::fseek(in, static_cast<long>(offset), SEEK_SET);
        std::string buf(kSlice, '\0');
        size_t n;
        while ((n = std::fread(buf.data(), 1, buf.size(), in)) > 0) {
          Write(buf.substr(0, n));
          offset += n;
        }
        std::fclose(in);
      }
    }
    if (final) {
      if (path.empty() && offset == 0) SayNothingWritten(f, attempt, "the state dir");
      return Finished(f, attempt, why);
    }
    if (!f.follow) return kExitOk;
    std::this_thread::sleep_for(kFollowPoll);
  }
}

}  // namespace

void AddLogsCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<LogsFlags>();
  CLI::App* cmd = app.add_subcommand("logs", "an execution's captured stdout (or stderr)");
  cmd->add_option("exec_id", f->exec_id, "execution id (RUN_ID.TASK_ID)")->required();
  cmd->add_flag("--stderr", f->stderr_stream, "show stderr instead of stdout");
  cmd->add_option("--attempt", f->attempt, "which attempt (0: the latest)");
  cmd->add_flag("--follow,-f", f->follow, "keep printing output until the execution ends");
  AddClientFlags(cmd, f.get(), kStateDirFlag | kRemoteFlags);
  cmd->callback([f, exit_code] { *exit_code = f->Endpoint().empty() ? Local(*f) : Remote(*f); });
}

}  // namespace apollo11::cli
