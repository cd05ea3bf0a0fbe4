#pragma once
// A one-thread HTTP/1.1 server on 127.0.0.1 (port 0) for client tests: each
// request is answered with the next scripted reply (status and body), or
// never answered when the reply is "hang". Records each request's path and
// body.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace apollo11::ha::testing {

struct FakeReply {
  int status = 200;
  std::string body;
  bool hang = false;  // read the request, answer nothing until stopped
};

class FakeHttpServer {
 public:
  explicit FakeHttpServer(std::vector<FakeReply> replies) : replies_(std::move(replies)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd_, 8);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::jthread([this](std::stop_token stop) { Serve(stop); });
  }
  ~FakeHttpServer() {
    thread_.request_stop();
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::pair<std::string, std::string>> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  void Serve(std::stop_token stop) {
    size_t next = 0;
    while (!stop.stop_requested()) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string in;
      char buf[4096];
      size_t want = std::string::npos;
      while (want == std::string::npos || in.size() < want) {
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        in.append(buf, static_cast<size_t>(n));
        const size_t end = in.find("\r\n\r\n");
        if (end != std::string::npos && want == std::string::npos) {
          size_t length = 0;
          const size_t cl = in.find("Content-Length: ");
          if (cl != std::string::npos && cl < end) length = std::stoul(in.substr(cl + 16));
          want = end + 4 + length;
        }
      }
      const size_t sp1 = in.find(' '), sp2 = in.find(' ', sp1 + 1);
      const size_t end = in.find("\r\n\r\n");
      {
        std::lock_guard lock(mu_);
        requests_.emplace_back(in.substr(sp1 + 1, sp2 - sp1 - 1),
                               end == std::string::npos ? "" : in.substr(end + 4));
      }
      const FakeReply reply = next < replies_.size() ? replies_[next++] : FakeReply{404, "", false};
      if (reply.hang) {
        while (!stop.stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        ::close(c);
        return;
      }
      const std::string out = "HTTP/1.1 " + std::to_string(reply.status) +
                              " X\r\nContent-Type: application/json\r\nContent-Length: " +
                              std::to_string(reply.body.size()) + "\r\nConnection: close\r\n\r\n" +
                              reply.body;
      (void)!::write(c, out.data(), out.size());
      ::close(c);
    }
  }

  std::vector<FakeReply> replies_;
  int fd_ = -1;
  int port_ = 0;
  std::mutex mu_;
  std::vector<std::pair<std::string, std::string>> requests_;
  std::jthread thread_;
};

// A loopback URL where nothing listens.
inline std::string UnreachableUrl() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
}

}  // namespace apollo11::ha::testing
