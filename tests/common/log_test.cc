// Structured logs: every JSON line parses whatever the message holds, carries
// its fields, and log files are read back bounded and in order.

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/json_log_formatter.h"
#include "common/log_event.h"
#include "common/log_scan.h"

using apollo11::LogEvent;

namespace {

// Routes the default logger to `out` in JSON for one test; restores it after.
struct JsonCapture {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> saved = spdlog::default_logger();
  JsonCapture() {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    sink->set_formatter(std::make_unique<apollo11::JsonLogFormatter>());
    auto logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  ~JsonCapture() { spdlog::set_default_logger(saved); }
  std::vector<nlohmann::json> Lines() const {
    std::vector<nlohmann::json> lines;
    std::istringstream in(out.str());
    std::string line;
    while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));  // throws if bad
    return lines;
  }
};

std::string TempDir() {
  auto dir =
      std::filesystem::temp_directory_path() / ("apollo11-logtest-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace

TEST_CASE("an event's JSON line has the standard and the structured fields", "[log]") {
  JsonCapture capture;
  apollo11::SetProcessLogNode("coordinator@box");
  apollo11::SetLogActor("scheduler");
  LogEvent(spdlog::level::warn, "requeued",
           {{"exec_id", "r1.a"}, {"attempt", 2u}, {"reason", "worker w1 lost"}, {"ok", true}},
           "{} attempt {} requeued", "r1.a", 2);
  spdlog::info("a plain line");
  auto lines = capture.Lines();
  REQUIRE(lines.size() == 2);
  const auto& e = lines[0];
  CHECK(e["level"] == "warn");  // one vocabulary: the word --log-level takes
  CHECK(e["node"] == "coordinator@box");
  CHECK(e["actor"] == "scheduler");
  CHECK(e["event"] == "requeued");
  CHECK(e["msg"] == "r1.a attempt 2 requeued");
  CHECK(e["exec_id"] == "r1.a");
  CHECK(e["attempt"] == 2);
  CHECK(e["reason"] == "worker w1 lost");
  CHECK(e["ok"] == true);
  const std::string ts = e["ts"];
  CHECK(ts.size() == 24);  // 2026-11-29T13:47:34.123Z
  CHECK(ts[10] == 'T');
  CHECK(ts.back() == 'Z');
  // Fields belong to one call only.
  CHECK(lines[1]["event"] == "log");
  CHECK(!lines[1].contains("exec_id"));
}

TEST_CASE("text and JSON lines name the levels as --log-level does", "[log]") {
  std::ostringstream text;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text);
  sink->set_formatter(apollo11::MakeTextLogFormatter());
  spdlog::logger logger("text", sink);
  logger.set_level(spdlog::level::trace);
  logger.warn("careful");
  logger.error("broken");
  logger.info("fine");
  const std::string out = text.str();
  CHECK(out.find(" warn [") != std::string::npos);
  CHECK(out.find(" error [") != std::string::npos);
  CHECK(out.find(" info [") != std::string::npos);
  CHECK(out.find("warning") == std::string::npos);
  for (auto level : {spdlog::level::trace, spdlog::level::debug, spdlog::level::info,
                     spdlog::level::warn, spdlog::level::err}) {
    // Every name reads back as the same level, as --log-level parses it.
    CHECK(spdlog::level::from_str(std::string(apollo11::LogLevelName(level))) == level);
  }
}

TEST_CASE("hostile strings are escaped so every line stays valid JSON", "[log]") {
  JsonCapture capture;
  const std::string hostile = std::string("quote\" backslash\\ newline\n tab\t nul") + '\0' +
                              " bell\x07 del\x7f" +
                              " bad\xff\xfe truncated\xc3 surrogate\xed\xa0\x80 ok\xc3\xa9";
  LogEvent(spdlog::level::info, "exited", {{hostile, hostile}, {"exec_id", hostile}}, "{}",
           hostile);
  spdlog::info("{}", hostile);
  LogEvent(spdlog::level::info, "nan", {{"ratio", 0.0 / 0.0}, {"inf", 1.0 / 0.0}}, "x");
  auto lines = capture.Lines();
  REQUIRE(lines.size() == 3);
  const std::string msg = lines[0]["msg"];
  CHECK(msg.find("quote\" backslash\\ newline\n tab\t nul") == 0);
  CHECK(msg.find("bell\x07 del\x7f") != std::string::npos);
  CHECK(msg.find("bad\xef\xbf\xbd\xef\xbf\xbd") != std::string::npos);  // U+FFFD each
  CHECK(msg.find("ok\xc3\xa9") != std::string::npos);                   // é kept
  CHECK(lines[0]["exec_id"] == msg);
  CHECK(lines[1]["msg"] == msg);
  CHECK(lines[2]["ratio"].is_null());
  CHECK(lines[2]["inf"].is_null());
  // Raw control bytes never reach the file: one line per event.
  const std::string text = capture.out.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == 3);
}

TEST_CASE("each thread logs under its own actor and node", "[log]") {
  JsonCapture capture;
  apollo11::SetProcessLogNode("coordinator@box");
  std::thread t([] {
    apollo11::SetLogActor("worker");
    apollo11::SetLogNode("w7");
    spdlog::info("from the worker");
  });
  t.join();
  auto lines = capture.Lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0]["actor"] == "worker");
  CHECK(lines[0]["node"] == "w7");
}

TEST_CASE("a log scan finds matching lines oldest first across rotated files, bounded", "[log]") {
  const std::string dir = TempDir();
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
  };
  write("node.2.log", "{\"n\":1,\"exec_id\":\"r.a\"}\n{\"n\":2}\n");
  write("node.1.log", "{\"n\":3,\"exec_id\":\"r.a\"}\n");
  write("node.log", "{\"n\":4}\n{\"n\":5,\"exec_id\":\"r.a\"}\n");
  auto all = apollo11::ScanLogLines(dir + "/node.log", "r.a");
  REQUIRE(all.ok());
  REQUIRE(all->size() == 3);
  CHECK((*all)[0] == "{\"n\":1,\"exec_id\":\"r.a\"}");
  CHECK((*all)[1] == "{\"n\":3,\"exec_id\":\"r.a\"}");
  CHECK((*all)[2] == "{\"n\":5,\"exec_id\":\"r.a\"}");
  // A budget that reaches into the middle of node.1.log: the cut line is
  // dropped, older files are not read.
  const uint64_t newest = std::filesystem::file_size(dir + "/node.log");
  auto bounded = apollo11::ScanLogLines(dir + "/node.log", "r.a", newest + 5);
  REQUIRE(bounded.ok());
  REQUIRE(bounded->size() == 1);
  CHECK((*bounded)[0] == "{\"n\":5,\"exec_id\":\"r.a\"}");
  auto missing = apollo11::ScanLogLines(dir + "/none.log", "r.a");
  REQUIRE(missing.ok());
  CHECK(missing->empty());
  std::filesystem::remove_all(dir);
}
