#include "dsl/yaml_guard.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "common/small_file.h"
#include "common/utf8.h"

namespace apollo11::dsl::internal {
namespace {

namespace fs = std::filesystem;

// What the pre-scan found wrong, if anything (line 0 = nothing).
struct ScanProblem {
  SourceLocation where;
  std::string message;
};

// A scan of the raw text before yaml-cpp sees it, for two hazards of
// yaml-cpp 0.7: (1) its parser recurses once per nesting level, so nesting
// (block indentation, compact "- - -" sequences and flow brackets together,
// estimated conservatively) deeper than `limit` is refused; (2) a ',' that
// starts a token outside [ ] / { } sends its scanner into an endless,
// allocating loop (jbeder/yaml-cpp#1040), as does text after a closed
// quoted scalar or flow collection ("[]o\n? "), so both are refused here.
// Both are invalid YAML anyway; the fuzz tests hold the line. A '?' that
// opens an explicit key runs away as well after a node with an anchor or tag
// ("&x o\n? ": 8 bytes took 22 GB), and a pipeline has no use for complex
// keys, so '? ' at a value's start is refused everywhere. (3) yaml-cpp
// accepts a quoted scalar the file ends inside (a pipeline cut off there
// loses its remaining tasks into that text), so that is refused at its
// opening quote, as is a quoted scalar that runs on into a line indented
// less than the line it opened on (its closing quote is missing). yaml-cpp
// refuses an unclosed [ or { but names the end of the file, so the scan
// remembers where the innermost one opened, for that message.
class PreScanner {
 public:
  PreScanner(int limit, const std::string& file)
      : limit_(limit),
        file_(file),
        kComma("',' outside [ ] or { } cannot start a value or follow one; quote the text"),
        kDeep("YAML nested deeper than " + std::to_string(limit) + " levels"),
        kExplicitKey(
            "'? ' (an explicit mapping key) is not supported: write 'key: value', or quote text "
            "that starts with '?'") {}

  // The first hazard in `text`, or a problem with line 0.
  ScanProblem Scan(std::string_view text) {
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

  // After a Scan that found no problem: "" or, when the file ends inside
  // [ ] or { } (which yaml-cpp reports at the end of the file), where the
  // innermost unclosed one opened.
  std::string UnclosedBracket() const {
    if (open_brackets_.empty()) return "";
    const OpenBracket& b = open_brackets_.back();
    return std::string(" ('") + b.bracket + "' opened at " + std::to_string(b.where.line) + ":" +
           std::to_string(b.where.column) + " is never closed)";
  }

 private:
  // Where the scan stands within one line.
  struct Cursor {
    std::string_view line;
    size_t indent = 0;
    size_t pos = 0;
    int base = 0;  // nesting of the line's block structure
    bool value_start = true;
    bool after_node = false;  // a quoted scalar or flow collection just ended at block level
  };
  enum class Step { kNext, kEndLine, kFail };
  struct OpenBracket {
    char bracket;
    SourceLocation where;
  };

  SourceLocation Here(size_t at) const {
    return SourceLocation{file_, line_no_, static_cast<int>(at) + 1};
  }
  Step Fail(size_t at, const std::string& message) {
    problem_ = {Here(at), message};
    return Step::kFail;
  }

  // False after setting problem_ when `line` continues a block-level quoted
  // scalar but is indented less than the line the quote opened on.
  bool CheckQuoteContinuation(std::string_view line) {
    if (!(in_single_ || in_double_) || !quote_in_block_) return true;
    size_t text = line.find_first_not_of(" \t");
    if (text == std::string_view::npos || text >= quote_indent_) return true;
    problem_ = {quote_at_, "quoted text opened here is not closed before line " +
                               std::to_string(line_no_) +
                               ", which is indented less than the line it opened on "
                               "(is a closing quote missing?)"};
    return false;
  }

  // One line; false after setting problem_.
  bool ScanLine(std::string_view line) {
    if (!CheckQuoteContinuation(line)) return false;
    Cursor cur;
    cur.line = line;
    while (cur.indent < line.size() && line[cur.indent] == ' ') ++cur.indent;
    bool blank = cur.indent == line.size() || line[cur.indent] == '#';
    if (block_scalar_indent_ >= 0) {
      if (blank || static_cast<long>(cur.indent) > block_scalar_indent_) return true;
      block_scalar_indent_ = -1;
    }
    if (blank && !in_single_ && !in_double_) return true;
    cur.pos = cur.indent;
    cur.base = static_cast<int>(indents_.size());
    if (flow_ == 0 && !in_single_ && !in_double_) {
      while (!indents_.empty() && indents_.back() >= cur.indent) indents_.pop_back();
      indents_.push_back(cur.indent);
      cur.base = static_cast<int>(indents_.size());
      while (cur.pos < line.size() && line[cur.pos] == '-' &&
             (cur.pos + 1 == line.size() || line[cur.pos + 1] == ' ')) {
        ++cur.base;
        cur.pos += 1;
        while (cur.pos < line.size() && line[cur.pos] == ' ') ++cur.pos;
      }
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
    return true;
  }

  // Inside a quoted scalar: consumes line[cur.pos] and returns true.
  bool StepQuoted(Cursor& cur) {
    const std::string_view line = cur.line;
    const char c = line[cur.pos];
    if (in_single_) {
      if (c == '\'') {
        if (cur.pos + 1 < line.size() && line[cur.pos + 1] == '\'') {
          ++cur.pos;
        } else {
          in_single_ = false;
          cur.after_node = flow_ == 0;
        }
      }
      return true;
    }
    if (in_double_) {
      if (c == '\\') {
        ++cur.pos;
      } else if (c == '"') {
        in_double_ = false;
        cur.after_node = flow_ == 0;
      }
      return true;
    }
    return false;
  }

  // An anchor, alias or tag at a value's start: its name ends at a space or
  // a flow indicator.
  Step StepAnchor(Cursor& cur) {
    const std::string_view line = cur.line;
    while (cur.pos + 1 < line.size() && line[cur.pos + 1] != ' ' && line[cur.pos + 1] != '\t') {
      char n = line[cur.pos + 1];
      if (n == ',' && flow_ == 0) return Fail(cur.pos + 1, kComma);
      if (n == ',' || n == '[' || n == ']' || n == '{' || n == '}') break;
      ++cur.pos;
    }
    return Step::kNext;  // still at the start of a value
  }

  // Flow brackets, flow commas and block scalar indicators.
  std::optional<Step> StepFlow(Cursor& cur, char c) {
    if (c == '[' || c == '{') {
      ++flow_;
      if (cur.base + flow_ > limit_) return Fail(cur.pos, kDeep);
      open_brackets_.push_back({c, Here(cur.pos)});
      cur.value_start = true;
      return Step::kNext;
    }
    if (c == ']' || c == '}') {
      if (flow_ > 0) {
        --flow_;
        open_brackets_.pop_back();
      }
      cur.after_node = flow_ == 0;
      return Step::kNext;
    }
    if (c == ',' && flow_ > 0) {
      cur.value_start = true;
      return Step::kNext;
    }
    if (flow_ == 0 && (c == '|' || c == '>')) {
      block_scalar_indent_ = static_cast<long>(cur.indent);
      return Step::kEndLine;
    }
    return std::nullopt;
  }

  Step StepChar(Cursor& cur) {
    if (StepQuoted(cur)) return Step::kNext;
    const std::string_view line = cur.line;
    const size_t pos = cur.pos;
    const char c = line[pos];
    if (c == ',' && flow_ == 0 && (cur.value_start || cur.after_node)) return Fail(pos, kComma);
    if (cur.after_node && c != ' ' && c != '\t' && c != ':' && c != '#') {
      // Only ": value" or a comment may follow [..], {..} or a quoted scalar on
      // its line; yaml-cpp misparses other text into runaway documents.
      return Fail(pos, "unexpected text after a quoted value or a [ ] / { } collection");
    }
    if (c != ' ' && c != '\t') cur.after_node = false;
    if (cur.value_start && (c == '&' || c == '*' || c == '!')) return StepAnchor(cur);
    if (cur.value_start && c == '?' &&
        (pos + 1 == line.size() || line[pos + 1] == ' ' || line[pos + 1] == '\t')) {
      return Fail(pos, kExplicitKey);
    }
    if (c == '#' && (pos == 0 || line[pos - 1] == ' ' || line[pos - 1] == '\t')) {
      return Step::kEndLine;
    }
    if (c == ' ' || c == '\t') return Step::kNext;
    if (cur.value_start && (c == '\'' || c == '"')) {  // quotes open only at a token's start
      (c == '\'' ? in_single_ : in_double_) = true;
      quote_at_ = Here(pos);
      quote_indent_ = cur.indent;
      quote_in_block_ = flow_ == 0;
      return Step::kNext;
    }
    if (flow_ > 0 || cur.value_start) {
      if (std::optional<Step> step = StepFlow(cur, c)) return *step;
    }
    if (c == ':' && (pos + 1 == line.size() || line[pos + 1] == ' ' || line[pos + 1] == '\t')) {
      cur.value_start = true;
      return Step::kNext;
    }
    cur.value_start = false;
    return Step::kNext;
  }

  const int limit_;
  const std::string file_;
  const std::string kComma;
  const std::string kDeep;
  const std::string kExplicitKey;
  std::vector<size_t> indents_;
  int flow_ = 0;
  bool in_single_ = false;
  bool in_double_ = false;
  long block_scalar_indent_ = -1;
  int line_no_ = 0;
  std::vector<OpenBracket> open_brackets_;  // as many as flow_
  SourceLocation quote_at_;                 // where the open quoted scalar opened
  size_t quote_indent_ = 0;                 // the indentation of that line
  bool quote_in_block_ = false;             // it opened outside [ ] and { }
  ScanProblem problem_;
};

// "0x.." of one byte, for messages.
std::string Hex(unsigned char c) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", c);
  return hex;
}

}  // namespace

// Reads the file at `path` into `out`; returns "" or why it cannot be read.
std::string ReadFileText(const std::string& path, size_t max_bytes, std::string* out) {
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return "cannot read " + Quote(path) + ": no such file";
  if (!fs::is_regular_file(status)) return "cannot read " + Quote(path) + ": not a regular file";
  uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > max_bytes) {
    return Quote(path) + " is " + std::to_string(size) + " bytes, larger than the limit of " +
           std::to_string(max_bytes);
  }
  // One byte over the limit, so that a file grown since the size check is still refused.
  std::optional<std::string> text = ReadSmallFile(path, max_bytes + 1);
  if (!text.has_value()) return "cannot read " + Quote(path) + ": " + std::strerror(errno);
  if (text->size() > max_bytes) {
    return Quote(path) + " is larger than the limit of " + std::to_string(max_bytes) + " bytes";
  }
  *out = std::move(*text);
  return "";
}

bool YamlGuard::CheckBytes(std::string_view text, const std::string& file) {
  SourceLocation whole{file, 1, 1};  // problems of the whole file point at its start
  if (text.size() > options_.max_file_bytes) {
    report_->Error(whole, "file is " + std::to_string(text.size()) +
                              " bytes, larger than the limit of " +
                              std::to_string(options_.max_file_bytes));
    return false;
  }
  int line = 1;
  int column = 1;
  bool only_space = true;
  // Strings of the pipeline end up in its JSON snapshot, which must be UTF-8.
  const size_t bad_utf8 = FirstInvalidUtf8(text);
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (i == bad_utf8) {
      report_->Error(SourceLocation{file, line, column},
                     "invalid UTF-8 (byte " + Hex(c) +
                         "); pipelines are UTF-8 text: re-encode the file (iconv -t UTF-8)");
      return false;
    }
    if (c == 0 || (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
      report_->Error(SourceLocation{file, line, column},
                     "file looks binary (control byte " + Hex(c) + "); pipelines are UTF-8 text");
      return false;
    }
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') only_space = false;
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  if (only_space && !allow_empty_) {
    report_->Error(whole, "file is empty (a pipeline needs at least version: and pipeline:)");
    return false;
  }
  return true;
}

std::shared_ptr<const YamlTree> YamlGuard::Parse(std::string_view text, const std::string& file,
                                                 bool imported) {
  if (!CheckBytes(text, file)) return nullptr;
  SourceLocation whole{file, 1, 1};
  PreScanner scanner(options_.max_nesting, file);
  ScanProblem problem = scanner.Scan(text);
  if (problem.where.line > 0) {
    report_->Error(problem.where, problem.message);
    return nullptr;
  }
  YamlReadResult read = ReadYamlTree(text, options_.max_expanded_bytes);
  if (read.problem.kind != YamlReadProblem::Kind::kNone) {
    ReportReadProblem(read.problem, file, imported, scanner.UnclosedBracket());
    return nullptr;
  }
  const YamlNode root = read.tree->root();
  if (!root.IsDefined() || root.IsNull()) {
    if (allow_empty_) return read.tree;
    report_->Error(whole, "file is empty (a pipeline needs at least version: and pipeline:)");
    return nullptr;
  }
  return read.tree;
}

void YamlGuard::ReportReadProblem(const YamlReadProblem& p, const std::string& file, bool imported,
                                  const std::string& unclosed) {
  const SourceLocation at = Loc(file, p.mark);
  switch (p.kind) {
    case YamlReadProblem::Kind::kMalformed:
      // A few of yaml-cpp's messages end with the text at fault ("bad YAML
      // version: ..."); an imported file's text is not shown.
      report_->Error(at, "malformed YAML: " +
                             (imported ? p.message.substr(0, p.message.find(": ")) : p.message) +
                             unclosed);
      return;
    case YamlReadProblem::Kind::kSecondDocument:
      report_->Error(at, "a pipeline file holds one YAML document; found a second one");
      return;
    case YamlReadProblem::Kind::kAliasLoop:
      report_->Error(at,
                     "this alias refers to a node that contains it; a pipeline cannot be infinite");
      return;
    case YamlReadProblem::Kind::kAliasDepth:
      report_->Error(at,
                     "aliases nested deeper than " + std::to_string(kMaxAliasDepth) + " levels");
      return;
    case YamlReadProblem::Kind::kExpandedSize:
      report_->Error(at, std::string(p.at_alias ? "with this alias" : "here") +
                             " the file, every alias written out, passes " +
                             std::to_string(options_.max_expanded_bytes) +
                             " bytes (the limit on a pipeline's expanded size: each alias counts "
                             "the size of what it refers to)");
      return;
    case YamlReadProblem::Kind::kTooLarge:
      report_->Error(at, "the file has more YAML nodes or text than one document may hold");
      return;
    case YamlReadProblem::Kind::kNone:
      return;
  }
}

}  // namespace apollo11::dsl::internal
