#include "observability/guarded_http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <optional>
#include <utility>

#include "common/json_dump.h"
#include "observability/http_wire.h"
#include "observability/tls_context.h"

namespace apollo11::observability {
namespace {

using Deadline = std::chrono::steady_clock::time_point;

int RemainingMs(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

// Waits for `events` on `sock` until `deadline`; false on timeout or error.
bool WaitFor(socket_t sock, short events, Deadline deadline) {
  for (;;) {
    pollfd p{sock, events, 0};
    const int n = ::poll(&p, 1, RemainingMs(deadline));
    if (n < 0 && errno == EINTR) continue;
    return n > 0;
  }
}

// Sends all of `data` before `deadline`; a reader too slow for it is cut off.
void SendAll(socket_t sock, const std::string& data, Deadline deadline) {
  size_t sent = 0;
  while (sent < data.size()) {
    if (!WaitFor(sock, POLLOUT, deadline)) return;
    const ssize_t n =
        ::send(sock, data.data() + sent, data.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

void PeerOf(socket_t sock, std::string* ip, int* port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  char text[INET6_ADDRSTRLEN] = "";
  if (::getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    *port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    *port = ntohs(a->sin6_port);
  }
  *ip = text;
}

using Clock = std::chrono::steady_clock;

// GET `path` (/healthz, with or without a query string): the one path the
// reader answers itself.
bool IsHealthCheck(const std::string& head, const std::string& path) {
  const std::string line = "GET " + path;
  return head.rfind(line + " ", 0) == 0 || head.rfind(line + "?", 0) == 0;
}

// The KeepOpen slot of the request this worker thread is answering.
thread_local GuardedHttpServer::Taker* t_keep_open = nullptr;

constexpr const char* kHealthy =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
    "Connection: close\r\n\r\nok\n";

}  // namespace

enum class GuardedHttpServer::Step { kWaiting, kComplete, kFinished };

struct GuardedHttpServer::Conn {
  socket_t sock = -1;
  std::string ip;
  int port = 0;
  std::string in;     // bytes received so far
  Deadline deadline;  // for the head, then for the body
  bool in_body = false;
  size_t head_end = 0, total = 0;
  Head head;
  bool counted = false;      // holds one of its address's connections
  bool health_only = false;  // holds a health-only slot: /healthz or 503
  bool lingering = false;    // refused: waiting for the client to close
  SSL* ssl = nullptr;        // its TLS session (under TLS, once begun)
};

namespace {
// How long a refused connection is kept half-closed so that the client reads
// the refusal instead of a reset (closing with unread input sends RST).
constexpr std::chrono::milliseconds kLinger{1000};
// A connection past its address's cap may still ask GET /healthz: this many
// in all, with this long for its request head.
constexpr int kMaxHealthOnly = 64;
constexpr std::chrono::milliseconds kHealthOnlyHead{1000};
}  // namespace

GuardedHttpServer::GuardedHttpServer(const HttpLimits& limits) : limits_(limits) {
  // httplib's own pool only hands sockets over: it never waits on a client.
  new_task_queue = [] { return new httplib::ThreadPool(2); };
}

GuardedHttpServer::~GuardedHttpServer() { Shutdown(); }

bool GuardedHttpServer::Start() {
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  workers_ =
      std::make_unique<httplib::ThreadPool>(static_cast<size_t>(std::max(1, limits_.threads)));
  reader_ = std::jthread([this](std::stop_token stop) { ReadLoop(stop); });
  return true;
}

void GuardedHttpServer::Shutdown() {
  if (reader_.joinable()) {
    reader_.request_stop();
    [[maybe_unused]] ssize_t w = ::write(wake_[1], "s", 1);
    reader_.join();
  }
  std::vector<std::unique_ptr<Conn>> left;
  {
    MutexLock lock(&mu_);
    left.swap(handed_);
  }
  for (auto& c : left) Close(*c);
  if (workers_) {
    workers_->shutdown();
    workers_.reset();
  }
  for (int& fd : wake_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

size_t GuardedHttpServer::refused() const {
  MutexLock lock(&mu_);
  return refused_;
}

size_t GuardedHttpServer::timed_out() const {
  MutexLock lock(&mu_);
  return timed_out_;
}

GuardedHttpServer::Admission GuardedHttpServer::Admit(const std::string& ip) {
  MutexLock lock(&mu_);
  int& n = per_address_[ip];
  if (n < limits_.max_per_address) {
    ++n;
    return Admission::kAdmitted;
  }
  if (n == 0) per_address_.erase(ip);
  int& h = health_only_[ip];
  if (h < limits_.max_per_address && health_only_total_ < kMaxHealthOnly) {
    ++h;
    ++health_only_total_;
    return Admission::kHealthOnly;
  }
  if (h == 0) health_only_.erase(ip);
  ++refused_;
  return Admission::kRefused;
}

void GuardedHttpServer::Linger(Conn& conn, const std::string& answer, bool plaintext) {
  if (plaintext || !tls_) {
    SendAll(conn.sock, answer, Clock::now());
  } else if (conn.ssl != nullptr) {
    Send(conn, answer, Clock::now());
    SSL_shutdown(conn.ssl);  // close_notify; the peer's is not waited for
  }
  ::shutdown(conn.sock, SHUT_WR);
  conn.lingering = true;
  conn.deadline = Clock::now() + kLinger;
}

void GuardedHttpServer::Release(Conn& conn) {
  if (!conn.counted) return;
  conn.counted = false;
  MutexLock lock(&mu_);
  std::map<std::string, int>& slots = conn.health_only ? health_only_ : per_address_;
  if (conn.health_only) --health_only_total_;
  auto it = slots.find(conn.ip);
  if (it != slots.end() && --it->second <= 0) slots.erase(it);
}

void GuardedHttpServer::Close(Conn& conn) {
  if (conn.sock < 0) return;
  if (conn.ssl != nullptr) {
    SSL_free(conn.ssl);
    conn.ssl = nullptr;
  }
  ::shutdown(conn.sock, SHUT_RDWR);
  ::close(conn.sock);
  conn.sock = -1;
  Release(conn);
}

std::string GuardedHttpServer::TooMany(const std::string& ip) const {
  return Refusal(503, "Service Unavailable",
                 "too many connections from " + ip + " (at most " +
                     std::to_string(limits_.max_per_address) +
                     " at once; past that only GET /healthz is answered)");
}

bool GuardedHttpServer::process_and_close_socket(socket_t sock) {
  auto conn = std::make_unique<Conn>();
  conn->sock = sock;
  PeerOf(sock, &conn->ip, &conn->port);
  const Admission admission = Admit(conn->ip);
  conn->counted = admission != Admission::kRefused;
  conn->health_only = admission == Admission::kHealthOnly;
  if (!conn->counted) {
    // Under TLS no session has begun: the refusal is a close, not text.
    Linger(*conn, TooMany(conn->ip));
  } else {
    conn->deadline = Clock::now() + (conn->health_only ? std::min<std::chrono::milliseconds>(
                                                             kHealthOnlyHead, limits_.head_timeout)
                                                       : limits_.head_timeout);
  }
  {
    MutexLock lock(&mu_);
    handed_.push_back(std::move(conn));
  }
  [[maybe_unused]] ssize_t w = ::write(wake_[1], "c", 1);
  return true;
}

void GuardedHttpServer::ReadLoop(std::stop_token stop) {
  pthread_setname_np(pthread_self(), "http-read");
  std::vector<std::unique_ptr<Conn>> conns;
  std::vector<pollfd> fds;
  Deadline next_tick = tick_ ? Clock::now() : Deadline::max();
  while (!stop.stop_requested()) {
    if (tick_ && Clock::now() >= next_tick) {
      tick_();
      next_tick = Clock::now() + std::chrono::seconds(1);
    }
    fds.assign(1, pollfd{wake_[0], POLLIN, 0});
    Deadline next = std::min(Clock::now() + std::chrono::seconds(1), next_tick);
    for (const auto& c : conns) {
      fds.push_back(pollfd{c->sock, POLLIN, 0});
      next = std::min(next, c->deadline);
    }
    if (::poll(fds.data(), fds.size(), RemainingMs(next) + 1) < 0 && errno != EINTR) break;
    char drain[64];
    while (::read(wake_[0], drain, sizeof drain) > 0) {
    }
    const size_t polled = fds.size() - 1;  // conns[i] is fds[i + 1] for i < polled
    {
      MutexLock lock(&mu_);
      for (auto& c : handed_) conns.push_back(std::move(c));
      handed_.clear();
    }
    const auto now = Clock::now();
    std::vector<std::unique_ptr<Conn>> keep;
    for (size_t i = 0; i < conns.size(); ++i) {
      Conn& c = *conns[i];
      Step step = i < polled && fds[i + 1].revents != 0 ? Advance(c) : Step::kWaiting;
      if (step == Step::kWaiting && now >= c.deadline && c.lingering) {
        Close(c);
        step = Step::kFinished;
      } else if (step == Step::kWaiting && now >= c.deadline) {
        {
          MutexLock lock(&mu_);
          ++timed_out_;
        }
        Linger(c, Refusal(408, "Request Timeout",
                          std::string("the request ") + (c.in_body ? "body" : "head") +
                              " did not arrive in time"));
      }
      if (step == Step::kWaiting) {
        keep.push_back(std::move(conns[i]));
      } else if (step == Step::kComplete && IsHealthCheck(c.head.text, health_path_)) {
        // Answered here, so it never waits for a worker, however busy.
        if (health_body_) {
          const std::string body = health_body_();
          Linger(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
        } else {
          Linger(c, kHealthy);
        }
        keep.push_back(std::move(conns[i]));
      } else if (step == Step::kComplete && c.health_only) {
        {
          MutexLock lock(&mu_);
          ++refused_;
        }
        Linger(c, TooMany(c.ip));
        keep.push_back(std::move(conns[i]));
      } else if (step == Step::kComplete) {
        std::shared_ptr<Conn> done(std::move(conns[i]));
        workers_->enqueue([this, done] { Process(*done); });
      }
    }
    conns.swap(keep);
  }
  for (auto& c : conns) Close(*c);
}

ssize_t GuardedHttpServer::Receive(Conn& c, char* buf, size_t size) {
  if (c.ssl != nullptr) {
    ERR_clear_error();
    const int n = SSL_read(c.ssl, buf, static_cast<int>(size));
    if (n > 0) return n;
    const int err = SSL_get_error(c.ssl, n);
    return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE ? -1 : 0;
  }
  for (;;) {
    const ssize_t n = ::recv(c.sock, buf, size, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return -1;
    return n < 0 ? 0 : n;
  }
}

void GuardedHttpServer::Send(Conn& c, const std::string& data, Clock::time_point deadline) {
  if (c.ssl == nullptr) {
    if (!tls_) SendAll(c.sock, data, deadline);
    return;
  }
  size_t sent = 0;
  while (sent < data.size()) {
    ERR_clear_error();
    const int n = SSL_write(c.ssl, data.data() + sent, static_cast<int>(data.size() - sent));
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    const int err = SSL_get_error(c.ssl, n);
    const short wait = err == SSL_ERROR_WANT_READ    ? POLLIN
                       : err == SSL_ERROR_WANT_WRITE ? POLLOUT
                                                     : 0;
    if (wait == 0 || !WaitFor(c.sock, wait, deadline)) return;
  }
}

bool GuardedHttpServer::StartTls(Conn& c, Step* step) {
  if (!tls_ || c.ssl != nullptr || c.lingering) return true;
  unsigned char first = 0;
  const ssize_t n = ::recv(c.sock, &first, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    *step = Step::kWaiting;
    return false;
  }
  if (n <= 0) {
    Close(c);
    *step = Step::kFinished;
    return false;
  }
  constexpr unsigned char kTlsHandshakeRecord = 0x16;
  if (first != kTlsHandshakeRecord) {
    Linger(c,
           Refusal(400, "Bad Request",
                   "this port serves HTTPS (TLS 1.2 or newer): use https:// to reach it"),
           /*plaintext=*/true);
    *step = Step::kWaiting;
    return false;
  }
  c.ssl = tls_->NewSsl(c.sock);
  if (c.ssl == nullptr) {
    Close(c);
    *step = Step::kFinished;
    return false;
  }
  return true;
}

GuardedHttpServer::Step GuardedHttpServer::Advance(Conn& c) {
  if (Step step; !StartTls(c, &step)) return step;
  char buf[16384];
  for (;;) {
    const ssize_t n = Receive(c, buf, sizeof buf);
    if (n < 0) break;
    if (n == 0) {
      Close(c);
      return Step::kFinished;
    }
    if (c.lingering) continue;  // read and dropped until the client closes
    c.in.append(buf, static_cast<size_t>(n));
    if (c.in.size() > limits_.max_head_bytes + limits_.max_body_bytes) break;
  }
  if (c.lingering) return Step::kWaiting;
  auto refuse = [&](int status, const char* reason, const std::string& message) {
    Linger(c, Refusal(status, reason, message));
    return Step::kWaiting;
  };
  if (!c.in_body) {
    const size_t end = c.in.find("\r\n\r\n");
    if (end == std::string::npos || end + 4 > limits_.max_head_bytes) {
      if (c.in.size() <= limits_.max_head_bytes) return Step::kWaiting;
      return refuse(
          431, "Request Header Fields Too Large",
          "the request head is over " + std::to_string(limits_.max_head_bytes) + " bytes");
    }
    c.head_end = end + 4;
    c.head = RewriteHead(c.in.substr(0, c.head_end));
    if (c.head.chunked) {
      return refuse(411, "Length Required", "send the body with Content-Length, not chunked");
    }
    if (c.head.bad_length) return refuse(400, "Bad Request", "malformed Content-Length");
    const size_t length = c.head.content_length.value_or(0);
    if (length > limits_.max_body_bytes) {
      return refuse(413, "Payload Too Large",
                    "the body is over " + std::to_string(limits_.max_body_bytes) + " bytes");
    }
    if (c.head.form && length > kMaxFormBodyBytes) {
      return refuse(413, "Payload Too Large",
                    "a body sent as application/x-www-form-urlencoded (curl -d's default) may "
                    "be at most " +
                        std::to_string(kMaxFormBodyBytes) +
                        " bytes; send it with its own type, e.g. curl -H 'Content-Type: "
                        "application/yaml' --data-binary @FILE (up to " +
                        std::to_string(limits_.max_body_bytes) + " bytes)");
    }
    c.in_body = true;
    c.total = c.head_end + length;
    c.deadline = Clock::now() + limits_.body_timeout;
  }
  return c.in.size() >= c.total ? Step::kComplete : Step::kWaiting;
}

bool GuardedHttpServer::KeepOpen(Taker take) {
  if (t_keep_open == nullptr) return false;
  *t_keep_open = std::move(take);
  return true;
}

void GuardedHttpServer::Process(Conn& c) {
  RequestStream stream(c.head.text + c.in.substr(c.head_end, c.total - c.head_end), c.ip, c.port);
  bool closed = false;
  Taker keep;
  t_keep_open = &keep;
  process_request(stream, /*close_connection=*/true, closed, [&](httplib::Request& req) {
    req.remote_addr = c.ip;
    req.remote_port = c.port;
  });
  t_keep_open = nullptr;
  // Before the answer leaves: a client that reads it and connects again at
  // once must not find its own finished connection still counted.
  Release(c);
  if (keep) {
    auto held = std::make_unique<HeldConnection>(c.sock, c.ssl, c.ip);
    c.sock = -1;
    c.ssl = nullptr;
    keep(std::move(held));
    return;
  }
  Send(c, stream.output(), Clock::now() + limits_.write_timeout);
  if (c.ssl != nullptr) SSL_shutdown(c.ssl);
  Close(c);
}

}  // namespace apollo11::observability
