#pragma once
// Reads pipeline YAML into a PipelineSpec: imports resolved, templates
// applied, named retry policies looked up, every field and the whole DAG
// checked. Never throws; every problem comes back as a positioned Diagnostic.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dsl/diagnostic.h"
#include "dsl/pipeline.h"

namespace apollo11::dsl {

struct ParseOptions {
  bool strict = false;  // warnings that matter (name prefix) become errors
  // Per file, imports included: a generated 1M-task DAG is about 60 MB. Its
  // YAML tree (dsl/yaml_tree.h) takes about 4 times the file while it is
  // read; the pipeline model more (1.1 GB in all for that DAG).
  size_t max_file_bytes = size_t{128} << 20;
  // Per file, its size with every alias written out (a scalar's text plus 2
  // bytes a node); and, separately, the template fields copied into tasks.
  size_t max_expanded_bytes = size_t{128} << 20;
  int max_nesting = 64;              // YAML nesting depth refused before parsing
  int chain_warning_threshold = 50;  // warn when the longest chain has more tasks
  // Imports resolve inside the pipeline file's directory tree or inside one
  // of these directories (searched in order for a relative import not found
  // beside the importing file); symbolic links are followed before checking.
  std::vector<std::string> library_dirs;
  // False when the text is the whole input and the reader's disk is not
  // the author's (a pipeline registered over HTTP is parsed on the
  // coordinator): nothing is read or looked up on disk for it. Imports and a
  // db task's `script:` file are then refused, and a python `script:` must
  // be an absolute path, which the worker runs and nothing here checks.
  bool read_files = true;
};

struct ParseResult {
  std::optional<PipelineSpec> pipeline;  // set only when there are no errors
  std::vector<Diagnostic> diagnostics;   // errors and warnings, in file order per check

  // True when the pipeline parsed without errors (warnings allowed).
  bool ok() const { return pipeline.has_value(); }
};

// Reads and checks the pipeline file at `path`; imports and python scripts are
// resolved relative to it.
ParseResult LoadPipelineFile(const std::string& path, const ParseOptions& options = {});

// Checks `yaml` as if it were the file `path_for_messages_and_imports`: that
// path names the file in diagnostics, gives the default pipeline name (its
// stem), and anchors relative imports and scripts.
ParseResult ParsePipelineText(std::string_view yaml,
                              const std::string& path_for_messages_and_imports,
                              const ParseOptions& options = {});

}  // namespace apollo11::dsl
