#include "transport/tsan_annotations.h"

#if defined(APOLLO11_TSAN_EDGES)
#include <sanitizer/tsan_interface.h>
#include <zmq.h>

#include <cstddef>
#include <cstdint>
#endif

namespace apollo11::transport {

std::string LinkKey(std::string_view endpoint, std::string_view dealer_id) {
  constexpr std::string_view kTcp = "tcp://";
  std::string key;
  if (endpoint.substr(0, kTcp.size()) == kTcp) {
    // "tcp://0.0.0.0:7011" bound, "tcp://localhost:7011" connected: one port.
    key = "tcp:";
    key += endpoint.substr(endpoint.rfind(':') + 1);
  } else {
    key = endpoint;
  }
  if (!dealer_id.empty() && dealer_id.front() != '\0') {
    key += '/';
    key += dealer_id;
  }
  return key;
}

#if defined(APOLLO11_TSAN_EDGES)
namespace {

// TSan keys each link's edge on one of these addresses, chosen by a hash of
// the link's name: no table shared between threads, whose own lock the tool
// would take for an edge between every pair of them. Two links that land on
// one address (with a few hundred links in a process, a few runs in a
// hundred) only order a little more than they should. Never read or written.
constexpr size_t kSlots = size_t{1} << 20;
char link_slots[kSlots];

// The property `option` of `socket` as a string (empty when unreadable).
std::string Option(void* socket, int option) {
  char value[512];
  size_t size = sizeof(value);
  if (zmq_getsockopt(socket, option, value, &size) != 0) return {};
  // ZMQ_LAST_ENDPOINT counts its terminating NUL; a routing id is bytes.
  if (option == ZMQ_LAST_ENDPOINT && size > 0) --size;
  return std::string(value, size);
}

void* SlotOf(void* socket, std::string_view peer) {
  const std::string own_id = peer.empty() ? Option(socket, ZMQ_ROUTING_ID) : std::string();
  const std::string key =
      LinkKey(Option(socket, ZMQ_LAST_ENDPOINT), peer.empty() ? std::string_view(own_id) : peer);
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  return &link_slots[h % kSlots];
}

}  // namespace

void AnnotateBeforeSend(void* socket, std::string_view peer) {
  __tsan_release(SlotOf(socket, peer));
}

void AnnotateAfterReceive(void* socket, std::string_view peer) {
  __tsan_acquire(SlotOf(socket, peer));
}
#endif

}  // namespace apollo11::transport
