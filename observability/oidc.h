#pragma once
// Single sign-on for the HTTP port: the bearer tokens an OpenID Connect
// provider issues (JWT access or ID tokens) as principals, beside the API
// tokens of the tokens file (observability/http_access.h).
//
// The node is given the provider's issuer URL and the audience its tokens
// must name (`--oidc-issuer`, `--oidc-audience`). It reads the provider's
// discovery document (ISSUER/.well-known/openid-configuration) for its
// `jwks_uri`, and the signing keys there; a token whose key it does not
// know makes it read the keys again (a provider rotating its keys), at most
// once every kRefreshEvery, so a flood of made-up key ids costs the provider
// nothing. A provider that cannot be reached at start does not stop the
// node: its tokens are refused (401, saying why) until the keys are read.
//
// A verified token's principal is its name claim (`preferred_username`,
// else `sub`) with the roles its groups map to (`--oidc-role GROUP=ROLE`,
// the groups in `--oidc-groups-claim`, default `groups`): the union over
// its groups; a token of no mapped group has no role (it may read nothing).
// Thread-safe: HTTP threads verify at once; the key set is swapped whole.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "observability/jwt_verify.h"
#include "transport/key_roles.h"

namespace apollo11::observability {

struct OidcOptions {
  std::string issuer;    // https://idp.example.org/realms/ops (no trailing slash needed)
  std::string audience;  // the `aud` its tokens name for this node
  std::string name_claim = "preferred_username";
  std::string groups_claim = "groups";
  std::vector<std::pair<std::string, transport::KeyRoles>> group_roles;  // GROUP -> roles
  std::string ca_file;  // PEM CAs for the provider's HTTPS ("" = the system's)
  bool enabled() const { return !issuer.empty(); }
};

// "ops=operator" -> ("ops", operator); InvalidInput naming the problem.
Result<std::pair<std::string, transport::KeyRoles>> ParseGroupRole(std::string_view text);

// GET of a URL, answering its body (at most 1 MiB) or why not. The real one
// is HttpsFetch; the tests give their own.
using OidcFetch = std::function<Result<std::string>(const std::string& url)>;
// http:// and https:// through cpp-httplib, certificates checked against
// `ca_file` (or the system's), 5 s per request, redirects not followed.
OidcFetch HttpsFetch(std::string ca_file);
// POST of a form (application/x-www-form-urlencoded) with an Authorization
// header ("" = none), answering the body of a 200 (at most 1 MiB) or why
// not; an error answer's body, cut to 300 bytes, is in the message (a
// provider says there why it refused a code). Same client as HttpsFetch.
using OidcPost = std::function<Result<std::string>(const std::string& url, const std::string& form,
                                                   const std::string& authorization)>;
OidcPost HttpsPost(std::string ca_file);

// Who a verified token is.
struct OidcIdentity {
  std::string name;
  transport::KeyRoles roles = 0;
  std::vector<std::string> groups;
};

class OidcVerifier {
 public:
  static constexpr Micros kRefreshEvery = 30 * kMicrosPerSecond;

  // Checks `options` (an issuer URL, an audience, at least one group
  // mapping), then reads the keys once; a failure to read them is logged,
  // not returned (see above). `clock` must outlive the verifier.
  static Result<std::unique_ptr<OidcVerifier>> Start(OidcOptions options, OidcFetch fetch,
                                                     const Clock* clock);

  // The identity of `token`, or InvalidInput saying why it is refused.
  Result<OidcIdentity> Verify(std::string_view token);
  // The identity of an ID token the provider issued to the dashboard's
  // sign-in (observability/oidc_sign_in.h): as Verify, but its `aud` must
  // hold `client_id` and its `nonce` claim must equal `nonce`.
  Result<OidcIdentity> VerifyIdToken(std::string_view token, std::string_view client_id,
                                     std::string_view nonce);
  // Where the provider signs users in and answers codes (its discovery
  // document's authorization_endpoint and token_endpoint); nullopt until the
  // document has been read, or when it names neither.
  struct Endpoints {
    std::string authorization;
    std::string token;
  };
  std::optional<Endpoints> SignInEndpoints();
  // Reads the discovery document and the keys now (also: on SIGHUP).
  Status Refresh();
  const OidcOptions& options() const { return options_; }

 private:
  OidcVerifier(OidcOptions options, OidcFetch fetch, const Clock* clock)
      : options_(std::move(options)), fetch_(std::move(fetch)), clock_(clock) {}
  // The key set, read again when `kid` is unknown and the last read is old
  // enough. Null while none could be read yet.
  std::shared_ptr<const JwksKeys> KeysFor(const std::string& kid);
  OidcIdentity IdentityOf(const nlohmann::json& claims) const;
  // The claims of `token` once verified for `audience`; InvalidInput why not.
  Result<nlohmann::json> Claims(std::string_view token, std::string_view audience);

  const OidcOptions options_;
  const OidcFetch fetch_;
  const Clock* clock_;
  Mutex mu_;
  std::shared_ptr<const JwksKeys> keys_ GUARDED_BY(mu_);
  Micros last_read_ GUARDED_BY(mu_) = 0;  // Steady(); 0 = never
  std::string last_error_ GUARDED_BY(mu_);
  // The issuer exactly as the discovery document writes it (a trailing
  // slash included): what the tokens' `iss` must equal.
  std::string iss_ GUARDED_BY(mu_);
  std::optional<Endpoints> endpoints_ GUARDED_BY(mu_);
};

}  // namespace apollo11::observability
