#pragma once
// A spdlog formatter that writes one JSON object per line:
//   {"ts":"2026-11-29T13:47:34.123Z","level":"info","node":"w1","actor":"worker",
//    "event":"exited","msg":"...","exec_id":"r1.a","attempt":2,...}
// Always valid JSON: control characters are escaped and bytes that are not
// well-formed UTF-8 become U+FFFD. Fields come from LogEvent (log_event.h).

#include <spdlog/formatter.h>

#include <memory>
#include <string>
#include <string_view>

namespace apollo11 {

class JsonLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;
};

// Appends `text` to `out` as the inside of a JSON string (no quotes).
void AppendJsonEscaped(std::string_view text, std::string* out);

// The one level vocabulary of every log line, text or JSON: "trace",
// "debug", "info", "warn", "error", "critical" (spdlog's own names say
// "warning"), the words --log-level takes.
std::string_view LogLevelName(spdlog::level::level_enum level);

// The text format of stderr: "2026-11-29T13:47:34.123 warn [1234] message",
// the level coloured on a terminal, named by LogLevelName.
std::unique_ptr<spdlog::formatter> MakeTextLogFormatter();

}  // namespace apollo11
