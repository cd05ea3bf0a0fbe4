// JWT verification against a JWKS (observability/jwt_verify.h), with keys
// OpenSSL makes here: RS256 and ES256 tokens that verify, and every way a
// token must be refused: another key, a changed payload, alg none, HS256
// keyed with the public key, an expired or not-yet-valid token, another
// issuer or audience, garbage.

#include "observability/jwt_verify.h"

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <catch2/catch.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "observability/oidc.h"
#include "observability/oidc_sign_in.h"

using apollo11::kMicrosPerSecond;
using apollo11::Micros;
using apollo11::StatusCode;
using nlohmann::json;
namespace obs = apollo11::observability;

namespace {

std::string B64Url(std::string_view in) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t bits = 0;
  int have = 0;
  for (unsigned char c : in) {
    bits = (bits << 8) | c;
    have += 8;
    while (have >= 6) {
      have -= 6;
      out.push_back(kAlphabet[(bits >> have) & 63]);
    }
  }
  if (have > 0) out.push_back(kAlphabet[(bits << (6 - have)) & 63]);
  return out;
}

using Pkey = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

Pkey Rsa(int bits = 2048) {
  return Pkey(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(bits)), EVP_PKEY_free);
}
Pkey P256() { return Pkey(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"), EVP_PKEY_free); }

std::string BnBytes(EVP_PKEY* key, const char* name) {
  BIGNUM* bn = nullptr;
  REQUIRE(EVP_PKEY_get_bn_param(key, name, &bn) == 1);
  std::string out(static_cast<size_t>(BN_num_bytes(bn)), '\0');
  BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
  BN_free(bn);
  return out;
}

json Jwk(EVP_PKEY* key, const std::string& kid) {
  if (EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA) {
    return {{"kty", "RSA"},
            {"kid", kid},
            {"use", "sig"},
            {"n", B64Url(BnBytes(key, OSSL_PKEY_PARAM_RSA_N))},
            {"e", B64Url(BnBytes(key, OSSL_PKEY_PARAM_RSA_E))}};
  }
  unsigned char point[65];
  size_t len = 0;
  REQUIRE(EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point,
                                          &len) == 1);
  REQUIRE(len == 65);
  const std::string p(reinterpret_cast<const char*>(point), len);
  return {{"kty", "EC"},
          {"kid", kid},
          {"crv", "P-256"},
          {"x", B64Url(p.substr(1, 32))},
          {"y", B64Url(p.substr(33, 32))}};
}

std::string Sign(EVP_PKEY* key, std::string_view data) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  size_t len = 0;
  REQUIRE(EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1);
  REQUIRE(EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(data.data()),
                         data.size()) == 1);
  std::string sig(len, '\0');
  REQUIRE(EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                         reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1);
  sig.resize(len);
  EVP_MD_CTX_free(ctx);
  if (EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) return sig;
  // DER -> r || s, as JWS writes an ES256 signature.
  const auto* p = reinterpret_cast<const unsigned char*>(sig.data());
  ECDSA_SIG* es = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));  // NOLINT
  REQUIRE(es != nullptr);
  unsigned char raw[64];
  BN_bn2binpad(ECDSA_SIG_get0_r(es), raw, 32);
  BN_bn2binpad(ECDSA_SIG_get0_s(es), raw + 32, 32);
  ECDSA_SIG_free(es);
  return std::string(reinterpret_cast<const char*>(raw), 64);
}

const Micros kNow = 1'800'000'000LL * kMicrosPerSecond;

json Claims() {
  return {{"iss", "https://idp.example.org"}, {"aud", "apollo11"}, {"sub", "u-1"},
          {"preferred_username", "alice"},    {"groups", {"ops"}}, {"iat", 1'800'000'000 - 10},
          {"exp", 1'800'000'000 + 300}};
}

std::string Token(EVP_PKEY* key, const json& header, const json& claims) {
  const std::string signed_part = B64Url(header.dump()) + "." + B64Url(claims.dump());
  return signed_part + "." + B64Url(Sign(key, signed_part));
}

obs::JwtExpectations Want() {
  obs::JwtExpectations w;
  w.issuer = "https://idp.example.org";
  w.audience = "apollo11";
  w.now = kNow;
  return w;
}

std::string Refusal(const std::string& token, const obs::JwksKeys& keys,
                    const obs::JwtExpectations& want = Want()) {
  auto r = obs::VerifyJwt(token, keys, want);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidInput);
  return r.status().message();
}

struct Fixture {
  Pkey rsa = Rsa(), ec = P256(), stranger = Rsa();
  obs::JwksKeys keys =
      *obs::JwksKeys::Parse(json{{"keys", {Jwk(rsa.get(), "r1"), Jwk(ec.get(), "e1")}}}.dump());
};

}  // namespace

TEST_CASE("RS256 and ES256 tokens signed by a listed key verify, and give their claims",
          "[http][oidc]") {
  Fixture f;
  CHECK(f.keys.size() == 2);
  auto rs = obs::VerifyJwt(Token(f.rsa.get(), {{"alg", "RS256"}, {"kid", "r1"}}, Claims()), f.keys,
                           Want());
  REQUIRE(rs.ok());
  CHECK((*rs)["preferred_username"] == "alice");
  json aud_list = Claims();
  aud_list["aud"] = {"other", "apollo11"};
  const std::string es =
      Token(f.ec.get(), {{"alg", "ES256"}, {"kid", "e1"}, {"typ", "JWT"}}, aud_list);
  CHECK(obs::LooksLikeJwt(es));
  CHECK(obs::JwtKeyId(es) == "e1");
  auto ok = obs::VerifyJwt(es, f.keys, Want());
  REQUIRE(ok.ok());
  CHECK((*ok)["groups"] == json{"ops"});
  // Within the leeway for clocks that disagree.
  obs::JwtExpectations late = Want();
  late.now = kNow + 330 * kMicrosPerSecond;
  CHECK(obs::VerifyJwt(es, f.keys, late).ok());
}

TEST_CASE("a token signed by another key, or changed after signing, is refused", "[http][oidc]") {
  Fixture f;
  CHECK(Refusal(Token(f.stranger.get(), {{"alg", "RS256"}, {"kid", "r1"}}, Claims()), f.keys) ==
        "token refused: its signature does not verify with key 'r1'");
  CHECK(Refusal(Token(f.stranger.get(), {{"alg", "RS256"}, {"kid", "x9"}}, Claims()), f.keys) ==
        "token refused: signed with key 'x9', which the issuer does not list");
  std::string token = Token(f.rsa.get(), {{"alg", "RS256"}, {"kid", "r1"}}, Claims());
  json admin = Claims();
  admin["groups"] = {"admins"};
  const size_t a = token.find('.'), b = token.find('.', a + 1);
  const std::string forged = token.substr(0, a + 1) + B64Url(admin.dump()) + token.substr(b);
  CHECK(Refusal(forged, f.keys).find("does not verify") != std::string::npos);
  // An EC key named for an RS256 token.
  CHECK(Refusal(Token(f.rsa.get(), {{"alg", "RS256"}, {"kid", "e1"}}, Claims()), f.keys) ==
        "token refused: key 'e1' is not an RS256 key");
}

TEST_CASE("alg none and HS256 keyed with the public key are refused", "[http][oidc]") {
  Fixture f;
  const std::string none =
      B64Url(json{{"alg", "none"}, {"kid", "r1"}}.dump()) + "." + B64Url(Claims().dump()) + ".";
  CHECK(Refusal(none, f.keys) ==
        "token refused: algorithm 'none' is not accepted (RS256 or ES256)");
  const std::string unsigned_part =
      B64Url(json{{"alg", "HS256"}, {"kid", "r1"}}.dump()) + "." + B64Url(Claims().dump());
  const json jwk = Jwk(f.rsa.get(), "r1");
  const std::string secret = jwk.dump();
  unsigned char mac[32];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(unsigned_part.data()), unsigned_part.size(), mac,
       &len);
  const std::string hs =
      unsigned_part + "." + B64Url(std::string(reinterpret_cast<const char*>(mac), len));
  CHECK(Refusal(hs, f.keys).find("algorithm 'HS256' is not accepted") != std::string::npos);
  CHECK(Refusal(Token(f.rsa.get(), {{"alg", "RS256"}, {"kid", "r1"}, {"crit", {"b64"}}}, Claims()),
                f.keys) == "token refused: it names critical extensions (crit)");
}

TEST_CASE("expiry, not-before, issuer and audience are checked", "[http][oidc]") {
  Fixture f;
  auto token = [&](const json& claims) {
    return Token(f.rsa.get(), {{"alg", "RS256"}, {"kid", "r1"}}, claims);
  };
  json expired = Claims();
  expired["exp"] = 1'800'000'000 - 61;
  CHECK(Refusal(token(expired), f.keys).rfind("token refused: it expired at ", 0) == 0);
  json endless = Claims();
  endless.erase("exp");
  CHECK(Refusal(token(endless), f.keys) == "token refused: it has no expiry (exp)");
  json early = Claims();
  early["nbf"] = 1'800'000'000 + 120;
  CHECK(Refusal(token(early), f.keys).rfind("token refused: it is not valid before ", 0) == 0);
  json other_aud = Claims();
  other_aud["aud"] = "grafana";
  CHECK(Refusal(token(other_aud), f.keys) ==
        "token refused: its audience is \"grafana\", not apollo11");
  json other_iss = Claims();
  other_iss["iss"] = "https://evil.example.org";
  CHECK(Refusal(token(other_iss), f.keys) ==
        "token refused: issued by 'https://evil.example.org', not by https://idp.example.org");
}

TEST_CASE("malformed tokens and key sets are refused with a reason", "[http][oidc]") {
  Fixture f;
  for (const std::string& bad :
       {std::string("a11_abcdef"), std::string("a.b"), std::string("a.b.c.d"),
        std::string("!!!.e30.x"), std::string(".e30.x"), std::string(20000, 'a') + ".b.c"}) {
    INFO(bad.substr(0, 40));
    CHECK(Refusal(bad, f.keys).rfind("token refused: ", 0) == 0);
  }
  CHECK_FALSE(obs::LooksLikeJwt("a11_Zm9vYmFy"));
  // Members of the wrong type are refusals, never exceptions.
  const std::string odd_header =
      B64Url(R"({"alg": 5, "kid": ["r1"]})") + "." + B64Url(Claims().dump()) + ".c2ln";
  CHECK(Refusal(odd_header, f.keys).find("algorithm '' is not accepted") != std::string::npos);
  CHECK(obs::JwtKeyId(odd_header).empty());
  json odd_claims = Claims();
  odd_claims["iss"] = 7;
  odd_claims["aud"] = {{"x", 1}};
  CHECK(Refusal(Token(f.rsa.get(), {{"alg", "RS256"}, {"kid", "r1"}}, odd_claims), f.keys)
            .find("issued by ''") != std::string::npos);
  CHECK_FALSE(obs::JwksKeys::Parse(R"({"keys": [{"kty": 1, "kid": 2}, 3, null]})").ok());
  CHECK(obs::JwksKeys::Parse("[]").status().code() == StatusCode::kInvalidInput);
  CHECK(obs::JwksKeys::Parse(R"({"keys": [{"kty": "oct", "kid": "h", "k": "c2VjcmV0"}]})")
            .status()
            .message()
            .find("skipped h (oct)") != std::string::npos);
  Pkey small = Rsa(1024);
  CHECK_FALSE(obs::JwksKeys::Parse(json{{"keys", {Jwk(small.get(), "weak")}}}.dump()).ok());
  json enc = Jwk(f.rsa.get(), "enc");
  enc["use"] = "enc";
  CHECK_FALSE(obs::JwksKeys::Parse(json{{"keys", {enc}}}.dump()).ok());
  json off_curve = Jwk(f.ec.get(), "bent");
  off_curve["y"] = off_curve["x"];
  CHECK_FALSE(obs::JwksKeys::Parse(json{{"keys", {off_curve}}}.dump()).ok());
}

namespace {

// A provider behind a fake fetch: its discovery document and key set, what
// was fetched, and whether it answers.
struct FakeProvider {
  std::string issuer = "https://idp.example.org";
  json keys = json{{"keys", json::array()}};
  bool up = true;
  int fetches = 0;
  obs::OidcFetch Fetch() {
    return [this](const std::string& url) -> apollo11::Result<std::string> {
      ++fetches;
      if (!up) return apollo11::Status::Io(url + ": connection refused");
      if (url == issuer + "/.well-known/openid-configuration") {
        return json{{"issuer", issuer},
                    {"jwks_uri", issuer + "/jwks"},
                    {"authorization_endpoint", issuer + "/auth?ui=1"},
                    {"token_endpoint", issuer + "/token"}}
            .dump();
      }
      if (url == issuer + "/jwks") return keys.dump();
      return apollo11::Status::Io(url + " answered HTTP 404");
    };
  }
};

obs::OidcOptions Options() {
  obs::OidcOptions o;
  o.issuer = "https://idp.example.org/";
  o.audience = "apollo11";
  o.group_roles = {{"ops", apollo11::transport::kRoleOperator},
                   {"admins", apollo11::transport::kRoleAdmin}};
  return o;
}

}  // namespace

TEST_CASE("the OIDC verifier reads the keys, follows a rotation, and reads no more than it must",
          "[http][oidc]") {
  Fixture f;
  FakeProvider idp;
  idp.keys["keys"].push_back(Jwk(f.rsa.get(), "r1"));
  apollo11::FakeClock clock(kNow);
  auto v = obs::OidcVerifier::Start(Options(), idp.Fetch(), &clock);
  REQUIRE(v.ok());
  CHECK(idp.fetches == 2);  // discovery, then keys
  json claims = Claims();
  claims["groups"] = {"ops", "admins", "other"};
  auto id = (*v)->Verify(Token(f.rsa.get(), {{"alg", "RS256"}, {"kid", "r1"}}, claims));
  REQUIRE(id.ok());
  CHECK(id->name == "alice");
  CHECK(id->roles == (apollo11::transport::kRoleOperator | apollo11::transport::kRoleAdmin));
  // The provider rotates to an EC key: a token under it makes the verifier
  // read the keys again, once.
  idp.keys["keys"].push_back(Jwk(f.ec.get(), "e1"));
  clock.Advance(obs::OidcVerifier::kRefreshEvery);
  CHECK((*v)->Verify(Token(f.ec.get(), {{"alg", "ES256"}, {"kid", "e1"}}, Claims())).ok());
  CHECK(idp.fetches == 4);
  // Made-up key ids within the refresh interval cost the provider nothing.
  for (int i = 0; i < 5; ++i) {
    CHECK_FALSE((*v)->Verify(Token(f.stranger.get(),
                                   {{"alg", "RS256"}, {"kid", "x" + std::to_string(i)}}, Claims()))
                    .ok());
  }
  CHECK(idp.fetches == 4);
  // No name claim: sub; a name with control characters is cleaned.
  json bare = Claims();
  bare.erase("preferred_username");
  bare["sub"] = "u-1\nforged log line";
  auto sub = (*v)->Verify(Token(f.rsa.get(), {{"alg", "RS256"}, {"kid", "r1"}}, bare));
  REQUIRE(sub.ok());
  CHECK(sub->name == "u-1?forged log line");
  CHECK(sub->roles == apollo11::transport::kRoleOperator);  // groups ops
}

TEST_CASE("a provider down at start does not stop the verifier: its tokens wait for the keys",
          "[http][oidc]") {
  Fixture f;
  FakeProvider idp;
  idp.keys["keys"].push_back(Jwk(f.rsa.get(), "r1"));
  idp.up = false;
  apollo11::FakeClock clock(kNow);
  auto v = obs::OidcVerifier::Start(Options(), idp.Fetch(), &clock);
  REQUIRE(v.ok());
  const std::string token = Token(f.rsa.get(), {{"alg", "RS256"}, {"kid", "r1"}}, Claims());
  auto refused = (*v)->Verify(token);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("could not be read: https://idp.example.org/.well-known/"
                                        "openid-configuration: connection refused") !=
        std::string::npos);
  idp.up = true;
  clock.Advance(obs::OidcVerifier::kRefreshEvery);
  CHECK((*v)->Verify(token).ok());
  // Options that cannot work are refused at start.
  obs::OidcOptions no_roles = Options();
  no_roles.group_roles.clear();
  CHECK_FALSE(obs::OidcVerifier::Start(no_roles, idp.Fetch(), &clock).ok());
  CHECK(obs::ParseGroupRole("ops=operator")->second == apollo11::transport::kRoleOperator);
  CHECK_FALSE(obs::ParseGroupRole("=admin").ok());
  CHECK_FALSE(obs::ParseGroupRole("ops=root").ok());
}

TEST_CASE("PKCE's S256 challenge and the URL encoding are RFC 7636's and RFC 3986's",
          "[http][oidc]") {
  // base64url(SHA-256("abc")), FIPS 180-2's digest ba7816bf...f20015ad.
  CHECK(obs::PkceChallenge("abc") == "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
  CHECK(obs::UrlEncode("http://a/b?c=d e&f~_.-") == "http%3A%2F%2Fa%2Fb%3Fc%3Dd%20e%26f~_.-");
}

namespace {

// A query parameter of a URL Begin made.
std::string Param(const std::string& url, const std::string& name) {
  const size_t at = url.find(name + "=");
  REQUIRE(at != std::string::npos);
  const size_t from = at + name.size() + 1;
  return url.substr(from, url.find('&', from) - from);
}

// The dashboard's sign-in against FakeProvider, whose token endpoint
// answers an ID token for `user` (groups `groups`) with the nonce the last
// login sent, unless a test changes what it answers.
struct SignInWorld {
  Fixture f;
  FakeProvider idp;
  apollo11::FakeClock clock{kNow};
  std::unique_ptr<obs::OidcVerifier> verifier;
  std::string user = "bob", nonce, form, authorization;
  json groups = {"ops"};
  json audience = "dash";
  std::unique_ptr<obs::OidcSignIn> sign_in;

  SignInWorld() {
    idp.keys["keys"].push_back(Jwk(f.rsa.get(), "r1"));
    auto started = obs::OidcVerifier::Start(Options(), idp.Fetch(), &clock);
    REQUIRE(started.ok());
    verifier = std::move(*started);
    obs::OidcSignInOptions o;
    o.client_id = "dash";
    o.client_secret = "s3cret:x";
    o.redirect_url = "https://apollo.example.org/auth/callback";
    sign_in = std::make_unique<obs::OidcSignIn>(o, verifier.get(), Post(), &clock);
  }
  obs::OidcPost Post() {
    return [this](const std::string& url, const std::string& body,
                  const std::string& auth) -> apollo11::Result<std::string> {
      REQUIRE(url == idp.issuer + "/token");
      form = body;
      authorization = auth;
      json claims = Claims();
      claims["aud"] = audience;
      claims["preferred_username"] = user;
      claims["groups"] = groups;
      claims["nonce"] = nonce;
      return json{{"id_token", Token(f.rsa.get(), {{"alg", "RS256"}, {"kid", "r1"}}, claims)},
                  {"token_type", "Bearer"}}
          .dump();
    };
  }
  // Begin, remembering the nonce the provider would put in the ID token.
  obs::OidcSignIn::Started Begin(const std::string& return_to = "/runs") {
    auto started = sign_in->Begin(return_to);
    REQUIRE(started.ok());
    nonce = Param(started->location, "nonce");
    return *started;
  }
};

}  // namespace

TEST_CASE("the dashboard's sign-in: a code flow with PKCE, bound to the browser, used once",
          "[http][oidc]") {
  SignInWorld w;
  const auto started = w.Begin();
  const std::string& url = started.location;
  CHECK(url.starts_with("https://idp.example.org/auth?ui=1&response_type=code&client_id=dash&"));
  CHECK(Param(url, "redirect_uri") == "https%3A%2F%2Fapollo.example.org%2Fauth%2Fcallback");
  CHECK(Param(url, "scope") == "openid%20profile");
  CHECK(Param(url, "code_challenge_method") == "S256");
  CHECK(Param(url, "state") == started.state);
  CHECK(started.state.size() >= 32);

  auto done = w.sign_in->Finish("code-1", started.state, started.state);
  REQUIRE(done.ok());
  CHECK(done->who.name == "bob");
  CHECK(done->who.roles == apollo11::transport::kRoleOperator);
  CHECK(done->return_to == "/runs");
  // The code went with the verifier whose challenge the URL carried, and
  // the client's secret as HTTP Basic (each part form-encoded: ':' too).
  const std::string verifier = Param("?" + w.form, "code_verifier");
  CHECK(obs::PkceChallenge(verifier) == Param(url, "code_challenge"));
  CHECK(Param("?" + w.form, "grant_type") == "authorization_code");
  CHECK(Param("?" + w.form, "code") == "code-1");
  CHECK(w.authorization == "Basic ZGFzaDpzM2NyZXQlM0F4");  // dash:s3cret%3Ax
  auto who = w.sign_in->SessionOf(done->session);
  REQUIRE(who);
  CHECK(who->name == "bob");
  CHECK_FALSE(w.sign_in->SessionOf(done->session + "x"));
  // The same answer again (a replayed callback) finds nothing.
  auto replay = w.sign_in->Finish("code-1", started.state, started.state);
  REQUIRE_FALSE(replay.ok());
  CHECK(replay.status().message().find("unknown to the node") != std::string::npos);
  // Sign-out ends the session; so does its age.
  w.sign_in->End(done->session);
  CHECK_FALSE(w.sign_in->SessionOf(done->session));
  const auto again = w.Begin("//evil.example.org/x");
  auto second = w.sign_in->Finish("code-2", again.state, again.state);
  REQUIRE(second.ok());
  CHECK(second->return_to == "/");
  CHECK(w.sign_in->SessionOf(second->session));
  w.clock.Advance(obs::OidcSignIn::kSessionTtl);
  CHECK_FALSE(w.sign_in->SessionOf(second->session));
}

TEST_CASE(
    "the dashboard's sign-in refuses another browser, nonce, audience, and users without a role",
    "[http][oidc]") {
  SignInWorld w;
  auto refusal = [&](const std::string& cookie) {
    const auto started = w.Begin();
    auto r = w.sign_in->Finish("code", started.state, cookie == "=" ? started.state : cookie);
    REQUIRE_FALSE(r.ok());
    return r.status().message();
  };
  CHECK(refusal("").find("not started by this browser") != std::string::npos);
  CHECK(refusal("forged").find("not started by this browser") != std::string::npos);
  w.audience = "apollo11";  // an access token's audience, not the client's
  CHECK(refusal("=").find("audience") != std::string::npos);
  w.audience = "dash";
  w.groups = {"visitors"};
  CHECK(refusal("=").find("bob signed in at the provider, but none of their groups (visitors)") !=
        std::string::npos);
  w.groups = {"ops"};
  // An ID token minted for another login (its nonce) is refused.
  const auto started = w.Begin();
  w.nonce = "another-login";
  auto r = w.sign_in->Finish("code", started.state, started.state);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("nonce") != std::string::npos);
  CHECK(w.sign_in->sessions() == 0);
  // Logins that were never finished end after kLoginTtl.
  const auto stale = w.Begin();
  w.clock.Advance(obs::OidcSignIn::kLoginTtl);
  CHECK_FALSE(w.sign_in->Finish("code", stale.state, stale.state).ok());
}
