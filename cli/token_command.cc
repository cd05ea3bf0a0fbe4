// `apollo11 token create NAME ROLE [--append FILE]`: makes an API token for
// the HTTP port (observability/api_tokens.h). The token goes to stdout, once
// (nothing keeps it: the tokens file holds only its hash); the tokens-file
// line goes to stderr, or with --append into FILE (created mode 0600;
// refused when FILE already names NAME). Exit 0, 2 for a bad name, role or
// file, 3 when no token or file could be written.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "cli/command.h"
#include "observability/api_tokens.h"

namespace apollo11::cli {
namespace {

struct TokenOptions {
  std::string name, role, append;
};

int Fail(int code, const std::string& why) {
  std::fprintf(stderr, "apollo11 token create: %s\n", why.c_str());
  return code;
}

// Appends `line` to `path` (0600 when created) unless the file's
// principals already include `name`.
int AppendLine(const std::string& path, const std::string& name, const std::string& line) {
  if (::access(path.c_str(), F_OK) == 0) {
    auto existing = observability::LoadApiTokens(path);
    if (!existing.ok()) return Fail(kExitInvalidInput, existing.status().message());
    for (const observability::ApiToken& t : *existing) {
      if (t.name == name) {
        return Fail(kExitInvalidInput, path + " already has a token for '" + name +
                                           "': remove its line first to replace it");
      }
    }
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Fail(kExitInternal, path + ": " + std::strerror(errno));
  const std::string text = line + "\n";
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int saved = errno;
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    return Fail(kExitInternal, path + ": " + std::strerror(written ? errno : saved));
  }
  return kExitOk;
}

int RunTokenCreate(const TokenOptions& o) {
  if (!observability::IsPrincipalName(o.name)) {
    return Fail(kExitInvalidInput,
                "'" + o.name + "' is not a principal name (1 to 64 of A-Z a-z 0-9 . _ @ -)");
  }
  if (o.role != "viewer" && o.role != "operator" && o.role != "admin") {
    return Fail(kExitInvalidInput, "ROLE must be viewer, operator or admin (got '" + o.role +
                                       "'; worker is a ZeroMQ role: give workers CURVE keys)");
  }
  auto token = observability::NewApiToken();
  if (!token.ok()) return Fail(kExitInternal, token.status().message());
  const std::string line = observability::TokenLine(o.name, o.role, *token);
  if (!o.append.empty()) {
    if (int rc = AppendLine(o.append, o.name, line); rc != kExitOk) return rc;
    std::fprintf(stderr,
                 "added %s (%s) to %s; a node started with --api-tokens %s takes it after "
                 "SIGHUP (systemctl reload)\n",
                 o.name.c_str(), o.role.c_str(), o.append.c_str(), o.append.c_str());
  } else {
    std::fprintf(stderr, "add this line to the node's tokens file (--api-tokens FILE):\n%s\n",
                 line.c_str());
  }
  std::printf("%s\n", token->c_str());
  return kExitOk;
}

}  // namespace

void AddTokenCommand(CLI::App& app, int* exit_code) {
  CLI::App* token = app.add_subcommand("token", "Make API tokens for the HTTP port");
  token->require_subcommand(1);
  auto options = std::make_shared<TokenOptions>();
  CLI::App* create = token->add_subcommand(
      "create", "Print a new API token for principal NAME with ROLE, and its tokens-file line");
  create->add_option("NAME", options->name, "The principal's name (as logs and records show it)")
      ->required();
  create->add_option("ROLE", options->role, "viewer, operator or admin")->required();
  create->add_option("--append", options->append,
                     "Append the line to this tokens file (created mode 0600)");
  create->callback([options, exit_code] { *exit_code = RunTokenCreate(*options); });
}

}  // namespace apollo11::cli
