#pragma once
// A per-input heap budget for fuzz targets. libFuzzer's -rss_limit_mb is
// checked once a second by a separate thread, and when it fires its report
// walks the whole heap first (__sanitizer_print_memory_profile); under a
// runaway allocation that walk did not finish within the 150 s
// scripts/fuzz.sh allows (CI, 2026-12-03), so no reproducer was written.
// This budget is checked on every allocation, in the thread that allocates:
// the input that passes it aborts at once, libFuzzer saves it as a crash-*
// reproducer, and the report shows the allocating stack.

#include <cstddef>

namespace apollo11::fuzz {

// While a HeapBudget is alive, the heap may grow by at most `limit_bytes`
// (live bytes, as requested by the program) over what it held when the
// budget began; the allocation that passes it prints the figures and aborts.
// One at a time; not for use across threads.
class HeapBudget {
 public:
  // What a target may use for one input. libFuzzer's inputs here are under
  // 5 KB; a 534 KB pipeline of 2,000 tasks grows the dsl_parser target's heap
  // by 10-20 MiB, so 512 MiB is only passed by an amplification. Under ASan
  // (redzones, a 256 MiB quarantine) it stays well below the 2 GiB
  // -rss_limit_mb of scripts/fuzz.sh, so the budget fires first.
  static constexpr size_t kDefaultLimit = size_t{512} << 20;

  // The limit is `limit_bytes`, or APOLLO11_FUZZ_HEAP_MB mebibytes when that
  // is set to a whole number (to check the budget itself, or to hunt
  // smaller runaways).
  explicit HeapBudget(size_t limit_bytes = kDefaultLimit);
  ~HeapBudget();
  HeapBudget(const HeapBudget&) = delete;
  HeapBudget& operator=(const HeapBudget&) = delete;
};

}  // namespace apollo11::fuzz
