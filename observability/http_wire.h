#pragma once
// The bytes of an HTTP/1.1 request and answer as GuardedHttpServer handles
// them before and after httplib: the request head it rewrites, the stream
// it hands httplib, and the refusals it writes itself.

#include <httplib.h>

#include <algorithm>
#include <optional>
#include <string>

namespace apollo11::observability {

// A request already read in full, handed to httplib as its input; httplib's
// answer is collected in output().
class RequestStream final : public httplib::Stream {
 public:
  RequestStream(std::string input, std::string ip, int port)
      : input_(std::move(input)), ip_(std::move(ip)), port_(port) {}
  bool is_readable() const override { return true; }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, input_.size() - position_);
    std::copy_n(input_.data() + position_, n, ptr);
    position_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    output_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = ip_;
    port = port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip.clear();
    port = 0;
  }
  socket_t socket() const override { return -1; }
  const std::string& output() const { return output_; }

 private:
  std::string input_;
  size_t position_ = 0;
  std::string ip_;
  int port_;
  std::string output_;
};

// The head httplib gets: the request line and headers minus Range and
// If-Range (ignored: a whole answer, never a multiplied one) and Expect (the
// body is already read), with Accept-Encoding narrowed to gzip. Also finds
// the body length.
struct Head {
  std::string text;
  std::optional<size_t> content_length;
  bool chunked = false;
  bool bad_length = false;
  // Content-Type application/x-www-form-urlencoded (curl -d's default).
  bool form = false;
};

// What the HTTP library (Debian's libcpp-httplib 0.11) accepts of a
// form-encoded body; a larger one it answers with a bare 413.
constexpr size_t kMaxFormBodyBytes = 8192;

// The head httplib gets from `raw` (the request line and headers, CRLF
// terminated), and what it says of the body (see Head).
Head RewriteHead(const std::string& raw);

// A whole "HTTP/1.1 STATUS REASON" answer with a JSON {"error": message}
// body, closing the connection.
std::string Refusal(int status, const char* reason, const std::string& message);

}  // namespace apollo11::observability
