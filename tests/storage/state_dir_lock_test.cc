#include "storage/state_dir_lock.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "tests/storage/storage_test_util.h"

namespace apollo11::storage {
namespace {

using testing::TempDir;

TEST_CASE("a state dir locked by another process is Busy, naming its pid, until it dies",
          "[storage]") {
  TempDir tmp;
  const std::string dir = tmp.Sub("state");
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    auto lock = StateDirLock::Acquire(dir);
    char c = lock.ok() ? 'y' : 'n';
    if (write(fds[1], &c, 1) != 1) _exit(1);
    pause();  // hold the lock until killed
    _exit(0);
  }
  close(fds[1]);
  char c = 0;
  REQUIRE(read(fds[0], &c, 1) == 1);
  close(fds[0]);
  REQUIRE(c == 'y');

  auto second = StateDirLock::Acquire(dir);
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == StatusCode::kBusy);
  CHECK_THAT(second.status().message(),
             Catch::Contains("state dir " + dir + " is in use by process " + std::to_string(pid)));
  CHECK_THAT(second.status().message(), Catch::Contains("use another --state-dir"));

  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  auto third = StateDirLock::Acquire(dir);
  INFO(third.status().ToString());
  REQUIRE(third.ok());
}

TEST_CASE("a state dir lock is released when its owner is destroyed", "[storage]") {
  TempDir tmp;
  {
    auto first = StateDirLock::Acquire(tmp.path());
    REQUIRE(first.ok());
    // A second open file description conflicts even in the same process.
    auto again = StateDirLock::Acquire(tmp.path());
    CHECK(again.status().code() == StatusCode::kBusy);
    CHECK_THAT(again.status().message(), Catch::Contains(std::to_string(getpid())));
  }
  CHECK(StateDirLock::Acquire(tmp.path()).ok());
}

TEST_CASE("Owner tells whether a state dir's lock is held, without taking it", "[storage]") {
  TempDir tmp;
  const std::string dir = tmp.Sub("state");
  CHECK(StateDirLock::Owner(dir).status().code() == StatusCode::kNotFound);
  {
    auto lock = StateDirLock::Acquire(dir);
    REQUIRE(lock.ok());
    auto owner = StateDirLock::Owner(dir);
    REQUIRE(owner.ok());
    CHECK(owner->holds);
    CHECK(owner->pid == std::to_string(getpid()));
    CHECK_FALSE(owner->command.empty());
    // Asking did not take it: it is still ours, and still held.
    CHECK(StateDirLock::Owner(dir)->holds);
  }
  auto after = StateDirLock::Owner(dir);
  REQUIRE(after.ok());
  CHECK_FALSE(after->holds);
  CHECK(after->pid == std::to_string(getpid()));  // the last owner, as recorded
  CHECK(StateDirLock::Acquire(dir).ok());
}

}  // namespace
}  // namespace apollo11::storage
