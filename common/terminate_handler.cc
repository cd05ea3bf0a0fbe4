#include "common/terminate_handler.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace apollo11 {

namespace {

// The exception being handled, in words; "no exception" when terminate was
// called directly.
std::string CurrentException() {
  std::exception_ptr e = std::current_exception();
  if (e == nullptr) return "std::terminate called without an exception";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return std::string("uncaught exception: ") + ex.what();
  } catch (...) {
    return "uncaught non-standard exception";
  }
}

[[noreturn]] void OnTerminate() {
  char thread[16] = "?";
  pthread_getname_np(pthread_self(), thread, sizeof(thread));
  const std::string why = CurrentException();
  if (auto logger = spdlog::default_logger()) {
    logger->critical("fatal: thread {} died ({}); the process aborts", thread, why);
    logger->flush();
  } else {
    std::fprintf(stderr, "apollo11: fatal: thread %s died (%s); the process aborts\n", thread,
                 why.c_str());
  }
  std::abort();
}

}  // namespace

void InstallTerminateHandler() { std::set_terminate(&OnTerminate); }

}  // namespace apollo11
