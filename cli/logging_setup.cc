#include "cli/logging_setup.h"

#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>

#include "common/json_log_formatter.h"
#include "common/stderr_line.h"

namespace apollo11::cli {
namespace {

// The JSON log file of `settings`, keeping events down to `level`.
Result<spdlog::sink_ptr> OpenLogFile(const LogSettings& settings, spdlog::level::level_enum level) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(settings.file).parent_path(), ec);
  try {
    auto file = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
        settings.file, settings.file_bytes, settings.file_count);
    file->set_level(level);
    file->set_formatter(std::make_unique<JsonLogFormatter>());
    return spdlog::sink_ptr(std::move(file));
  } catch (const spdlog::spdlog_ex& e) {
    return Status::Io("log file " + settings.file + ": " + e.what());
  }
}

spdlog::level::level_enum FileLevel(const LogSettings& settings) {
  return std::min(spdlog::level::from_str(settings.level), spdlog::level::info);
}

}  // namespace

Status SetUpLogging(const LogSettings& settings) {
  const auto level = spdlog::level::from_str(settings.level);
  if (level == spdlog::level::off && settings.level != "off") {
    return Status::InvalidInput("unknown log level '" + settings.level + "'");
  }
  std::string format = settings.format;
  if (format.empty()) format = ::isatty(STDERR_FILENO) ? "text" : "json";
  if (format != "json" && format != "text") {
    return Status::InvalidInput("unknown log format '" + format + "' (json or text)");
  }
  SetStderrJson(format == "json");
  auto err = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  err->set_level(level);
  if (format == "json") {
    err->set_formatter(std::make_unique<JsonLogFormatter>());
  } else {
    err->set_formatter(MakeTextLogFormatter());
  }
  std::vector<spdlog::sink_ptr> sinks{err};
  // The file keeps events down to info even when stderr is quieter: it is
  // what `apollo11 trace` reads.
  const auto file_level = FileLevel(settings);
  if (!settings.file.empty()) {
    auto file = OpenLogFile(settings, file_level);
    if (!file.ok()) return file.status();
    // Behind a dist sink, so ReopenLogFile can swap the file under it.
    auto swappable = std::make_shared<spdlog::sinks::dist_sink_mt>();
    swappable->add_sink(*file);
    sinks.push_back(std::move(swappable));
  }
  auto logger = std::make_shared<spdlog::logger>("apollo11", sinks.begin(), sinks.end());
  // spdlog's own complaints (a bad format string) would be raw text on stderr.
  logger->set_error_handler([](const std::string& what) {
    StderrPrintf(spdlog::level::err, "log_error", "apollo11: log error: %s\n", what.c_str());
  });
  logger->set_level(settings.file.empty() ? level : file_level);
  // Every line reaches the file at once, so `trace` sees what just happened.
  logger->flush_on(spdlog::level::trace);
  spdlog::drop("apollo11");
  spdlog::register_logger(logger);
  spdlog::set_default_logger(logger);
  return Status::Ok();
}

Status ReopenLogFile(const LogSettings& settings) {
  if (settings.file.empty()) return Status::Ok();
  auto file = OpenLogFile(settings, FileLevel(settings));
  if (!file.ok()) return file.status();
  for (const spdlog::sink_ptr& sink : spdlog::default_logger()->sinks()) {
    if (auto swappable = std::dynamic_pointer_cast<spdlog::sinks::dist_sink_mt>(sink)) {
      swappable->set_sinks({*file});
      return Status::Ok();
    }
  }
  return Status::NotFound("no log file is open");
}

std::string CoordinatorLogNode() {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  return std::string("coordinator@") + host;
}

}  // namespace apollo11::cli
