// `apollo11 validate FILE... [--strict] [--json] [--library DIR]...`: checks pipeline files
// without running anything. Exit 0 when every file is valid (warnings go to
// stderr), 2 when any is not.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.h"
#include "dsl/dag.h"
#include "dsl/parser.h"

namespace apollo11::cli {
namespace {

struct ValidateOptions {
  std::vector<std::string> files;
  bool strict = false;
  bool json = false;
  std::vector<std::string> library_dirs;
};

// The name stdin's pipeline goes by in diagnostics; its relative imports
// resolve in the current directory (see docs/dsl.md).
constexpr const char* kStdinName = "<stdin>";

// `validate -`: the pipeline piped in, read whole (up to the parser's file
// size limit).
dsl::ParseResult LoadStdin(const dsl::ParseOptions& options) {
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) {
    text.append(buf, n);
    if (text.size() > options.max_file_bytes) {
      dsl::Diagnostic too_large;
      too_large.where.file = kStdinName;
      too_large.message = "more than " + std::to_string(options.max_file_bytes) +
                          " bytes on stdin; a pipeline may not be larger";
      dsl::ParseResult over;
      over.diagnostics.push_back(std::move(too_large));
      return over;
    }
  }
  return dsl::ParsePipelineText(text, kStdinName, options);
}

int RunValidate(const ValidateOptions& options) {
  dsl::ParseOptions parse_options;
  parse_options.strict = options.strict;
  parse_options.library_dirs = options.library_dirs;
  nlohmann::json problems = nlohmann::json::array();
  bool all_valid = true;
  for (const std::string& file : options.files) {
    dsl::ParseResult result =
        file == "-" ? LoadStdin(parse_options) : dsl::LoadPipelineFile(file, parse_options);
    for (const dsl::Diagnostic& d : result.diagnostics) {
      if (options.json) {
        problems.push_back({{"file", d.where.file},
                            {"line", d.where.line},
                            {"column", d.where.column},
                            {"severity", dsl::ToString(d.severity)},
                            {"message", d.message}});
      } else {
        std::fprintf(stderr, "%s\n", dsl::FormatDiagnostic(d).c_str());
      }
    }
    if (!result.ok()) {
      all_valid = false;
      continue;
    }
    if (!options.json) {
      dsl::DagSummary s = dsl::Summarize(*result.pipeline);
      std::printf("%s: ok: %zu tasks, %zu edges, longest chain %d (%s -> %s)\n",
                  file == "-" ? kStdinName : file.c_str(), s.tasks, s.edges, s.depth,
                  s.chain_start.c_str(), s.chain_end.c_str());
    }
  }
  if (options.json) {
    // Messages quote the user's text, which need not be valid UTF-8.
    std::string out = problems.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    std::printf("%s\n", out.c_str());
  }
  return all_valid ? kExitOk : kExitInvalidInput;
}

}  // namespace

void AddLibraryOption(CLI::App* cmd, std::vector<std::string>* dirs) {
  cmd->add_option("--library", *dirs,
                  "a directory imports may also resolve in (besides the pipeline's own tree); "
                  "repeatable")
      ->allow_extra_args(false);  // one directory per --library: FILE stays positional
}

void AddValidateCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "check pipeline files (fields, imports, dependencies, cycles) without running");
  cmd->add_option("files", options->files, "pipeline YAML files; - reads one from stdin")
      ->required();
  cmd->add_flag("--strict", options->strict, "treat a pipeline name without a domain as an error");
  AddLibraryOption(cmd, &options->library_dirs);
  cmd->add_flag("--json", options->json,
                "print every problem as a JSON array {file,line,column,severity,message}");
  cmd->callback([options, exit_code] { *exit_code = RunValidate(*options); });
}

}  // namespace apollo11::cli
