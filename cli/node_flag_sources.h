#pragma once
// Where `apollo11-node start`'s settings come from besides the command line,
// in this order of precedence (the first that gives a flag wins):
//   1. the command line;
//   2. the environment: APOLLO11_<FLAG>, the long flag name upper-cased with
//      dashes as underscores (--state-dir: APOLLO11_STATE_DIR; a flag such
//      as --insecure takes true/false/1/0; --labels a comma-separated list);
//   3. the YAML config file: --config (or APOLLO11_CONFIG), else
//      /etc/apollo11/node.yaml when that file exists;
//   4. the built-in default (NodeFlags).

#include <CLI/CLI.hpp>
#include <string>

#include "common/status.h"

namespace apollo11::cli {

// The config file read when neither --config nor APOLLO11_CONFIG names one.
inline constexpr const char* kDefaultNodeConfigFile = "/etc/apollo11/node.yaml";

// "APOLLO11_STATE_DIR" for "--state-dir".
std::string FlagEnvName(const std::string& long_flag);

// Lets every option of `start` (but --help) be given as FlagEnvName(name);
// CLI11 reads the variable during parsing when the command line does not
// give the option.
void BindFlagEnvironment(CLI::App* start);

// The config file to read: `given` (from the command line or environment)
// when not empty, else kDefaultNodeConfigFile when `default_exists`, else "".
std::string NodeConfigPath(const std::string& given, bool default_exists);

// Fills every option of `start` that neither the command line nor the
// environment gave from the same key in the YAML mapping at `path` (an empty
// file has no keys). The key `alerts` (rules, see alerts/alert_config.h) is
// skipped. InvalidInput naming the file (and line) for an unreadable file, a
// document that is not a mapping, an unknown key (with a "did you mean" for
// a near miss) or a value the option refuses.
Status ApplyNodeConfigFile(CLI::App& start, const std::string& path);

// InvalidInput naming the first flag that was given (on the command line,
// in the environment or in the config file: call after
// ApplyNodeConfigFile) and belongs to a role other than `role`: such a flag
// would do nothing on this node. Role "all" has every role's flags.
Status CheckFlagsFitRole(const CLI::App& start, const std::string& role);

}  // namespace apollo11::cli
