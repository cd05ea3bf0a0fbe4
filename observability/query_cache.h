#pragma once
// Answers of read-only API queries kept for a short time and shared by every
// HTTP client, so that N dashboards polling one run cost the coordinator one
// query per key per TTL, not N. Each answer carries an ETag (a hash of its
// body) for If-None-Match.
//
// Thread-safe: any HTTP worker thread may call any method.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"

namespace apollo11::observability {

// One answer as sent: the JSON text and its strong ETag ("\"hex\"").
struct CachedAnswer {
  std::string body;
  std::string etag;
};

class QueryCache {
 public:
  // `ttl_us` 0 disables caching (every Get calls `fetch`). `clock` must
  // outlive the cache; its Steady() dates the entries.
  QueryCache(const Clock* clock, Micros ttl_us, size_t max_entries = 256);

  // The answer for `key`: the kept one while younger than the TTL, else
  // fetch()'s, kept when it succeeded. Calls to fetch are serialized (one
  // coordinator question at a time), and a caller that waited for another's
  // fetch of the same key takes its answer. Errors are never kept.
  Result<std::shared_ptr<const CachedAnswer>> Get(
      const std::string& key, const std::function<Result<std::string>()>& fetch);

  // Forgets every kept answer (after a mutating call).
  void Clear();
  // Forgets the kept answers whose key `stale` names (a change the live
  // events heard of), keeping the rest.
  void Forget(const std::function<bool(const std::string& key)>& stale);

  // How many times fetch was called; for tests and the performance notes.
  uint64_t fetches() const;

  // The strong ETag of `body`.
  static std::string EtagOf(const std::string& body);

 private:
  struct Entry {
    std::shared_ptr<const CachedAnswer> answer;
    Micros at = 0;
  };
  std::shared_ptr<const CachedAnswer> Fresh(const std::string& key) const REQUIRES(mu_);

  const Clock* clock_;
  const Micros ttl_us_;
  const size_t max_entries_;
  Mutex fetch_mu_;  // held across a fetch: one at a time
  mutable Mutex mu_ ACQUIRED_AFTER(fetch_mu_);
  std::map<std::string, Entry> entries_ GUARDED_BY(mu_);
  uint64_t fetches_ GUARDED_BY(mu_) = 0;
};

}  // namespace apollo11::observability
