#pragma once
// Helpers for the DSL tests: a real temporary directory for pipeline files and
// lookups over diagnostics.

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "dsl/parser.h"

namespace apollo11::dsl::testing {

// A fresh directory under /tmp, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/apollo11-dsl-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Writes `text` to `relative` (creating folders) and returns the full path.
  std::string Write(const std::string& relative, const std::string& text) const {
    std::filesystem::path p = std::filesystem::path(path_) / relative;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::string Path(const std::string& relative) const { return path_ + "/" + relative; }

 private:
  std::string path_;
};

// All diagnostics, one per line, for INFO() on failure.
inline std::string Dump(const ParseResult& r) {
  std::string out;
  for (const Diagnostic& d : r.diagnostics) out += FormatDiagnostic(d) + "\n";
  return out;
}

// The first diagnostic of `severity` whose message contains `text`, or nullptr.
inline const Diagnostic* Find(const ParseResult& r, const std::string& text,
                              Diagnostic::Severity severity = Diagnostic::Severity::kError) {
  for (const Diagnostic& d : r.diagnostics) {
    if (d.severity == severity && d.message.find(text) != std::string::npos) return &d;
  }
  return nullptr;
}

inline size_t CountErrors(const ParseResult& r) {
  size_t n = 0;
  for (const Diagnostic& d : r.diagnostics) n += d.severity == Diagnostic::Severity::kError;
  return n;
}

}  // namespace apollo11::dsl::testing
