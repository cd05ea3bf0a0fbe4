#include "common/libcurl_api.h"

namespace apollo11 {

Result<const LibCurl*> LoadLibCurl() {
  static const Result<const LibCurl*> loaded = []() -> Result<const LibCurl*> {
    Result<const LibCurl*> table = APOLLO11_LOAD_SHARED_TABLE(
        LibCurl, APOLLO11_LIBCURL_SONAME, "libcurl", APOLLO11_LIBCURL_FUNCTIONS);
    if (!table.ok()) return table;
    const CURLcode rc = (*table)->curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
      return Status::Internal(std::string("curl_global_init: ") + (*table)->curl_easy_strerror(rc));
    }
    return table;
  }();
  return loaded;
}

}  // namespace apollo11
