#include "observability/http_wire.h"

#include <cctype>
#include <nlohmann/json.hpp>

#include "common/json_dump.h"

namespace apollo11::observability {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Head RewriteHead(const std::string& raw) {
  Head h;
  size_t start = 0;
  bool first = true;
  while (start < raw.size()) {
    size_t end = raw.find("\r\n", start);
    if (end == std::string::npos) end = raw.size();
    const std::string line = raw.substr(start, end - start);
    start = end + 2;
    if (line.empty()) continue;
    if (!first) {
      const size_t colon = line.find(':');
      const std::string name = Lower(line.substr(0, colon));
      if (name == "range" || name == "if-range" || name == "expect") continue;
      if (name == "accept-encoding") {
        // gzip only: httplib compresses brotli at its slowest quality, seconds
        // of CPU for a 10,000-task run's status (a dashboard's every poll).
        if (Lower(line).find("gzip") != std::string::npos) h.text += "Accept-Encoding: gzip\r\n";
        continue;
      }
      if (colon != std::string::npos && name == "content-length") {
        std::string v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        v.erase(v.find_last_not_of(" \t") + 1);
        if (v.empty() || v.size() > 12 || v.find_first_not_of("0123456789") != std::string::npos ||
            (h.content_length && *h.content_length != std::stoull(v))) {
          h.bad_length = true;
        } else {
          h.content_length = std::stoull(v);
        }
      }
      if (name == "transfer-encoding") h.chunked = true;
      if (name == "content-type" &&
          Lower(line).find("application/x-www-form-urlencoded") != std::string::npos) {
        h.form = true;
      }
    }
    first = false;
    h.text += line + "\r\n";
  }
  h.text += "\r\n";
  return h;
}

std::string Refusal(int status, const char* reason, const std::string& message) {
  const std::string body = SafeJsonDump(nlohmann::json{{"error", message}}) + "\n";
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace apollo11::observability
