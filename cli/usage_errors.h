#pragma once
// Usage errors worded for a person: an unknown subcommand gets "did you
// mean", a number out of range says what range, in words, instead of
// CLI11's range text. Shared by `apollo11` and `apollo11-node`.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace apollo11::cli {

// When argv[1] is neither an option nor one of `app`'s subcommands, prints
// "PROG: unknown command 'X' (did you mean 'Y'?); commands: ..." on stderr
// and returns the exit code for invalid input; otherwise nullopt (parse).
std::optional<int> CheckSubcommand(const CLI::App& app, int argc, const char* const* argv);

// A check for an integer option: accepts whole numbers of at least `min`,
// and rejects anything else with "must be a whole number of at least MIN
// (got X)".
CLI::Validator AtLeast(long long min);

// A check for a positive number of seconds (a double option such as
// --timeout): rejects 0, negatives and non-numbers in words.
CLI::Validator PositiveSeconds();

}  // namespace apollo11::cli
