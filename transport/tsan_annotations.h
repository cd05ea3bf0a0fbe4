#pragma once
// Happens-before edges that ThreadSanitizer cannot see by itself: Debian's
// libzmq is not built with TSan, so the synchronisation inside it (lock-free
// pipes between the sending thread, its I/O threads and the receiving
// thread) is invisible, and every message buffer handed from one actor to
// another would be reported as a race. ZeroMQ's contract is that a message
// sent is complete when it is received; these calls state exactly that to
// the tool: everything a thread did before a send happens before what any
// thread does after a later receive. No-ops in every other build.
//
// The edge is global rather than per socket, because libzmq allocates the
// buffer inside zmq_send and its address is unknown to the sender. It can
// hide a race only between an access before a send and one after a receive
// in another thread: the message-passing pattern actors are built on.

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace apollo11::transport {

#if defined(__SANITIZE_THREAD__)
inline char tsan_zmq_sync;  // the address TSan keys the edge on; never read
inline void AnnotateBeforeSend() { __tsan_release(&tsan_zmq_sync); }
inline void AnnotateAfterReceive() { __tsan_acquire(&tsan_zmq_sync); }
#else
inline void AnnotateBeforeSend() {}
inline void AnnotateAfterReceive() {}
#endif

}  // namespace apollo11::transport
