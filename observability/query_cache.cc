#include "observability/query_cache.h"

#include <cstdio>

namespace apollo11::observability {

QueryCache::QueryCache(const Clock* clock, Micros ttl_us, size_t max_entries)
    : clock_(clock), ttl_us_(ttl_us), max_entries_(max_entries == 0 ? 1 : max_entries) {}

std::string QueryCache::EtagOf(const std::string& body) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : body) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char text[40];
  std::snprintf(text, sizeof text, "\"%016llx-%zx\"", static_cast<unsigned long long>(h),
                body.size());
  return text;
}

std::shared_ptr<const CachedAnswer> QueryCache::Fresh(const std::string& key) const {
  const auto it = entries_.find(key);
  if (it == entries_.end() || clock_->Steady() - it->second.at >= ttl_us_) return nullptr;
  return it->second.answer;
}

Result<std::shared_ptr<const CachedAnswer>> QueryCache::Get(
    const std::string& key, const std::function<Result<std::string>()>& fetch) {
  {
    MutexLock lock(&mu_);
    if (auto kept = Fresh(key)) return kept;
  }
  MutexLock fetching(&fetch_mu_);
  {
    MutexLock lock(&mu_);
    if (auto kept = Fresh(key)) return kept;  // fetched while we waited
    ++fetches_;
  }
  Result<std::string> body = fetch();
  if (!body.ok()) return body.status();
  auto answer = std::make_shared<CachedAnswer>();
  answer->etag = EtagOf(*body);
  answer->body = std::move(*body);
  if (ttl_us_ <= 0) return std::shared_ptr<const CachedAnswer>(std::move(answer));
  MutexLock lock(&mu_);
  const Micros now = clock_->Steady();
  if (entries_.size() >= max_entries_) {
    for (auto it = entries_.begin(); it != entries_.end();) {
      it = now - it->second.at >= ttl_us_ ? entries_.erase(it) : std::next(it);
    }
    if (entries_.size() >= max_entries_) entries_.clear();
  }
  entries_[key] = Entry{answer, now};
  return std::shared_ptr<const CachedAnswer>(std::move(answer));
}

void QueryCache::Clear() {
  MutexLock lock(&mu_);
  entries_.clear();
}

void QueryCache::Forget(const std::function<bool(const std::string& key)>& stale) {
  MutexLock lock(&mu_);
  std::erase_if(entries_, [&](const auto& entry) { return stale(entry.first); });
}

uint64_t QueryCache::fetches() const {
  MutexLock lock(&mu_);
  return fetches_;
}

}  // namespace apollo11::observability
