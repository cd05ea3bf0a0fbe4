#pragma once
// API tokens: the HTTP port's principals. A tokens file holds one principal
// per line, its token stored only as a hash:
//
//   # name     role      token hash
//   alice      operator  sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//   ci-deploy  admin     sha256:...
//
// `apollo11 token create NAME ROLE` makes a token (32 random bytes from the
// kernel, "a11_" and 43 base64url characters) and prints it once with its
// line. Roles are those of transport/key_roles.h but worker (a ZeroMQ role).
// Names are 1 to 64 of [A-Za-z0-9._@-] and unique within a file; a token is
// looked up by hashing what was presented and comparing it with every line
// in constant time (CRYPTO_memcmp, no early exit), so neither the time taken
// nor the file tells a token. Any other line is an error "FILE:LINE: ...".

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "transport/key_roles.h"

namespace apollo11::observability {

using TokenHash = std::array<uint8_t, 32>;  // SHA-256

struct ApiToken {
  std::string name;
  transport::KeyRoles role = 0;
  TokenHash hash{};
};

// At most this many bytes of tokens file, and of a presented token.
inline constexpr size_t kMaxTokensFileBytes = 1 << 20;
inline constexpr size_t kMaxPresentedToken = 512;

Result<std::vector<ApiToken>> ParseApiTokens(const std::string& text, const std::string& name);
// Reads `path` (at most kMaxTokensFileBytes) and parses it.
Result<std::vector<ApiToken>> LoadApiTokens(const std::string& path);

TokenHash HashToken(std::string_view token);
// "sha256:" and 64 lowercase hex digits.
std::string FormatTokenHash(const TokenHash& hash);
// A new random token ("a11_" + 43 base64url characters); Io when the
// kernel's random source fails.
Result<std::string> NewApiToken();
// RFC 4648's base64url of `bytes`, without padding.
std::string Base64Url(std::span<const uint8_t> bytes);
// `bytes` random bytes from the kernel, in base64url; Io when its random
// source fails (getrandom blocks only before the pool is first seeded).
Result<std::string> RandomBase64Url(size_t bytes);
// The tokens file line for `name` with `role` and `token`.
std::string TokenLine(const std::string& name, const std::string& role, std::string_view token);
// Whether `name` may name a principal (1 to 64 of [A-Za-z0-9._@-]).
bool IsPrincipalName(std::string_view name);

// The entry whose hash is `token`'s, compared with every entry in constant
// time; nullopt when none matches (or the token is longer than
// kMaxPresentedToken).
std::optional<ApiToken> FindToken(const std::vector<ApiToken>& tokens, std::string_view token);

}  // namespace apollo11::observability
