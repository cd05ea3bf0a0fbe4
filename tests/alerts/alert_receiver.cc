#include "tests/alerts/alert_receiver.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

namespace apollo11::testing {

AlertReceiver::AlertReceiver() {
  server_.Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    ++posts_;
    if (fail_next_ > 0) {
      --fail_next_;
      res.status = fail_status_;
      res.set_content("not now", "text/plain");
    } else {
      received_.push_back(nlohmann::json::parse(req.body, nullptr, false));
      res.status = 200;
      res.set_content("ok", "text/plain");
    }
    changed_.notify_all();
  });
  port_ = server_.bind_to_any_port("127.0.0.1");
  thread_ = std::jthread([this] { server_.listen_after_bind(); });
}

AlertReceiver::~AlertReceiver() { server_.stop(); }

std::string AlertReceiver::Url() const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/hook";
}

void AlertReceiver::FailNext(int n, int status) {
  std::lock_guard lock(mu_);
  fail_next_ = n;
  fail_status_ = status;
}

std::vector<nlohmann::json> AlertReceiver::Received() const {
  std::lock_guard lock(mu_);
  return received_;
}

int AlertReceiver::posts() const {
  std::lock_guard lock(mu_);
  return posts_;
}

std::vector<nlohmann::json> AlertReceiver::OfType(const std::string& type) const {
  std::vector<nlohmann::json> out;
  for (const auto& j : Received()) {
    if (j.is_object() && j.value("type", "") == type) out.push_back(j);
  }
  return out;
}

bool AlertReceiver::WaitUntil(const std::function<bool(const std::vector<nlohmann::json>&)>& pred,
                              int timeout_ms) const {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                           [&] { return pred(received_); });
}

HungServer::HungServer() {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::listen(fd_, 128) != 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    throw std::runtime_error("HungServer: cannot listen on 127.0.0.1");
  }
  port_ = ntohs(a.sin_port);
}

HungServer::~HungServer() { ::close(fd_); }

std::string HungServer::Url() const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/hook";
}

}  // namespace apollo11::testing
