#include "common/malloc_policy.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace apollo11 {

void FixMallocThresholds() {
#if defined(__GLIBC__)
  // Setting either value turns glibc's dynamic adjustment off; both are set
  // so neither depends on the other's default.
  constexpr int kMmapThreshold = 128 * 1024;
  constexpr int kTrimThreshold = 4 * 1024 * 1024;
  ::mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  ::mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
#endif
}

}  // namespace apollo11
