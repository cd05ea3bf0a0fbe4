#include "dsl/diagnostic.h"

namespace apollo11::dsl {

const char* ToString(Diagnostic::Severity s) {
  return s == Diagnostic::Severity::kError ? "error" : "warning";
}

std::string FormatDiagnostic(const Diagnostic& d) {
  std::string out = d.where.file;
  if (d.where.line > 0) {
    // Appended piece by piece: `":" + std::to_string(...)` makes GCC 12 at
    // -O3 warn (-Wrestrict) inside std::string, a known false positive.
    out += ':';
    out += std::to_string(d.where.line);
    out += ':';
    out += std::to_string(d.where.column);
  }
  out += ": ";
  out += ToString(d.severity);
  out += ": ";
  out += d.message;
  return out;
}

bool HasErrors(const std::vector<Diagnostic>& ds) {
  for (const Diagnostic& d : ds) {
    if (d.severity == Diagnostic::Severity::kError) return true;
  }
  return false;
}

}  // namespace apollo11::dsl
