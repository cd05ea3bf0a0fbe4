#pragma once
// The scan of a pipeline's raw text before yaml-cpp 0.7 sees it: the inputs
// on which yaml-cpp loops or recurses without bound, and the invalid YAML it
// accepts, refused with a line and column. Internal to dsl/ (YamlGuard).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dsl/pipeline.h"

namespace apollo11::dsl::internal {

// What the pre-scan found wrong, if anything (line 0 = nothing).
struct ScanProblem {
  SourceLocation where;
  std::string message;
};

// A line-by-line scan for hazards of yaml-cpp 0.7: (1) its parser recurses
// once per nesting level, so nesting (block indentation, compact "- - -"
// sequences and flow brackets together, estimated conservatively) deeper
// than `limit` is refused; (2) a ',' that starts a token outside [ ] / { }
// sends its scanner into an endless, allocating loop (jbeder/yaml-cpp#1040),
// as does text after a closed quoted scalar or flow collection ("[]o\n? "),
// so both are refused here. Both are invalid YAML anyway; the fuzz tests hold
// the line. A '?' that opens an explicit key runs away as well after a node
// with an anchor or tag ("&x o\n? ": 8 bytes took 22 GB), and a pipeline has
// no use for complex keys, so '? ' at a value's start is refused everywhere.
// (3) yaml-cpp accepts a quoted scalar the file ends inside (a pipeline cut
// off there loses its remaining tasks into that text), so that is refused at
// its opening quote, as is a quoted scalar that runs on into a line indented
// less than the line it opened on (its closing quote is missing). yaml-cpp
// refuses an unclosed [ or { but names the end of the file, so the scan
// remembers where the innermost one opened, for that message. (4) Invalid
// YAML that yaml-cpp reads as something else (the YAML test suite's error
// cases): an unknown escape in double quotes, a '#' without a space before
// it that ends a node, a ',' in [ ] or { } that follows no entry, a '-'
// alone there, a "---" or "..." line inside brackets or quotes, a line
// inside [ ] / { } or quotes not indented past the mapping or list it
// belongs to (tabs do not count), a line at the column of a block mapping's
// keys that is no key, and a block scalar's leading empty line longer than
// its first line of text (see yaml_prescan_lines.cc). (5) Where yaml-cpp
// reads a line as going on with plain text, so does the scan (a '!', quote
// or bracket there is text), except a ',' or '? ' first; below plain text
// at the top level yaml-cpp is not consistent, so a line there may not
// start with a bracket, quote, block scalar, entry or ': '.
class PreScanner {
 public:
  PreScanner(int limit, const std::string& file);

  // The first hazard in `text`, or a problem with line 0.
  ScanProblem Scan(std::string_view text);

  // After a Scan that found no problem: "" or, when the file ends inside
  // [ ] or { } (which yaml-cpp reports at the end of the file), where the
  // innermost unclosed one opened.
  std::string UnclosedBracket() const;

 private:
  // Where the scan stands within one line.
  struct Cursor {
    std::string_view line;
    size_t indent = 0;
    size_t pos = 0;
    int base = 0;  // nesting of the line's block structure
    bool value_start = true;
    bool after_node = false;       // a quoted scalar or flow collection just ended at block level
    bool closed = false;           // a quoted scalar or flow collection just ended
    bool after_separator = false;  // inside [ ] / { }, the last token was '[', '{' or ','
    bool plain = false;            // the last token was plain text
    bool key = false;              // a block mapping's ':' came on this line
    bool continuation = false;     // the line continues a plain scalar
    bool first_text = true;        // no text has been read on the line yet
    bool marker = false;           // the line starts with "---" or "..."
    size_t content = 0;            // where the line's text starts after its "- " entries
    long last_dash = -1;           // the column of the line's last "- " entry
    long parent = -1;              // the innermost block node of the lines above
  };
  enum class Step { kNext, kEndLine, kFail };
  struct OpenBracket {
    char bracket;
    SourceLocation where;
  };
  // A line of block structure: its indentation and the column of the
  // innermost block collection it opened or is in (-1: none).
  struct BlockLine {
    size_t indent;
    long inner;
  };

  SourceLocation Here(size_t at) const {
    return SourceLocation{file_, line_no_, static_cast<int>(at) + 1};
  }
  Step Fail(size_t at, const std::string& message) {
    problem_ = {Here(at), message};
    return Step::kFail;
  }
  // The column a node opened at `cur` belongs to: lines it continues onto
  // must be indented past it, as must a block scalar's text.
  long Owner(const Cursor& cur) const {
    if (cur.key) return static_cast<long>(cur.content);
    return cur.last_dash >= 0 ? cur.last_dash : cur.parent;
  }

  // yaml_prescan.cc: the characters of a line.
  bool ScanLine(std::string_view line);
  std::optional<Step> StepQuoted(Cursor& cur);
  Step StepEscape(Cursor& cur);
  Step StepAnchor(Cursor& cur);
  std::optional<Step> StepFlow(Cursor& cur, char c);
  Step StepChar(Cursor& cur);
  Step StepToken(Cursor& cur, char c);
  void OpenQuote(Cursor& cur, char c);

  // yaml_prescan_lines.cc: what a line's indentation must be.
  bool CheckQuoteContinuation(std::string_view line);
  bool CheckContinuationIndent(std::string_view line);
  enum class InBlockScalar { kYes, kNo, kFail };
  InBlockScalar StepBlockScalar(std::string_view line, size_t indent);
  Step StepBlockHeader(Cursor& cur);
  bool CheckTopLevelContinuation(const Cursor& cur);
  bool BeginStructure(Cursor& cur);
  bool EndLine(const Cursor& cur, bool structure, bool expect_key);

  const int limit_;
  const std::string file_;
  const std::string kComma;
  const std::string kDeep;
  const std::string kExplicitKey;
  const std::string kCommentSpace;
  std::vector<size_t> indents_;
  int flow_ = 0;
  bool in_single_ = false;
  bool in_double_ = false;
  int line_no_ = 0;
  std::vector<OpenBracket> open_brackets_;  // as many as flow_
  SourceLocation quote_at_;                 // where the open quoted scalar opened
  size_t quote_indent_ = 0;                 // the indentation of that line
  bool quote_in_block_ = false;             // it opened outside [ ] and { }
  bool flow_separator_ = false;             // Cursor::after_separator across lines
  bool flow_value_start_ = true;            // Cursor::value_start across lines in [ ] / { }
  // Lines inside the [ ] / { } or quoted scalar opened at block level must
  // be indented past cont_owner_ (-1: any indentation).
  long cont_owner_ = -1;
  // The block scalar being skipped: its lines are indented past
  // block_scalar_indent_; before its first line of text, the longest empty
  // line so far (unless the header gave the indentation).
  bool in_block_scalar_ = false;
  long block_scalar_indent_ = -1;
  bool block_explicit_ = false;
  bool block_text_seen_ = false;
  size_t block_text_indent_ = 0;  // the text's: the header's digit, or the first line's
  size_t block_blank_max_ = 0;
  int block_blank_line_ = 0;
  // A plain scalar ended the last line: a line indented past plain_owner_
  // continues it.
  bool plain_open_ = false;
  long plain_owner_ = -1;
  std::vector<BlockLine> block_lines_;  // the open block structure, by indentation
  std::vector<size_t> map_columns_;     // the key columns of open block mappings
  ScanProblem problem_;
};

}  // namespace apollo11::dsl::internal
