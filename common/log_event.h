#pragma once
// Structured log events on top of spdlog. Each line carries, besides its
// text, who wrote it (`node`, `actor`), what happened (`event`) and the ids
// it concerns (`exec_id`, `attempt`, `worker_id`, ...). The text format
// prints the message as before; JsonLogFormatter writes the fields.
//
// How the fields reach the formatter: LogEvent puts them in a thread-local
// slot for the duration of one spdlog call, and the formatter, which runs
// synchronously in the calling thread (every Apollo-11 logger is
// synchronous), reads them from there. A plain spdlog::info(...) still works:
// its event is "log" and it has no fields.

#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>

namespace apollo11 {

// One structured field: a key and a value that is either a string (quoted in
// JSON) or a number/bool (written bare).
struct LogField {
  template <typename T>
  LogField(std::string_view k, const T& v) : key(k) {
    if constexpr (std::is_same_v<T, bool>) {
      value = v ? "true" : "false";
    } else if constexpr (std::is_floating_point_v<T>) {
      value = std::isfinite(v) ? fmt::format("{}", v) : "null";  // JSON has no NaN
    } else if constexpr (std::is_arithmetic_v<T>) {
      value = fmt::format("{}", v);
    } else {
      value = std::string(std::string_view(v));
      quoted = true;
    }
  }
  std::string key;
  std::string value;
  bool quoted = false;
};

// The name of the actor running on this thread ("scheduler", "dispatcher",
// "reconciler", "worker"; "node" for the main thread). The actor runtime sets
// it when it starts the thread.
void SetLogActor(std::string_view actor);
const std::string& LogActor();

// Which node this thread logs as: the worker id on a worker thread,
// "coordinator@HOST" on the coordinator's. SetProcessLogNode sets the default
// for threads that set none; call it in main before any actor starts.
void SetProcessLogNode(std::string_view node);
void SetLogNode(std::string_view node);
const std::string& LogNode();

// The event and fields of the spdlog call in progress on this thread (empty
// outside LogEvent). Read by JsonLogFormatter.
std::string_view CurrentLogEvent();
const std::initializer_list<LogField>* CurrentLogFields();

namespace internal {
// Installs `event` and `fields` for one log call on this thread.
class LogEventScope {
 public:
  LogEventScope(std::string_view event, const std::initializer_list<LogField>* fields);
  ~LogEventScope();
  LogEventScope(const LogEventScope&) = delete;
  LogEventScope& operator=(const LogEventScope&) = delete;

 private:
  std::string_view saved_event_;
  const std::initializer_list<LogField>* saved_fields_;
};
}  // namespace internal

// Logs `event` with `fields` at `level` through the default logger; the text
// is formatted as spdlog::log would. Nothing is built when `level` is off.
template <typename... Args>
void LogEvent(spdlog::level::level_enum level, std::string_view event,
              std::initializer_list<LogField> fields, fmt::format_string<Args...> text,
              Args&&... args) {
  spdlog::logger* logger = spdlog::default_logger_raw();
  if (!logger->should_log(level)) return;
  internal::LogEventScope scope(event, &fields);
  logger->log(level, text, std::forward<Args>(args)...);
}

}  // namespace apollo11
