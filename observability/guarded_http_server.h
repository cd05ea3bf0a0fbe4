#pragma once
// An httplib::Server that reads each request itself before httplib sees it, so
// slow or hostile clients cannot hold the server. One reader thread reads every
// connection's request without blocking on any (poll), and only a complete
// request reaches a worker thread: a client that sends half a request and
// waits costs a socket, never a thread, so /healthz, /metrics and the API
// stay answered. GET /healthz is answered by the reader itself ("ok"), so it
// is answered even while every worker is busy. The whole request head must arrive within a deadline
// (not just each byte), the body within another, an answer must be taken within a third, and each
// client address may hold only a few connections at once; past that, a few
// more per address (and a bounded number in all) may still ask GET /healthz
// within a short head deadline, so connections held by one client do not
// fail the health probe that shares its address. Range and If-Range are dropped (RFC 9110
// lets a server ignore them), so an answer is never multiplied by overlapping ranges. One request
// per connection (Connection: close).
//
// Threads: httplib's accept thread and a small httplib pool hand each
// accepted socket to the reader thread; `limits.threads` workers run the
// handlers. Start before listening; Shutdown after httplib's stop().

#include <httplib.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "observability/held_connection.h"
#include "observability/http_limits.h"

namespace apollo11::observability {

class TlsContext;

class GuardedHttpServer : public httplib::Server {
 public:
  explicit GuardedHttpServer(const HttpLimits& limits);
  ~GuardedHttpServer() override;

  // TLS: every connection is TLS on `tls`'s current context (a plaintext
  // request is answered 400 "this port serves HTTPS"); null = plaintext.
  // Must outlive the server. Set before Start.
  void SetTls(TlsContext* tls) { tls_ = tls; }

  // The path the reader answers itself ("/healthz", or below a base path).
  // Set before Start.
  void SetHealthPath(std::string path) { health_path_ = std::move(path); }

  // election: the JSON body GET /healthz answers (called on the reader
  // thread; must not block); unset: "ok". Set before Start.
  void SetHealthBody(std::function<std::string()> body) { health_body_ = std::move(body); }

  // Called by the reader thread about once a second, whatever the traffic;
  // must not block (it samples in-process state). Set before Start.
  void SetTick(std::function<void()> tick) { tick_ = std::move(tick); }

  // Called by a handler on the worker thread answering its request: once
  // the handler returns, the connection is neither answered with the
  // handler's response nor closed, but given to `take` on that thread, which
  // writes the answer's head and what follows. No longer counted in its
  // address's connections. False (nothing kept) when the request is not
  // being answered by a GuardedHttpServer.
  using Taker = std::function<void(std::unique_ptr<HeldConnection>)>;
  static bool KeepOpen(Taker take);

  // Starts the reader thread and the workers; false (errno set) when the
  // wake-up pipe cannot be made.
  bool Start();
  // Stops the reader, closes the connections still being read and joins
  // every thread. Idempotent.
  void Shutdown();

  // Connections refused because their address was at its cap, and requests
  // dropped for missing a deadline.
  size_t refused() const;
  size_t timed_out() const;

  struct Conn;  // a connection being read (guarded_http_server.cc)

 private:
  enum class Step;  // what reading a connection led to
  // httplib calls this on its pool for each accepted socket: admitted, it
  // goes to the reader; refused, it is answered 503 and closed.
  bool process_and_close_socket(socket_t sock) override;
  void ReadLoop(std::stop_token stop);
  // Reads what `conn` has: still waiting, complete (for a worker), or
  // finished with (refused or closed by the client).
  Step Advance(Conn& conn);
  void Process(Conn& conn);
  // Sends `answer` (a refusal), half-closes, and keeps reading until the
  // client closes or a short deadline, so the client sees the answer. Under
  // TLS, an answer goes through the connection's TLS session (none before
  // one began), unless `plaintext` (to a client that speaks plain HTTP).
  void Linger(Conn& conn, const std::string& answer, bool plaintext = false);
  // Reads what `conn` has into `buf`: the byte count, 0 when the client
  // closed (or its TLS session failed), -1 when nothing is there yet.
  ssize_t Receive(Conn& conn, char* buf, size_t size);
  // Sends all of `data` on `conn` before `deadline` (TLS or plain).
  void Send(Conn& conn, const std::string& data, std::chrono::steady_clock::time_point deadline);
  // Under TLS, before a connection's first read: starts its TLS session, or
  // answers a plain-HTTP client. False when it is not ready to read (waiting
  // or answered).
  bool StartTls(Conn& conn, Step* step);
  // Gives the connection's per-address slot back (once).
  void Release(Conn& conn);
  // Where a new connection from `ip` goes: a slot of its address, a
  // health-only slot (its address is at its cap), or a refusal.
  enum class Admission { kAdmitted, kHealthOnly, kRefused };
  // Closes the socket and releases it.
  void Close(Conn& conn);
  Admission Admit(const std::string& ip);
  // The 503 for a client address past its cap.
  std::string TooMany(const std::string& ip) const;

  const HttpLimits limits_;
  TlsContext* tls_ = nullptr;
  std::function<std::string()> health_body_;
  std::function<void()> tick_;
  std::string health_path_ = "/healthz";
  int wake_[2] = {-1, -1};  // pipe: a new connection or stop
  std::unique_ptr<httplib::ThreadPool> workers_;
  std::jthread reader_;
  mutable Mutex mu_;
  std::vector<std::unique_ptr<Conn>> handed_ GUARDED_BY(mu_);  // for the reader
  std::map<std::string, int> per_address_ GUARDED_BY(mu_);
  std::map<std::string, int> health_only_ GUARDED_BY(mu_);  // per address
  int health_only_total_ GUARDED_BY(mu_) = 0;
  size_t refused_ GUARDED_BY(mu_) = 0;
  size_t timed_out_ GUARDED_BY(mu_) = 0;
};

}  // namespace apollo11::observability
