#include "alerts/webhook.h"

#include <memory>

#include "common/libcurl_api.h"

namespace apollo11::alerts {

namespace {

size_t Discard(char*, size_t size, size_t n, void*) { return size * n; }

// curl calls this at least once a second, even on a silent connection.
int AbortRequested(void* token, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::stop_token*>(token)->stop_requested() ? 1 : 0;
}

}  // namespace

Status PostWebhook(const WebhookTarget& target, const std::string& json, std::stop_token abort) {
  auto library = LoadLibCurl();
  if (!library.ok()) return library.status();
  const LibCurl& curl = **library;
  std::unique_ptr<CURL, decltype(LibCurl::curl_easy_cleanup)> easy(curl.curl_easy_init(),
                                                                   curl.curl_easy_cleanup);
  if (!easy) return Status::Internal("curl_easy_init failed");
  std::unique_ptr<curl_slist, decltype(LibCurl::curl_slist_free_all)> headers(
      curl.curl_slist_append(nullptr, "Content-Type: application/json"), curl.curl_slist_free_all);
  char error[CURL_ERROR_SIZE] = {0};
  CURL* e = easy.get();
  curl.curl_easy_setopt(e, CURLOPT_URL, target.url.c_str());
  curl.curl_easy_setopt(e, CURLOPT_POST, 1L);
  curl.curl_easy_setopt(e, CURLOPT_POSTFIELDS, json.data());
  curl.curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(json.size()));
  curl.curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers.get());
  curl.curl_easy_setopt(e, CURLOPT_USERAGENT, "apollo11-alerts");
  curl.curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(target.timeout.count()));
  curl.curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(target.timeout.count()));
  curl.curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM in a multi-threaded node
  curl.curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, Discard);
  curl.curl_easy_setopt(e, CURLOPT_ERRORBUFFER, error);
  curl.curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, AbortRequested);
  curl.curl_easy_setopt(e, CURLOPT_XFERINFODATA, &abort);
  curl.curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  const CURLcode code = curl.curl_easy_perform(e);
  if (code != CURLE_OK) {
    return Status::Io("POST " + target.url + ": " +
                      (error[0] != '\0' ? std::string(error) : curl.curl_easy_strerror(code)));
  }
  long status = 0;
  curl.curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status > 299) {
    return Status::Io("POST " + target.url + ": HTTP " + std::to_string(status));
  }
  return Status::Ok();
}

}  // namespace apollo11::alerts
