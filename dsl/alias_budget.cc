#include "dsl/alias_budget.h"

#include <yaml-cpp/eventhandler.h>

#include <sstream>

#include "dsl/field_reader.h"

namespace apollo11::dsl::internal {
namespace {

// Aliases resolved within aliases deeper than this stop the walk: text
// nesting is bounded by the pre-scan, so only a chain of aliases the walk
// failed to recognise could go deeper.
constexpr int kMaxWalkDepth = 512;

// Records where the `ordinal`-th alias event of a document is.
class AliasFinder : public YAML::EventHandler {
 public:
  explicit AliasFinder(size_t ordinal) : ordinal_(ordinal) {}
  const YAML::Mark& mark() const { return mark_; }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    if (++seen_ == ordinal_) mark_ = mark;
  }
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  const size_t ordinal_;
  size_t seen_ = 0;
  YAML::Mark mark_ = YAML::Mark::null_mark();
};

}  // namespace

std::string AliasBudget::Check(const YAML::Node& root, std::string_view text,
                               const std::string& file, SourceLocation* where) {
  text_ = text;
  if (text_.substr(0, 3) == "\xEF\xBB\xBF") text_.remove_prefix(3);
  if (Walk(root, 0)) return "";
  *where = passed_at_alias_ || loop_ || too_deep_ ? FindAlias(text, file, aliases_)
                                                  : Loc(file, passed_at_);
  if (loop_) {
    return "this alias refers to a node that contains it; a pipeline cannot be infinite";
  }
  if (too_deep_) {
    return "aliases nested deeper than " + std::to_string(kMaxWalkDepth) + " levels";
  }
  return std::string(passed_at_alias_ ? "with this alias" : "here") +
         " the file, every alias written out, passes " + std::to_string(limit_) +
         " bytes (the limit on a pipeline's expanded size: each alias counts the size of what it "
         "refers to)";
}

bool AliasBudget::Walk(const YAML::Node& n, int depth) {
  if (depth > kMaxWalkDepth) {
    too_deep_ = true;
    return false;
  }
  // yaml-cpp marks an anchored node where its properties start, '&' or '!'.
  const int pos = n.Mark().pos;
  const bool may_be_anchored = pos >= 0 && static_cast<size_t>(pos) < text_.size() &&
                               (text_[pos] == '&' || text_[pos] == '!');
  size_t slot = 0;
  if (may_be_anchored) {
    std::vector<Measured>& at = measured_[static_cast<size_t>(pos)];
    for (const Measured& m : at) {
      if (!m.node.is(n)) continue;
      ++aliases_;
      if (!m.done) {
        loop_ = true;
        return false;
      }
      total_ += m.bytes;
      passed_at_alias_ = total_ > limit_;
      return !passed_at_alias_;
    }
    slot = at.size();
    at.push_back(Measured{n, 0, false});
  }
  const size_t before = total_;
  total_ += kNodeBytes;
  if (n.IsScalar()) {
    total_ += n.Scalar().size();
  } else if (n.IsSequence()) {
    for (const YAML::Node& item : n) {
      if (!Walk(item, depth + 1)) return false;
    }
  } else if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!Walk(it->first, depth + 1) || !Walk(it->second, depth + 1)) return false;
    }
  }
  if (total_ > limit_) {
    if (passed_at_.is_null()) passed_at_ = n.Mark();  // the innermost node passing it
    return false;
  }
  if (may_be_anchored) {
    Measured& m = measured_[static_cast<size_t>(pos)][slot];
    m.bytes = total_ - before;
    m.done = true;
  }
  return true;
}

size_t AliasBudget::ExpandedBytes(const YAML::Node& n) {
  size_t bytes = kNodeBytes;
  if (n.IsScalar()) {
    bytes += n.Scalar().size();
  } else if (n.IsSequence()) {
    for (const YAML::Node& item : n) bytes += ExpandedBytes(item);
  } else if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      bytes += ExpandedBytes(it->first) + ExpandedBytes(it->second);
    }
  }
  return bytes;
}

SourceLocation AliasBudget::FindAlias(std::string_view text, const std::string& file,
                                      size_t ordinal) {
  if (ordinal == 0) return SourceLocation{file, 1, 1};  // the limit passed without an alias
  std::istringstream in{std::string(text)};
  AliasFinder finder(ordinal);
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(finder);
  } catch (const YAML::Exception&) {
    // The text parsed once already; keep whatever was found.
  }
  return Loc(file, finder.mark());
}

}  // namespace apollo11::dsl::internal
