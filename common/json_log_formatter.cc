#include "common/json_log_formatter.h"

#include <spdlog/pattern_formatter.h>

#include <chrono>
#include <ctime>

#include "common/log_event.h"
#include "common/utf8.h"

namespace apollo11 {
namespace {

// Escapes a run of valid UTF-8: only quotes, backslashes and control bytes.
void AppendValidEscaped(std::string_view text, std::string* out) {
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          *out += ch;
        }
    }
  }
}

void AppendString(std::string_view key, std::string_view value, std::string* out) {
  *out += ",\"";
  AppendJsonEscaped(key, out);
  *out += "\":\"";
  AppendJsonEscaped(value, out);
  *out += '"';
}

std::string IsoTimestamp(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];  // roomy: the compiler cannot bound every int field
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

// %k in a pattern: the level as LogLevelName names it.
class LevelNameFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string_view name = LogLevelName(msg.level);
    dest.append(name.data(), name.data() + name.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<LevelNameFlag>();
  }
};

}  // namespace

std::string_view LogLevelName(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
      return "trace";
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "info";
    case spdlog::level::warn:
      return "warn";
    case spdlog::level::err:
      return "error";
    case spdlog::level::critical:
      return "critical";
    default:
      return "off";
  }
}

std::unique_ptr<spdlog::formatter> MakeTextLogFormatter() {
  auto f = std::make_unique<spdlog::pattern_formatter>();
  f->add_flag<LevelNameFlag>('k').set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%k%$ [%t] %v");
  return f;
}

void AppendJsonEscaped(std::string_view text, std::string* out) {
  while (!text.empty()) {
    const size_t bad = FirstInvalidUtf8(text);
    if (bad == std::string_view::npos) {
      AppendValidEscaped(text, out);
      return;
    }
    AppendValidEscaped(text.substr(0, bad), out);
    *out += "\\ufffd";
    text.remove_prefix(bad + 1);
  }
}

void JsonLogFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  std::string line;
  line.reserve(256 + msg.payload.size());
  line += "{\"ts\":\"";
  line += IsoTimestamp(msg.time);
  line += '"';
  AppendString("level", LogLevelName(msg.level), &line);
  AppendString("node", LogNode(), &line);
  AppendString("actor", LogActor(), &line);
  const std::string_view event = CurrentLogEvent();
  AppendString("event", event.empty() ? std::string_view("log") : event, &line);
  AppendString("msg", std::string_view(msg.payload.data(), msg.payload.size()), &line);
  if (const auto* fields = CurrentLogFields()) {
    for (const LogField& f : *fields) {
      if (f.quoted) {
        AppendString(f.key, f.value, &line);
      } else {
        line += ",\"";
        AppendJsonEscaped(f.key, &line);
        line += "\":";
        line += f.value;  // a number or bool, from LogField's constructor
      }
    }
  }
  line += "}\n";
  dest.append(line.data(), line.data() + line.size());
}

std::unique_ptr<spdlog::formatter> JsonLogFormatter::clone() const {
  return std::make_unique<JsonLogFormatter>();
}

}  // namespace apollo11
