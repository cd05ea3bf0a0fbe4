#pragma once
// A problem found in a pipeline file, with the place it was written. The DSL
// reports every problem of a file in one pass as a list of these.

#include <string>
#include <vector>

#include "dsl/pipeline.h"

namespace apollo11::dsl {

struct Diagnostic {
  enum class Severity { kError, kWarning };
  Severity severity = Severity::kError;
  SourceLocation where;  // line/column 0 when the problem concerns the whole file
  std::string message;
};

// "FILE:LINE:COL: error: message" (or "warning:"); "FILE: error: message" when
// the diagnostic has no line.
std::string FormatDiagnostic(const Diagnostic& d);

// "error" or "warning".
const char* ToString(Diagnostic::Severity s);

// True when any diagnostic in `ds` is an error.
bool HasErrors(const std::vector<Diagnostic>& ds);

}  // namespace apollo11::dsl
