// LogSink through an injected write(2): a write that fails (disk full, file
// size limit) is remembered with its cause, never silently dropped.

#include "executor/log_sink.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace apollo11::executor {
namespace {

// Accepts this many bytes, then fails every write with `g_errno`.
size_t g_room = 0;
int g_errno = ENOSPC;

ssize_t FillingDisk(int fd, const void* data, size_t n) {
  if (g_room == 0) {
    errno = g_errno;
    return -1;
  }
  const size_t take = n < g_room ? n : g_room;
  g_room -= take;
  return ::write(fd, data, take);
}

struct TempLog {
  TempLog() {
    char tmpl[] = "/tmp/apollo11-logsink-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  ~TempLog() { std::filesystem::remove_all(dir); }
  std::string dir;
};

}  // namespace

TEST_CASE("a log write that fails on a full disk is recorded with its cause", "[executor]") {
  TempLog tmp;
  g_room = 10;
  g_errno = ENOSPC;
  LogSink sink(&FillingDisk);
  REQUIRE(sink.Open(tmp.dir + "/x.out", 1 << 20, LogSink::Keep::kTail, 64).ok());
  sink.Write("0123456789abcdef", 16);
  sink.Write("more", 4);
  CHECK(sink.Finish() == "0123456789abcdefmore");  // the in-memory tail is whole
  CHECK(sink.write_error() == "disk full (No space left on device) after 10 bytes");
  CHECK(std::filesystem::file_size(tmp.dir + "/x.out") == 10);
}

TEST_CASE("a log write past a file size limit names the limit", "[executor]") {
  TempLog tmp;
  g_room = 0;
  g_errno = EFBIG;
  LogSink sink(&FillingDisk);
  REQUIRE(sink.Open(tmp.dir + "/x.out", 1 << 20, LogSink::Keep::kNone, 0).ok());
  sink.Write("x", 1);
  sink.Finish();
  CHECK(sink.write_error() == "file size limit reached (File too large) after 0 bytes");
}

TEST_CASE("a log that reaches its cap is not reported as a failed write", "[executor]") {
  TempLog tmp;
  LogSink sink;
  REQUIRE(sink.Open(tmp.dir + "/x.out", 8, LogSink::Keep::kNone, 0).ok());
  sink.Write("0123456789", 10);
  sink.Finish();
  CHECK(sink.write_error().empty());
}

}  // namespace apollo11::executor
