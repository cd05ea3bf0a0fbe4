#pragma once
// The OTLP/HTTP side of span export: where spans go (--otlp-endpoint) and
// one POST of an ExportTraceServiceRequest in JSON, with what it came to
// (delivered, worth retrying, or refused for good), as the OTLP
// specification sorts a collector's answers.

#include <memory>
#include <string>
#include <string_view>

#include "common/duration.h"
#include "common/status.h"

namespace httplib {
class Client;
}

namespace apollo11::observability {

// A collector's OTLP/HTTP base URL, parsed.
struct OtlpEndpoint {
  std::string origin;  // "http://HOST:PORT" or "https://HOST:PORT"
  std::string path;    // the traces path: the URL's own path + "/v1/traces"
  std::string url() const { return origin + path; }
};

// http://HOST[:PORT][/PATH] or https://... (HOST a name, an IPv4 address or
// [IPv6]; PORT 1 to 65535, by default 80 or 443). Spans are posted to
// PATH/v1/traces, or to PATH itself when it already ends in /v1/traces.
// InvalidInput naming what is wrong for any other scheme, a missing host,
// a bad port, credentials, a query or a fragment.
Result<OtlpEndpoint> ParseOtlpEndpoint(std::string_view text);

// What one POST came to.
struct OtlpPostOutcome {
  bool delivered = false;  // a 2xx answer
  // Not delivered, and worth sending again: 429, 502, 503, 504, or no
  // answer at all (refused, reset, timed out).
  bool retryable = false;
  uint64_t rejected_spans = 0;  // delivered, but the collector refused these
  Millis retry_after{0};        // the collector's Retry-After, when it gave one
  std::string error;            // why not delivered, or the collector's partial-success message
};

// Posts to one endpoint over a kept-alive connection. Used by one thread.
class OtlpHttpClient {
 public:
  // `timeout` bounds connecting, and each read and write.
  OtlpHttpClient(OtlpEndpoint endpoint, Millis timeout, std::string user_agent);
  ~OtlpHttpClient();
  OtlpHttpClient(const OtlpHttpClient&) = delete;
  OtlpHttpClient& operator=(const OtlpHttpClient&) = delete;

  // POSTs `body` (JSON) to the traces path.
  OtlpPostOutcome Post(const std::string& body);

 private:
  const OtlpEndpoint endpoint_;
  const std::string user_agent_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace apollo11::observability
