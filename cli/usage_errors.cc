#include "cli/usage_errors.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cli/exit_codes.h"
#include "dsl/suggest.h"

namespace apollo11::cli {

std::optional<int> CheckSubcommand(const CLI::App& app, int argc, const char* const* argv) {
  if (argc < 2) return std::nullopt;
  const std::string word = argv[1];
  if (word.empty() || word[0] == '-') return std::nullopt;
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->check_name(word)) return std::nullopt;
    names.push_back(sub->get_name());
  }
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  std::fprintf(stderr, "%s: unknown command '%s'%s; the commands are: %s\n", app.get_name().c_str(),
               word.c_str(), dsl::DidYouMean(word, names).c_str(), list.c_str());
  return kExitInvalidInput;
}

CLI::Validator AtLeast(long long min) {
  const std::string want = "must be a whole number of at least " + std::to_string(min);
  return CLI::Validator(
      [min, want](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || end == nullptr || *end != '\0') return want + ", not '" + text + "'";
        if (errno == ERANGE) return want + " (" + text + " is far too large)";
        if (v < min) return want + " (got " + text + ")";
        return std::string();
      },
      "");
}

CLI::Validator PositiveSeconds() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(v) || v <= 0) {
          return "must be a number of seconds above 0 (got '" + text + "')";
        }
        return std::string();
      },
      "");
}

}  // namespace apollo11::cli
