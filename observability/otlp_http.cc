#include "observability/otlp_http.h"

#include <httplib.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "common/json_dump.h"

namespace apollo11::observability {
namespace {

constexpr std::string_view kTracesPath = "/v1/traces";
constexpr size_t kQuotedBodyBytes = 200;  // of an error answer, in the log

bool IsHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

bool IsV6Char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' ||
         c == '.';
}

// "HOST", "HOST:PORT", "[V6]" or "[V6]:PORT" into its parts; false when
// malformed. `*port` stays as it was without one.
bool SplitAuthority(std::string_view authority, std::string* host, bool* v6, std::string* port) {
  std::string_view rest;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return false;
    *host = std::string(authority.substr(1, close - 1));
    *v6 = true;
    rest = authority.substr(close + 1);
    for (char c : *host) {
      if (!IsV6Char(c)) return false;
    }
  } else {
    const size_t colon = authority.find(':');
    *host = std::string(authority.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : authority.substr(colon);
    for (char c : *host) {
      if (!IsHostChar(c)) return false;
    }
  }
  if (rest.empty()) return true;
  if (rest.front() != ':') return false;
  *port = std::string(rest.substr(1));
  return true;
}

bool ValidPort(const std::string& port) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  return ec == std::errc() && end == port.data() + port.size() && value >= 1 && value <= 65535;
}

// The printable start of a collector's answer, for a log line.
std::string Quoted(const std::string& body) {
  std::string said = body.substr(0, kQuotedBodyBytes);
  for (char& c : said) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return said;
}

// An OTLP partial success: {"partialSuccess": {"rejectedSpans", "errorMessage"}}.
void ReadPartialSuccess(const std::string& body, OtlpPostOutcome* out) {
  if (body.empty()) return;
  const nlohmann::json doc = ParseJsonBounded(body);
  if (!doc.is_object() || !doc.contains("partialSuccess")) return;
  const nlohmann::json& partial = doc["partialSuccess"];
  if (!partial.is_object()) return;
  auto rejected = partial.find("rejectedSpans");
  if (rejected != partial.end()) {
    if (rejected->is_number_unsigned()) out->rejected_spans = rejected->get<uint64_t>();
    if (rejected->is_string()) {
      const std::string text = rejected->get<std::string>();
      std::from_chars(text.data(), text.data() + text.size(), out->rejected_spans);
    }
  }
  auto message = partial.find("errorMessage");
  if (message != partial.end() && message->is_string()) out->error = message->get<std::string>();
}

}  // namespace

Result<OtlpEndpoint> ParseOtlpEndpoint(std::string_view text) {
  const std::string given(text);
  auto refuse = [&given](const std::string& why) {
    return Status::InvalidInput("--otlp-endpoint '" + given + "': " + why +
                                " (write http://HOST:PORT or https://HOST:PORT, e.g. "
                                "http://127.0.0.1:4318)");
  };
  std::string_view rest = text;
  std::string scheme;
  for (const char* s : {"http", "https"}) {
    const std::string prefix = std::string(s) + "://";
    if (rest.substr(0, prefix.size()) == prefix) scheme = s;
  }
  if (scheme.empty()) return refuse("the scheme must be http:// or https://");
  rest.remove_prefix(scheme.size() + 3);
  for (char c : rest) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return refuse("spaces and control characters are not allowed");
    }
    if (c == '?' || c == '#') return refuse("a query or fragment is not allowed");
  }
  const size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos) {
    return refuse("credentials in the URL are not supported");
  }
  std::string host, port = scheme == "https" ? "443" : "80";
  bool v6 = false;
  if (!SplitAuthority(authority, &host, &v6, &port)) return refuse("malformed host or port");
  if (host.empty()) return refuse("no host");
  if (!ValidPort(port)) return refuse("the port must be 1 to 65535");
  std::string path(slash == std::string_view::npos ? std::string_view() : rest.substr(slash));
  while (!path.empty() && path.back() == '/') path.pop_back();
  const bool full =
      path.size() >= kTracesPath.size() &&
      path.compare(path.size() - kTracesPath.size(), kTracesPath.size(), kTracesPath) == 0;
  if (!full) path += kTracesPath;
  OtlpEndpoint endpoint;
  endpoint.origin = scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + port;
  endpoint.path = path;
  return endpoint;
}

OtlpHttpClient::OtlpHttpClient(OtlpEndpoint endpoint, Millis timeout, std::string user_agent)
    : endpoint_(std::move(endpoint)),
      user_agent_(std::move(user_agent)),
      client_(std::make_unique<httplib::Client>(endpoint_.origin)) {
  const time_t sec = static_cast<time_t>(timeout.count() / 1000);
  const time_t usec = static_cast<time_t>((timeout.count() % 1000) * 1000);
  client_->set_connection_timeout(sec, usec);
  client_->set_read_timeout(sec, usec);
  client_->set_write_timeout(sec, usec);
  client_->set_keep_alive(true);
  client_->set_follow_location(false);
  client_->enable_server_certificate_verification(true);  // https: the system's CAs
}

OtlpHttpClient::~OtlpHttpClient() = default;

OtlpPostOutcome OtlpHttpClient::Post(const std::string& body) {
  OtlpPostOutcome out;
  const httplib::Headers headers{{"User-Agent", user_agent_}};
  httplib::Result res = client_->Post(endpoint_.path, headers, body, "application/json");
  if (!res) {
    out.retryable = true;
    out.error = "POST " + endpoint_.url() + ": " + httplib::to_string(res.error());
    return out;
  }
  const int code = res->status;
  if (code >= 200 && code <= 299) {
    out.delivered = true;
    ReadPartialSuccess(res->body, &out);
    return out;
  }
  out.retryable = code == 429 || code == 502 || code == 503 || code == 504;
  const std::string after = res->get_header_value("Retry-After");
  unsigned seconds = 0;
  auto [end, ec] = std::from_chars(after.data(), after.data() + after.size(), seconds);
  if (!after.empty() && ec == std::errc() && end == after.data() + after.size()) {
    out.retry_after = Millis(static_cast<int64_t>(seconds) * 1000);
  }
  const std::string said = Quoted(res->body);
  out.error = "POST " + endpoint_.url() + " answered HTTP " + std::to_string(code) +
              (said.empty() ? "" : ": " + said);
  return out;
}

}  // namespace apollo11::observability
