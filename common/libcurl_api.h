#pragma once
// The libcurl functions Apollo-11 calls (http tasks, webhooks, the etcd
// client), opened on first use: see common/shared_library.h.

#include <curl/curl.h>

#include "common/shared_library.h"
#include "common/status.h"

#define APOLLO11_LIBCURL_FUNCTIONS(X) \
  X(curl_global_init)                 \
  X(curl_easy_init)                   \
  X(curl_easy_setopt)                 \
  X(curl_easy_getinfo)                \
  X(curl_easy_perform)                \
  X(curl_easy_cleanup)                \
  X(curl_easy_strerror)               \
  X(curl_slist_append)                \
  X(curl_slist_free_all)              \
  X(curl_multi_init)                  \
  X(curl_multi_setopt)                \
  X(curl_multi_add_handle)            \
  X(curl_multi_remove_handle)         \
  X(curl_multi_socket_action)         \
  X(curl_multi_info_read)             \
  X(curl_multi_strerror)              \
  X(curl_multi_cleanup)

namespace apollo11 {

struct LibCurl {
  APOLLO11_LIBCURL_FUNCTIONS(APOLLO11_SHARED_FN_MEMBER)
};

// The table, loaded by the first call in the process, which also runs
// curl_global_init (thread-safe in the libcurl of Debian 12, 7.88); every
// later call returns the same table, or the same error when libcurl cannot
// be loaded. Safe to call from any thread.
Result<const LibCurl*> LoadLibCurl();

}  // namespace apollo11
