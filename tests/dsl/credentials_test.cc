// Credentials in URLs and headers: which names count, and what the API's
// views of a snapshot show instead (dsl/credentials.h).

#include "dsl/credentials.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace apollo11::dsl;  // NOLINT: test file

TEST_CASE("credential-shaped names, in any case", "[dsl][credentials]") {
  for (const char* name : {"password", "PGPASSWORD", "sslpassword", "pwd", "X-Api-Key", "api_key",
                           "Authorization", "access_token", "Cookie", "client_secret"}) {
    INFO(name);
    CHECK(LooksLikeCredentialName(name));
  }
  for (const char* name :
       {"sslmode", "user", "Content-Type", "page", "q", "connect_timeout", "passfile"}) {
    INFO(name);
    CHECK_FALSE(LooksLikeCredentialName(name));
  }
}

TEST_CASE("a db host may name a user but no password, an http url no user info",
          "[dsl][credentials]") {
  CHECK(CredentialInUrl("postgres://app@db:5432/x", UrlField::kDbHost).empty());
  CHECK(CredentialInUrl("postgres://app:pw@db/x", UrlField::kDbHost) == "a password before '@'");
  CHECK(CredentialInUrl("postgres://db/x?password=pw", UrlField::kDbHost) ==
        "the query parameter 'password'");
  CHECK(CredentialInUrl("mysql://db/x?sslmode=on#password=x", UrlField::kDbHost).empty());
  CHECK(CredentialInUrl("https://u@h/p", UrlField::kHttpUrl) == "a user (and password) before '@'");
  CHECK(CredentialInUrl("https://h/p@x?token=1", UrlField::kHttpUrl).empty());
}

TEST_CASE("views redact passwords in URLs and credential headers, and nothing else",
          "[dsl][credentials]") {
  CHECK(RedactUrlCredentials("postgres://app:pw@db/x?sslmode=on&password=pw&x=1") ==
        "postgres://app:***@db/x?sslmode=on&password=***&x=1");
  CHECK(RedactUrlCredentials("https://h/p?q=a") == "https://h/p?q=a");
  CHECK(RedactUrlCredentials("not a url:pw@") == "not a url:pw@");
  nlohmann::json snapshot = {
      {"tasks",
       {{{"id", "q"}, {"host", "mysql://u:secret@db/x"}},
        {{"id", "h"},
         {"url", "https://u:pw@api/x?api_key=k"},
         {"headers", {{"Authorization", "Bearer t0k"}, {"Accept", "text/plain"}}}}}}};
  RedactCredentials(&snapshot);
  CHECK(snapshot["tasks"][0]["host"] == "mysql://u:***@db/x");
  CHECK(snapshot["tasks"][1]["url"] == "https://u:***@api/x?api_key=***");
  CHECK(snapshot["tasks"][1]["headers"]["Authorization"] == "***");
  CHECK(snapshot["tasks"][1]["headers"]["Accept"] == "text/plain");
}
