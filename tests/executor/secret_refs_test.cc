#include "executor/secret_refs.h"

#include <catch2/catch.hpp>

using apollo11::dsl::TemplateContext;
using apollo11::executor::ExpandSecretRefs;

TEST_CASE("secret references: $NAME and ${NAME} of the task's secrets only",
          "[executor][secrets]") {
  const std::map<std::string, std::string> v = {{"TOKEN", "a b/c"}, {"T", "x"}};
  auto raw = [&](const std::string& text) {
    auto out = ExpandSecretRefs(text, v, TemplateContext::kRaw, "the body");
    REQUIRE(out.ok());
    return *out;
  };
  CHECK(raw("$TOKEN") == "a b/c");
  CHECK(raw("${TOKEN}!") == "a b/c!");
  CHECK(raw("$T-$TOKEN") == "x-a b/c");
  CHECK(raw("$TOKENS $OTHER ${OTHER} $ $5 ${TOKEN ${") ==
        "$TOKENS $OTHER ${OTHER} $ $5 ${TOKEN ${");
  CHECK(raw("$$TOKEN") == "$a b/c");
  CHECK(*ExpandSecretRefs("?k=$TOKEN", v, TemplateContext::kUrl, "the url") == "?k=a%20b%2Fc");
  CHECK(*ExpandSecretRefs(R"({"k":"$TOKEN"})", {{"TOKEN", "q\"\\"}}, TemplateContext::kJsonBody,
                          "the body") == R"({"k":"q\"\\"})");
  auto split = ExpandSecretRefs("Bearer $TOKEN", {{"TOKEN", "a\nb"}}, TemplateContext::kHeader,
                                "header Authorization");
  REQUIRE_FALSE(split.ok());
  CHECK(split.status().message() ==
        "secret TOKEN cannot go in header Authorization: it holds a line break or NUL byte");
  CHECK(*ExpandSecretRefs("$TOKEN", {}, TemplateContext::kRaw, "x") == "$TOKEN");
}
