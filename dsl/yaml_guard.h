#pragma once
// The boundary between untrusted pipeline text and yaml-cpp: the size,
// encoding, nesting and scanner-hazard checks made before yaml-cpp sees the
// text, and yaml-cpp's exceptions turned into positioned diagnostics.
// Internal to dsl/.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "dsl/field_reader.h"
#include "dsl/parser.h"
#include "dsl/yaml_tree.h"

namespace apollo11::dsl::internal {

// Reads the file at `path` into `out`; returns "" or why it cannot be read
// (missing, not a regular file, larger than `max_bytes`, a read error).
std::string ReadFileText(const std::string& path, size_t max_bytes, std::string* out);

class YamlGuard {
 public:
  // Reports through `report`, which must outlive the guard.
  YamlGuard(const ParseOptions& options, FieldReader* report)
      : options_(options), report_(report) {}

  // The one YAML document of `text` (the file `file`), or nullptr after
  // reporting why not: too large, not UTF-8, binary, empty, nested deeper
  // than options.max_nesting, a yaml-cpp scanner hazard, invalid YAML that
  // yaml-cpp would misread (dsl/yaml_prescan.h), an unclosed quote or
  // bracket, malformed YAML, more than one document, larger than
  // options.max_expanded_bytes with its aliases written out, or an alias
  // inside the node it refers to. Never throws for yaml-cpp's parse errors.
  // An imported file (`imported`) may be any file the user can read, so its
  // diagnostics never quote its text.
  static constexpr bool kImported = true;
  std::shared_ptr<const YamlTree> Parse(std::string_view text, const std::string& file,
                                        bool imported = false);

  // From now on an empty file (blank, comments only, or a null document) is
  // a tree whose root is undefined or null, not an error: for configuration
  // files, where it means "nothing set".
  void AllowEmpty() { allow_empty_ = true; }

 private:
  // Reports what ReadYamlTree refused; `unclosed` names a bracket the
  // pre-scan saw left open, added to yaml-cpp's own message.
  void ReportReadProblem(const YamlReadProblem& p, const std::string& file, bool imported,
                         const std::string& unclosed);
  // The checks of the raw bytes; false after reporting a problem.
  bool CheckBytes(std::string_view text, const std::string& file);

  ParseOptions options_;
  FieldReader* report_;
  bool allow_empty_ = false;
};

}  // namespace apollo11::dsl::internal
