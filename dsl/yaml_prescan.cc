// The pre-scan's walk over the characters of each line (dsl/yaml_prescan.h);
// the rules on a line's indentation are in yaml_prescan_lines.cc.
#include "dsl/yaml_prescan.h"

#include <string>

namespace apollo11::dsl::internal {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

}  // namespace

PreScanner::PreScanner(int limit, const std::string& file)
    : limit_(limit),
      file_(file),
      kComma("',' outside [ ] or { } cannot start a value or follow one; quote the text"),
      kDeep("YAML nested deeper than " + std::to_string(limit) + " levels"),
      kExplicitKey(
          "'? ' (an explicit mapping key) is not supported: write 'key: value', or quote text "
          "that starts with '?'"),
      kCommentSpace("a comment needs a space before its '#' (quote text that holds a '#')") {}

ScanProblem PreScanner::Scan(std::string_view text) {
  size_t line_start = 0;
  while (line_start < text.size()) {
    ++line_no_;
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    std::string_view line = text.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!ScanLine(line)) return problem_;
  }
  if (in_single_ || in_double_) {
    return {quote_at_, std::string("quoted text opened here (") + (in_single_ ? "'" : "\"") +
                           ") is never closed: the file ends inside it (was it cut off?)"};
  }
  return {};
}

std::string PreScanner::UnclosedBracket() const {
  if (open_brackets_.empty()) return "";
  const OpenBracket& b = open_brackets_.back();
  return std::string(" ('") + b.bracket + "' opened at " + std::to_string(b.where.line) + ":" +
         std::to_string(b.where.column) + " is never closed)";
}

bool PreScanner::ScanLine(std::string_view line) {
  if (!CheckQuoteContinuation(line) || !CheckContinuationIndent(line)) return false;
  Cursor cur;
  cur.line = line;
  while (cur.indent < line.size() && line[cur.indent] == ' ') ++cur.indent;
  if (in_block_scalar_) {
    InBlockScalar in = StepBlockScalar(line, cur.indent);
    if (in == InBlockScalar::kFail) return false;
    if (in == InBlockScalar::kYes) return true;
  }
  const size_t first = line.find_first_not_of(" \t");
  const bool blank = first == std::string_view::npos || line[first] == '#';
  if (blank && !in_single_ && !in_double_) {
    if (first != std::string_view::npos) {  // a comment ends plain text
      plain_open_ = false;
      flow_value_start_ = true;
    }
    return true;
  }
  cur.pos = cur.indent;
  cur.base = static_cast<int>(indents_.size());
  const bool structure = flow_ == 0 && !in_single_ && !in_double_;
  bool expect_key = false;
  if (structure) {
    while (!indents_.empty() && indents_.back() >= cur.indent) indents_.pop_back();
    indents_.push_back(cur.indent);
    cur.base = static_cast<int>(indents_.size());
    if (!CheckTopLevelContinuation(cur)) return false;
    expect_key = BeginStructure(cur);
    while (!cur.marker && cur.pos < line.size() && line[cur.pos] == '-' &&
           (cur.pos + 1 == line.size() || line[cur.pos + 1] == ' ')) {
      ++cur.base;
      cur.last_dash = static_cast<long>(cur.pos);
      cur.pos += 1;
      while (cur.pos < line.size() && line[cur.pos] == ' ') ++cur.pos;
    }
    cur.content = cur.pos;
  } else if (flow_ > 0 && !in_single_ && !in_double_) {
    // Plain text inside [ ] / { } goes on over lines, as in yaml-cpp.
    cur.value_start = flow_value_start_;
  }
  for (; cur.pos < line.size(); ++cur.pos) {
    Step step = StepChar(cur);
    if (step == Step::kFail) return false;
    if (step == Step::kEndLine) break;
  }
  if (cur.base + flow_ > limit_) {
    problem_ = {Here(cur.indent), kDeep};
    return false;
  }
  if (flow_ > 0 && !in_single_ && !in_double_) flow_value_start_ = cur.value_start;
  return EndLine(cur, structure, expect_key);
}

// Inside a quoted scalar: consumes line[cur.pos]; nullopt outside one.
std::optional<PreScanner::Step> PreScanner::StepQuoted(Cursor& cur) {
  if (!in_single_ && !in_double_) return std::nullopt;
  const std::string_view line = cur.line;
  const char c = line[cur.pos];
  if (in_single_) {
    if (c == '\'') {
      if (cur.pos + 1 < line.size() && line[cur.pos + 1] == '\'') {
        ++cur.pos;
      } else {
        in_single_ = false;
        cur.after_node = flow_ == 0;
        cur.closed = true;
      }
    }
    return Step::kNext;
  }
  if (c == '\\') return StepEscape(cur);
  if (c == '"') {
    in_double_ = false;
    cur.after_node = flow_ == 0;
    cur.closed = true;
  }
  return Step::kNext;
}

// A '\' in double quotes: the escapes of YAML 1.2 (yaml-cpp takes others,
// "\'" for one, as the character itself).
PreScanner::Step PreScanner::StepEscape(Cursor& cur) {
  const std::string_view line = cur.line;
  const size_t at = cur.pos;
  if (at + 1 == line.size()) return Step::kNext;  // an escaped line break
  const char e = line[at + 1];
  const size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
  if (digits == 0) {
    if (std::string_view("0abt\tnvfre \"/\\N_LP").find(e) == std::string_view::npos) {
      return Fail(at,
                  "invalid escape in double-quoted text: YAML has \\0 \\a \\b \\t \\n \\v \\f "
                  "\\r \\e \\\" \\/ \\\\ \\N \\_ \\L \\P, \\xHH, \\uHHHH and \\UHHHHHHHH (a ' "
                  "needs no escape there)");
    }
    cur.pos = at + 1;
    return Step::kNext;
  }
  for (size_t i = 0; i < digits; ++i) {
    if (at + 2 + i >= line.size() || !IsHex(line[at + 2 + i])) {
      return Fail(at, std::string("invalid escape in double-quoted text: \\") + e + " takes " +
                          std::to_string(digits) + " hexadecimal digits");
    }
  }
  cur.pos = at + 1 + digits;
  return Step::kNext;
}

// An anchor, alias or tag at a value's start: its name ends at a space or
// a flow indicator; a verbatim tag (!<...>) at its '>'.
PreScanner::Step PreScanner::StepAnchor(Cursor& cur) {
  flow_separator_ = false;
  const std::string_view line = cur.line;
  if (line.substr(cur.pos, 2) == "!<") {
    const size_t end = line.find_first_of("> \t", cur.pos + 2);
    if (end != std::string_view::npos && line[end] == '>') {
      cur.pos = end;
      return Step::kNext;
    }
  }
  while (cur.pos + 1 < line.size() && !IsBlank(line[cur.pos + 1])) {
    char n = line[cur.pos + 1];
    if (n == ',' && flow_ == 0) return Fail(cur.pos + 1, kComma);
    if (n == ',' || n == '[' || n == ']' || n == '{' || n == '}') break;
    ++cur.pos;
  }
  return Step::kNext;  // still at the start of a value
}

// Flow brackets, flow commas and block scalar headers.
std::optional<PreScanner::Step> PreScanner::StepFlow(Cursor& cur, char c) {
  if (c == '[' || c == '{') {
    if (flow_ == 0) cont_owner_ = Owner(cur);
    ++flow_;
    if (cur.base + flow_ > limit_) return Fail(cur.pos, kDeep);
    open_brackets_.push_back({c, Here(cur.pos)});
    cur.value_start = true;
    flow_separator_ = true;
    return Step::kNext;
  }
  if (c == ']' || c == '}') {
    if (flow_ > 0) {
      --flow_;
      open_brackets_.pop_back();
    }
    cur.after_node = flow_ == 0;
    cur.closed = true;
    return Step::kNext;
  }
  if (c == ',' && flow_ > 0) {
    if (cur.after_separator) {
      return Fail(cur.pos, "a ',' inside [ ] or { } must follow an entry (here it follows '" +
                               std::string(1, open_brackets_.back().bracket) + "' or ',')");
    }
    cur.value_start = true;
    flow_separator_ = true;
    return Step::kNext;
  }
  if (flow_ == 0 && (c == '|' || c == '>')) return StepBlockHeader(cur);
  return std::nullopt;
}

void PreScanner::OpenQuote(Cursor& cur, char c) {
  (c == '\'' ? in_single_ : in_double_) = true;
  quote_at_ = Here(cur.pos);
  quote_indent_ = cur.indent;
  quote_in_block_ = flow_ == 0;
  if (flow_ == 0) cont_owner_ = Owner(cur);
}

PreScanner::Step PreScanner::StepChar(Cursor& cur) {
  if (std::optional<Step> quoted = StepQuoted(cur)) return *quoted;
  const std::string_view line = cur.line;
  const size_t pos = cur.pos;
  const char c = line[pos];
  const bool blank = IsBlank(c);
  const bool spaced = pos == 0 || IsBlank(line[pos - 1]);
  if (!blank) cur.plain = false;
  // '#' starts a comment only after a space; no plain text starts with it.
  if (c == '#' && !spaced && (cur.value_start || cur.closed)) return Fail(pos, kCommentSpace);
  if (c == ',' && flow_ == 0 && (cur.value_start || cur.after_node)) return Fail(pos, kComma);
  if (cur.after_node && !blank && c != ':' && c != '#') {
    // Only ": value" or a comment may follow [..], {..} or a quoted scalar on
    // its line; yaml-cpp misparses other text into runaway documents.
    return Fail(pos, "unexpected text after a quoted value or a [ ] / { } collection");
  }
  if (!blank) {
    cur.after_node = false;
    cur.closed = false;
  }
  if (cur.continuation && cur.first_text && !blank) {
    // The first text of a line that continues plain text: not a tag, anchor,
    // quote or bracket. A ',' or '? ' there is still refused: yaml-cpp may
    // take it for a token (it ran away on "&x o" then "? ").
    cur.first_text = false;
    if (c != ',' && c != '?') cur.value_start = false;
  }
  if (cur.value_start && (c == '&' || c == '*' || c == '!')) return StepAnchor(cur);
  if (cur.value_start && c == '?' && (pos + 1 == line.size() || IsBlank(line[pos + 1]))) {
    return Fail(pos, kExplicitKey);
  }
  if (c == '#' && spaced) return Step::kEndLine;
  if (blank) return Step::kNext;
  return StepToken(cur, c);
}

// A character that is neither space nor comment, outside quotes.
PreScanner::Step PreScanner::StepToken(Cursor& cur, char c) {
  const std::string_view line = cur.line;
  const size_t pos = cur.pos;
  cur.after_separator = flow_separator_;
  flow_separator_ = false;
  if (flow_ > 0 && cur.value_start && c == '-' &&
      (pos + 1 == line.size() ||
       std::string_view(" \t,]}").find(line[pos + 1]) != std::string_view::npos)) {
    return Fail(pos, "'-' alone is not a value inside [ ] or { } (quote it: \"-\")");
  }
  if (cur.value_start && (c == '\'' || c == '"')) {  // quotes open only at a token's start
    OpenQuote(cur, c);
    return Step::kNext;
  }
  if (flow_ > 0 || cur.value_start) {
    if (std::optional<Step> step = StepFlow(cur, c)) return *step;
  }
  if (c == ':' && (pos + 1 == line.size() || IsBlank(line[pos + 1]))) {
    cur.value_start = true;
    if (flow_ == 0) cur.key = true;
    return Step::kNext;
  }
  cur.value_start = false;
  cur.plain = true;
  return Step::kNext;
}

}  // namespace apollo11::dsl::internal
