#pragma once
// Property checks inside fuzz targets. libFuzzer saves the input of any
// abort() as a crash reproducer, so a broken promise of the code under test
// becomes a file we can turn into a regression test.

#include <cstdio>
#include <cstdlib>

namespace apollo11::fuzz {

// Aborts with `promise` on stderr unless `holds`.
inline void Require(bool holds, const char* promise) {
  if (holds) return;
  std::fprintf(stderr, "fuzz: broken promise: %s\n", promise);
  std::abort();
}

}  // namespace apollo11::fuzz
