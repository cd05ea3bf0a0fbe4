// dsl::YamlTree: the compact document the DSL reads instead of yaml-cpp's
// node graph. Shape, marks, aliases shared, and every refusal of ReadYamlTree.

#include "dsl/yaml_tree.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using apollo11::dsl::ExpandedBytes;
using apollo11::dsl::ReadYamlTree;
using apollo11::dsl::YamlNode;
using apollo11::dsl::YamlPair;
using apollo11::dsl::YamlReadProblem;
using apollo11::dsl::YamlReadResult;

namespace {

constexpr size_t kNoLimit = size_t{1} << 30;

// The root of `r`'s tree, valid while `r` lives.
YamlNode Root(const YamlReadResult& r) {
  REQUIRE(r.problem.kind == YamlReadProblem::Kind::kNone);
  REQUIRE(r.tree != nullptr);
  return r.tree->root();
}

}  // namespace

TEST_CASE("a YAML tree holds mappings, lists, scalars and nulls in document order", "[dsl][yaml]") {
  YamlReadResult r = ReadYamlTree(
      "name: a.b\n"
      "pipeline:\n"
      "  - {id: t1, type: noop}\n"
      "  - id: t2\n"
      "    depends_on: [t1]\n"
      "    note: ~\n"
      "    empty:\n"
      "quoted: \"x\\ty\"\n",
      kNoLimit);
  const YamlNode root = Root(r);
  REQUIRE(root.IsMap());
  CHECK(root.size() == 3);
  std::vector<std::string> keys;
  for (YamlPair p : root.pairs()) keys.emplace_back(p.key.Scalar());
  CHECK(keys == std::vector<std::string>{"name", "pipeline", "quoted"});
  CHECK(root["name"].Scalar() == "a.b");
  CHECK(root["quoted"].Scalar() == "x\ty");  // escapes resolved

  const YamlNode tasks = root["pipeline"];
  REQUIRE(tasks.IsSequence());
  REQUIRE(tasks.size() == 2);
  std::vector<std::string> ids;
  for (YamlNode t : tasks.items()) ids.emplace_back(t["id"].Scalar());
  CHECK(ids == std::vector<std::string>{"t1", "t2"});

  YamlNode second;
  for (YamlNode t : tasks.items()) second = t;
  CHECK(second["depends_on"].IsSequence());
  CHECK(second["depends_on"].size() == 1);
  CHECK(second["note"].IsNull());
  CHECK(second["empty"].IsNull());
  CHECK(second["note"].IsDefined());

  // Marks are yaml-cpp's: 0-based line and column of where the node starts.
  CHECK(second.Mark().line == 3);
  CHECK(second.Mark().column == 4);
  CHECK(root["pipeline"].Mark().line == 2);
}

TEST_CASE("a missing key, a key of a non-mapping and an empty file are undefined", "[dsl][yaml]") {
  YamlReadResult r = ReadYamlTree("a: [1, 2]\n", kNoLimit);
  const YamlNode root = Root(r);
  CHECK_FALSE(root["b"].IsDefined());
  CHECK(root["b"].kind() == YamlNode::Kind::kUndefined);
  CHECK_FALSE(root["a"]["x"].IsDefined());
  CHECK(root["b"].Scalar().empty());
  CHECK(root["b"].size() == 0);
  CHECK(root["b"].Mark().is_null());
  int n = 0;
  for (YamlNode item : root["b"].items()) n += item.IsDefined() ? 1 : 1;
  for (YamlPair p : root["a"].pairs()) n += p.key.IsDefined() ? 1 : 1;
  CHECK(n == 0);
  CHECK_FALSE(YamlNode().IsDefined());

  YamlReadResult empty = ReadYamlTree("# only a comment\n", kNoLimit);
  REQUIRE(empty.tree != nullptr);
  CHECK_FALSE(empty.tree->root().IsDefined());
  CHECK(empty.tree->node_count() == 0);
}

TEST_CASE("an alias is the node its anchor names, shared, not copied", "[dsl][yaml]") {
  YamlReadResult r = ReadYamlTree(
      "base: &b {type: shell, command: run}\n"
      "one: *b\n"
      "two: *b\n",
      kNoLimit);
  const YamlNode root = Root(r);
  CHECK(root["one"].is(root["base"]));
  CHECK(root["two"].is(root["base"]));
  CHECK(root["two"]["command"].Scalar() == "run");
  // 1 root + 3 keys + the anchored map (1 + 4 scalars): aliases add no node.
  CHECK(r.tree->node_count() == 9);
  // Written out, each alias counts the whole mapping again.
  const size_t mapping = ExpandedBytes(root["base"]);
  CHECK(mapping == 2 + (2 + 4) + (2 + 5) + (2 + 7) + (2 + 3));
  CHECK(ExpandedBytes(root) == 2 + (2 + 4) + (2 + 3) + (2 + 3) + 3 * mapping);
}

TEST_CASE("the expanded size is bounded while the tree is built", "[dsl][yaml]") {
  // Written out: 2 bytes for the list and 2 + 5 for each scalar, 23 in all;
  // with a limit of 17 the third scalar passes it.
  YamlReadResult plain = ReadYamlTree("[aaaaa, bbbbb, ccccc]\n", 17);
  CHECK(plain.problem.kind == YamlReadProblem::Kind::kExpandedSize);
  CHECK_FALSE(plain.problem.at_alias);
  CHECK(plain.problem.mark.column == 15);  // the scalar that passed it
  CHECK(plain.tree == nullptr);
  CHECK(ReadYamlTree("[aaaaa, bbbbb, ccccc]\n", 23).problem.kind == YamlReadProblem::Kind::kNone);

  // A billion laughs: each level names the one below four times.
  std::string bomb = "l0: &l0 [lol]\n";
  for (int i = 1; i < 40; ++i) {
    const std::string prev = "*l" + std::to_string(i - 1);
    bomb += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [" + prev + ", " + prev +
            ", " + prev + ", " + prev + "]\n";
  }
  YamlReadResult laughs = ReadYamlTree(bomb, 1 << 20);
  CHECK(laughs.problem.kind == YamlReadProblem::Kind::kExpandedSize);
  CHECK(laughs.problem.at_alias);
  CHECK(laughs.problem.mark.line > 0);
}

TEST_CASE("an alias inside the node it names, and aliases nested too deep, are refused",
          "[dsl][yaml]") {
  YamlReadResult loop = ReadYamlTree("a: &x [1, [2, *x]]\n", kNoLimit);
  CHECK(loop.problem.kind == YamlReadProblem::Kind::kAliasLoop);
  CHECK(loop.problem.mark.line == 0);
  CHECK(loop.problem.mark.column == 14);

  // Each anchor holds the one before inside one more list: 600 levels deep
  // once written out, in a file nested two deep.
  std::string deep = "a0: &a0 x\n";
  for (int i = 1; i < 600; ++i) {
    deep += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) +
            "]\n";
  }
  YamlReadResult too_deep = ReadYamlTree(deep, kNoLimit);
  CHECK(too_deep.problem.kind == YamlReadProblem::Kind::kAliasDepth);
  CHECK(too_deep.problem.mark.line == apollo11::dsl::kMaxAliasDepth - 1);
}

TEST_CASE("a second document, malformed YAML and an unknown alias are refused", "[dsl][yaml]") {
  YamlReadResult two = ReadYamlTree("a: 1\n---\nb: 2\n", kNoLimit);
  CHECK(two.problem.kind == YamlReadProblem::Kind::kSecondDocument);
  CHECK(two.problem.mark.line == 2);

  YamlReadResult bad = ReadYamlTree("a: [1, 2\n", kNoLimit);
  CHECK(bad.problem.kind == YamlReadProblem::Kind::kMalformed);
  CHECK_FALSE(bad.problem.message.empty());

  YamlReadResult unknown = ReadYamlTree("a: *nowhere\n", kNoLimit);
  CHECK(unknown.problem.kind == YamlReadProblem::Kind::kMalformed);
}

TEST_CASE("a byte order mark is read past and keys repeat as written", "[dsl][yaml]") {
  YamlReadResult r = ReadYamlTree("\xEF\xBB\xBFk: 1\nk: 2\n", kNoLimit);
  const YamlNode root = Root(r);
  REQUIRE(root.size() == 2);
  CHECK(root["k"].Scalar() == "1");  // the first, as yaml-cpp's lookup gives
  std::vector<std::string> values;
  for (YamlPair p : root.pairs()) values.emplace_back(p.value.Scalar());
  CHECK(values == std::vector<std::string>{"1", "2"});
}
