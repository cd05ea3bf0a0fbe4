// `apollo11 trace EXEC_ID [--json]`: one timeline of what happened to an
// execution, all attempts: the journal's transitions, the coordinator's log
// lines that mention it and the lines of each worker that ran an attempt,
// ordered by time. With a coordinator (--coordinator or
// $APOLLO11_COORDINATOR) the log lines are fetched through it (the workers'
// over LOG_REQUEST stream kLogStreamEvents); without one they are read from
// the local state dir: STATE_DIR/coordinator.log and every
// STATE_DIR/worker-*/worker.log.

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli/client_flags.h"
#include "cli/command.h"
#include "cli/remote.h"
#include "cli/state_dir.h"
#include "common/json_dump.h"
#include "common/log_scan.h"
#include "storage/journal.h"

namespace apollo11::cli {
namespace {

struct TraceFlags : ClientFlags {
  std::string exec_id;
};

// One line of the timeline.
struct TraceEntry {
  Micros ts = 0;
  std::string ts_text;   // as the source wrote it
  std::string source;    // "journal", "coordinator", "worker W"
  uint32_t attempt = 0;  // 0: the line names none
  std::string event;
  std::string text;
};

int Fail(const Status& s) { return FailCommand("trace", s); }

// "2026-11-29T13:47:34.123Z" (the JSON log format) -> µs since the epoch;
// 0 when it does not parse.
Micros ParseLogTime(const std::string& ts) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(ts.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7) {
    return 0;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<Micros>(timegm(&tm)) * kMicrosPerSecond + ms * kMicrosPerMilli;
}

// True when `text` names `exec_id` as a whole id (not "r1.ab" for "r1.a").
bool Mentions(const std::string& text, const std::string& exec_id) {
  for (size_t at = text.find(exec_id); at != std::string::npos; at = text.find(exec_id, at + 1)) {
    const size_t end = at + exec_id.size();
    auto id_char = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
    };
    const bool starts = at == 0 || !id_char(text[at - 1]);
    // A trailing '.' ends a sentence, unless an id character follows it.
    const bool ends = end == text.size() || !id_char(text[end]) ||
                      (text[end] == '.' && (end + 1 == text.size() || !id_char(text[end + 1])));
    if (starts && ends) return true;
  }
  return false;
}

// The JSON log lines in `data` about `exec_id`, as timeline entries. Lines
// that are not JSON objects (a truncated tail) are skipped.
void AddLogLines(const std::string& data, const std::string& exec_id,
                 std::vector<TraceEntry>* out) {
  std::istringstream in(data);
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = ParseJsonBounded(line);
    if (j.is_discarded() || !j.is_object()) continue;
    const std::string msg = j.value("msg", "");
    if (j.contains("exec_id") ? j.value("exec_id", "") != exec_id : !Mentions(msg, exec_id)) {
      continue;
    }
    TraceEntry e;
    e.ts_text = j.value("ts", "");
    e.ts = ParseLogTime(e.ts_text);
    // A role=all node writes its worker's lines to coordinator.log too.
    e.source = j.value("actor", "") == "worker" ? "worker " + j.value("node", "?")
                                                : std::string("coordinator");
    if (j.contains("attempt") && j["attempt"].is_number_unsigned()) {
      e.attempt = j["attempt"].get<uint32_t>();
    }
    e.event = j.value("event", "log");
    e.text = msg;
    out->push_back(std::move(e));
  }
}

void AddTransitions(const nlohmann::json& history, std::vector<TraceEntry>* out) {
  for (const auto& t : history) {
    TraceEntry e;
    e.ts = t.value("ts_us", Micros{0});
    e.ts_text = FormatTimestamp(e.ts);
    e.source = "journal";
    e.attempt = t.value("attempt", 0u);
    e.event = t.value("from", "") + " -> " + t.value("to", "");
    e.text = t.value("reason", "");
    out->push_back(std::move(e));
  }
}

// The worker of each attempt: the "worker" of its READY -> RUNNING transition,
// or for older records the one its reason names ("dispatched to worker W").
std::map<std::string, uint32_t> WorkersOfAttempts(const nlohmann::json& history) {
  const std::string prefix = "dispatched to worker ";
  std::map<std::string, uint32_t> first_attempt;  // worker -> an attempt it ran
  for (const auto& t : history) {
    if (t.value("to", "") != "RUNNING") continue;
    const std::string reason = t.value("reason", "");
    std::string worker = t.value("worker", "");
    if (worker.empty() && reason.rfind(prefix, 0) == 0) worker = reason.substr(prefix.size());
    if (!worker.empty()) first_attempt.emplace(worker, t.value("attempt", 0u));
  }
  return first_attempt;
}

// Drops log lines read twice: a role=all node writes its worker's lines and
// its coordinator's to one file, which is both the coordinator's log and
// that worker's. Journal transitions are never dropped.
void DropRepeatedLogLines(std::vector<TraceEntry>* entries) {
  std::set<std::string> seen;
  std::erase_if(*entries, [&seen](const TraceEntry& e) {
    if (e.source == "journal") return false;
    const std::string key = e.ts_text + '\n' + e.source + '\n' + std::to_string(e.attempt) + '\n' +
                            e.event + '\n' + e.text;
    return !seen.insert(key).second;
  });
}

void Print(std::vector<TraceEntry>& entries, bool json) {
  DropRepeatedLogLines(&entries);
  // Ties (same ms) keep source order: journal, coordinator, workers.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const TraceEntry& a, const TraceEntry& b) { return a.ts < b.ts; });
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const TraceEntry& e : entries) {
      out.push_back({{"ts", FormatTimestamp(e.ts)},
                     {"ts_us", e.ts},
                     {"source", e.source},
                     {"attempt", e.attempt},
                     {"event", e.event},
                     {"text", e.text}});
    }
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return;
  }
  std::printf("%-24s %-20s %-7s %s\n", "TIME", "SOURCE", "ATTEMPT", "EVENT: TEXT");
  for (const TraceEntry& e : entries) {
    const std::string attempt = e.attempt ? "#" + std::to_string(e.attempt) : "-";
    std::printf("%-24s %-20s %-7s %s: %s\n", FormatTimestamp(e.ts).c_str(), e.source.c_str(),
                attempt.c_str(), e.event.c_str(), e.text.c_str());
  }
}

int Remote(const TraceFlags& f) {
  auto remote = f.Connect();
  if (!remote.ok()) return Fail(remote.status());
  auto history = (*remote)->Query("history", f.exec_id);
  if (!history.ok()) return Fail(history.status());
  std::vector<TraceEntry> entries;
  AddTransitions(*history, &entries);
  nlohmann::json meta;
  auto coordinator_lines = (*remote)->TraceLog(f.exec_id, &meta);
  if (coordinator_lines.ok()) {
    AddLogLines(*coordinator_lines, f.exec_id, &entries);
  } else {
    std::fprintf(stderr, "apollo11 trace: coordinator log: %s\n",
                 coordinator_lines.status().message().c_str());
  }
  for (const auto& [worker, attempt] : WorkersOfAttempts(*history)) {
    std::string lines;
    uint64_t offset = 0;
    for (;;) {
      auto slice = (*remote)->FetchLog(f.exec_id, "events", attempt, offset, 0, &meta);
      if (!slice.ok()) {
        std::fprintf(stderr, "apollo11 trace: worker %s: %s\n", worker.c_str(),
                     slice.status().message().c_str());
        break;
      }
      offset += slice->size();
      lines += *slice;
      if (slice->empty() || offset >= meta.value("size", uint64_t{0})) break;
    }
    AddLogLines(lines, f.exec_id, &entries);
  }
  Print(entries, f.json);
  return kExitOk;
}

int Local(const TraceFlags& f) {
  const std::string state_dir = ResolveStateDir(f.state_dir);
  auto journal = OpenJournalReadOnly(state_dir);
  if (!journal.ok()) return Fail(journal.status());
  auto records = (*journal)->HistoryOfExecution(f.exec_id);
  if (!records.ok()) return Fail(records.status());
  if (records->empty()) return Fail(Status::NotFound("no execution " + f.exec_id));
  nlohmann::json history = nlohmann::json::array();
  for (const auto& r : *records) history.push_back(actors::TransitionJson(r));
  std::vector<TraceEntry> entries;
  AddTransitions(history, &entries);
  std::vector<std::string> files = {state_dir + "/coordinator.log"};
  std::error_code ec;
  for (const auto& dir : std::filesystem::directory_iterator(state_dir, ec)) {
    if (dir.is_directory() && dir.path().filename().string().rfind("worker-", 0) == 0) {
      files.push_back((dir.path() / "worker.log").string());
    }
  }
  for (const std::string& file : files) {
    auto lines = ScanLogLines(file, f.exec_id);
    if (!lines.ok()) return Fail(lines.status());
    std::string data;
    for (const std::string& l : *lines) data += l + "\n";
    AddLogLines(data, f.exec_id, &entries);
  }
  Print(entries, f.json);
  return kExitOk;
}

}  // namespace

void AddTraceCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<TraceFlags>();
  CLI::App* cmd = app.add_subcommand(
      "trace", "one timeline of an execution: journal transitions, coordinator and worker logs");
  cmd->add_option("exec_id", f->exec_id, "execution id (RUN_ID.TASK_ID)")->required();
  ClientFlagHelp help;
  help.json = "the timeline as a JSON array";
  help.timeout = "seconds to wait for each of the coordinator's answers";
  AddClientFlags(cmd, f.get(), kJsonFlag | kStateDirFlag | kRemoteFlags, help);
  cmd->callback([f, exit_code] { *exit_code = f->Endpoint().empty() ? Local(*f) : Remote(*f); });
}

}  // namespace apollo11::cli
