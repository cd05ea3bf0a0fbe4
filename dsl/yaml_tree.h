#pragma once
// A YAML document as compact, read-only nodes, built from yaml-cpp's event
// parser rather than its YAML::Node graph. A node here takes 24 bytes plus
// its scalar's text in one shared buffer; yaml-cpp's graph took about 500
// bytes a node (425 MB for a 100,000-task pipeline file of 5.8 MB) and three
// times as long to build. An alias is the node its anchor names, shared, as
// in yaml-cpp; the reader bounds the document's size with every alias
// written out while it builds, so no alias is ever expanded.

#include <yaml-cpp/mark.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace apollo11::dsl {

class YamlTree;
template <bool kPairs>
class YamlRange;

// A handle to one node of a YamlTree. It holds no ownership: it is valid for
// as long as its tree lives. A default-constructed handle, or the one a
// missing key gives, is undefined: every question about it answers "nothing".
class YamlNode {
 public:
  enum class Kind : uint8_t { kUndefined, kNull, kScalar, kSequence, kMap };

  YamlNode() = default;

  Kind kind() const;
  bool IsDefined() const { return kind() != Kind::kUndefined; }
  bool IsNull() const { return kind() == Kind::kNull; }
  bool IsScalar() const { return kind() == Kind::kScalar; }
  bool IsSequence() const { return kind() == Kind::kSequence; }
  bool IsMap() const { return kind() == Kind::kMap; }

  // A scalar's text (escapes resolved); "" for any other node.
  std::string_view Scalar() const;
  // Where the node starts (its anchor or tag, if it has one), 0-based as in
  // yaml-cpp; a null mark when undefined.
  YAML::Mark Mark() const;
  // Items of a sequence, pairs of a mapping, 0 otherwise.
  size_t size() const;
  // The value of the first pair of a mapping whose key is the scalar `key`;
  // undefined when there is none or this is not a mapping.
  YamlNode operator[](std::string_view key) const;
  // True when both handles name the same node (an alias and its anchor do).
  bool is(const YamlNode& other) const { return tree_ == other.tree_ && index_ == other.index_; }

  // Range-for over a sequence's items (YamlNode), or a mapping's pairs
  // (YamlPair), in document order; empty for any other node.
  YamlRange<false> items() const;
  YamlRange<true> pairs() const;

 private:
  friend class YamlTree;
  template <bool>
  friend class YamlRange;
  YamlNode(const YamlTree* tree, uint32_t index) : tree_(tree), index_(index) {}
  // The node's children in the tree's child list, [begin, end).
  const uint32_t* ChildBegin() const;
  const uint32_t* ChildEnd() const;

  const YamlTree* tree_ = nullptr;
  uint32_t index_ = 0;
};

struct YamlPair {
  YamlNode key;
  YamlNode value;
};

// The children of a sequence (kPairs false: each a YamlNode) or of a
// mapping (kPairs true: each key and value as a YamlPair), for range-for.
template <bool kPairs>
class YamlRange {
 public:
  class iterator {
   public:
    iterator(const YamlTree* tree, const uint32_t* at) : tree_(tree), at_(at) {}
    auto operator*() const {
      if constexpr (kPairs) {
        return YamlPair{Node(tree_, at_[0]), Node(tree_, at_[1])};
      } else {
        return Node(tree_, at_[0]);
      }
    }
    iterator& operator++() {
      at_ += kPairs ? 2 : 1;
      return *this;
    }
    bool operator!=(const iterator& o) const { return at_ != o.at_; }

   private:
    const YamlTree* tree_;
    const uint32_t* at_;
  };
  iterator begin() const { return iterator(tree_, begin_); }
  iterator end() const { return iterator(tree_, end_); }

 private:
  friend class YamlNode;
  YamlRange(const YamlTree* tree, const uint32_t* b, const uint32_t* e)
      : tree_(tree), begin_(b), end_(e) {}
  static YamlNode Node(const YamlTree* tree, uint32_t index) { return YamlNode(tree, index); }
  const YamlTree* tree_;
  const uint32_t *begin_, *end_;
};

// One YAML document. Built only by ReadYamlTree; immutable afterwards, so it
// may be read from any thread.
class YamlTree {
 public:
  // The document's top node; undefined for a file without a document.
  YamlNode root() const { return nodes_.empty() ? YamlNode() : YamlNode(this, root_); }
  size_t node_count() const { return nodes_.size(); }

 private:
  friend class YamlNode;
  friend class YamlTreeBuilder;

  struct Rec {
    int32_t pos = -1, line = -1, column = -1;  // yaml-cpp's mark
    // A scalar: its text in text_ at [begin, begin + count). A container:
    // its children in children_ at [begin, begin + count), a mapping's as
    // key, value, key, value.
    uint32_t begin = 0, count = 0;
    YamlNode::Kind kind = YamlNode::Kind::kNull;
  };

  std::vector<Rec> nodes_;
  std::vector<uint32_t> children_;
  std::string text_;
  uint32_t root_ = 0;
};

// What ReadYamlTree found wrong; kNone on success.
struct YamlReadProblem {
  enum class Kind : uint8_t {
    kNone,
    kMalformed,       // yaml-cpp refused the text; `message` is its own
    kExpandedSize,    // the document, aliases written out, passes the limit
    kAliasLoop,       // an alias inside the node its anchor names
    kAliasDepth,      // aliases within aliases nested deeper than kMaxAliasDepth
    kSecondDocument,  // a second document follows the first; `mark` is its start
    kTooLarge,        // more nodes or text than 32-bit offsets hold
  };
  Kind kind = Kind::kNone;
  YAML::Mark mark = YAML::Mark::null_mark();
  bool at_alias = false;  // kExpandedSize: the limit passed at the alias at `mark`
  std::string message;    // kMalformed: yaml-cpp's message
};

struct YamlReadResult {
  std::shared_ptr<const YamlTree> tree;  // set when problem.kind is kNone
  YamlReadProblem problem;
};

// Depth, counted with every alias written out, past which a document is refused.
constexpr int kMaxAliasDepth = 512;
// Bytes counted for each node on top of a scalar's text when a document's
// size is measured with its aliases written out: about the syntax it takes.
constexpr size_t kYamlNodeBytes = 2;

// Reads the one document of `text`. Its size with every alias written out
// (kYamlNodeBytes a node plus each scalar's text, an alias counting all of
// what it names) must stay within `max_expanded_bytes`. Never throws; nothing
// is expanded, so the time taken is linear in the text.
YamlReadResult ReadYamlTree(std::string_view text, size_t max_expanded_bytes);

// The size of `n` with every alias written out, counted as ReadYamlTree
// counts it (so at most the limit of the read that accepted its document).
size_t ExpandedBytes(const YamlNode& n);

}  // namespace apollo11::dsl
