#include "observability/jwt_verify.h"

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <cmath>
#include <optional>

#include "common/json_dump.h"

namespace apollo11::observability {

struct JwksKeys::Key {
  std::string kid;
  std::string alg;  // "RS256" or "ES256": what its type allows
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> pkey{nullptr, EVP_PKEY_free};
};

namespace {

using nlohmann::json;

// obj[key] when it is a string; `fallback` when it is absent or anything
// else (json::value would throw on another type, and a peer writes these).
std::string Str(const json& obj, const char* key, const char* fallback = "") {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// base64url without padding (RFC 7515 §2); nullopt for anything else.
std::optional<std::string> DecodeBase64Url(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
  };
  if (in.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(in.size() * 3 / 4);
  uint32_t bits = 0;
  int have = 0;
  for (char c : in) {
    const int v = value(c);
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(v);
    have += 6;
    if (have >= 8) {
      have -= 8;
      out.push_back(static_cast<char>((bits >> have) & 0xff));
    }
  }
  // Unused trailing bits must be zero (one encoding per value).
  if ((bits & ((1u << have) - 1)) != 0) return std::nullopt;
  return out;
}

std::optional<std::string> Member(const json& jwk, const char* name) {
  auto it = jwk.find(name);
  if (it == jwk.end() || !it->is_string()) return std::nullopt;
  return DecodeBase64Url(it->get<std::string>());
}

using PkeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

// A public key from OpenSSL parameters of `type` ("RSA" or "EC").
PkeyPtr FromParams(const char* type, OSSL_PARAM_BLD* bld) {
  PkeyPtr out(nullptr, EVP_PKEY_free);
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr);
  EVP_PKEY* pkey = nullptr;
  if (params != nullptr && ctx != nullptr && EVP_PKEY_fromdata_init(ctx) == 1 &&
      EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) == 1) {
    out.reset(pkey);
  }
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(params);
  return out;
}

PkeyPtr RsaKey(const json& jwk) {
  PkeyPtr none(nullptr, EVP_PKEY_free);
  auto n = Member(jwk, "n"), e = Member(jwk, "e");
  // 16384 bits is OpenSSL's own bound for RSA; a larger "key" is a way to
  // make every verification slow.
  if (!n || !e || n->empty() || n->size() > 2048 || e->empty() || e->size() > 8) return none;
  BIGNUM* bn_n = BN_bin2bn(reinterpret_cast<const unsigned char*>(n->data()),
                           static_cast<int>(n->size()), nullptr);
  BIGNUM* bn_e = BN_bin2bn(reinterpret_cast<const unsigned char*>(e->data()),
                           static_cast<int>(e->size()), nullptr);
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  PkeyPtr key(nullptr, EVP_PKEY_free);
  if (bn_n != nullptr && bn_e != nullptr && bld != nullptr &&
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) == 1 &&
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) == 1) {
    key = FromParams("RSA", bld);
  }
  OSSL_PARAM_BLD_free(bld);
  BN_free(bn_n);
  BN_free(bn_e);
  if (key && EVP_PKEY_get_bits(key.get()) < 2048) key.reset();
  return key;
}

PkeyPtr P256Key(const json& jwk) {
  PkeyPtr none(nullptr, EVP_PKEY_free);
  if (Str(jwk, "crv") != "P-256") return none;
  auto x = Member(jwk, "x"), y = Member(jwk, "y");
  if (!x || !y || x->size() != 32 || y->size() != 32) return none;
  const std::string point = std::string(1, '\x04') + *x + *y;  // uncompressed
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  PkeyPtr key(nullptr, EVP_PKEY_free);
  if (bld != nullptr &&
      OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) == 1 &&
      OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()) ==
          1) {
    key = FromParams("EC", bld);  // a point not on the curve does not load
  }
  OSSL_PARAM_BLD_free(bld);
  return key;
}

// ES256's signature is r || s, 32 bytes each; OpenSSL verifies DER.
std::optional<std::string> EcdsaDer(std::string_view raw) {
  if (raw.size() != 64) return std::nullopt;
  const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
  ECDSA_SIG* sig = ECDSA_SIG_new();
  BIGNUM* r = BN_bin2bn(p, 32, nullptr);
  BIGNUM* s = BN_bin2bn(p + 32, 32, nullptr);
  std::optional<std::string> out;
  if (sig != nullptr && r != nullptr && s != nullptr && ECDSA_SIG_set0(sig, r, s) == 1) {
    r = s = nullptr;  // owned by sig now
    unsigned char* der = nullptr;
    const int len = i2d_ECDSA_SIG(sig, &der);
    if (len > 0) out.emplace(reinterpret_cast<const char*>(der), static_cast<size_t>(len));
    OPENSSL_free(der);
  }
  BN_free(r);
  BN_free(s);
  ECDSA_SIG_free(sig);
  return out;
}

bool VerifySignature(EVP_PKEY* key, std::string_view signed_part, std::string_view sig) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok =
      ctx != nullptr && EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
      EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                       reinterpret_cast<const unsigned char*>(signed_part.data()),
                       signed_part.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

// The three parts of a compact JWS; false when it has another shape.
bool Split(std::string_view token, std::string_view parts[3]) {
  const size_t a = token.find('.');
  if (a == std::string_view::npos) return false;
  const size_t b = token.find('.', a + 1);
  if (b == std::string_view::npos || token.find('.', b + 1) != std::string_view::npos) {
    return false;
  }
  parts[0] = token.substr(0, a);
  parts[1] = token.substr(a + 1, b - a - 1);
  parts[2] = token.substr(b + 1);
  return !parts[0].empty() && !parts[1].empty();
}

std::optional<json> DecodeJsonPart(std::string_view part) {
  auto text = DecodeBase64Url(part);
  if (!text) return std::nullopt;
  json doc = ParseJsonBounded(*text);
  if (!doc.is_object()) return std::nullopt;
  return doc;
}

Status Refuse(const std::string& why) { return Status::InvalidInput("token refused: " + why); }

// A NumericDate claim (seconds, maybe fractional) as Micros; nullopt if absent or not a number.
std::optional<Micros> TimeClaim(const json& claims, const char* name) {
  auto it = claims.find(name);
  if (it == claims.end() || !it->is_number()) return std::nullopt;
  const double seconds = it->get<double>();
  if (!std::isfinite(seconds) || std::fabs(seconds) > 1e11) return std::nullopt;
  return static_cast<Micros>(seconds * static_cast<double>(kMicrosPerSecond));
}

Status CheckClaims(const json& claims, const JwtExpectations& want) {
  if (Str(claims, "iss") != want.issuer) {
    return Refuse("issued by '" + Str(claims, "iss") + "', not by " + want.issuer);
  }
  const json aud = claims.contains("aud") ? claims["aud"] : json();
  bool for_us = aud.is_string() && aud.get<std::string>() == want.audience;
  if (aud.is_array()) {
    for (const json& a : aud) for_us = for_us || (a.is_string() && a == want.audience);
  }
  if (!for_us) return Refuse("its audience is " + aud.dump() + ", not " + want.audience);
  const std::optional<Micros> exp = TimeClaim(claims, "exp");
  if (!exp) return Refuse("it has no expiry (exp)");
  if (*exp + want.leeway <= want.now) return Refuse("it expired at " + FormatTimestamp(*exp));
  if (const std::optional<Micros> nbf = TimeClaim(claims, "nbf");
      nbf && *nbf - want.leeway > want.now) {
    return Refuse("it is not valid before " + FormatTimestamp(*nbf));
  }
  return Status::Ok();
}

}  // namespace

Result<JwksKeys> JwksKeys::Parse(std::string_view text) {
  json doc = ParseJsonBounded(text);
  if (!doc.is_object() || !doc.contains("keys") || !doc["keys"].is_array()) {
    return Status::InvalidInput("not a JWKS document (an object with a keys array)");
  }
  JwksKeys out;
  std::vector<std::string> skipped;
  for (const json& jwk : doc["keys"]) {
    if (!jwk.is_object()) continue;
    const std::string kid = Str(jwk, "kid"), kty = Str(jwk, "kty");
    if (kid.empty() || Str(jwk, "use", "sig") != "sig") {
      skipped.push_back(kid.empty() ? "a key without kid" : kid + " (use " + Str(jwk, "use") + ")");
      continue;
    }
    auto key = std::make_shared<Key>();
    key->kid = kid;
    if (kty == "RSA") {
      key->alg = "RS256";
      key->pkey = RsaKey(jwk);
    } else if (kty == "EC") {
      key->alg = "ES256";
      key->pkey = P256Key(jwk);
    }
    if (!key->pkey) {
      skipped.push_back(kid + " (" + (kty.empty() ? "no kty" : kty) + ")");
      continue;
    }
    out.keys_.push_back(std::move(key));
  }
  if (out.keys_.empty()) {
    std::string list;
    for (const std::string& s : skipped) list += (list.empty() ? "" : ", ") + s;
    return Status::InvalidInput("the JWKS holds no RSA (2048 bits or more) or P-256 signing key" +
                                (list.empty() ? std::string() : ": skipped " + list));
  }
  return out;
}

bool JwksKeys::Has(std::string_view kid) const {
  for (const auto& k : keys_) {
    if (k->kid == kid) return true;
  }
  return false;
}

bool LooksLikeJwt(std::string_view token) {
  std::string_view parts[3];
  return token.size() <= kMaxJwtBytes && Split(token, parts);
}

std::string JwtKeyId(std::string_view token) {
  std::string_view parts[3];
  if (!LooksLikeJwt(token) || !Split(token, parts)) return "";
  auto header = DecodeJsonPart(parts[0]);
  return header ? Str(*header, "kid") : "";
}

Result<nlohmann::json> VerifyJwt(std::string_view token, const JwksKeys& keys,
                                 const JwtExpectations& want) {
  std::string_view parts[3];
  if (token.size() > kMaxJwtBytes) return Refuse("longer than 16 KiB");
  if (!Split(token, parts)) return Refuse("not a JWT (three base64url parts)");
  auto header = DecodeJsonPart(parts[0]);
  if (!header) return Refuse("its header does not decode");
  const std::string alg = Str(*header, "alg");
  if (alg != "RS256" && alg != "ES256") {
    return Refuse("algorithm '" + alg + "' is not accepted (RS256 or ES256)");
  }
  if (header->contains("crit")) return Refuse("it names critical extensions (crit)");
  const std::string kid = Str(*header, "kid");
  const JwksKeys::Key* key = nullptr;
  for (const auto& k : keys.keys_) {
    if (k->kid == kid) key = k.get();
  }
  if (key == nullptr)
    return Refuse("signed with key '" + kid + "', which the issuer does not list");
  if (key->alg != alg) return Refuse("key '" + kid + "' is not an " + alg + " key");
  auto sig = DecodeBase64Url(parts[2]);
  if (!sig) return Refuse("its signature does not decode");
  if (alg == "ES256") {
    sig = EcdsaDer(*sig);
    if (!sig) return Refuse("an ES256 signature is 64 bytes");
  }
  const std::string_view signed_part = token.substr(0, parts[0].size() + 1 + parts[1].size());
  if (!VerifySignature(key->pkey.get(), signed_part, *sig)) {
    return Refuse("its signature does not verify with key '" + kid + "'");
  }
  auto claims = DecodeJsonPart(parts[1]);
  if (!claims) return Refuse("its claims do not decode");
  APOLLO11_RETURN_IF_ERROR(CheckClaims(*claims, want));
  return std::move(*claims);
}

}  // namespace apollo11::observability
