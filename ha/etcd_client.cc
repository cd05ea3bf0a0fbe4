#include "ha/etcd_client.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "common/libcurl_api.h"
#include "ha/etcd_codec.h"

namespace apollo11::ha {
namespace {

constexpr size_t kMaxBody = 1 << 20;  // etcd's answers here are small
constexpr const char* kAuthenticatePath = "/v3/auth/authenticate";

// An answer being read, and whether it outgrew kMaxBody.
struct Body {
  std::string text;
  bool too_large = false;
};

size_t Collect(char* data, size_t size, size_t n, void* user) {
  auto* out = static_cast<Body*>(user);
  if (out->text.size() + size * n > kMaxBody) {
    out->too_large = true;
    return 0;  // aborts the transfer
  }
  out->text.append(data, size * n);
  return size * n;
}

struct EasyDeleter {
  const LibCurl* curl;
  void operator()(CURL* e) const { curl->curl_easy_cleanup(e); }
};
struct ListDeleter {
  const LibCurl* curl;
  void operator()(curl_slist* l) const { curl->curl_slist_free_all(l); }
};

}  // namespace

EtcdClient::EtcdClient(EtcdClientOptions options, EtcdSecurity security)
    : options_(std::move(options)), security_(std::move(security)) {
  if (options_.endpoints.empty()) options_.endpoints.push_back("http://127.0.0.1:2379");
}

Result<std::string> EtcdClient::Post(const std::string& path, const std::string& body,
                                     Millis timeout, bool wait_is_answer) {
  auto library = LoadLibCurl();
  if (!library.ok()) return Status::Unsupported("etcd: " + library.status().message());
  const LibCurl& curl = **library;
  std::string failures;
  const size_t n = options_.endpoints.size();
  // One budget for the whole call, however many endpoints it tries: the
  // elector must get an answer (or none) before its lease deadline.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (size_t tried = 0; tried < n; ++tried) {
    const auto left =
        std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    if (left.count() < 20) {
      if (!failures.empty()) failures += "; ";
      failures += "no time left for " + std::to_string(n - tried) + " more";
      break;
    }
    const size_t index = (current_ + tried) % n;
    const std::string url = options_.endpoints[index] + path;
    std::unique_ptr<CURL, EasyDeleter> easy(curl.curl_easy_init(), EasyDeleter{&curl});
    if (!easy) return Status::Internal("etcd: curl_easy_init failed");
    curl_slist* list = curl.curl_slist_append(nullptr, "Content-Type: application/json");
    if (list != nullptr && !token_.empty() && path != kAuthenticatePath) {
      const std::string auth = "Authorization: " + token_;
      if (curl_slist* more = curl.curl_slist_append(list, auth.c_str())) list = more;
    }
    std::unique_ptr<curl_slist, ListDeleter> headers(list, ListDeleter{&curl});
    Body answer;
    char error[CURL_ERROR_SIZE] = {0};
    CURL* e = easy.get();
    curl.curl_easy_setopt(e, CURLOPT_URL, url.c_str());
    curl.curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl.curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.c_str());
    curl.curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl.curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers.get());
    curl.curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Collect);
    curl.curl_easy_setopt(e, CURLOPT_WRITEDATA, &answer);
    curl.curl_easy_setopt(e, CURLOPT_ERRORBUFFER, error);
    curl.curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl.curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                          static_cast<long>(std::min(options_.connect_timeout, left).count()));
    curl.curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(left.count()));
    curl.curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    const EtcdSecurity& tls = security_;
    if (!tls.cacert.empty()) curl.curl_easy_setopt(e, CURLOPT_CAINFO, tls.cacert.c_str());
    if (!tls.cert.empty()) curl.curl_easy_setopt(e, CURLOPT_SSLCERT, tls.cert.c_str());
    if (!tls.key.empty()) curl.curl_easy_setopt(e, CURLOPT_SSLKEY, tls.key.c_str());
    const CURLcode rc = curl.curl_easy_perform(e);
    if (rc == CURLE_OK) {
      current_ = index;
      return std::move(answer.text);
    }
    if (answer.too_large) {
      // etcd answered: not an unreachable endpoint, a value no coordinator
      // wrote (one is a few hundred bytes).
      current_ = index;
      return Status::Corrupt("etcd answered " + path + " with more than " +
                             std::to_string(kMaxBody) + " bytes: refused");
    }
    if (rc == CURLE_OPERATION_TIMEDOUT && wait_is_answer) {
      curl_off_t connected = 0;
      curl.curl_easy_getinfo(e, CURLINFO_CONNECT_TIME_T, &connected);
      if (connected > 0) {
        current_ = index;
        return Status::Busy("etcd: no answer within " + std::to_string(timeout.count()) + " ms");
      }
    }
    if (!failures.empty()) failures += "; ";
    failures += options_.endpoints[index] + ": " + (error[0] ? error : curl.curl_easy_strerror(rc));
  }
  current_ = (current_ + 1) % n;
  return Status::Io("etcd unreachable (" + failures + ")");
}

Status EtcdClient::Authenticate(Millis timeout) {
  token_.clear();
  const EtcdSecurity& s = security_;
  auto body = Post(kAuthenticatePath, AuthenticateRequest(s.user, s.password), timeout);
  if (!body.ok()) return body.status();
  auto token = DecodeAuthenticate(*body);
  if (!token.ok()) {
    return Status::Io("etcd refused user " + s.user + ": " + token.status().message());
  }
  token_ = std::move(*token);
  return Status::Ok();
}

Result<std::string> EtcdClient::Call(const std::string& path, const std::string& body,
                                     Millis timeout, bool wait_is_answer) {
  if (security_.user.empty()) return Post(path, body, timeout, wait_is_answer);
  if (token_.empty()) APOLLO11_RETURN_IF_ERROR(Authenticate(options_.request_timeout));
  auto answer = Post(path, body, timeout, wait_is_answer);
  if (!answer.ok() || !IsInvalidTokenAnswer(*answer)) return answer;
  APOLLO11_RETURN_IF_ERROR(Authenticate(options_.request_timeout));
  return Post(path, body, timeout, wait_is_answer);
}

Result<EtcdLease> EtcdClient::GrantLease(int64_t ttl_s) {
  auto body = Call("/v3/lease/grant", GrantRequest(ttl_s), options_.request_timeout);
  if (!body.ok()) return body.status();
  return DecodeGrant(*body);
}

Result<EtcdLease> EtcdClient::KeepAlive(int64_t lease) {
  auto body = Call("/v3/lease/keepalive", LeaseIdRequest(lease), options_.request_timeout);
  if (!body.ok()) return body.status();
  return DecodeKeepAlive(*body);
}

Status EtcdClient::Revoke(int64_t lease) {
  auto body = Call("/v3/lease/revoke", LeaseIdRequest(lease), options_.request_timeout);
  if (!body.ok()) return body.status();
  return DecodeEmpty(*body);
}

Result<EtcdLeaderKey> EtcdClient::Campaign(std::string_view election, int64_t lease,
                                           std::string_view value, Millis wait) {
  auto body = Call("/v3/election/campaign", CampaignRequest(election, lease, value), wait,
                   /*wait_is_answer=*/true);
  if (!body.ok()) return body.status();
  return DecodeCampaign(*body);
}

Result<std::optional<EtcdLeader>> EtcdClient::Leader(std::string_view election) {
  auto body = Call("/v3/election/leader", LeaderRequest(election), options_.request_timeout);
  if (!body.ok()) return body.status();
  auto leader = DecodeLeader(*body);
  if (leader.ok() && leader->has_value()) (*leader)->key.name = std::string(election);
  return leader;
}

Status EtcdClient::Resign(const EtcdLeaderKey& leader) {
  auto body = Call("/v3/election/resign", ResignRequest(leader), options_.request_timeout);
  if (!body.ok()) return body.status();
  return DecodeEmpty(*body);
}

Result<std::optional<std::string>> EtcdClient::Get(std::string_view key) {
  auto body = Call("/v3/kv/range", RangeRequest(key), options_.request_timeout);
  if (!body.ok()) return body.status();
  return DecodeRange(*body);
}

Result<bool> EtcdClient::PutIfLeader(const EtcdLeaderKey& leader, std::string_view key,
                                     std::string_view value) {
  auto body = Call("/v3/kv/txn", PutIfLeaderRequest(leader, key, value), options_.request_timeout);
  if (!body.ok()) return body.status();
  return DecodeTxn(*body);
}

Result<bool> EtcdClient::DeleteIfCreated(std::string_view key, uint64_t rev) {
  auto body = Call("/v3/kv/txn", DeleteIfCreatedRequest(key, rev), options_.request_timeout);
  if (!body.ok()) return body.status();
  return DecodeTxn(*body);
}

}  // namespace apollo11::ha
