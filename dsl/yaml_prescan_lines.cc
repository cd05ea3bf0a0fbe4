// The pre-scan's rules on lines (dsl/yaml_prescan.h): how far a line inside
// quotes, [ ] / { } or a block scalar must be indented, which lines continue
// plain text, and that a line at the column of a block mapping's keys is a key.
#include <algorithm>
#include <string>

#include "dsl/yaml_prescan.h"

namespace apollo11::dsl::internal {
namespace {

// "---" or "..." at the start of a line, alone or before a space.
bool IsDocumentMarker(std::string_view line) {
  if (line.size() < 3 || (line.substr(0, 3) != "---" && line.substr(0, 3) != "...")) return false;
  return line.size() == 3 || line[3] == ' ' || line[3] == '\t';
}

std::string Position(const SourceLocation& at) {
  return std::to_string(at.line) + ":" + std::to_string(at.column);
}

}  // namespace

bool PreScanner::CheckQuoteContinuation(std::string_view line) {
  if (!(in_single_ || in_double_) || !quote_in_block_) return true;
  size_t text = line.find_first_not_of(" \t");
  if (text == std::string_view::npos || text >= quote_indent_) return true;
  problem_ = {quote_at_, "quoted text opened here is not closed before line " +
                             std::to_string(line_no_) +
                             ", which is indented less than the line it opened on "
                             "(is a closing quote missing?)"};
  return false;
}

// A line inside quotes or [ ] / { } is no document marker (yaml-cpp ends
// the document there, leaving what follows outside any bracket: "[" then
// "--- ," ran away), and when they opened in a block mapping or list it is
// indented past that mapping's keys or that list's '-' (YAML 1.2, 7.3 and
// 7.4); only spaces count.
bool PreScanner::CheckContinuationIndent(std::string_view line) {
  const bool quoted = in_single_ || in_double_;
  if ((flow_ > 0 || quoted) && IsDocumentMarker(line)) {
    const SourceLocation opened = quoted ? quote_at_ : open_brackets_.back().where;
    problem_ = {Here(0), "'" + std::string(line.substr(0, 3)) +
                             "' at the start of a line marks a document, but this line is inside "
                             "the " +
                             (quoted ? "quoted text" : "[ ] or { }") + " opened at " +
                             Position(opened)};
    return false;
  }
  if ((flow_ == 0 && !quoted) || cont_owner_ < 0) return true;
  const size_t text = line.find_first_not_of(" \t");
  if (text == std::string_view::npos) return true;  // an empty line
  if (!quoted && line[text] == '#') return true;    // a comment line
  size_t spaces = 0;
  while (line[spaces] == ' ') ++spaces;
  if (static_cast<long>(spaces) > cont_owner_) return true;
  // Named: the innermost open quote or bracket, whose end is likely missing.
  std::string what = "the quoted text opened at " + Position(quote_at_) + " (is a quote missing?)";
  if (!quoted) {
    const OpenBracket& b = open_brackets_.back();
    what = std::string("the '") + b.bracket + "' opened at " + Position(b.where) + " (is a '" +
           (b.bracket == '[' ? ']' : '}') + "' missing?)";
  }
  problem_ = {Here(spaces),
              "this line is inside " + what + ", so it must be indented by more than " +
                  std::to_string(cont_owner_) + " spaces (past the mapping or list it is in" +
                  (line[spaces] == '\t' ? "; a tab is not indentation)" : ")")};
  return false;
}

// A line while a block scalar is open: kYes when it is the scalar's, kNo
// when it ends the scalar (and is scanned), kFail after setting problem_.
PreScanner::InBlockScalar PreScanner::StepBlockScalar(std::string_view line, size_t indent) {
  if (IsDocumentMarker(line)) {
    in_block_scalar_ = false;
    return InBlockScalar::kNo;
  }
  if (indent == line.size()) {  // only spaces: an empty line of the scalar
    if (!block_text_seen_ && indent > block_blank_max_) {
      block_blank_max_ = indent;
      block_blank_line_ = line_no_;
    }
    return InBlockScalar::kYes;
  }
  // A line of text less indented than the first, or than the header's
  // digit gives, ends the scalar (yaml-cpp read the ',' of "|", "  a", " ,"
  // as a token and ran away).
  if (static_cast<long>(indent) <= block_scalar_indent_ ||
      ((block_text_seen_ || block_explicit_) && indent < block_text_indent_)) {
    in_block_scalar_ = false;
    return InBlockScalar::kNo;
  }
  if (!block_text_seen_ && !block_explicit_ && block_blank_max_ > indent) {
    // YAML 1.2, 8.1.1.1: the first line of text sets the indentation.
    problem_ = {SourceLocation{file_, block_blank_line_, static_cast<int>(indent) + 1},
                "this empty line of a block scalar has " + std::to_string(block_blank_max_) +
                    " spaces, more than its first line of text (line " + std::to_string(line_no_) +
                    ", indented by " + std::to_string(indent) +
                    "): remove them, or give the indentation after '|' or '>'"};
    return InBlockScalar::kFail;
  }
  if (!block_text_seen_) block_text_indent_ = indent;
  block_text_seen_ = true;
  return InBlockScalar::kYes;
}

// '|' or '>' at a value's start: the header (an indentation digit and a
// chomping '+' or '-', in either order) then a comment at most.
PreScanner::Step PreScanner::StepBlockHeader(Cursor& cur) {
  const std::string_view line = cur.line;
  size_t p = cur.pos + 1;
  int digit = 0;
  bool chomp = false;
  for (; p < line.size(); ++p) {
    const char h = line[p];
    if (digit == 0 && h >= '1' && h <= '9') {
      digit = h - '0';
    } else if (!chomp && (h == '+' || h == '-')) {
      chomp = true;
    } else {
      break;
    }
  }
  if (p < line.size() && line[p] == '#') return Fail(p, kCommentSpace);
  while (p < line.size() && (line[p] == ' ' || line[p] == '\t')) ++p;
  if (p < line.size() && line[p] != '#') {
    return Fail(p, std::string("only a comment may follow '") + line[cur.pos] +
                       "' (and its indentation digit, '+' or '-'): the text starts on the next "
                       "line");
  }
  in_block_scalar_ = true;
  // The node's owner, or the header's line when that is further right: a
  // header on a line of its own (yaml-cpp ends a top-level scalar at a line
  // at column 0, YAML does not; the lines it parses are scanned).
  block_scalar_indent_ = std::max(Owner(cur), static_cast<long>(cur.indent));
  // With a digit, the text is indented by it past the owner (as yaml-cpp
  // counts it: past the innermost block collection, never further right).
  block_explicit_ = digit > 0;
  block_text_indent_ = static_cast<size_t>(block_scalar_indent_ + digit);
  block_text_seen_ = false;
  block_blank_max_ = 0;
  return Step::kEndLine;
}

// Below plain text at the top level, yaml-cpp goes on with the text on a
// line that starts with '[' or "- " but takes a '? ' there for a token ("&x
// o" then "? " ran away). The scan reads such a line as new structure (so a
// ',' or '? ' first is refused as ever) and refuses what the two readings
// would scan differently: a bracket, quote, block scalar, entry or ': '
// first, after any anchors and tags. False after setting problem_.
bool PreScanner::CheckTopLevelContinuation(const Cursor& cur) {
  if (!plain_open_ || plain_owner_ >= 0 || IsDocumentMarker(cur.line)) return true;
  const std::string_view line = cur.line;
  size_t at = cur.indent;
  while (at < line.size() && (line[at] == '&' || line[at] == '*' || line[at] == '!')) {
    at = line.find_first_of(" \t", at);  // past the anchor, alias or tag
    if (at == std::string_view::npos) return true;
    at = line.find_first_not_of(" \t", at);
    if (at == std::string_view::npos) return true;
  }
  const char c = line[at];
  const bool spaced = at + 1 == line.size() || line[at + 1] == ' ' || line[at + 1] == '\t';
  if (std::string_view("[]{}'\"|>").find(c) == std::string_view::npos &&
      !((c == '-' || c == ':') && spaced)) {
    return true;
  }
  problem_ = {Here(at), std::string("this line goes on with the plain text above it, so it cannot "
                                    "hold '") +
                            c + "' here: quote that text, or put it under a key"};
  return false;
}

// A line that starts outside quotes and [ ] / { }: a document marker, the
// continuation of plain text, or block structure. True when the line must
// hold a key (it is at the column of a block mapping's keys).
bool PreScanner::BeginStructure(Cursor& cur) {
  const std::string_view line = cur.line;
  if (cur.indent == 0 && IsDocumentMarker(line)) {
    cur.marker = true;
    cur.pos = 3;  // the rest of a "---" line is the document's node
    block_lines_.clear();
    map_columns_.clear();
    plain_open_ = false;
    return false;
  }
  // yaml-cpp continues plain text on a line indented past the innermost
  // block collection, as YAML does; outside any, a line is read as new
  // structure (as yaml-cpp may: "&x o" then "? " ran away).
  cur.continuation =
      plain_open_ && plain_owner_ >= 0 && static_cast<long>(cur.indent) > plain_owner_;
  if (cur.continuation) return false;
  while (!block_lines_.empty() && block_lines_.back().indent >= cur.indent) block_lines_.pop_back();
  cur.parent = block_lines_.empty() ? -1 : block_lines_.back().inner;
  while (!map_columns_.empty() && map_columns_.back() > cur.indent) map_columns_.pop_back();
  const size_t i = cur.indent;
  const bool entry = line[i] == '-' && (i + 1 == line.size() || line[i + 1] == ' ');
  return !entry && !map_columns_.empty() && map_columns_.back() == cur.indent;
}

// After a line's characters; false after setting problem_.
bool PreScanner::EndLine(const Cursor& cur, bool structure, bool expect_key) {
  if (structure && !cur.marker && !cur.continuation) {
    if (expect_key && !cur.key) {
      problem_ = {Here(cur.indent),
                  "this line is at the column of the mapping's keys above but is not "
                  "'key: value' (is a ':' missing, or should it be indented more?)"};
      return false;
    }
    // A line that opens no collection (a scalar, or only an anchor or tag)
    // leaves the lines below it in the collection it is in.
    block_lines_.push_back({cur.indent, Owner(cur)});
    if (cur.key && (map_columns_.empty() || map_columns_.back() != cur.content)) {
      map_columns_.push_back(cur.content);
    }
  }
  // Plain text ending a line of block structure may go on below; after
  // text that began inside quotes or brackets, the next line is structure.
  const bool open =
      structure && flow_ == 0 && !in_single_ && !in_double_ && !in_block_scalar_ && cur.plain;
  if (open && !cur.continuation) plain_owner_ = Owner(cur);
  plain_open_ = open;
  return true;
}

}  // namespace apollo11::dsl::internal
