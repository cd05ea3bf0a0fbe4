#include "cli/node_env.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

namespace apollo11::cli {

Result<transport::CurveKeyPair> SystemNodeEnv::LoadKeyPair(const std::string& path) {
  return transport::LoadKeyPair(path);
}

Result<std::string> SystemNodeEnv::LoadPublicKey(const std::string& path) {
  return transport::LoadPublicKey(path);
}

Result<transport::KeyRoleMap> SystemNodeEnv::LoadAuthorizedKeys(const std::string& path) {
  return transport::LoadKeyRoles(path);
}

Result<std::string> SystemNodeEnv::ReadFirstLine(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) return Status::Io(std::strerror(errno));
  char line[4096] = {0};
  std::string out;
  if (std::fgets(line, sizeof(line), file) != nullptr) out = line;
  std::fclose(file);
  return out;
}

std::string SystemNodeEnv::Getenv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  return value ? value : "";
}

std::string SystemNodeEnv::Hostname() {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  return host;
}

std::string SystemNodeEnv::AbsolutePath(const std::string& path) {
  std::error_code ec;
  return std::filesystem::absolute(path, ec).lexically_normal().string();
}

unsigned SystemNodeEnv::Cores() { return std::thread::hardware_concurrency(); }

}  // namespace apollo11::cli
