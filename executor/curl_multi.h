#pragma once
// CurlMulti: libcurl's multi interface driven from someone else's poll loop
// (curl_multi_socket_action). It reports the sockets curl wants watched and
// the time curl wants to be called back, and hands back finished transfers.
// Single-threaded: every call from the thread that created it.

#include <zmq.h>

#include <map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/libcurl_api.h"
#include "common/status.h"

namespace apollo11::executor {

class CurlMulti {
 public:
  // `clock` turns curl's relative timer into an absolute Steady() deadline
  // (Process takes Steady() time); it must outlive this object. `curl` is
  // the loaded library (LoadLibCurl).
  CurlMulti(const Clock& clock, const LibCurl& curl);
  ~CurlMulti();  // removes (but does not clean up) any easy handles still added
  CurlMulti(const CurlMulti&) = delete;
  CurlMulti& operator=(const CurlMulti&) = delete;

  // The multi handle could be created (false: out of memory).
  bool ok() const { return multi_ != nullptr; }

  // Starts `easy` (owned by the caller, who keeps it alive until Remove).
  Status Add(CURL* easy);
  // Stops `easy`; safe to call for a handle that is already finished.
  void Remove(CURL* easy);

  void AppendPollItems(std::vector<zmq_pollitem_t>* items) const;
  // When curl wants to be driven again; 0 = no timer.
  Micros NextDeadline() const { return timer_at_; }
  // Drives ready sockets and an expired timer without blocking; appends the
  // transfers that completed, with their result code.
  void Process(Micros now, std::vector<std::pair<CURL*, CURLcode>>* done);

  size_t active() const { return active_; }
  // The library's functions, for the easy handles this multi drives.
  const LibCurl& curl() const { return curl_; }

 private:
  static int OnSocket(CURL* easy, curl_socket_t s, int what, void* userp, void* socketp);
  static int OnTimer(CURLM* multi, long timeout_ms, void* userp);

  const Clock& clock_;
  const LibCurl& curl_;
  CURLM* multi_ = nullptr;
  std::map<curl_socket_t, int> sockets_;  // socket -> CURL_POLL_IN/OUT/INOUT
  Micros timer_at_ = 0;
  size_t active_ = 0;
};

}  // namespace apollo11::executor
