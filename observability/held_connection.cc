#include "observability/held_connection.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

namespace apollo11::observability {

HeldConnection::HeldConnection(int sock, ssl_st* ssl, std::string ip)
    : sock_(sock), ssl_(ssl), ip_(std::move(ip)) {
  const int flags = ::fcntl(sock_, F_GETFL, 0);
  if (flags >= 0) ::fcntl(sock_, F_SETFL, flags | O_NONBLOCK);
  // A write that could not finish is offered again from a buffer that may
  // have moved (the owner appends to it meanwhile), and may end in part.
  if (ssl_ != nullptr) {
    SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  }
}

HeldConnection::~HeldConnection() {
  if (ssl_ != nullptr) {
    SSL_shutdown(ssl_);  // close_notify; the peer's is not waited for
    SSL_free(ssl_);
  }
  ::shutdown(sock_, SHUT_RDWR);
  ::close(sock_);
}

ssize_t HeldConnection::Write(const char* data, size_t size) {
  if (size == 0) return 0;
  if (ssl_ == nullptr) {
    for (;;) {
      const ssize_t n = ::send(sock_, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    }
  }
  ERR_clear_error();
  const int n = SSL_write(ssl_, data, static_cast<int>(size > INT_MAX ? INT_MAX : size));
  if (n > 0) return n;
  const int err = SSL_get_error(ssl_, n);
  return err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ ? 0 : -1;
}

bool HeldConnection::Drain() {
  char buf[4096];
  // A client that keeps sending is read a bounded amount per call, so it
  // cannot hold the owner's thread.
  for (int reads = 0; reads < 16; ++reads) {
    if (ssl_ != nullptr) {
      ERR_clear_error();
      const int n = SSL_read(ssl_, buf, sizeof buf);
      if (n > 0) continue;
      const int err = SSL_get_error(ssl_, n);
      return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE;
    }
    const ssize_t n = ::recv(sock_, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  return true;
}

}  // namespace apollo11::observability
