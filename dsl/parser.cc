#include "dsl/parser.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "common/utf8.h"
#include "dsl/checker.h"
#include "dsl/cron.h"
#include "dsl/suggest.h"

namespace apollo11::dsl {
namespace {

namespace fs = std::filesystem;

// Keys each kind of mapping accepts, in the order the docs list them.
const std::vector<std::string> kPipelineKeys = {
    "version",     "name",     "imports", "pipeline",     "params",
    "concurrency", "schedule", "alerts",  "retry_policy", "templates"};
const std::vector<std::string> kLibraryKeys = {"version", "imports", "retry_policy", "templates"};
const std::vector<std::string> kTaskKeys = {
    "id",       "type",    "command", "workdir",       "script", "args",     "url",
    "method",   "headers", "body",    "expect_status", "host",   "sql",      "depends_on",
    "trigger",  "retry",   "timeout", "group",         "labels", "priority", "idempotency_key",
    "precheck", "env",     "foreach", "extends"};
const std::vector<std::string> kRetryKeys = {"max_retries", "delay",  "backoff",
                                             "max_delay",   "jitter", "on_exit_codes"};
const std::vector<std::string> kDependencyKeys = {"task", "on"};
const std::vector<std::string> kAlertKeys = {"events", "webhook", "command"};
const std::vector<std::string> kTaskTypes = {"shell", "python", "http", "db", "noop"};
const std::vector<std::string> kAlertEvents = {"task_failed",  "task_timeout", "retries_exhausted",
                                               "slow_task",    "run_failed",   "run_canceled",
                                               "run_succeeded"};
const std::vector<std::string> kHttpMethods = {"GET",    "POST", "PUT",    "PATCH",
                                               "DELETE", "HEAD", "OPTIONS"};
constexpr size_t kMaxImportedFiles = 256;

// Which task type owns each type-specific key.
const std::map<std::string, TaskType>& TypeOfKey() {
  static const auto* map = new std::map<std::string, TaskType>{{"command", TaskType::kShell},
                                                               {"workdir", TaskType::kShell},
                                                               {"script", TaskType::kPython},
                                                               {"args", TaskType::kPython},
                                                               {"url", TaskType::kHttp},
                                                               {"method", TaskType::kHttp},
                                                               {"headers", TaskType::kHttp},
                                                               {"body", TaskType::kHttp},
                                                               {"expect_status", TaskType::kHttp},
                                                               {"host", TaskType::kDb},
                                                               {"sql", TaskType::kDb}};
  return *map;
}

SourceLocation Loc(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return SourceLocation{file, 0, 0};
  return SourceLocation{file, mark.line + 1, mark.column + 1};
}

std::string LocText(const SourceLocation& l) {
  return l.file + ":" + std::to_string(l.line) + ":" + std::to_string(l.column);
}

const char* KindName(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Scalar:
      return "text";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "nothing";
  }
}

bool MatchesIdChars(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

bool IsEnvName(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

// A pipeline name: dot-separated words of [a-z0-9_-].
bool IsNameSyntax(const std::string& s) {
  if (s.empty() || s.front() == '.' || s.back() == '.') return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
              (c == '.' && s[i - 1] != '.');
    if (!ok) return false;
  }
  return true;
}

bool StartsWith(const std::string& s, std::string_view prefix) {
  return s.size() >= prefix.size() && std::string_view(s).substr(0, prefix.size()) == prefix;
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

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
// Both are invalid YAML anyway; the fuzz tests hold the line.
ScanProblem PreScan(std::string_view text, int limit, const std::string& file) {
  const std::string kComma =
      "',' outside [ ] or { } cannot start a value or follow one; quote the text";
  const std::string kDeep = "YAML nested deeper than " + std::to_string(limit) + " levels";
  std::vector<size_t> indents;
  int flow = 0;
  bool in_single = false;
  bool in_double = false;
  long block_scalar_indent = -1;
  int line_no = 0;
  size_t line_start = 0;
  while (line_start < text.size()) {
    ++line_no;
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    std::string_view line = text.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t indent = 0;
    while (indent < line.size() && line[indent] == ' ') ++indent;
    bool blank = indent == line.size() || line[indent] == '#';
    if (block_scalar_indent >= 0) {
      if (blank || static_cast<long>(indent) > block_scalar_indent) continue;
      block_scalar_indent = -1;
    }
    if (blank && !in_single && !in_double) continue;
    size_t pos = indent;
    int base = static_cast<int>(indents.size());
    if (flow == 0 && !in_single && !in_double) {
      while (!indents.empty() && indents.back() >= indent) indents.pop_back();
      indents.push_back(indent);
      base = static_cast<int>(indents.size());
      while (pos < line.size() && line[pos] == '-' &&
             (pos + 1 == line.size() || line[pos + 1] == ' ')) {
        ++base;
        pos += 1;
        while (pos < line.size() && line[pos] == ' ') ++pos;
      }
    }
    bool value_start = true;
    bool after_node = false;  // a quoted scalar or flow collection just ended at block level
    auto here = [&](size_t at) { return SourceLocation{file, line_no, static_cast<int>(at) + 1}; };
    for (; pos < line.size(); ++pos) {
      char c = line[pos];
      if (in_single) {
        if (c == '\'') {
          if (pos + 1 < line.size() && line[pos + 1] == '\'') {
            ++pos;
          } else {
            in_single = false;
            after_node = flow == 0;
          }
        }
        continue;
      }
      if (in_double) {
        if (c == '\\') {
          ++pos;
        } else if (c == '"') {
          in_double = false;
          after_node = flow == 0;
        }
        continue;
      }
      if (c == ',' && flow == 0 && (value_start || after_node)) return {here(pos), kComma};
      if (after_node && c != ' ' && c != '\t' && c != ':' && c != '#') {
        // Only ": value" or a comment may follow [..], {..} or a quoted scalar on
        // its line; yaml-cpp misparses other text into runaway documents.
        return {here(pos), "unexpected text after a quoted value or a [ ] / { } collection"};
      }
      if (c != ' ' && c != '\t') after_node = false;
      if (value_start && (c == '&' || c == '*' || c == '!')) {
        // An anchor, alias or tag: its name ends at a space or a flow indicator.
        while (pos + 1 < line.size() && line[pos + 1] != ' ' && line[pos + 1] != '\t') {
          char n = line[pos + 1];
          if (n == ',' && flow == 0) return {here(pos + 1), kComma};
          if (n == ',' || n == '[' || n == ']' || n == '{' || n == '}') break;
          ++pos;
        }
        continue;  // still at the start of a value
      }
      if (c == '#' && (pos == 0 || line[pos - 1] == ' ' || line[pos - 1] == '\t')) break;
      if (c == ' ' || c == '\t') continue;
      if (value_start && (c == '\'' || c == '"')) {  // quotes open only at a token's start
        (c == '\'' ? in_single : in_double) = true;
        continue;
      }
      if (flow > 0 || value_start) {
        if (c == '[' || c == '{') {
          ++flow;
          if (base + flow > limit) return {here(pos), kDeep};
          value_start = true;
          continue;
        }
        if (c == ']' || c == '}') {
          if (flow > 0) --flow;
          after_node = flow == 0;
          continue;
        }
        if (c == ',' && flow > 0) {
          value_start = true;
          continue;
        }
        if (flow == 0 && (c == '|' || c == '>')) {
          block_scalar_indent = static_cast<long>(indent);
          break;
        }
      }
      if (c == ':' && (pos + 1 == line.size() || line[pos + 1] == ' ' || line[pos + 1] == '\t')) {
        value_start = true;
        continue;
      }
      value_start = false;
    }
    if (base + flow > limit) return {here(indent), kDeep};
  }
  return {};
}

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
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot read " + Quote(path) + ": " + std::strerror(errno);
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) return "cannot read " + Quote(path) + ": read error";
  return "";
}

// One key of a mapping, with the file it was written in.
struct Field {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
  std::string file;
};

struct NamedPolicy {
  std::optional<RetryPolicy> policy;  // nullopt when its definition had errors
  SourceLocation where;
};

struct Template {
  std::vector<Field> fields;
  SourceLocation where;
};

class Parser {
 public:
  explicit Parser(const ParseOptions& options) : options_(options) {}

  ParseResult Run(std::string_view text, const std::string& path) {
    ParseResult result;
    try {
      RunUnguarded(text, path, &result);
    } catch (const std::exception& e) {
      // yaml-cpp throws from surprising places; an input must never crash us.
      Error(SourceLocation{path, 0, 0}, std::string("could not read the pipeline: ") + e.what());
      result.pipeline.reset();
    }
    std::stable_sort(
        diagnostics_.begin(), diagnostics_.end(), [&](const Diagnostic& a, const Diagnostic& b) {
          return std::make_tuple(a.where.file != path, a.where.file, a.where.line, a.where.column) <
                 std::make_tuple(b.where.file != path, b.where.file, b.where.line, b.where.column);
        });
    if (HasErrors(diagnostics_)) result.pipeline.reset();
    result.diagnostics = std::move(diagnostics_);
    return result;
  }

  // Reads the file at `path` into `out`, or reports why it cannot at `blame`.
  bool ReadFile(const std::string& path, const SourceLocation& blame, std::string* out) {
    std::string why = ReadFileText(path, options_.max_file_bytes, out);
    if (why.empty()) return true;
    Error(blame, why);
    return false;
  }

 private:
  void Error(const SourceLocation& where, std::string message) {
    Add(Diagnostic::Severity::kError, where, std::move(message));
  }
  void Error(const std::string& file, const YAML::Node& at, std::string message) {
    Error(Loc(file, at.Mark()), std::move(message));
  }
  void Warning(const SourceLocation& where, std::string message) {
    Add(Diagnostic::Severity::kWarning, where, std::move(message));
  }
  void Add(Diagnostic::Severity s, const SourceLocation& where, std::string message) {
    Diagnostic d{s, where, std::move(message)};
    // A template's bad value is seen once per task extending it: say it once.
    if (reported_.insert(FormatDiagnostic(d)).second) diagnostics_.push_back(std::move(d));
  }

  void RunUnguarded(std::string_view text, const std::string& path, ParseResult* result) {
    std::error_code ec;
    fs::path absolute = fs::absolute(fs::path(path), ec);
    if (ec) absolute = fs::path(path);
    absolute = absolute.lexically_normal();
    base_dir_ = absolute.parent_path();
    std::optional<YAML::Node> root = ParseYaml(text, path);
    if (!root) return;
    if (!root->IsMap()) {
      Error(path, *root,
            std::string("the top level must be a mapping (version:, pipeline:, ...), found ") +
                KindName(*root));
      return;
    }
    stack_.push_back({CanonicalKey(absolute), path});
    PipelineSpec spec;
    spec.source_file = absolute.string();
    ParsePipelineRoot(*root, path, &spec);
    stack_.pop_back();

    CheckOptions check;
    check.chain_warning_threshold = options_.chain_warning_threshold;
    std::vector<Diagnostic> found;
    CheckPipeline(spec, check, &found);
    for (Diagnostic& d : found) Add(d.severity, d.where, std::move(d.message));
    result->pipeline = std::move(spec);
  }

  static std::string CanonicalKey(const fs::path& p) {
    std::error_code ec;
    fs::path c = fs::weakly_canonical(p, ec);
    return ec ? p.lexically_normal().string() : c.string();
  }

  // Bounded-input checks, then yaml-cpp. nullopt after reporting an error.
  std::optional<YAML::Node> ParseYaml(std::string_view text, const std::string& file) {
    SourceLocation whole{file, 1, 1};  // problems of the whole file point at its start
    if (text.size() > options_.max_file_bytes) {
      Error(whole, "file is " + std::to_string(text.size()) + " bytes, larger than the limit of " +
                       std::to_string(options_.max_file_bytes));
      return std::nullopt;
    }
    int line = 1;
    int column = 1;
    bool only_space = true;
    // Strings of the pipeline end up in its JSON snapshot, which must be UTF-8.
    const size_t bad_utf8 = FirstInvalidUtf8(text);
    for (size_t i = 0; i < text.size(); ++i) {
      const auto c = static_cast<unsigned char>(text[i]);
      if (i == bad_utf8) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", c);
        Error(SourceLocation{file, line, column},
              std::string("invalid UTF-8 (byte ") + hex +
                  "); pipelines are UTF-8 text: re-encode the file (iconv -t UTF-8)");
        return std::nullopt;
      }
      if (c == 0 || (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", c);
        Error(SourceLocation{file, line, column}, std::string("file looks binary (control byte ") +
                                                      hex + "); pipelines are UTF-8 text");
        return std::nullopt;
      }
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') only_space = false;
      if (c == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    if (only_space) {
      Error(whole, "file is empty (a pipeline needs at least version: and pipeline:)");
      return std::nullopt;
    }
    ScanProblem problem = PreScan(text, options_.max_nesting, file);
    if (problem.where.line > 0) {
      Error(problem.where, problem.message);
      return std::nullopt;
    }
    std::vector<YAML::Node> docs;
    try {
      docs = YAML::LoadAll(std::string(text));
    } catch (const YAML::Exception& e) {
      Error(Loc(file, e.mark), "malformed YAML: " + e.msg);
      return std::nullopt;
    }
    if (docs.empty() || docs[0].IsNull()) {
      Error(whole, "file is empty (a pipeline needs at least version: and pipeline:)");
      return std::nullopt;
    }
    if (docs.size() > 1) {
      Error(file, docs[1], "a pipeline file holds one YAML document; found a second one");
      return std::nullopt;
    }
    return docs[0];
  }

  // The keys of `map` that are in `allowed`; reports unknown and duplicate keys.
  std::vector<Field> Fields(const YAML::Node& map, const std::string& file,
                            const std::vector<std::string>& allowed, const std::string& what) {
    std::vector<Field> out;
    std::unordered_map<std::string, YAML::Mark> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node key_node = it->first;
      if (!key_node.IsScalar()) {
        Error(file, key_node, "keys of " + what + " must be plain words");
        continue;
      }
      const std::string key = key_node.Scalar();
      auto [prev, inserted] = seen.emplace(key, key_node.Mark());
      if (!inserted) {
        Error(file, key_node,
              "duplicate key " + Quote(key) + " in " + what + " (first at " +
                  LocText(Loc(file, prev->second)) + ")");
        continue;
      }
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string hint = DidYouMean(key, allowed);
        if (hint.empty() && what == "the top level" && key == "on_failure") {
          hint =
              " (pipeline-level on_failure is not supported: add a task with depends_on: "
              "{task: X, on: failure}, or use alerts:)";
        }
        Error(file, key_node, "unknown key " + Quote(key) + " in " + what + hint);
        continue;
      }
      out.push_back(Field{key, key_node, it->second, file});
    }
    return out;
  }

  SourceLocation At(const Field& f) const { return Loc(f.file, f.value.Mark()); }
  SourceLocation KeyAt(const Field& f) const { return Loc(f.file, f.key_node.Mark()); }

  bool GetString(const Field& f, std::string* out, bool allow_empty = false) {
    if (f.value.IsScalar()) {
      *out = f.value.Scalar();
      if (out->empty() && !allow_empty) {
        Error(At(f), Quote(f.key) + " must not be empty");
        return false;
      }
      return true;
    }
    if (f.value.IsNull()) {
      Error(KeyAt(f), Quote(f.key) + " needs a value");
    } else {
      Error(At(f), Quote(f.key) + " must be text, found " + KindName(f.value));
    }
    return false;
  }

  bool ScalarToInt(const YAML::Node& n, const std::string& file, const std::string& what, long min,
                   long max, long* out) {
    if (!n.IsScalar()) {
      Error(file, n, what + " must be a whole number, found " + KindName(n));
      return false;
    }
    const std::string& s = n.Scalar();
    long value = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end != s.data() + s.size()) {
      Error(file, n, what + " must be a whole number, found " + Quote(s));
      return false;
    }
    if (value < min || value > max) {
      Error(file, n,
            what + " must be between " + std::to_string(min) + " and " + std::to_string(max) +
                ", found " + s);
      return false;
    }
    *out = value;
    return true;
  }

  bool GetInt(const Field& f, long min, long max, int* out) {
    long value = 0;
    if (f.value.IsNull()) {
      Error(KeyAt(f), Quote(f.key) + " needs a value");
      return false;
    }
    if (!ScalarToInt(f.value, f.file, Quote(f.key), min, max, &value)) return false;
    *out = static_cast<int>(value);
    return true;
  }

  // A whole number or a list of them.
  bool GetIntList(const Field& f, long min, long max, std::vector<int>* out) {
    std::vector<YAML::Node> items;
    if (f.value.IsSequence()) {
      for (const YAML::Node& n : f.value) items.push_back(n);
    } else {
      items.push_back(f.value);
    }
    bool ok = true;
    out->clear();
    for (const YAML::Node& n : items) {
      long value = 0;
      if (ScalarToInt(n, f.file, "each value of " + Quote(f.key), min, max, &value)) {
        out->push_back(static_cast<int>(value));
      } else {
        ok = false;
      }
    }
    return ok;
  }

  bool GetDuration(const Field& f, Millis* out) {
    std::string text;
    if (!GetString(f, &text)) return false;
    Result<Millis> d = ParseDuration(text);
    if (!d.ok()) {
      Error(At(f), Quote(f.key) + ": " + d.status().message());
      return false;
    }
    *out = *d;
    return true;
  }

  // One word from `choices`, reported with a "did you mean".
  bool GetChoice(const Field& f, const std::vector<std::string>& choices, std::string* out) {
    if (!GetString(f, out)) return false;
    if (std::find(choices.begin(), choices.end(), *out) != choices.end()) return true;
    std::string list;
    for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
    Error(At(f), Quote(f.key) + " must be one of " + list + ", found " + Quote(*out) +
                     DidYouMean(*out, choices));
    return false;
  }

  bool GetStringList(const Field& f, std::vector<std::string>* out) {
    if (!f.value.IsSequence()) {
      Error(At(f), Quote(f.key) + " must be a list of text, found " + KindName(f.value));
      return false;
    }
    bool ok = true;
    for (const YAML::Node& n : f.value) {
      if (!n.IsScalar()) {
        Error(f.file, n, "each item of " + Quote(f.key) + " must be text, found " + KindName(n));
        ok = false;
        continue;
      }
      out->push_back(n.Scalar());
    }
    return ok;
  }

  // A mapping of text to text; `env_names` checks keys are variable names.
  bool GetStringMap(const Field& f, bool env_names, std::map<std::string, std::string>* out) {
    if (!f.value.IsMap()) {
      Error(At(f),
            Quote(f.key) + " must be a mapping of names to text, found " + KindName(f.value));
      return false;
    }
    bool ok = true;
    for (auto it = f.value.begin(); it != f.value.end(); ++it) {
      const YAML::Node k = it->first;
      const YAML::Node v = it->second;
      if (!k.IsScalar() || (env_names && !IsEnvName(k.Scalar()))) {
        Error(f.file, k,
              Quote(f.key) + " keys must be " +
                  (env_names ? "variable names ([A-Za-z_][A-Za-z0-9_]*)" : "text"));
        ok = false;
        continue;
      }
      if (!v.IsScalar() && !v.IsNull()) {
        Error(f.file, v,
              "value of " + Quote(k.Scalar()) + " in " + Quote(f.key) + " must be text, found " +
                  KindName(v));
        ok = false;
        continue;
      }
      if (!out->emplace(k.Scalar(), v.IsNull() ? "" : v.Scalar()).second) {
        Error(f.file, k, "duplicate key " + Quote(k.Scalar()) + " in " + Quote(f.key));
        ok = false;
      }
    }
    return ok;
  }

  // --- top level -----------------------------------------------------------

  void ParsePipelineRoot(const YAML::Node& root, const std::string& file, PipelineSpec* spec) {
    std::vector<Field> fields = Fields(root, file, kPipelineKeys, "the top level");
    std::map<std::string, const Field*> by_key;
    for (const Field& f : fields) by_key[f.key] = &f;
    auto find = [&](const char* key) -> const Field* {
      auto it = by_key.find(key);
      return it == by_key.end() ? nullptr : it->second;
    };
    SourceLocation top{file, 1, 1};

    if (const Field* f = find("version")) {
      if (GetString(*f, &spec->version) && spec->version != "1.0") {
        Error(At(*f),
              "unsupported version " + Quote(spec->version) + " (this build reads \"1.0\")");
      }
    } else {
      Error(top, "missing required key 'version' (write version: \"1.0\")");
    }

    bool name_given = false;
    if (const Field* f = find("name")) {
      name_given = GetString(*f, &spec->name);
      if (name_given && !IsNameSyntax(spec->name)) {
        Error(At(*f), "pipeline name " + Quote(spec->name) +
                          " must be dot-separated words of a-z, 0-9, _ and - (e.g. order.sync)");
        name_given = false;
      } else if (name_given && spec->name.find('.') == std::string::npos) {
        NameWithoutDomain(At(*f), "pipeline name " + Quote(spec->name));
      }
    }
    if (!name_given && !find("name")) {
      spec->name = fs::path(file).stem().string();
      if (spec->name.find('.') == std::string::npos) {
        NameWithoutDomain(top, "pipeline name " + Quote(spec->name) + " (from the file name)");
      }
    }

    if (const Field* f = find("imports")) LoadImports(*f);
    if (const Field* f = find("retry_policy")) LoadPolicies(*f);
    if (const Field* f = find("templates")) LoadTemplates(*f);

    if (const Field* f = find("params")) {
      GetStringMap(*f, /*env_names=*/true, &spec->params);
    }
    params_ = spec->params;
    if (const Field* f = find("concurrency")) GetInt(*f, 0, 1'000'000, &spec->concurrency);
    if (const Field* f = find("schedule")) {
      if (GetString(*f, &spec->schedule)) {
        Status s = ValidateCron(spec->schedule);
        if (!s.ok()) Error(At(*f), s.message());
      }
    }
    if (const Field* f = find("alerts")) ParseAlerts(*f, spec);

    const Field* pipeline = find("pipeline");
    if (pipeline == nullptr) {
      Error(top, "missing required key 'pipeline' (the list of tasks)");
      return;
    }
    if (!pipeline->value.IsSequence()) {
      Error(pipeline->value.IsNull() ? KeyAt(*pipeline) : At(*pipeline),
            std::string("'pipeline' must be a list of tasks, found ") + KindName(pipeline->value));
      return;
    }
    if (pipeline->value.size() == 0) {
      Error(At(*pipeline), "'pipeline' has no tasks");
      return;
    }
    for (const YAML::Node& task : pipeline->value) ParseTask(task, file, spec);
  }

  void NameWithoutDomain(const SourceLocation& where, const std::string& what) {
    std::string message = what + " has no domain prefix (write e.g. name: order.sync)";
    if (options_.strict) {
      Error(where, message);
    } else {
      Warning(where, message);
    }
  }

  void ParseAlerts(const Field& f, PipelineSpec* spec) {
    if (!f.value.IsSequence()) {
      Error(At(f), std::string("'alerts' must be a list, found ") + KindName(f.value));
      return;
    }
    for (const YAML::Node& item : f.value) {
      if (!item.IsMap()) {
        Error(f.file, item, std::string("each alert must be a mapping, found ") + KindName(item));
        continue;
      }
      AlertRule rule;
      for (const Field& a : Fields(item, f.file, kAlertKeys, "an alert")) {
        if (a.key == "events") {
          std::vector<YAML::Node> events;
          if (a.value.IsSequence()) {
            for (const YAML::Node& e : a.value) events.push_back(e);
          } else {
            events.push_back(a.value);
          }
          for (const YAML::Node& e : events) {
            if (!e.IsScalar()) {
              Error(f.file, e, "alert events must be text");
              continue;
            }
            if (std::find(kAlertEvents.begin(), kAlertEvents.end(), e.Scalar()) ==
                kAlertEvents.end()) {
              Error(f.file, e,
                    "unknown alert event " + Quote(e.Scalar()) +
                        DidYouMean(e.Scalar(), kAlertEvents));
              continue;
            }
            rule.events.push_back(e.Scalar());
          }
        } else if (a.key == "webhook") {
          if (GetString(a, &rule.webhook) && !StartsWith(rule.webhook, "http://") &&
              !StartsWith(rule.webhook, "https://")) {
            Error(At(a), "alert webhook must be an http:// or https:// URL");
          }
        } else if (a.key == "command") {
          GetString(a, &rule.command);
        }
      }
      if (rule.events.empty()) Error(f.file, item, "alert needs 'events' (e.g. [run_failed])");
      if (rule.webhook.empty() && rule.command.empty()) {
        Error(f.file, item, "alert needs a 'webhook' or a 'command'");
      }
      spec->alerts.push_back(std::move(rule));
    }
  }

  // --- imports, named policies, templates ----------------------------------

  void LoadImports(const Field& f) {
    if (!f.value.IsSequence()) {
      Error(At(f),
            std::string("'imports' must be a list of file paths, found ") + KindName(f.value));
      return;
    }
    for (const YAML::Node& item : f.value) {
      if (!item.IsScalar() || item.Scalar().empty()) {
        Error(f.file, item, "each import must be a file path");
        continue;
      }
      fs::path display = (fs::path(f.file).parent_path() / item.Scalar()).lexically_normal();
      std::error_code ec;
      fs::path absolute = fs::absolute(display, ec);
      std::string key = CanonicalKey(ec ? display : absolute);
      auto on_stack = std::find_if(stack_.begin(), stack_.end(),
                                   [&](const auto& entry) { return entry.first == key; });
      if (on_stack != stack_.end()) {
        std::string chain;
        for (auto it = on_stack; it != stack_.end(); ++it) chain += it->second + " -> ";
        Error(f.file, item, "import cycle: " + chain + display.string());
        continue;
      }
      if (loaded_.count(key)) continue;  // already imported through another file
      if (loaded_.size() >= kMaxImportedFiles) {
        Error(f.file, item, "more than " + std::to_string(kMaxImportedFiles) + " imported files");
        return;
      }
      loaded_.insert(key);
      std::string text;
      if (!fs::exists(absolute, ec)) {
        Error(
            f.file, item,
            "import " + Quote(item.Scalar()) + " not found (looked for " + absolute.string() + ")");
        continue;
      }
      if (!ReadFile(display.string(), Loc(f.file, item.Mark()), &text)) continue;
      std::optional<YAML::Node> root = ParseYaml(text, display.string());
      if (!root) continue;
      if (!root->IsMap()) {
        Error(
            display.string(), *root,
            std::string("an imported file must be a mapping (retry_policy:, templates:), found ") +
                KindName(*root));
        continue;
      }
      stack_.push_back({key, display.string()});
      LoadLibrary(*root, display.string());
      stack_.pop_back();
    }
  }

  void LoadLibrary(const YAML::Node& root, const std::string& file) {
    std::vector<Field> fields =
        Fields(root, file, kLibraryKeys,
               "an imported file (it may hold version, imports, retry_policy, templates)");
    for (const Field& f : fields) {
      if (f.key == "imports") LoadImports(f);
    }
    for (const Field& f : fields) {
      if (f.key == "version") {
        std::string version;
        if (GetString(f, &version) && version != "1.0") {
          Error(At(f), "unsupported version " + Quote(version) + " (this build reads \"1.0\")");
        }
      } else if (f.key == "retry_policy") {
        LoadPolicies(f);
      } else if (f.key == "templates") {
        LoadTemplates(f);
      }
    }
  }

  void LoadPolicies(const Field& f) {
    if (!f.value.IsMap()) {
      Error(At(f), std::string("'retry_policy' must map policy names to policies, found ") +
                       KindName(f.value));
      return;
    }
    for (auto it = f.value.begin(); it != f.value.end(); ++it) {
      const YAML::Node k = it->first;
      if (!k.IsScalar() || !MatchesIdChars(k.Scalar())) {
        Error(f.file, k, "retry policy names are words of a-z, 0-9 and _");
        continue;
      }
      SourceLocation where = Loc(f.file, k.Mark());
      auto existing = policies_.find(k.Scalar());
      if (existing != policies_.end()) {
        Error(where, "retry policy " + Quote(k.Scalar()) + " is defined twice (first at " +
                         LocText(existing->second.where) + ")");
        continue;
      }
      policies_[k.Scalar()] = NamedPolicy{ParseRetryMap(it->second, f.file), where};
    }
  }

  void LoadTemplates(const Field& f) {
    if (!f.value.IsMap()) {
      Error(At(f), std::string("'templates' must map template names to task fields, found ") +
                       KindName(f.value));
      return;
    }
    std::vector<std::string> allowed;
    for (const std::string& k : kTaskKeys) {
      if (k != "id" && k != "extends") allowed.push_back(k);
    }
    for (auto it = f.value.begin(); it != f.value.end(); ++it) {
      const YAML::Node k = it->first;
      if (!k.IsScalar() || !MatchesIdChars(k.Scalar())) {
        Error(f.file, k, "template names are words of a-z, 0-9 and _");
        continue;
      }
      SourceLocation where = Loc(f.file, k.Mark());
      auto existing = templates_.find(k.Scalar());
      if (existing != templates_.end()) {
        Error(where, "template " + Quote(k.Scalar()) + " is defined twice (first at " +
                         LocText(existing->second.where) + ")");
        continue;
      }
      if (!it->second.IsMap()) {
        Error(f.file, it->second,
              "template " + Quote(k.Scalar()) + " must be a mapping of task fields, found " +
                  KindName(it->second));
        continue;
      }
      templates_[k.Scalar()] =
          Template{Fields(it->second, f.file, allowed,
                          "template " + Quote(k.Scalar()) +
                              " (templates hold task fields except id and extends)"),
                   where};
    }
  }

  std::optional<RetryPolicy> ParseRetryMap(const YAML::Node& node, const std::string& file) {
    if (!node.IsMap()) {
      Error(file, node,
            std::string(
                "a retry policy must be a mapping (max_retries, delay, backoff, ...), found ") +
                KindName(node));
      return std::nullopt;
    }
    size_t errors_before = ErrorCount();
    RetryPolicy policy;
    bool has_max_retries = false;
    bool has_jitter = false;
    const Field* delay_field = nullptr;
    const Field* max_delay_field = nullptr;
    std::vector<Field> fields = Fields(node, file, kRetryKeys, "a retry policy");
    for (const Field& f : fields) {
      if (f.key == "max_retries") {
        has_max_retries = GetInt(f, 0, 1000, &policy.max_retries);
      } else if (f.key == "delay") {
        if (GetDuration(f, &policy.delay)) delay_field = &f;
      } else if (f.key == "max_delay") {
        if (GetDuration(f, &policy.max_delay)) max_delay_field = &f;
      } else if (f.key == "backoff") {
        std::string b;
        if (GetChoice(f, {"fixed", "exponential"}, &b)) {
          policy.backoff = b == "fixed" ? Backoff::kFixed : Backoff::kExponential;
        }
      } else if (f.key == "jitter") {
        has_jitter = true;
        double j = 0;
        const std::string& s = f.value.IsScalar() ? f.value.Scalar() : std::string();
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), j);
        if (!f.value.IsScalar() || ec != std::errc() || end != s.data() + s.size() || j < 0 ||
            j > 1) {
          Error(At(f), "'jitter' must be a fraction from 0 to 1 (e.g. 0.2)");
        } else {
          policy.jitter = j;
        }
      } else if (f.key == "on_exit_codes") {
        GetIntList(f, 0, 255, &policy.on_exit_codes);
      }
    }
    if (!has_max_retries && !HasKey(fields, "max_retries")) {
      Error(file, node, "retry policy needs 'max_retries'");
    }
    if (!has_jitter && policy.backoff == Backoff::kExponential) policy.jitter = 0.2;
    if (delay_field && max_delay_field && policy.max_delay < policy.delay) {
      Error(At(*max_delay_field), "'max_delay' is shorter than 'delay'");
    }
    if (ErrorCount() != errors_before) return std::nullopt;
    return policy;
  }

  static bool HasKey(const std::vector<Field>& fields, const std::string& key) {
    for (const Field& f : fields) {
      if (f.key == key) return true;
    }
    return false;
  }

  size_t ErrorCount() const {
    size_t n = 0;
    for (const Diagnostic& d : diagnostics_) n += d.severity == Diagnostic::Severity::kError;
    return n;
  }

  // --- tasks ---------------------------------------------------------------

  void ParseTask(const YAML::Node& node, const std::string& file, PipelineSpec* spec) {
    if (!node.IsMap()) {
      Error(file, node,
            std::string("each pipeline entry must be a task mapping (id:, type:, ...), found ") +
                KindName(node));
      return;
    }
    std::vector<Field> own = Fields(node, file, kTaskKeys, "a task");
    std::vector<Field> fields;
    for (const Field& f : own) {
      if (f.key != "extends") continue;
      std::string name;
      if (!GetString(f, &name)) continue;
      auto t = templates_.find(name);
      if (t == templates_.end()) {
        std::vector<std::string> names;
        for (const auto& [n, unused] : templates_) names.push_back(n);
        Error(At(f), "unknown template " + Quote(name) + DidYouMean(name, names) +
                         (templates_.empty() ? " (no templates are defined or imported)" : ""));
        continue;
      }
      for (const Field& tf : t->second.fields) {
        if (!HasKey(own, tf.key)) fields.push_back(tf);
      }
    }
    for (const Field& f : own) {
      if (f.key != "extends") fields.push_back(f);
    }

    TaskSpec task;
    task.where = Loc(file, node.Mark());
    std::map<std::string, const Field*> by_key;
    for (const Field& f : fields) by_key[f.key] = &f;

    bool has_id = false;
    if (auto it = by_key.find("id"); it != by_key.end()) {
      has_id = GetString(*it->second, &task.id);
      if (has_id && !MatchesIdChars(task.id)) {
        Error(At(*it->second),
              "task id " + Quote(task.id) + " must be lowercase letters, digits and _");
      }
    } else {
      Error(task.where, "task has no 'id'");
    }
    const std::string label = has_id ? "task " + Quote(task.id) : std::string("task");

    bool has_type = false;
    if (auto it = by_key.find("type"); it != by_key.end()) {
      std::string type;
      if (GetChoice(*it->second, kTaskTypes, &type)) {
        has_type = true;
        static const TaskType kByIndex[] = {TaskType::kShell, TaskType::kPython, TaskType::kHttp,
                                            TaskType::kDb, TaskType::kNoop};
        task.type =
            kByIndex[std::find(kTaskTypes.begin(), kTaskTypes.end(), type) - kTaskTypes.begin()];
      }
    } else if (!HasKey(own, "extends")) {  // an unknown template was reported already
      Error(task.where, label + " has no 'type' (one of shell, python, http, db, noop)");
    }

    for (const Field& f : fields) {
      auto owner = TypeOfKey().find(f.key);
      if (has_type && owner != TypeOfKey().end() && owner->second != task.type) {
        Error(KeyAt(f), Quote(f.key) + " is not a field of " + ToString(task.type) + " tasks (" +
                            ToString(owner->second) + " tasks use it)");
        continue;
      }
      ParseTaskField(f, label, &task);
    }

    if (has_type) {
      auto require = [&](const char* key, bool present) {
        if (!present && !by_key.count(key)) {
          Error(task.where,
                std::string(ToString(task.type)) + " " + label + " needs '" + key + "'");
        }
      };
      switch (task.type) {
        case TaskType::kShell:
          require("command", !task.command.empty());
          break;
        case TaskType::kPython:
          require("script", !task.script.empty());
          break;
        case TaskType::kHttp:
          require("url", !task.url.empty());
          break;
        case TaskType::kDb:
          require("host", !task.db_host.empty());
          break;
        case TaskType::kNoop:
          break;
      }
    }
    if (has_id) spec->tasks.push_back(std::move(task));
  }

  void ParseTaskField(const Field& f, const std::string& label, TaskSpec* task) {
    const std::string& k = f.key;
    if (k == "id" || k == "type") return;  // handled first
    if (k == "command") {
      GetString(f, &task->command);
    } else if (k == "workdir") {
      GetString(f, &task->workdir);
    } else if (k == "script") {
      std::string script;
      if (!GetString(f, &script)) return;
      fs::path p = fs::path(script).is_absolute() ? fs::path(script) : base_dir_ / script;
      p = p.lexically_normal();
      std::error_code ec;
      if (!fs::is_regular_file(p, ec)) {
        Error(At(f), "script " + Quote(script) + " not found (looked for " + p.string() + ")");
        return;
      }
      task->script = p.string();
    } else if (k == "args") {
      GetStringList(f, &task->args);
    } else if (k == "url") {
      if (GetString(f, &task->url) && !StartsWith(task->url, "http://") &&
          !StartsWith(task->url, "https://")) {
        Error(At(f), "'url' must start with http:// or https://");
      }
    } else if (k == "method") {
      std::string method;
      if (!GetString(f, &method)) return;
      for (char& c : method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      if (std::find(kHttpMethods.begin(), kHttpMethods.end(), method) == kHttpMethods.end()) {
        Error(At(f),
              "unknown HTTP method " + Quote(f.value.Scalar()) + DidYouMean(method, kHttpMethods));
        return;
      }
      task->method = method;
    } else if (k == "headers") {
      GetStringMap(f, /*env_names=*/false, &task->headers);
    } else if (k == "body") {
      GetString(f, &task->body, /*allow_empty=*/true);
    } else if (k == "expect_status") {
      GetIntList(f, 100, 599, &task->expect_status);
    } else if (k == "host") {
      if (!GetString(f, &task->db_host)) return;
      bool ok = false;
      for (const char* scheme : {"postgres://", "postgresql://", "mysql://", "sqlite://"}) {
        if (StartsWith(task->db_host, scheme) && task->db_host.size() > std::strlen(scheme))
          ok = true;
      }
      if (!ok) {
        Error(At(f), "'host' must be a URL postgres://..., mysql://... or sqlite://..., found " +
                         Quote(task->db_host));
      }
    } else if (k == "sql") {
      GetString(f, &task->sql);
    } else if (k == "depends_on") {
      ParseDependsOn(f, task);
    } else if (k == "trigger") {
      std::string t;
      if (GetChoice(f, {"all", "any"}, &t))
        task->trigger = t == "all" ? Trigger::kAll : Trigger::kAny;
    } else if (k == "retry") {
      ParseRetryField(f, task);
    } else if (k == "timeout") {
      Millis t{0};
      if (!GetDuration(f, &t)) return;
      if (t.count() <= 0) {
        Error(At(f), "'timeout' must be longer than 0s");
        return;
      }
      task->timeout = t;
    } else if (k == "group") {
      if (!GetString(f, &task->group)) return;
      for (char c : task->group) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) {
          Error(At(f), "'group' must be a word of letters, digits, _, - and .");
          return;
        }
      }
    } else if (k == "labels") {
      ParseLabels(f, task);
    } else if (k == "priority") {
      GetInt(f, -1'000'000, 1'000'000, &task->priority);
    } else if (k == "idempotency_key") {
      if (GetString(f, &task->idempotency_key)) CheckKeyTemplate(f, task->idempotency_key);
    } else if (k == "precheck") {
      GetString(f, &task->precheck);
    } else if (k == "env") {
      GetStringMap(f, /*env_names=*/true, &task->env);
    } else if (k == "foreach") {
      GetString(f, &task->foreach);
    } else {
      Error(KeyAt(f), "internal: unhandled task key " + Quote(k) + " in " + label);
    }
  }

  // `labels: [gpu, ssd]`: words a worker must all announce (--labels).
  void ParseLabels(const Field& f, TaskSpec* task) {
    std::vector<std::string> labels;
    if (!GetStringList(f, &labels)) return;
    for (const std::string& label : labels) {
      bool word = !label.empty();
      for (char c : label) {
        word = word &&
               (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
      }
      if (!word) {
        Error(At(f),
              "each label must be a word of letters, digits, _, - and ., found " + Quote(label));
        return;
      }
      if (std::find(task->labels.begin(), task->labels.end(), label) != task->labels.end()) {
        Error(At(f), "label " + Quote(label) + " is listed twice");
        return;
      }
      task->labels.push_back(label);
    }
  }

  void CheckKeyTemplate(const Field& f, const std::string& text) {
    size_t pos = 0;
    while ((pos = text.find("${", pos)) != std::string::npos) {
      size_t end = text.find('}', pos);
      if (end == std::string::npos) {
        Error(At(f), "'idempotency_key' has an unterminated ${...}");
        return;
      }
      std::string name = text.substr(pos + 2, end - pos - 2);
      bool ok = name == "run_id" || name == "task_id" ||
                (StartsWith(name, "params.") && params_.count(name.substr(7)));
      if (!ok) {
        std::string why = StartsWith(name, "params.") ? " (no such param)" : "";
        Error(At(f), "unknown placeholder ${" + name + "} in 'idempotency_key'" + why +
                         "; use ${run_id}, ${task_id} or ${params.NAME}");
      }
      pos = end + 1;
    }
  }

  void ParseDependsOn(const Field& f, TaskSpec* task) {
    auto add_name = [&](const YAML::Node& n) {
      if (n.Scalar().empty()) {
        Error(f.file, n, "a dependency must name a task");
        return;
      }
      task->depends_on.push_back(
          Dependency{n.Scalar(), DependencyCondition::kSuccess, Loc(f.file, n.Mark())});
    };
    auto add_entry = [&](const YAML::Node& n) {
      Dependency d;
      d.where = Loc(f.file, n.Mark());
      bool has_task = false;
      for (const Field& e : Fields(n, f.file, kDependencyKeys, "a dependency entry (task, on)")) {
        if (e.key == "task") {
          has_task = GetString(e, &d.task);
          if (has_task) d.where = At(e);
        } else {
          std::string on;
          if (GetChoice(e, {"success", "failure", "timeout", "done"}, &on)) {
            d.on = on == "success"   ? DependencyCondition::kSuccess
                   : on == "failure" ? DependencyCondition::kFailure
                   : on == "timeout" ? DependencyCondition::kTimeout
                                     : DependencyCondition::kDone;
          }
        }
      }
      if (!has_task) {
        if (!n["task"]) Error(f.file, n, "dependency entry needs 'task'");
        return;
      }
      task->depends_on.push_back(std::move(d));
    };
    if (f.value.IsScalar()) {
      add_name(f.value);
    } else if (f.value.IsMap()) {
      add_entry(f.value);
    } else if (f.value.IsSequence()) {
      for (const YAML::Node& item : f.value) {
        if (item.IsScalar()) {
          add_name(item);
        } else if (item.IsMap()) {
          add_entry(item);
        } else {
          Error(f.file, item,
                std::string("each dependency must be a task name or {task: NAME, on: CONDITION}, "
                            "found ") +
                    KindName(item));
        }
      }
    } else {
      Error(KeyAt(f), "'depends_on' needs a value");
    }
  }

  void ParseRetryField(const Field& f, TaskSpec* task) {
    if (f.value.IsMap()) {
      task->retry = ParseRetryMap(f.value, f.file);
      return;
    }
    std::string ref;
    if (!GetString(f, &ref)) return;
    std::string name = StartsWith(ref, "retry_policy.") ? ref.substr(13) : ref;
    auto it = policies_.find(name);
    if (it == policies_.end()) {
      std::vector<std::string> names;
      for (const auto& [n, unused] : policies_) names.push_back("retry_policy." + n);
      Error(At(f), "unknown retry policy " + Quote(ref) +
                       DidYouMean("retry_policy." + name, names) +
                       (policies_.empty() ? " (no retry_policy is defined or imported)" : ""));
      return;
    }
    task->retry = it->second.policy;  // nullopt if the policy itself had errors (already reported)
  }

  ParseOptions options_;
  std::vector<Diagnostic> diagnostics_;
  std::unordered_set<std::string> reported_;
  fs::path base_dir_;
  std::vector<std::pair<std::string, std::string>> stack_;  // (canonical, display) of open files
  std::set<std::string> loaded_;
  std::map<std::string, NamedPolicy> policies_;
  std::map<std::string, Template> templates_;
  std::map<std::string, std::string> params_;
};

}  // namespace

ParseResult ParsePipelineText(std::string_view yaml, const std::string& path,
                              const ParseOptions& options) {
  Parser parser(options);
  return parser.Run(yaml, path);
}

ParseResult LoadPipelineFile(const std::string& path, const ParseOptions& options) {
  std::string text;
  std::string why = ReadFileText(path, options.max_file_bytes, &text);
  if (!why.empty()) {
    ParseResult result;
    result.diagnostics.push_back(
        Diagnostic{Diagnostic::Severity::kError, SourceLocation{path, 0, 0}, why});
    return result;
  }
  return ParsePipelineText(text, path, options);
}

}  // namespace apollo11::dsl
