// A thread that dies through std::terminate leaves one critical line naming
// it and the exception, then the process aborts. Run in a forked child.

#include "common/terminate_handler.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <thread>

TEST_CASE("an exception escaping a thread is logged with the thread's name before the abort",
          "[terminate]") {
  int out[2];
  REQUIRE(::pipe(out) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    apollo11::InstallTerminateHandler();
    std::thread t([] {
      pthread_setname_np(pthread_self(), "scheduler");
      throw std::runtime_error("boom in a handler");
    });
    t.join();
    ::_exit(0);
  }
  ::close(out[1]);
  std::string text;
  char buf[512];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO(text);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
  CHECK(text.find("fatal: thread scheduler died (uncaught exception: boom in a handler); the "
                  "process aborts") != std::string::npos);
}
