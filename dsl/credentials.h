#pragma once
// Credentials that must never sit in a pipeline, nor show in a view of one:
// a password in a URL's user info, a query parameter or a header whose name
// says it carries a secret (password, token, api key, ...). Validation
// refuses them in a task's `host` and `url`; the API's views of a snapshot
// replace whatever a snapshot from before that refusal still holds.
// Secrets belong in `secrets:` (docs/dsl.md, "Secrets").

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace apollo11::dsl {

// True for a parameter or header name that says it carries a secret:
// password, passwd, pwd, pass, secret, token, apikey, api_key, api-key,
// authorization, cookie, or one containing one of them (any case); not
// libpq's `passfile`, which names a file.
bool LooksLikeCredentialName(std::string_view name);

// Which URL field is checked: a db task's `host` may name a user but holds
// no password, in its user info or its query (libpq and MariaDB read
// `?password=`); an http task's `url` holds no user info at all (its query
// is the API's business: a `page_token` is no secret).
enum class UrlField { kDbHost, kHttpUrl };

// Why `url` (scheme://[userinfo@]host[:port][/path][?query]) holds a
// credential by the rule of `field`, "" when it does not.
std::string CredentialInUrl(std::string_view url, UrlField field);

// `url` with the password of its user info, and the value of each query
// parameter named like a credential, replaced by "***".
std::string RedactUrlCredentials(std::string_view url);

// In a snapshot's tasks: RedactUrlCredentials on each "host" and "url",
// "***" for the value of each header named like a credential.
void RedactCredentials(nlohmann::json* snapshot);

}  // namespace apollo11::dsl
