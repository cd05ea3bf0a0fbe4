#pragma once
// A real webhook receiver for tests: a cpp-httplib server on 127.0.0.1, port
// chosen by the kernel, in its own thread. It records every POSTed JSON body
// and can be told to answer the next N posts with an error status.

#include <httplib.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace apollo11::testing {

class AlertReceiver {
 public:
  AlertReceiver();
  ~AlertReceiver();  // stops and joins the server

  // http://127.0.0.1:PORT/hook
  std::string Url() const;
  // The next `n` posts are answered with `status` (and not recorded as received).
  void FailNext(int n, int status = 500);
  // Bodies of the posts answered 2xx, in arrival order.
  std::vector<nlohmann::json> Received() const;
  // Posts seen, failed ones included.
  int posts() const;
  // Received alerts of `type`.
  std::vector<nlohmann::json> OfType(const std::string& type) const;
  // Waits up to `timeout_ms` until `pred(Received())` holds.
  bool WaitUntil(const std::function<bool(const std::vector<nlohmann::json>&)>& pred,
                 int timeout_ms) const;

 private:
  httplib::Server server_;
  int port_ = 0;
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  std::vector<nlohmann::json> received_;
  int posts_ = 0;
  int fail_next_ = 0;
  int fail_status_ = 500;
  std::jthread thread_;
};

// A TCP port on 127.0.0.1 that accepts connections (the kernel completes the
// handshake into the listen backlog) and never answers: the worst webhook.
class HungServer {
 public:
  HungServer();
  ~HungServer();
  std::string Url() const;

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace apollo11::testing
