#include "dsl/credentials.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

namespace apollo11::dsl {
namespace {

constexpr std::string_view kRedacted = "***";

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The parts of a URL this file looks at: [user_begin, at) is the user info
// before its '@', [query_begin, query_end) the query without its '?' (all
// npos when absent).
struct UrlParts {
  size_t user_begin = std::string_view::npos, at = std::string_view::npos;
  size_t query_begin = std::string_view::npos, query_end = std::string_view::npos;
};

UrlParts Split(std::string_view url) {
  UrlParts p;
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return p;
  const size_t authority = scheme + 3;
  const size_t authority_end = std::min(url.find_first_of("/?#", authority), url.size());
  const size_t at = url.substr(0, authority_end).rfind('@');
  if (at != std::string_view::npos && at >= authority) {
    p.user_begin = authority;
    p.at = at;
  }
  const size_t q = url.find('?', authority_end);
  if (q != std::string_view::npos) {
    p.query_begin = q + 1;
    p.query_end = std::min(url.find('#', q), url.size());
  }
  return p;
}

// Calls fn(name, value_begin, value_end) for each name=value of the query.
template <typename Fn>
void ForEachQueryParam(std::string_view url, const UrlParts& p, Fn fn) {
  if (p.query_begin == std::string_view::npos) return;
  size_t pos = p.query_begin;
  while (pos < p.query_end) {
    const size_t end = std::min(url.find('&', pos), p.query_end);
    const size_t eq = url.find('=', pos);
    const size_t name_end = eq < end ? eq : end;
    fn(url.substr(pos, name_end - pos), eq < end ? eq + 1 : end, end);
    pos = end + 1;
  }
}

}  // namespace

bool LooksLikeCredentialName(std::string_view name) {
  const std::string n = Lower(name);
  if (n == "passfile") return false;  // libpq: the path of a password file, not a password
  for (std::string_view word : {"pass", "pwd", "secret", "token", "apikey", "api_key", "api-key",
                                "authorization", "cookie"}) {
    if (n.find(word) != std::string::npos) return true;
  }
  return false;
}

std::string CredentialInUrl(std::string_view url, UrlField field) {
  const UrlParts p = Split(url);
  if (p.at != std::string_view::npos) {
    const std::string_view info = url.substr(p.user_begin, p.at - p.user_begin);
    if (field == UrlField::kHttpUrl) return "a user (and password) before '@'";
    if (info.find(':') != std::string_view::npos) return "a password before '@'";
  }
  if (field == UrlField::kHttpUrl) return "";
  std::string found;
  ForEachQueryParam(url, p, [&](std::string_view name, size_t, size_t) {
    if (found.empty() && LooksLikeCredentialName(name)) {
      found = "the query parameter '" + std::string(name) + "'";
    }
  });
  return found;
}

std::string RedactUrlCredentials(std::string_view url) {
  const UrlParts p = Split(url);
  std::string out;
  size_t copied = 0;
  auto replace = [&](size_t begin, size_t end) {
    out.append(url.substr(copied, begin - copied));
    out.append(kRedacted);
    copied = end;
  };
  if (p.at != std::string_view::npos) {
    const size_t colon = url.substr(0, p.at).find(':', p.user_begin);
    if (colon != std::string_view::npos) replace(colon + 1, p.at);
  }
  ForEachQueryParam(url, p, [&](std::string_view name, size_t begin, size_t end) {
    if (LooksLikeCredentialName(name) && begin < end) replace(begin, end);
  });
  out.append(url.substr(copied));
  return out;
}

void RedactCredentials(nlohmann::json* snapshot) {
  if (!snapshot->is_object() || !snapshot->contains("tasks")) return;
  nlohmann::json& tasks = (*snapshot)["tasks"];
  if (!tasks.is_array()) return;
  for (nlohmann::json& task : tasks) {
    if (!task.is_object()) continue;
    for (const char* key : {"host", "url"}) {
      auto it = task.find(key);
      if (it != task.end() && it->is_string()) {
        *it = RedactUrlCredentials(it->get<std::string>());
      }
    }
    auto headers = task.find("headers");
    if (headers == task.end() || !headers->is_object()) continue;
    for (auto& [name, value] : headers->items()) {
      if (LooksLikeCredentialName(name)) value = std::string(kRedacted);
    }
  }
}

}  // namespace apollo11::dsl
