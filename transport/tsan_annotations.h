#pragma once
// Happens-before edges that ThreadSanitizer cannot see by itself: Debian's
// libzmq is not built with TSan, so the synchronisation inside it (lock-free
// pipes between the sending thread, its I/O threads and the receiving
// thread) is invisible, and every message buffer handed from one actor to
// another would be reported as a race. ZeroMQ's contract is that a message
// sent is complete when it is received; these calls state exactly that to
// the tool, one link at a time: everything a thread did before a send on a
// link happens before what the thread at the other end does after a later
// receive on the same link. Two actors that exchange no message (directly
// or through a chain of links) stay unordered, so a race between them is
// reported. No-ops in every other build.
//
// A link is what both of its ends can name without talking: the endpoint
// the socket bound or connected (ZMQ_LAST_ENDPOINT; a tcp endpoint by its
// port alone, as the two ends may spell the host differently) and, between
// a ROUTER and a DEALER, the DEALER's routing id: the DEALER knows its own,
// the ROUTER the one each message comes from or goes to. Peers without a
// routing id of their own (libzmq names them with a leading zero byte)
// share their ROUTER's endpoint key. A socket bound or connected to several
// endpoints is keyed on the last one only; Apollo-11 has none.

#include <string>
#include <string_view>

#if defined(__SANITIZE_THREAD__)
#define APOLLO11_TSAN_EDGES 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define APOLLO11_TSAN_EDGES 1
#endif
#endif

namespace apollo11::transport {

// The name of the link at `endpoint` (as ZMQ_LAST_ENDPOINT reports it) to
// the DEALER whose routing id is `dealer_id` (empty: none, or a PAIR's link).
// Both ends of one link compute the same name. Any build; pure.
std::string LinkKey(std::string_view endpoint, std::string_view dealer_id);

#if defined(APOLLO11_TSAN_EDGES)
// Before a message goes out on `socket` (a libzmq socket handle). `peer`:
// on a ROUTER, the routing id the message goes to; empty on a DEALER or PAIR.
void AnnotateBeforeSend(void* socket, std::string_view peer = {});
// After a message came in on `socket`; `peer` on a ROUTER: its sender.
void AnnotateAfterReceive(void* socket, std::string_view peer = {});
#else
inline void AnnotateBeforeSend(void*, std::string_view = {}) {}
inline void AnnotateAfterReceive(void*, std::string_view = {}) {}
#endif

}  // namespace apollo11::transport
