#include "dsl/yaml_tree.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <istream>
#include <limits>
#include <streambuf>
#include <utility>

namespace apollo11::dsl {

YamlNode::Kind YamlNode::kind() const {
  return tree_ == nullptr ? Kind::kUndefined : tree_->nodes_[index_].kind;
}

std::string_view YamlNode::Scalar() const {
  if (!IsScalar()) return {};
  const YamlTree::Rec& r = tree_->nodes_[index_];
  return std::string_view(tree_->text_).substr(r.begin, r.count);
}

YAML::Mark YamlNode::Mark() const {
  if (tree_ == nullptr) return YAML::Mark::null_mark();
  const YamlTree::Rec& r = tree_->nodes_[index_];
  YAML::Mark m;
  m.pos = r.pos;
  m.line = r.line;
  m.column = r.column;
  return m;
}

const uint32_t* YamlNode::ChildBegin() const {
  if (!IsSequence() && !IsMap()) return nullptr;
  return tree_->children_.data() + tree_->nodes_[index_].begin;
}

const uint32_t* YamlNode::ChildEnd() const {
  if (!IsSequence() && !IsMap()) return nullptr;
  const YamlTree::Rec& r = tree_->nodes_[index_];
  return tree_->children_.data() + r.begin + r.count;
}

size_t YamlNode::size() const {
  if (IsSequence()) return tree_->nodes_[index_].count;
  if (IsMap()) return tree_->nodes_[index_].count / 2;
  return 0;
}

YamlNode YamlNode::operator[](std::string_view key) const {
  if (!IsMap()) return YamlNode();
  for (YamlPair p : pairs()) {
    if (p.key.IsScalar() && p.key.Scalar() == key) return p.value;
  }
  return YamlNode();
}

YamlRange<false> YamlNode::items() const {
  if (!IsSequence()) return YamlRange<false>(tree_, nullptr, nullptr);
  return YamlRange<false>(tree_, ChildBegin(), ChildEnd());
}

YamlRange<true> YamlNode::pairs() const {
  if (!IsMap()) return YamlRange<true>(tree_, nullptr, nullptr);
  return YamlRange<true>(tree_, ChildBegin(), ChildEnd());
}

size_t ExpandedBytes(const YamlNode& n) {
  size_t bytes = kYamlNodeBytes + n.Scalar().size();
  if (n.IsSequence()) {
    for (YamlNode item : n.items()) bytes += ExpandedBytes(item);
  } else if (n.IsMap()) {
    for (YamlPair p : n.pairs()) bytes += ExpandedBytes(p.key) + ExpandedBytes(p.value);
  }
  return bytes;
}

namespace {

// A read-only stream over text yaml-cpp parses, so the text is not copied.
class ViewBuf : public std::streambuf {
 public:
  explicit ViewBuf(std::string_view text) {
    char* p = const_cast<char*>(text.data());  // get area only: never written
    setg(p, p, p + text.size());
  }
};

// Thrown from an event to stop the parse; carries the problem.
struct Stop {
  YamlReadProblem problem;
};

// Records where the next document starts and stops the parse there.
class FirstMark : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { Found(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { Found(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Found(m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Found(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Found(m);
  }
  void OnMapEnd() override {}

 private:
  [[noreturn]] static void Found(const YAML::Mark& m) {
    Stop stop;
    stop.problem.kind = YamlReadProblem::Kind::kSecondDocument;
    stop.problem.mark = m;
    throw stop;
  }
};

}  // namespace

// Builds a YamlTree from one document's events, measuring its expanded size
// as it goes: a node counts when it starts, an alias counts the measured size
// of the node it names, which has always ended before (else it is a loop).
class YamlTreeBuilder : public YAML::EventHandler {
 public:
  explicit YamlTreeBuilder(size_t max_expanded_bytes)
      : limit_(max_expanded_bytes), tree_(std::make_shared<YamlTree>()) {}

  std::shared_ptr<YamlTree> Take() { return std::move(tree_); }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t anchor) override {
    AddLeaf(m, YamlNode::Kind::kNull, {}, anchor);
  }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    AddLeaf(m, YamlNode::Kind::kScalar, value, anchor);
  }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t anchor) override;
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(m, YamlNode::Kind::kSequence, anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(m, YamlNode::Kind::kMap, anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    uint32_t node;
    size_t first_child;     // in scratch_
    size_t bytes_at_start;  // total_ before the node counted
    int height = 1;         // expanded height so far
  };
  struct Anchored {
    uint32_t node = 0;
    bool ended = false;
    size_t bytes = 0;  // expanded size, once ended
    int height = 1;    // expanded height, once ended
  };

  [[noreturn]] static void Fail(YamlReadProblem::Kind kind, const YAML::Mark& m,
                                bool at_alias = false) {
    Stop stop;
    stop.problem.kind = kind;
    stop.problem.mark = m;
    stop.problem.at_alias = at_alias;
    throw stop;
  }

  uint32_t NewNode(const YAML::Mark& m, YamlNode::Kind kind) {
    if (tree_->nodes_.size() >= std::numeric_limits<uint32_t>::max()) {
      Fail(YamlReadProblem::Kind::kTooLarge, m);
    }
    YamlTree::Rec r;
    r.pos = m.pos;
    r.line = m.line;
    r.column = m.column;
    r.kind = kind;
    tree_->nodes_.push_back(r);
    return static_cast<uint32_t>(tree_->nodes_.size() - 1);
  }

  void Count(size_t bytes, const YAML::Mark& m, bool at_alias) {
    total_ += bytes;
    if (total_ > limit_) Fail(YamlReadProblem::Kind::kExpandedSize, m, at_alias);
  }

  // Makes `node` (expanded height `height`) the next child of the open
  // container, or the root.
  void Attach(uint32_t node, int height) {
    if (stack_.empty()) {
      tree_->root_ = node;
      return;
    }
    scratch_.push_back(node);
    stack_.back().height = std::max(stack_.back().height, height + 1);
  }

  void Remember(YAML::anchor_t anchor, const Anchored& a) {
    if (anchor == YAML::NullAnchor) return;
    if (anchors_.size() <= anchor) anchors_.resize(anchor + 1);
    anchors_[anchor] = a;
  }

  void AddLeaf(const YAML::Mark& m, YamlNode::Kind kind, std::string_view text,
               YAML::anchor_t anchor) {
    Count(kYamlNodeBytes + text.size(), m, false);
    const uint32_t node = NewNode(m, kind);
    if (tree_->text_.size() + text.size() > std::numeric_limits<uint32_t>::max()) {
      Fail(YamlReadProblem::Kind::kTooLarge, m);
    }
    tree_->nodes_[node].begin = static_cast<uint32_t>(tree_->text_.size());
    tree_->nodes_[node].count = static_cast<uint32_t>(text.size());
    tree_->text_.append(text);
    Remember(anchor, Anchored{node, true, kYamlNodeBytes + text.size(), 1});
    Attach(node, 1);
  }

  void Open(const YAML::Mark& m, YamlNode::Kind kind, YAML::anchor_t anchor) {
    const size_t before = total_;
    Count(kYamlNodeBytes, m, false);
    const uint32_t node = NewNode(m, kind);
    Remember(anchor, Anchored{node, false, 0, 1});
    stack_.push_back(Frame{node, scratch_.size(), before, 1});
    open_anchor_.push_back(anchor);
  }

  void Close() {
    const Frame f = stack_.back();
    const YAML::anchor_t anchor = open_anchor_.back();
    stack_.pop_back();
    open_anchor_.pop_back();
    const size_t n = scratch_.size() - f.first_child;
    if (tree_->children_.size() + n > std::numeric_limits<uint32_t>::max()) {
      Fail(YamlReadProblem::Kind::kTooLarge, YAML::Mark::null_mark());
    }
    YamlTree::Rec& r = tree_->nodes_[f.node];
    r.begin = static_cast<uint32_t>(tree_->children_.size());
    r.count = static_cast<uint32_t>(n);
    tree_->children_.insert(tree_->children_.end(), scratch_.begin() + f.first_child,
                            scratch_.end());
    scratch_.resize(f.first_child);
    // A later anchor of the same name may have replaced this one already.
    if (anchor != YAML::NullAnchor && anchors_[anchor].node == f.node) {
      anchors_[anchor] = Anchored{f.node, true, total_ - f.bytes_at_start, f.height};
    }
    Attach(f.node, f.height);
  }

  const size_t limit_;
  std::shared_ptr<YamlTree> tree_;
  size_t total_ = 0;  // expanded bytes so far, in document order
  std::vector<Frame> stack_;
  std::vector<YAML::anchor_t> open_anchor_;  // per frame
  std::vector<uint32_t> scratch_;            // children of the open containers
  std::vector<Anchored> anchors_;            // by yaml-cpp's anchor number
};

void YamlTreeBuilder::OnAlias(const YAML::Mark& m, YAML::anchor_t anchor) {
  // yaml-cpp refuses an alias of an unknown name before it gets here; an
  // anchor number never seen reads as one that has not ended.
  if (anchor >= anchors_.size()) Fail(YamlReadProblem::Kind::kAliasLoop, m);
  const Anchored a = anchors_[anchor];
  if (!a.ended) Fail(YamlReadProblem::Kind::kAliasLoop, m);
  if (static_cast<int>(stack_.size()) + a.height > kMaxAliasDepth) {
    Fail(YamlReadProblem::Kind::kAliasDepth, m);
  }
  Count(a.bytes, m, true);
  Attach(a.node, a.height);
}

YamlReadResult ReadYamlTree(std::string_view text, size_t max_expanded_bytes) {
  YamlReadResult result;
  ViewBuf buf(text);
  std::istream in(&buf);
  try {
    YAML::Parser parser(in);
    YamlTreeBuilder builder(max_expanded_bytes);
    const bool any = parser.HandleNextDocument(builder);
    std::shared_ptr<YamlTree> tree = builder.Take();
    if (any) {
      FirstMark next;
      parser.HandleNextDocument(next);  // throws Stop when there is one
    }
    result.tree = std::move(tree);
  } catch (const Stop& stop) {
    result.problem = stop.problem;
  } catch (const YAML::Exception& e) {
    result.problem.kind = YamlReadProblem::Kind::kMalformed;
    result.problem.mark = e.mark;
    result.problem.message = e.msg;
  }
  return result;
}

}  // namespace apollo11::dsl
