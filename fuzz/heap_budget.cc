#include "fuzz/heap_budget.h"

#include <sanitizer/allocator_interface.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace apollo11::fuzz {
namespace {

// Live bytes the program has allocated since the hooks went in. Signed: memory
// allocated before that may be freed while a budget is alive.
std::atomic<long long> live_bytes{0};
std::atomic<long long> start{0};     // live_bytes when the budget began
std::atomic<long long> ceiling{-1};  // live_bytes may not pass it; -1: no budget
std::atomic<bool> tripped{false};

// Writes without allocating: this runs inside the allocator's hook.
void Report(long long grown, long long limit) {
  char line[200];
  int n = std::snprintf(line, sizeof line,
                        "fuzz: heap budget passed: this input grew the heap by %lld MiB, "
                        "over its limit of %lld MiB (fuzz/heap_budget.h)\n",
                        grown >> 20, limit >> 20);
  if (n > 0) (void)!write(STDERR_FILENO, line, static_cast<size_t>(n));
}

void OnMalloc(const volatile void*, size_t size) {
  const long long now =
      live_bytes.fetch_add(static_cast<long long>(size)) + static_cast<long long>(size);
  const long long limit = ceiling.load(std::memory_order_relaxed);
  if (limit >= 0 && now > limit && !tripped.exchange(true)) {
    const long long began = start.load(std::memory_order_relaxed);
    Report(now - began, limit - began);
    std::abort();  // libFuzzer saves the input as a crash reproducer
  }
}

void OnFree(const volatile void* ptr) {
  const size_t size = __sanitizer_get_allocated_size(const_cast<const void*>(ptr));
  live_bytes.fetch_sub(static_cast<long long>(size));
}

// APOLLO11_FUZZ_HEAP_MB in bytes, or `fallback` when unset or not a number.
size_t LimitFromEnvironment(size_t fallback) {
  const char* mb = std::getenv("APOLLO11_FUZZ_HEAP_MB");
  if (mb == nullptr || *mb == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(mb, &end, 10);
  return *end == '\0' ? static_cast<size_t>(value) << 20 : fallback;
}

// Installed once, before the first budget; counts from then on.
bool InstallHooks() { return __sanitizer_install_malloc_and_free_hooks(OnMalloc, OnFree) != 0; }

}  // namespace

HeapBudget::HeapBudget(size_t limit_bytes) {
  static const bool installed = InstallHooks();
  if (!installed) {
    std::fprintf(stderr, "fuzz: cannot install the heap budget's allocator hooks\n");
    std::abort();
  }
  static const size_t from_environment = LimitFromEnvironment(0);
  if (from_environment > 0) limit_bytes = from_environment;
  const long long now = live_bytes.load();
  start.store(now);
  ceiling.store(now + static_cast<long long>(limit_bytes));
}

HeapBudget::~HeapBudget() { ceiling.store(-1); }

}  // namespace apollo11::fuzz
