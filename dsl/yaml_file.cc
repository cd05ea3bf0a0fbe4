#include "dsl/yaml_file.h"

#include <memory>

#include "dsl/diagnostic.h"
#include "dsl/field_reader.h"
#include "dsl/parser.h"
#include "dsl/yaml_guard.h"

namespace apollo11::dsl {

Result<std::shared_ptr<const YamlTree>> ParseYamlText(std::string_view text,
                                                      const std::string& name, size_t max_bytes) {
  ParseOptions options;  // the guard refuses text over max_file_bytes
  options.max_file_bytes = max_bytes;
  options.max_expanded_bytes = max_bytes;
  internal::FieldReader report;
  internal::YamlGuard guard(options, &report);
  guard.AllowEmpty();
  std::shared_ptr<const YamlTree> tree = guard.Parse(text, name);
  if (tree) return tree;
  for (const Diagnostic& d : report.diagnostics()) {
    if (d.severity == Diagnostic::Severity::kError) {
      return Status::InvalidInput(FormatDiagnostic(d));
    }
  }
  return Status::InvalidInput(name + ": not valid YAML");  // the guard always says why
}

Result<std::shared_ptr<const YamlTree>> LoadYamlFile(const std::string& path, size_t max_bytes) {
  std::string text;
  const std::string unreadable = internal::ReadFileText(path, max_bytes, &text);
  if (!unreadable.empty()) return Status::InvalidInput(unreadable);
  return ParseYamlText(text, path, max_bytes);
}

}  // namespace apollo11::dsl
