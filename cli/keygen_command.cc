// `apollo11 keygen PREFIX [--force]`: writes a CURVE key pair to PREFIX.key
// (secret, mode 0600) and PREFIX.pub (public) and prints the public key.
// Exit 0 on success, 2 if a file exists and --force was not given (or the
// prefix is unusable), 3 if keys cannot be generated or written.
#include <sys/stat.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "transport/security.h"

namespace apollo11::cli {
namespace {

struct KeygenOptions {
  std::string prefix;
  bool force = false;
};

bool PathExists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

int RunKeygen(const KeygenOptions& options) {
  if (options.prefix.empty() || options.prefix.back() == '/') {
    std::fprintf(stderr, "apollo11 keygen: PREFIX must name a file, e.g. keys/worker1\n");
    return kExitInvalidInput;
  }
  const std::string key_path = options.prefix + ".key";
  const std::string pub_path = options.prefix + ".pub";
  if (!options.force) {
    for (const std::string& path : {key_path, pub_path}) {
      if (PathExists(path)) {
        std::fprintf(stderr, "apollo11 keygen: %s exists; use --force to replace it\n",
                     path.c_str());
        return kExitInvalidInput;
      }
    }
  }
  auto keys = transport::GenerateKeyPair();
  if (!keys.ok()) {
    std::fprintf(stderr, "apollo11 keygen: %s\n", keys.status().ToString().c_str());
    return kExitInternal;
  }
  Status saved = transport::SaveKeyPair(*keys, options.prefix);
  if (!saved.ok()) {
    std::fprintf(stderr, "apollo11 keygen: %s\n", saved.ToString().c_str());
    return kExitInternal;
  }
  std::fprintf(stderr, "wrote %s (secret, mode 0600) and %s\n", key_path.c_str(), pub_path.c_str());
  std::printf("%s\n", keys->public_z85.c_str());
  return kExitOk;
}

}  // namespace

void AddKeygenCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<KeygenOptions>();
  CLI::App* cmd = app.add_subcommand(
      "keygen",
      "Write a CURVE key pair to PREFIX.key (secret) and PREFIX.pub; print the public key");
  cmd->add_option("PREFIX", options->prefix, "Path prefix of the key files")->required();
  cmd->add_flag("--force", options->force, "Replace existing key files");
  cmd->callback([options, exit_code] { *exit_code = RunKeygen(*options); });
}

}  // namespace apollo11::cli
