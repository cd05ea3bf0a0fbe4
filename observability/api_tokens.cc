#include "observability/api_tokens.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/random.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <set>

#include "common/small_file.h"

namespace apollo11::observability {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The next whitespace-separated word of `line`, which loses it.
std::string_view NextWord(std::string_view* line) {
  std::string_view s = Trim(*line);
  size_t end = 0;
  while (end < s.size() && !std::isspace(static_cast<unsigned char>(s[end]))) ++end;
  *line = s.substr(end);
  return s.substr(0, end);
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ParseHash(std::string_view text, TokenHash* hash) {
  constexpr std::string_view kPrefix = "sha256:";
  if (!text.starts_with(kPrefix)) return false;
  text.remove_prefix(kPrefix.size());
  if (text.size() != 2 * hash->size()) return false;
  for (size_t i = 0; i < hash->size(); ++i) {
    const int hi = HexDigit(text[2 * i]), lo = HexDigit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*hash)[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return true;
}

// Parses one non-blank, non-comment line into `out`; "" or why not.
std::string ParseLine(std::string_view line, ApiToken* out) {
  const std::string_view name = NextWord(&line);
  const std::string_view role = NextWord(&line);
  const std::string_view hash = NextWord(&line);
  const std::string_view rest = Trim(line);
  if (!IsPrincipalName(name)) {
    return "'" + std::string(name) + "' is not a principal name (1 to 64 of A-Z a-z 0-9 . _ @ -)";
  }
  const std::optional<transport::KeyRoles> r = transport::ParseRole(role);
  if (!r || *r == transport::kRoleWorker) {
    return "want a role (viewer, operator or admin) after the name, got '" + std::string(role) +
           "'";
  }
  if (!ParseHash(hash, &out->hash)) {
    return "want the token's hash (sha256: and 64 hex digits) after the role; make a line with "
           "`apollo11 token create NAME ROLE`";
  }
  if (!rest.empty() && rest.front() != '#')
    return "unexpected text after the hash (use '# comment')";
  out->name = std::string(name);
  out->role = *r;
  return "";
}

}  // namespace

bool IsPrincipalName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '@' &&
        c != '-') {
      return false;
    }
  }
  return true;
}

Result<std::vector<ApiToken>> ParseApiTokens(const std::string& text, const std::string& name) {
  std::vector<ApiToken> tokens;
  std::set<std::string> names;
  size_t line_no = 0, start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line = Trim(std::string_view(text).substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    ApiToken token;
    const std::string where = name + ":" + std::to_string(line_no) + ": ";
    if (std::string why = ParseLine(line, &token); !why.empty()) {
      return Status::InvalidInput(where + why);
    }
    if (!names.insert(token.name).second) {
      return Status::InvalidInput(where + "principal '" + token.name + "' is listed twice");
    }
    tokens.push_back(std::move(token));
  }
  return tokens;
}

Result<std::vector<ApiToken>> LoadApiTokens(const std::string& path) {
  errno = 0;
  std::optional<std::string> text = ReadSmallFile(path, kMaxTokensFileBytes + 1);
  if (!text) {
    return Status::InvalidInput("tokens file " + path + ": " +
                                (errno ? std::strerror(errno) : "cannot be read"));
  }
  if (text->size() > kMaxTokensFileBytes) {
    return Status::InvalidInput("tokens file " + path + " is larger than " +
                                std::to_string(kMaxTokensFileBytes) + " bytes");
  }
  return ParseApiTokens(*text, path);
}

TokenHash HashToken(std::string_view token) {
  TokenHash hash{};
  unsigned int size = 0;
  EVP_Digest(token.data(), token.size(), hash.data(), &size, EVP_sha256(), nullptr);
  return hash;
}

std::string FormatTokenHash(const TokenHash& hash) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (uint8_t b : hash) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

std::string Base64Url(std::span<const uint8_t> bytes) {
  static constexpr char kUrl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t b : bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kUrl[(acc >> bits) & 63];
    }
  }
  if (bits > 0) out += kUrl[(acc << (6 - bits)) & 63];
  return out;
}

Result<std::string> RandomBase64Url(size_t bytes) {
  std::vector<uint8_t> raw(bytes);
  if (getrandom(raw.data(), raw.size(), 0) != static_cast<ssize_t>(raw.size())) {
    return Status::Io(std::string("getrandom: ") + std::strerror(errno));
  }
  return Base64Url(raw);
}

Result<std::string> NewApiToken() {
  auto random = RandomBase64Url(32);
  if (!random.ok()) return random.status();
  return "a11_" + *random;
}

std::string TokenLine(const std::string& name, const std::string& role, std::string_view token) {
  return name + " " + role + " " + FormatTokenHash(HashToken(token));
}

std::optional<ApiToken> FindToken(const std::vector<ApiToken>& tokens, std::string_view token) {
  if (token.size() > kMaxPresentedToken) return std::nullopt;
  const TokenHash presented = HashToken(token);
  const ApiToken* found = nullptr;
  for (const ApiToken& t : tokens) {
    // Every entry is compared, each in constant time.
    const bool same = CRYPTO_memcmp(presented.data(), t.hash.data(), presented.size()) == 0;
    if (same) found = &t;
  }
  if (found == nullptr) return std::nullopt;
  return *found;
}

}  // namespace apollo11::observability
