#include "dsl/yaml_guard.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "common/small_file.h"
#include "common/utf8.h"
#include "dsl/yaml_prescan.h"

namespace apollo11::dsl::internal {
namespace {

namespace fs = std::filesystem;

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
