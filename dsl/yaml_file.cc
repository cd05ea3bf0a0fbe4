#include "dsl/yaml_file.h"

#include <optional>

#include "dsl/diagnostic.h"
#include "dsl/field_reader.h"
#include "dsl/parser.h"
#include "dsl/yaml_guard.h"

namespace apollo11::dsl {

Result<YAML::Node> LoadYamlFile(const std::string& path, size_t max_bytes) {
  std::string text;
  const std::string unreadable = internal::ReadFileText(path, max_bytes, &text);
  if (!unreadable.empty()) return Status::InvalidInput(unreadable);
  ParseOptions options;
  options.max_file_bytes = max_bytes;
  options.max_expanded_bytes = max_bytes;
  internal::FieldReader report;
  internal::YamlGuard guard(options, &report);
  guard.AllowEmpty();
  std::optional<YAML::Node> root = guard.Parse(text, path);
  if (root.has_value()) return *root;
  for (const Diagnostic& d : report.diagnostics()) {
    if (d.severity == Diagnostic::Severity::kError) {
      return Status::InvalidInput(FormatDiagnostic(d));
    }
  }
  return Status::InvalidInput(path + ": not valid YAML");  // the guard always says why
}

}  // namespace apollo11::dsl
