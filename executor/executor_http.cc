#include <strings.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "executor/curl_multi.h"
#include "executor/executor.h"
#include "executor/executor_exec.h"
#include "executor/secret_refs.h"

// The HTTP side of Executor: one libcurl easy handle per attempt, driven by
// the CurlMulti.

namespace apollo11::executor {

namespace {

size_t OnHttpBody(char* data, size_t size, size_t n, void* user) {
  static_cast<LogSink*>(user)->Write(data, size * n);
  return size * n;
}

// What an attempt sends: the request's url, header lines and body with the
// task's secrets in place of their `$NAME` references (secret_refs.h). Only
// curl sees it; messages name the request's own url, with the references.
struct HttpText {
  std::string url;
  std::vector<std::string> header_lines;  // "Name: value"
  std::string body;
};

Result<HttpText> WithSecrets(const ExecRequest& r) {
  std::map<std::string, std::string> values;
  for (const auto& [name, ref] : r.secrets) {
    auto it = r.env.find(name);  // where ResolveSecrets put the value
    if (it != r.env.end()) values.emplace(name, it->second);
  }
  HttpText t;
  auto url = ExpandSecretRefs(r.url, values, dsl::TemplateContext::kUrl, "the url");
  if (!url.ok()) return url.status();
  t.url = std::move(*url);
  bool own_traceparent = false;
  for (const auto& [k, v] : r.headers) {
    auto value = ExpandSecretRefs(v, values, dsl::TemplateContext::kHeader, "header " + k);
    if (!value.ok()) return value.status();
    t.header_lines.push_back(k + ": " + *value);
    own_traceparent = own_traceparent || strcasecmp(k.c_str(), "traceparent") == 0;
  }
  // The attempt's span (DispatchBuilder), unless the task sets its own.
  if (auto parent = r.env.find("TRACEPARENT"); parent != r.env.end() && !own_traceparent) {
    t.header_lines.push_back("traceparent: " + parent->second);
  }
  auto body =
      ExpandSecretRefs(r.body, values, dsl::TemplateExpander::BodyContext(r.body), "the body");
  if (!body.ok()) return body.status();
  t.body = std::move(*body);
  return t;
}

}  // namespace

Status Executor::StartHttp(Exec* exec) {
  if (curl_ == nullptr) {
    auto library = LoadLibCurl();
    if (!library.ok()) return Status::Unsupported("could not start: " + library.status().message());
    curl_ = std::make_unique<CurlMulti>(clock_, **library);
    if (!curl_->ok()) {
      curl_.reset();
      return Status::Internal("could not start: curl_multi_init failed");
    }
  }
  const ExecRequest& r = exec->req;
  Result<HttpText> text = WithSecrets(r);
  if (!text.ok()) return Status::InvalidInput("could not start: " + text.status().message());
  const LibCurl& curl = curl_->curl();
  exec->curl = &curl;
  exec->easy = curl.curl_easy_init();
  if (exec->easy == nullptr) return Status::Internal("could not start: curl_easy_init failed");
  CURL* e = exec->easy;
  curl.curl_easy_setopt(e, CURLOPT_URL, text->url.c_str());  // copied by curl
  curl.curl_easy_setopt(e, CURLOPT_PRIVATE, exec);
  curl.curl_easy_setopt(e, CURLOPT_ERRORBUFFER, exec->curl_error);
  curl.curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &OnHttpBody);
  curl.curl_easy_setopt(e, CURLOPT_WRITEDATA, &exec->out);
  curl.curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl.curl_easy_setopt(e, CURLOPT_USERAGENT, "apollo11");
  curl.curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  // Redirects are followed (at most 5, http/https only); the final response counts.
  curl.curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
  curl.curl_easy_setopt(e, CURLOPT_MAXREDIRS, 5L);
  curl.curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  if (r.timeout.count() > 0) {
    curl.curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout.count()));
  }
  for (const std::string& line : text->header_lines) {
    exec->headers = curl.curl_slist_append(exec->headers, line.c_str());
  }
  if (exec->headers != nullptr) curl.curl_easy_setopt(e, CURLOPT_HTTPHEADER, exec->headers);
  if (r.method == "HEAD") {
    curl.curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (!text->body.empty() || r.method == "POST") {
    curl.curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                          static_cast<curl_off_t>(text->body.size()));
    curl.curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, text->body.c_str());
    if (r.method != "POST") curl.curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  } else if (r.method != "GET") {
    curl.curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  }
  Status added = curl_->Add(e);
  if (!added.ok()) return Status::Internal("could not start: " + added.message());
  return Status::Ok();
}

void Executor::FinishHttp(Exec* exec, int curl_code, std::vector<ExecOutcome>* finished) {
  const ExecRequest& r = exec->req;
  long status = 0;
  const LibCurl& curl = *exec->curl;
  curl.curl_easy_getinfo(exec->easy, CURLINFO_RESPONSE_CODE, &status);
  ExecOutcome o = MakeOutcome(exec, ExecOutcomeKind::kFailed);
  o.exit_code = static_cast<int>(status);
  if (curl_code == CURLE_OK) {
    const bool ok = r.expect_status.empty()
                        ? (status >= 200 && status < 300)
                        : std::find(r.expect_status.begin(), r.expect_status.end(),
                                    static_cast<int>(status)) != r.expect_status.end();
    if (ok) {
      o.kind = ExecOutcomeKind::kSuccess;
    } else {
      o.retryable = status >= 500;
      o.error = "HTTP " + std::to_string(status) + " from " + r.url;
    }
  } else if (curl_code == CURLE_OPERATION_TIMEDOUT) {
    o.kind = ExecOutcomeKind::kTimeout;
    o.error = "timed out after " + FormatDuration(r.timeout) + " (HTTP request aborted)";
  } else {
    const CURLcode c = static_cast<CURLcode>(curl_code);
    o.retryable = c != CURLE_URL_MALFORMAT && c != CURLE_UNSUPPORTED_PROTOCOL &&
                  c != CURLE_TOO_MANY_REDIRECTS;
    std::string why = exec->curl_error[0] != '\0' ? exec->curl_error : curl.curl_easy_strerror(c);
    o.error = "could not reach " + r.url + ": " + why;
  }
  finished->push_back(std::move(o));
  execs_.erase(Key(r.exec_id, r.attempt));  // `exec` and `r` are gone after this
}

}  // namespace apollo11::executor
