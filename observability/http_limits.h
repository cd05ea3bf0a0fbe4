#pragma once
// How long and how much the node's HTTP server lets one client take
// (GuardedHttpServer enforces it).

#include <chrono>
#include <cstddef>

namespace apollo11::observability {

struct HttpLimits {
  // Worker threads; more than max_per_address so that one address holding its
  // share leaves the others (and /healthz) served.
  int threads = 16;
  // Connections one client address may hold at once; the next is refused with
  // 503 at once.
  int max_per_address = 4;
  std::chrono::milliseconds head_timeout{5000};  // request line and headers
  std::chrono::milliseconds body_timeout{10000};
  std::chrono::milliseconds write_timeout{10000};  // the whole answer
  size_t max_head_bytes = 16 << 10;
  size_t max_body_bytes = 1 << 20;
};

}  // namespace apollo11::observability
