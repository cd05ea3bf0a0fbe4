#pragma once
// The dashboard's sign-in through an OpenID Connect provider: the
// authorization code flow with PKCE (RFC 7636), run by the node itself (a
// confidential client when given a secret, a public one otherwise), ending
// in a session the browser holds as a cookie it cannot read from script.
//
//   1. GET /auth/login?return=PATH: Begin makes a state, a nonce and a PKCE
//      verifier, keeps them for kLoginTtl, and answers the provider's
//      authorization URL (response_type code, S256 challenge). The state
//      also goes into a short cookie bound to this browser (SameSite=Lax:
//      it must come back on the provider's redirect), so a callback another
//      page forges with its own code is refused (login CSRF).
//   2. GET /auth/callback?code&state: Finish takes the pending login of that
//      state once (a replay finds nothing), checks the browser's cookie
//      carries the same state, trades the code and the verifier for tokens
//      at the provider's token endpoint, and verifies the ID token (its
//      signature against the provider's keys, `iss`, `aud` = the client id,
//      `exp`, and the `nonce` sent in step 1). The principal is the ID
//      token's name claim, its roles the groups claim mapped as for bearer
//      tokens (observability/oidc.h).
//   3. A session: 32 random bytes, kept only as their SHA-256 (a lookup's
//      time tells nothing of a valid id), valid for kSessionTtl or until
//      sign-out. The cookie is HttpOnly, Secure and SameSite=Strict.
//
// Sessions live in the node's memory: a restart signs everyone out, and a
// user removed from a group at the provider keeps the session's roles until
// it ends. Bounded: at most kMaxPending logins under way (the oldest is
// dropped) and kMaxSessions sessions (the one ending soonest is dropped).
// Thread-safe.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "observability/api_tokens.h"
#include "observability/oidc.h"

namespace apollo11::observability {

struct OidcSignInOptions {
  std::string client_id;      // --oidc-client-id
  std::string client_secret;  // --oidc-client-secret-file's content; "" = public client
  // --oidc-redirect-url: where the provider sends the browser back, this
  // node's BASE/auth/callback as the browser reaches it.
  std::string redirect_url;
  std::string scope = "openid profile";
};

// The S256 code challenge of a PKCE verifier (RFC 7636 4.2):
// base64url(SHA-256(verifier)), without padding.
std::string PkceChallenge(std::string_view verifier);
// `text` percent-encoded for a query or a form (RFC 3986 unreserved kept,
// and the characters of `also_kept`: ":@" for a path segment of ids).
std::string UrlEncode(std::string_view text, std::string_view also_kept = "");

class OidcSignIn {
 public:
  static constexpr Micros kLoginTtl = 10 * 60 * kMicrosPerSecond;
  static constexpr Micros kSessionTtl = 8 * 3600 * kMicrosPerSecond;
  static constexpr size_t kMaxPending = 4096;
  static constexpr size_t kMaxSessions = 10000;

  // `verifier` and `clock` must outlive this.
  OidcSignIn(OidcSignInOptions options, OidcVerifier* verifier, OidcPost post, const Clock* clock);

  struct Started {
    std::string location;  // the provider's authorization URL
    std::string state;     // for the binding cookie
  };
  // Step 1. `return_to` is where the dashboard goes after (a path of it;
  // anything else becomes "/"). Unavailable while the provider's discovery
  // document has not been read.
  Result<Started> Begin(std::string_view return_to);

  struct Finished {
    std::string session;  // the cookie's value
    OidcIdentity who;
    std::string return_to;
  };
  // Step 2. `cookie_state` is the binding cookie's value ("" if absent).
  // InvalidInput (the user's or the provider's fault, a sentence saying
  // which) or Io (the provider could not be reached).
  Result<Finished> Finish(std::string_view code, std::string_view state,
                          std::string_view cookie_state);

  // The identity of a session cookie's value; nullopt when unknown or ended.
  std::optional<OidcIdentity> SessionOf(std::string_view session);
  // Sign-out: the session ends now.
  void End(std::string_view session);
  size_t sessions() const;
  const OidcSignInOptions& options() const { return options_; }

 private:
  struct Pending {
    std::string verifier;
    std::string nonce;
    std::string return_to;
    Micros expires = 0;
  };
  struct Session {
    OidcIdentity who;
    Micros expires = 0;
  };
  // The ID token of the provider's answer to the code, verified.
  Result<OidcIdentity> Redeem(std::string_view code, const Pending& pending,
                              const std::string& token_endpoint);
  void DropExpired(Micros now) REQUIRES(mu_);

  const OidcSignInOptions options_;
  OidcVerifier* const verifier_;
  const OidcPost post_;
  const Clock* const clock_;
  mutable Mutex mu_;
  std::map<std::string, Pending> pending_ GUARDED_BY(mu_);  // by state
  std::map<TokenHash, Session> sessions_ GUARDED_BY(mu_);   // by the id's hash
};

}  // namespace apollo11::observability
