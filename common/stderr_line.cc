#include "common/stderr_line.h"

#include <spdlog/details/log_msg.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <string>

#include "common/json_log_formatter.h"
#include "common/log_event.h"

namespace apollo11 {
namespace {

std::atomic<bool> g_stderr_json{false};

}  // namespace

void SetStderrJson(bool json) { g_stderr_json.store(json, std::memory_order_relaxed); }

bool StderrIsJson() { return g_stderr_json.load(std::memory_order_relaxed); }

void StderrPrintf(spdlog::level::level_enum level, const char* event, const char* format, ...) {
  va_list args;
  va_start(args, format);
  if (!StderrIsJson()) {
    std::vfprintf(stderr, format, args);
    va_end(args);
    return;
  }
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string text(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(text.data(), text.size() + 1, format, args);
  va_end(args);
  const size_t first = text.find_first_not_of('\n');
  const size_t last = text.find_last_not_of('\n');
  text = first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
  internal::LogEventScope scope(event, nullptr);
  spdlog::details::log_msg msg(spdlog::source_loc{}, "apollo11", level, text);
  spdlog::memory_buf_t line;
  JsonLogFormatter().format(msg, line);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace apollo11
