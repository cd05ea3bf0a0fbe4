#pragma once
// The size of a YAML document with every alias written out. yaml-cpp keeps an
// alias as a second reference to its anchored node, but the parser copies
// what it reads into the pipeline model, so a 1 MB scalar aliased in 1,000
// tasks would cost 1 GB there: the expanded size is bounded before anything
// is copied. Internal to dsl/.

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dsl/pipeline.h"

namespace apollo11::dsl::internal {

class AliasBudget {
 public:
  // Bytes counted for each node on top of a scalar's text: about the syntax
  // it takes to write the node out.
  static constexpr size_t kNodeBytes = 2;

  // `limit`: the most expanded bytes a document may have.
  explicit AliasBudget(size_t limit) : limit_(limit) {}

  // Checks `root`, the first document of `text` (the file `file`). Returns ""
  // when its expanded size is within the limit and no alias refers to a node
  // that contains it; otherwise why not, with *where set to the alias that
  // passes the limit or closes the loop. Linear in the number of nodes; the
  // text is parsed again only to find that alias. Call once per budget.
  std::string Check(const YAML::Node& root, std::string_view text, const std::string& file,
                    SourceLocation* where);

  // The expanded size of `n`, a node of a document Check accepted, counted
  // the same way (so it is at most that budget's limit).
  static size_t ExpandedBytes(const YAML::Node& n);

 private:
  struct Measured {
    YAML::Node node;
    size_t bytes = 0;
    bool done = false;  // false while the walk is inside the node
  };

  // Adds the expanded size of `n` to total_; false when the total passes the
  // limit, an alias loops, or aliases nest deeper than the walk goes.
  bool Walk(const YAML::Node& n, int depth);
  // Where the `ordinal`-th alias of `text` (1-based, document order) is written.
  static SourceLocation FindAlias(std::string_view text, const std::string& file, size_t ordinal);

  const size_t limit_;
  std::string_view text_;  // after a byte order mark, as yaml-cpp counts positions
  size_t total_ = 0;       // expanded bytes so far, in document order
  size_t aliases_ = 0;     // alias uses so far, in document order
  bool loop_ = false;
  bool passed_at_alias_ = false;
  YAML::Mark passed_at_ = YAML::Mark::null_mark();  // where the limit passed, if not at an alias
  bool too_deep_ = false;
  // Nodes that may carry an anchor, by position: only those can be met twice.
  std::unordered_map<size_t, std::vector<Measured>> measured_;
};

}  // namespace apollo11::dsl::internal
