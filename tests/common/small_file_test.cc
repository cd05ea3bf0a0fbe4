#include "common/small_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <fstream>
#include <string>

namespace apollo11 {
namespace {

TEST_CASE("a small file is read whole, or up to its cap", "[common][small_file]") {
  char path[] = "/tmp/apollo11-small-file-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  const std::string text(10000, 'x');
  REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fd);
  CHECK(ReadSmallFile(path, 1 << 20) == text);
  CHECK(ReadSmallFile(path, 5000) == std::string(5000, 'x'));
  ::unlink(path);
  errno = 0;
  CHECK_FALSE(ReadSmallFile(path, 100).has_value());
  CHECK(errno == ENOENT);
}

TEST_CASE("the /proc file of a process that ended is a failed read, not an exception",
          "[common][small_file]") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const std::string cmdline_path = "/proc/" + std::to_string(child) + "/cmdline";
  // What the bug was: std::ifstream opened before the exit throws from its
  // first read after it (ESRCH from read(2)).
  std::ifstream opened_before(cmdline_path, std::ios::binary);
  REQUIRE(opened_before.is_open());
  ::kill(child, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  errno = 0;
  CHECK_FALSE(ReadSmallFile(cmdline_path, 1 << 20).has_value());
  CHECK_THROWS(std::string((std::istreambuf_iterator<char>(opened_before)),
                           std::istreambuf_iterator<char>()));
}

}  // namespace
}  // namespace apollo11
