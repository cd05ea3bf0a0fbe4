// Rare<T> (common/rare.h): a field held as one pointer until it is set.
#include "common/rare.h"

#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/shared_text.h"
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
  // 456 before the retry policy and the locations were boxed (2026-12-04),
  // 360 before the command and timeout were and the small fields packed,
  // 312 before the http method and the group were; 264 before a python
  // task's code joined the snapshot.
  CHECK(sizeof(apollo11::dsl::TaskSpec) <= 272);
  CHECK(sizeof(apollo11::dsl::Dependency) <= 48);
  apollo11::dsl::TaskSpec a, b;
  a.url = "http://x";
  CHECK_FALSE(a == b);
  b.url = "http://x";
  CHECK(a == b);
}

TEST_CASE("a RareOptional reads and writes as an optional, one pointer wide", "[dsl][rare]") {
  using apollo11::RareOptional;
  using apollo11::dsl::RetryPolicy;
  static_assert(sizeof(RareOptional<RetryPolicy>) == sizeof(void*));
  RareOptional<RetryPolicy> r;
  CHECK_FALSE(r.has_value());
  CHECK_FALSE(r);
  CHECK(r == std::nullopt);
  CHECK(r == RareOptional<RetryPolicy>());
  r = RetryPolicy{};
  REQUIRE(r.has_value());
  r->max_retries = 3;  // written through, as std::optional's
  CHECK((*r).max_retries == 3);
  CHECK_FALSE(r == std::nullopt);
  CHECK_FALSE(r == RareOptional<RetryPolicy>());

  RareOptional<RetryPolicy> copy = r;  // deep: the copy has its own policy
  copy->max_retries = 5;
  CHECK(r->max_retries == 3);
  CHECK_FALSE(copy == r);
  copy = r;
  CHECK(copy == r);
  const RetryPolicy* held = &*copy;
  RetryPolicy other;
  other.max_retries = 7;
  copy = other;  // a set one is assigned in place
  CHECK(&*copy == held);
  CHECK(held->max_retries == 7);

  std::optional<RetryPolicy> none;
  copy = none;
  CHECK_FALSE(copy.has_value());
  copy = std::optional<RetryPolicy>(other);
  CHECK(copy->max_retries == 7);
  RareOptional<RetryPolicy> moved = std::move(copy);
  CHECK(moved->max_retries == 7);
  moved.reset();
  CHECK(moved == std::nullopt);
  r = std::nullopt;
  CHECK_FALSE(r.has_value());
}

TEST_CASE("a task's boxed retry policy and locations compare by value", "[dsl][rare]") {
  apollo11::dsl::TaskSpec a, b;
  a.depends_on.push_back({"up", apollo11::dsl::DependencyCondition::kSuccess, {}});
  b.depends_on = a.depends_on;
  CHECK(a == b);
  CHECK(a.depends_on[0].where == apollo11::dsl::SourceLocation{});
  a.depends_on[0].where = apollo11::dsl::SourceLocation{"p.yaml", 3, 7};
  CHECK_FALSE(a == b);
  CHECK(a.depends_on[0].where->line == 3);
  a.retry = apollo11::dsl::RetryPolicy{};
  b.depends_on = a.depends_on;
  CHECK_FALSE(a == b);  // the retry policy differs
  b.retry = a.retry;
  CHECK(a == b);
}

TEST_CASE("a SharedText reads and compares as its text, and copies share it", "[dsl][rare]") {
  using apollo11::SharedText;
  SharedText empty;
  CHECK(empty.empty());
  CHECK(empty.str().empty());
  CHECK(empty == std::string());
  SharedText path(std::string("/srv/pipelines/nightly.yaml"));
  SharedText copy = path;
  CHECK(copy.SharesWith(path));
  CHECK(copy == path);
  CHECK(path == "/srv/pipelines/nightly.yaml");
  CHECK(std::string("/srv/pipelines/nightly.yaml") == path);
  CHECK(path + ":3" == "/srv/pipelines/nightly.yaml:3");
  const std::string& plain = path;
  CHECK(plain.size() == path.size());
  // Equal texts held apart are equal; ordering is the text's.
  SharedText apart(std::string("/srv/pipelines/nightly.yaml"));
  CHECK_FALSE(apart.SharesWith(path));
  CHECK(apart == path);
  CHECK(SharedText("a") < SharedText("b"));
  // Assignment replaces what is held; the other copies keep their text.
  copy = "other.yaml";
  CHECK(path == "/srv/pipelines/nightly.yaml");
  CHECK(copy == "other.yaml");
  // A location with a shared name is as small as its pointer and two ints.
  CHECK(sizeof(apollo11::dsl::SourceLocation) <= 32);
}

TEST_CASE("Free empties a Rare and lets its box go, where clear keeps it", "[dsl][rare]") {
  Rare<std::string> s = std::string("r20261204T161004-0000");
  const std::string* box = &s.get();
  s.clear();
  CHECK(s.empty());
  CHECK(&s.get() == box);  // the same box, holding ""
  s = "again";
  s.Free();
  CHECK(s.empty());
  Rare<std::string> never_set;
  CHECK(&s.get() == &never_set.get());  // the shared empty value: no box
}

TEST_CASE("a Rare with a default policy reads its default unset and boxes only other values",
          "[dsl][rare]") {
  using apollo11::dsl::DefaultGroup;
  using apollo11::dsl::TaskSpec;
  Rare<std::string, DefaultGroup> group;
  CHECK(group == std::string("default"));
  CHECK(group.get() == "default");
  CHECK(&group.get() == &DefaultGroup::Value());  // no box
  group = std::string("default");                 // the default itself is not boxed
  CHECK(&group.get() == &DefaultGroup::Value());
  group = std::string("gpu");
  CHECK(group == std::string("gpu"));
  CHECK("group " + group == "group gpu");
  group.clear();  // back to the default, in the kept box
  CHECK(group == std::string("default"));
  CHECK(&group.get() != &DefaultGroup::Value());
  CHECK(group == Rare<std::string, DefaultGroup>());  // compares by value
  group.Free();
  CHECK(&group.get() == &DefaultGroup::Value());
  // mut() starts from the default, not from "".
  Rare<std::string, DefaultGroup> written;
  CHECK(written.mut() == "default");
  // A task's method and group read their defaults and cost a pointer each.
  TaskSpec task;
  CHECK(task.method == std::string("GET"));
  CHECK(task.group == std::string("default"));
  CHECK(sizeof(task.method) == sizeof(void*));
  CHECK(sizeof(task.group) == sizeof(void*));
}
