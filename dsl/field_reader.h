#pragma once
// Typed readers for the values of YAML mappings: text, lists, maps, whole
// numbers, durations and choices, each reporting a positioned Diagnostic when
// a value is not what its key needs. The parser's pieces (yaml_guard,
// library, task_parser, parser) share one FieldReader, which holds the
// diagnostics of the whole parse. Internal to dsl/.

#include <map>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "common/duration.h"
#include "dsl/diagnostic.h"
#include "dsl/pipeline.h"
#include "dsl/yaml_tree.h"

namespace apollo11::dsl::internal {

// One key of a mapping, with the file it was written in.
struct Field {
  std::string key;
  YamlNode key_node;
  YamlNode value;
  std::string file;
};

// `file` as a SharedText: the same allocation as the last call's when
// the name is the same (per thread), so a file's locations share one name.
SharedText SharedFileName(const std::string& file);

// FILE:LINE:COL of a yaml-cpp mark (line 0 when it has none); the file
// name is shared with the other locations in that file.
SourceLocation Loc(const std::string& file, const YAML::Mark& mark);
// "FILE:LINE:COL".
std::string LocText(const SourceLocation& l);
// "nothing", "text", "a list" or "a mapping", for "found ..." messages.
const char* KindName(const YamlNode& n);
// Lowercase letters, digits and _, not empty: task ids, policy and template names.
bool MatchesIdChars(std::string_view s);
// An environment variable name: [A-Za-z_][A-Za-z0-9_]*.
bool IsEnvName(std::string_view s);
bool StartsWith(const std::string& s, std::string_view prefix);
// 's' in single quotes.
std::string Quote(std::string_view s);
// True when `fields` has one with `key`.
bool HasKey(const std::vector<Field>& fields, const std::string& key);

class FieldReader {
 public:
  // Records a problem; one identical to an earlier one is dropped (a
  // template's bad value is seen once per task extending it).
  void Error(const SourceLocation& where, std::string message);
  void Error(const std::string& file, const YamlNode& at, std::string message);
  void Warning(const SourceLocation& where, std::string message);
  void Add(Diagnostic::Severity s, const SourceLocation& where, std::string message);
  size_t ErrorCount() const;
  // Everything recorded so far; the caller may sort or take it.
  std::vector<Diagnostic>& diagnostics() { return diagnostics_; }

  // The keys of `map` that are in `allowed`; reports unknown keys (with a
  // "did you mean" among `allowed`) and duplicates. `what` names the mapping.
  std::vector<Field> Fields(const YamlNode& map, const std::string& file,
                            const std::vector<std::string>& allowed, const std::string& what);

  // Where a field's value, or its key, was written.
  static SourceLocation At(const Field& f) { return Loc(f.file, f.value.Mark()); }
  static SourceLocation KeyAt(const Field& f) { return Loc(f.file, f.key_node.Mark()); }

  // Each Get* sets *out and returns true, or reports why not and returns false.
  bool GetString(const Field& f, std::string* out, bool allow_empty = false);
  bool ScalarToInt(const YamlNode& n, const std::string& file, const std::string& what, long min,
                   long max, long* out);
  bool GetInt(const Field& f, long min, long max, int* out);
  // A whole number or a list of them.
  bool GetIntList(const Field& f, long min, long max, std::vector<int>* out);
  bool GetDuration(const Field& f, Millis* out);
  // One word from `choices`, reported with a "did you mean".
  bool GetChoice(const Field& f, const std::vector<std::string>& choices, std::string* out);
  bool GetStringList(const Field& f, std::vector<std::string>* out);
  // A mapping of text to text; `env_names` checks keys are variable names.
  bool GetStringMap(const Field& f, bool env_names, std::map<std::string, std::string>* out);

 private:
  std::vector<Diagnostic> diagnostics_;
  std::unordered_set<std::string> reported_;
};

}  // namespace apollo11::dsl::internal
