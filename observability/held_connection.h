#pragma once
// A connection that an HTTP handler kept open past its request
// (GuardedHttpServer::KeepOpen), for an answer that goes on (the live
// events of observability/event_hub.h): the socket, non-blocking, and its
// TLS session if any. The owner writes the answer's head and body itself.
// Destroying it ends the TLS session (close_notify) and closes the socket.
//
// Not thread-safe: one owner thread at a time.

#include <sys/types.h>

#include <string>

struct ssl_st;

namespace apollo11::observability {

class HeldConnection {
 public:
  // Takes `sock` and `ssl` (null: plain text). `ip` is the client's address.
  HeldConnection(int sock, ssl_st* ssl, std::string ip);
  ~HeldConnection();
  HeldConnection(const HeldConnection&) = delete;
  HeldConnection& operator=(const HeldConnection&) = delete;

  int socket() const { return sock_; }
  const std::string& ip() const { return ip_; }

  // Writes what the connection takes now of `data`, without waiting: the
  // bytes taken (0: none now, try again once the socket is writable), or -1
  // once the connection failed. Under TLS the same bytes must be offered
  // again after a 0 (the session keeps its place).
  ssize_t Write(const char* data, size_t size);
  // Reads and drops whatever the client sent (a client says nothing on an
  // event stream); false once it closed or the connection failed.
  bool Drain();

 private:
  int sock_;
  ssl_st* ssl_;
  std::string ip_;
};

}  // namespace apollo11::observability
