#pragma once
// Routes spdlog's default logger to a string for one test (pattern "%v": the
// message alone); the logger before it is restored when the capture ends.

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>

namespace apollo11::testing {

struct LogCapture {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> saved = spdlog::default_logger();
  LogCapture() {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    sink->set_pattern("%v");
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  }
  ~LogCapture() { spdlog::set_default_logger(saved); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  // How many times `what` occurs in what was logged so far.
  int Count(const std::string& what) const {
    int n = 0;
    const std::string text = out.str();
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }
};

}  // namespace apollo11::testing
