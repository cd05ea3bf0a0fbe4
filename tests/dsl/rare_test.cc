// Rare<T> (common/rare.h): a field held as one pointer until it is set.
#include "common/rare.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "dsl/pipeline.h"

using apollo11::Rare;

TEST_CASE("a Rare field reads as its value and allocates only when set", "[dsl][rare]") {
  Rare<std::string> s;
  CHECK(s.empty());
  CHECK(s.get().empty());
  CHECK(s == std::string());
  s = "GET";
  CHECK(s == "GET");
  CHECK(s->size() == 3);
  CHECK("x" + s == "xGET");
  const std::string& plain = s;
  CHECK(plain == "GET");
  const std::string& held = s.get();
  s = "POST";  // assigned in place: a reference to the set value stays valid
  CHECK(held == "POST");
  s = std::string();
  CHECK(s.empty());
  CHECK(held.empty());
  CHECK(s == Rare<std::string>());
  Rare<std::string> never_set;
  never_set = std::string();  // T{} into an empty box allocates nothing
  CHECK(never_set.empty());
  Rare<std::string> allocated_empty;
  allocated_empty.mut();  // a box holding T{} still equals an empty one
  CHECK(allocated_empty == Rare<std::string>());
}

TEST_CASE("Rare copies are deep and moves take the box", "[dsl][rare]") {
  Rare<std::map<std::string, std::string>> env;
  env.mut()["A"] = "1";
  Rare<std::map<std::string, std::string>> copy = env;
  copy.mut()["B"] = "2";
  CHECK(env.size() == 1);
  CHECK(copy.size() == 2);
  Rare<std::map<std::string, std::string>> moved = std::move(copy);
  CHECK(moved.size() == 2);
  int n = 0;
  for (const auto& [k, v] : moved) n += static_cast<int>(k.size() + v.size());
  CHECK(n == 4);
  Rare<std::vector<int>> codes = std::vector<int>{200, 204};
  CHECK(codes->front() == 200);
}

TEST_CASE("a task's rarely set fields cost a pointer each until set", "[dsl][rare]") {
  // Regression guard for the coordinator's memory (docs/PERFORMANCE.md): a
  // TaskSpec was 904 bytes with these fields inline.
  static_assert(sizeof(Rare<std::map<std::string, std::string>>) == sizeof(void*));
  CHECK(sizeof(apollo11::dsl::TaskSpec) <= 512);
  apollo11::dsl::TaskSpec a, b;
  a.url = "http://x";
  CHECK_FALSE(a == b);
  b.url = "http://x";
  CHECK(a == b);
}
