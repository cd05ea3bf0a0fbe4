#include "observability/oidc_sign_in.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "common/json_dump.h"

namespace apollo11::observability {
namespace {

// Standard base64 (with padding), for HTTP Basic credentials.
std::string Base64(std::string_view text) {
  std::string out(4 * ((text.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// A path of the dashboard to return to: "/..." without a scheme, another
// host ("//evil") or control characters; anything else is "/".
std::string SafeReturn(std::string_view path) {
  if (path.empty() || path.size() > 512 || path[0] != '/' || path.starts_with("//")) return "/";
  for (char c : path) {
    if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) >= 0x7f ||
        c == '\\') {
      return "/";
    }
  }
  return std::string(path);
}

bool SameSecret(std::string_view a, std::string_view b) {
  return a.size() == b.size() && !a.empty() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

std::string PkceChallenge(std::string_view verifier) {
  uint8_t digest[32];
  unsigned int size = 0;
  EVP_Digest(verifier.data(), verifier.size(), digest, &size, EVP_sha256(), nullptr);
  return Base64Url(std::span<const uint8_t>(digest, size));
}

std::string UrlEncode(std::string_view text, std::string_view also_kept) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
        also_kept.find(ch) != std::string_view::npos) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

OidcSignIn::OidcSignIn(OidcSignInOptions options, OidcVerifier* verifier, OidcPost post,
                       const Clock* clock)
    : options_(std::move(options)), verifier_(verifier), post_(std::move(post)), clock_(clock) {}

Result<OidcSignIn::Started> OidcSignIn::Begin(std::string_view return_to) {
  const auto endpoints = verifier_->SignInEndpoints();
  if (!endpoints) {
    return Status::Io("the provider " + verifier_->options().issuer +
                      " has not been reached yet (its discovery document names where to sign "
                      "in); try again in a moment");
  }
  auto state = RandomBase64Url(24);
  auto nonce = RandomBase64Url(24);
  auto verifier = RandomBase64Url(32);
  for (const auto* r : {&state, &nonce, &verifier}) {
    if (!r->ok()) return r->status();
  }
  const std::string& auth = endpoints->authorization;
  Started started;
  started.state = *state;
  started.location = auth + (auth.find('?') == std::string::npos ? "?" : "&") +
                     "response_type=code&client_id=" + UrlEncode(options_.client_id) +
                     "&redirect_uri=" + UrlEncode(options_.redirect_url) +
                     "&scope=" + UrlEncode(options_.scope) + "&state=" + *state +
                     "&nonce=" + *nonce + "&code_challenge=" + PkceChallenge(*verifier) +
                     "&code_challenge_method=S256";
  const Micros now = clock_->Steady();
  MutexLock lock(&mu_);
  DropExpired(now);
  if (pending_.size() >= kMaxPending) {
    auto oldest = pending_.begin();
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->second.expires < oldest->second.expires) oldest = it;
    }
    pending_.erase(oldest);
  }
  pending_[*state] = Pending{*verifier, *nonce, SafeReturn(return_to), now + kLoginTtl};
  return started;
}

Result<OidcSignIn::Finished> OidcSignIn::Finish(std::string_view code, std::string_view state,
                                                std::string_view cookie_state) {
  if (code.empty() || state.empty() || code.size() > 4096 || state.size() > 256) {
    return Status::InvalidInput("the provider's answer has no code or no state");
  }
  Pending pending;
  {
    MutexLock lock(&mu_);
    DropExpired(clock_->Steady());
    auto it = pending_.find(std::string(state));
    if (it == pending_.end()) {
      return Status::InvalidInput(
          "this sign-in is unknown to the node: it ended (after 10 minutes, or once used) or "
          "the node restarted; sign in again");
    }
    pending = std::move(it->second);
    pending_.erase(it);
  }
  if (!SameSecret(state, cookie_state)) {
    return Status::InvalidInput(
        "this sign-in was not started by this browser (its state does not match the "
        "browser's sign-in cookie); sign in again");
  }
  const auto endpoints = verifier_->SignInEndpoints();
  if (!endpoints) return Status::Io("the provider's token endpoint is not known");
  auto who = Redeem(code, pending, endpoints->token);
  if (!who.ok()) return who.status();
  if (who->roles == 0) {
    std::string groups;
    for (const std::string& g : who->groups) groups += (groups.empty() ? "" : ", ") + g;
    // The provider's text goes into a page and the log: printable only.
    for (char& c : groups) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
    return Status::InvalidInput(who->name +
                                " signed in at the provider, but none of their groups (" +
                                (groups.empty() ? "none" : groups.substr(0, 300)) +
                                ") has a role on this node (--oidc-role GROUP=ROLE)");
  }
  auto session = RandomBase64Url(32);
  if (!session.ok()) return session.status();
  const Micros now = clock_->Steady();
  MutexLock lock(&mu_);
  if (sessions_.size() >= kMaxSessions) {
    auto soonest = sessions_.begin();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (it->second.expires < soonest->second.expires) soonest = it;
    }
    sessions_.erase(soonest);
  }
  sessions_[HashToken(*session)] = Session{*who, now + kSessionTtl};
  return Finished{*session, *who, pending.return_to};
}

Result<OidcIdentity> OidcSignIn::Redeem(std::string_view code, const Pending& pending,
                                        const std::string& token_endpoint) {
  std::string form = "grant_type=authorization_code&code=" + UrlEncode(code) +
                     "&redirect_uri=" + UrlEncode(options_.redirect_url) +
                     "&code_verifier=" + pending.verifier;
  std::string authorization;
  if (options_.client_secret.empty()) {
    form += "&client_id=" + UrlEncode(options_.client_id);
  } else {
    // client_secret_basic (RFC 6749 2.3.1): both parts form-encoded first.
    authorization =
        "Basic " + Base64(UrlEncode(options_.client_id) + ":" + UrlEncode(options_.client_secret));
  }
  auto answer = post_(token_endpoint, form, authorization);
  if (!answer.ok()) {
    return Status::Io("the provider did not take the sign-in's code: " + answer.status().message());
  }
  const auto doc = ParseJsonBounded(*answer);
  const auto id_token = doc.is_object() ? doc.find("id_token") : doc.end();
  if (!doc.is_object() || id_token == doc.end() || !id_token->is_string()) {
    return Status::InvalidInput(
        "the provider's token answer holds no id_token (is the scope "
        "'openid' allowed for client " +
        options_.client_id + "?)");
  }
  return verifier_->VerifyIdToken(id_token->get<std::string>(), options_.client_id, pending.nonce);
}

std::optional<OidcIdentity> OidcSignIn::SessionOf(std::string_view session) {
  if (session.empty() || session.size() > 128) return std::nullopt;
  const TokenHash key = HashToken(session);
  const Micros now = clock_->Steady();
  MutexLock lock(&mu_);
  auto it = sessions_.find(key);
  if (it == sessions_.end()) return std::nullopt;
  if (it->second.expires <= now) {
    sessions_.erase(it);
    return std::nullopt;
  }
  return it->second.who;
}

void OidcSignIn::End(std::string_view session) {
  if (session.empty() || session.size() > 128) return;
  const TokenHash key = HashToken(session);
  MutexLock lock(&mu_);
  sessions_.erase(key);
}

size_t OidcSignIn::sessions() const {
  MutexLock lock(&mu_);
  return sessions_.size();
}

void OidcSignIn::DropExpired(Micros now) {
  std::erase_if(pending_, [now](const auto& p) { return p.second.expires <= now; });
  std::erase_if(sessions_, [now](const auto& s) { return s.second.expires <= now; });
}

}  // namespace apollo11::observability
