// ForeachItems: the items of a foreach from an upstream's lines or JSON output.

#include "actors/scheduler/foreach_items.h"

#include <catch2/catch.hpp>

using apollo11::actors::ForeachItems;
using V = std::vector<std::string>;

TEST_CASE("foreach items are the non-blank lines of the upstream's stdout", "[foreach]") {
  CHECK(ForeachItems::FromLines("a\r\n\nb c\n  \nlast", 100) == V{"a", "b c", "  ", "last"});
  CHECK(ForeachItems::FromLines("", 100).empty());
  CHECK(ForeachItems::FromLines("1\n2\n3\n4\n5\n", 2).size() == 3);  // cap + 1 is enough
}

TEST_CASE("foreach items from a JSON array at a path of the output", "[foreach]") {
  auto items = ForeachItems::FromJson(R"({"d": {"f": ["x", 2, {"k": 1}]}})", "output.d.f", 100);
  REQUIRE(items.ok());
  CHECK(*items == V{"x", "2", R"({"k":1})"});
  CHECK(ForeachItems::FromJson(R"([[1], [2, 3]])", "output.1", 100).value() == V{"2", "3"});
  CHECK(ForeachItems::FromJson("[]", "output", 100).value().empty());
  CHECK(ForeachItems::FromJson(R"({"d": 1})", "output.d", 100).status().message() ==
        "'output.d' of its output is not a JSON array (found number)");
  CHECK(ForeachItems::FromJson(R"({"d": 1})", "output.e", 100).status().message() ==
        "its output has no 'output.e'");
  CHECK(ForeachItems::FromJson("nope", "output", 100).status().message() ==
        "its output is not JSON");
  CHECK(ForeachItems::FromJson("", "output", 100).status().message().find("no output") !=
        std::string::npos);
}
