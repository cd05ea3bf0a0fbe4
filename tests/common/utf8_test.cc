#include "common/utf8.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "common/json_dump.h"

using apollo11::FirstInvalidUtf8;

namespace {
constexpr size_t kValid = std::string_view::npos;
}  // namespace

TEST_CASE("well-formed UTF-8 of every sequence length is valid", "[utf8]") {
  CHECK(FirstInvalidUtf8("") == kValid);
  CHECK(FirstInvalidUtf8("plain ascii\n\t") == kValid);
  CHECK(FirstInvalidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80") == kValid);  // é € 🚀
  CHECK(FirstInvalidUtf8("\xef\xbb\xbfversion") == kValid);                        // BOM
  CHECK(FirstInvalidUtf8("\xf4\x8f\xbf\xbf") == kValid);                           // U+10FFFF
  CHECK(FirstInvalidUtf8("\xed\x9f\xbf") == kValid);                               // U+D7FF
}

TEST_CASE("malformed UTF-8 is reported at its first byte", "[utf8]") {
  CHECK(FirstInvalidUtf8("caf\xe9") == 3);                   // Latin-1, as the fuzzer found
  CHECK(FirstInvalidUtf8("ab\x80") == 2);                    // stray continuation byte
  CHECK(FirstInvalidUtf8("a\xc3") == 1);                     // truncated sequence
  CHECK(FirstInvalidUtf8("a\xe2\x82") == 1);                 // truncated sequence
  CHECK(FirstInvalidUtf8("\xc3(") == 0);                     // bad continuation
  CHECK(FirstInvalidUtf8("\xc0\xaf") == 0);                  // overlong '/'
  CHECK(FirstInvalidUtf8("\xe0\x80\xaf") == 0);              // overlong '/'
  CHECK(FirstInvalidUtf8("\xf0\x80\x80\xaf") == 0);          // overlong '/'
  CHECK(FirstInvalidUtf8("x\xed\xa0\x80") == 1);             // surrogate U+D800
  CHECK(FirstInvalidUtf8("\xf4\x90\x80\x80") == 0);          // U+110000
  CHECK(FirstInvalidUtf8("\xf5\x80\x80\x80") == 0);          // lead byte past the range
  CHECK(FirstInvalidUtf8(std::string("ok\0\xff", 4)) == 3);  // NUL is valid UTF-8
}

TEST_CASE("SafeJsonDump replaces invalid UTF-8 instead of throwing", "[utf8][json]") {
  nlohmann::json doc = {{"out", std::string("ok \xff\xfe done")}, {std::string("k\xc3"), 1}};
  CHECK_THROWS(doc.dump());  // what the plain dump does with task output
  std::string text;
  REQUIRE_NOTHROW(text = apollo11::SafeJsonDump(doc));
  auto back = nlohmann::json::parse(text, nullptr, false);
  REQUIRE(back.is_object());
  CHECK(back["out"] == "ok \xEF\xBF\xBD\xEF\xBF\xBD done");
  CHECK(apollo11::FirstInvalidUtf8(text) == std::string_view::npos);
  CHECK(apollo11::SafeJsonDump(nlohmann::json{{"a", 1}}, 2) == "{\n  \"a\": 1\n}");
}

TEST_CASE("JSON from outside is parsed only as deep as the stack allows", "[json]") {
  using apollo11::JsonNestingDepth;
  using apollo11::kMaxJsonDepth;
  using apollo11::ParseJsonBounded;
  CHECK(JsonNestingDepth("1") == 0);
  CHECK(JsonNestingDepth(R"({"a":[1,{"b":[]}],"c":{}})") == 4);
  // Brackets inside strings, escaped quotes included, do not count.
  CHECK(JsonNestingDepth(R"(["[[[\"[[{{", "]]"])") == 1);
  const auto nested = [](size_t n) { return std::string(n, '[') + std::string(n, ']'); };
  CHECK(JsonNestingDepth(nested(40000)) == kMaxJsonDepth + 1);  // stops counting
  CHECK(JsonNestingDepth(nested(40000), 50000) == 40000);
  CHECK(ParseJsonBounded(nested(kMaxJsonDepth)).dump() == nested(kMaxJsonDepth));
  CHECK(ParseJsonBounded(nested(kMaxJsonDepth + 1)).is_discarded());
  CHECK(ParseJsonBounded(std::string(40000, '{')).is_discarded());
  CHECK(ParseJsonBounded("{broken").is_discarded());
  CHECK(ParseJsonBounded(R"({"a":"]]]]"})")["a"] == "]]]]");
}
