#include "executor/db_target.h"

#include <cstdlib>

namespace apollo11::executor {

namespace {

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// %XX decoding for the user, database and option values of a URL.
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const std::string hex = s.substr(i + 1, 2);
      char* end = nullptr;
      const long v = std::strtol(hex.c_str(), &end, 16);
      if (end == hex.c_str() + 2) {
        out += static_cast<char>(v);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

Status ParseMariadb(const std::string& rest, DbTarget* t) {
  std::string authority = rest.substr(0, rest.find_first_of("/?"));
  std::string tail = rest.substr(authority.size());
  const size_t at = authority.rfind('@');
  if (at != std::string::npos) {
    t->user = Unescape(authority.substr(0, at));
    if (t->user.find(':') != std::string::npos) {
      return Status::InvalidInput("the db URL holds a password; use password_env");
    }
    authority = authority.substr(at + 1);
  }
  const size_t colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']') == std::string::npos) {
    const std::string port = authority.substr(colon + 1);
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (port.empty() || *end != '\0' || p <= 0 || p > 65535) {
      return Status::InvalidInput("bad port " + port + " in the db URL");
    }
    t->port = static_cast<unsigned>(p);
    authority = authority.substr(0, colon);
  }
  t->host = authority;
  std::string query;
  if (const size_t q = tail.find('?'); q != std::string::npos) {
    query = tail.substr(q + 1);
    tail = tail.substr(0, q);
  }
  if (StartsWith(tail, "/")) t->database = Unescape(tail.substr(1));
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string kv = query.substr(0, amp);
    query = amp == std::string::npos ? "" : query.substr(amp + 1);
    const size_t eq = kv.find('=');
    const std::string key = kv.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : Unescape(kv.substr(eq + 1));
    if (key == "socket") {
      t->socket = value;
    } else {
      return Status::InvalidInput("unknown option '" + key + "' in the db URL (known: socket)");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<DbTarget> DbTarget::Parse(const std::string& url) {
  DbTarget t;
  t.url = url;
  if (StartsWith(url, "postgres://") || StartsWith(url, "postgresql://")) {
    t.kind = Kind::kPostgres;
    const std::string rest = url.substr(url.find("://") + 3);
    const std::string authority = rest.substr(0, rest.find_first_of("/?"));
    const size_t at = authority.rfind('@');
    if (at != std::string::npos && authority.substr(0, at).find(':') != std::string::npos) {
      return Status::InvalidInput("the db URL holds a password; use password_env");
    }
    return t;
  }
  for (const char* scheme : {"mysql://", "mariadb://"}) {
    if (!StartsWith(url, scheme)) continue;
    t.kind = Kind::kMariadb;
    APOLLO11_RETURN_IF_ERROR(ParseMariadb(url.substr(std::string(scheme).size()), &t));
    return t;
  }
  if (StartsWith(url, "sqlite:///") && url.size() > 10) {
    t.kind = Kind::kSqlite;
    t.path = url.substr(9);
    return t;
  }
  return Status::InvalidInput("unsupported db URL " + url +
                              " (postgres://, postgresql://, mysql://, mariadb://, sqlite:///)");
}

}  // namespace apollo11::executor
