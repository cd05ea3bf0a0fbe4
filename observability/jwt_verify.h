#pragma once
// Verifying a JSON Web Token (RFC 7519) as an OpenID Connect provider signs
// it: a JWS in compact form whose header names its algorithm and key, checked
// against the provider's JSON Web Key Set (RFC 7517, its `jwks_uri`).
//
// Accepted algorithms: RS256 (an RSA key of 2048 bits or more) and ES256
// (an EC key on P-256). Everything else is refused, "none" and the HMAC
// family first among them: a verifier that took HS256 with a public key as
// its secret would accept tokens anyone can make. A key is chosen by the
// header's `kid` only, and its type must match the algorithm.
//
// The claims checked: `iss` equals the expected issuer; `aud` (a string or
// an array) holds the expected audience; `exp` is in the future and `nbf`
// (when present) not, both within `leeway` for clocks that disagree a
// little. The caller reads the principal's name and groups from the claims.
// Every refusal is InvalidInput with a sentence saying why ("the token
// expired at ..."), for the 401 and the log. Nothing here is secret.

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace apollo11::observability {

// No compact JWT this verifier takes is longer (a token with many groups is
// a few KiB); a longer bearer is refused before it is decoded.
inline constexpr size_t kMaxJwtBytes = 16 << 10;

struct JwtExpectations {
  std::string issuer;
  std::string audience;
  Micros now = 0;                         // wall
  Micros leeway = 60 * kMicrosPerSecond;  // clock skew allowed for exp and nbf
};

// A provider's signing keys, parsed once from its JWKS document.
class JwksKeys {
 public:
  // The usable keys of `json`: RSA and EC P-256 keys meant for signatures
  // (`use` absent or "sig"), each with a `kid`. Keys of other types or uses
  // are skipped; InvalidInput when the document is not a JWKS or holds no
  // usable key (the message names what was skipped).
  static Result<JwksKeys> Parse(std::string_view json);

  size_t size() const { return keys_.size(); }
  bool Has(std::string_view kid) const;

  struct Key;  // jwt_verify.cc

 private:
  std::vector<std::shared_ptr<const Key>> keys_;
  friend Result<nlohmann::json> VerifyJwt(std::string_view, const JwksKeys&,
                                          const JwtExpectations&);
};

// True when `token` has a JWT's shape: three base64url parts separated by
// dots (an API token from `apollo11 token create` never has a dot).
bool LooksLikeJwt(std::string_view token);

// The `kid` in `token`'s header; "" when it has none or does not decode.
std::string JwtKeyId(std::string_view token);

// The token's claims once its signature and claims check out (see above);
// InvalidInput saying why not.
Result<nlohmann::json> VerifyJwt(std::string_view token, const JwksKeys& keys,
                                 const JwtExpectations& want);

}  // namespace apollo11::observability
