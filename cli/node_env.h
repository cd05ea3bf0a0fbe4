#pragma once
// What resolving a node's configuration needs from the machine: key and
// token files, the host name, the environment. One real implementation
// (SystemNodeEnv) and a fake in tests keep ResolveNodeConfig free of I/O.

#include <set>
#include <string>

#include "common/status.h"
#include "transport/security.h"

namespace apollo11::cli {

class NodeEnv {
 public:
  virtual ~NodeEnv() = default;
  // transport::LoadKeyPair / LoadPublicKey / LoadAuthorizedKeys of `path`.
  virtual Result<transport::CurveKeyPair> LoadKeyPair(const std::string& path) = 0;
  virtual Result<std::string> LoadPublicKey(const std::string& path) = 0;
  // The authorized keys with their roles (transport::LoadKeyRoles).
  virtual Result<transport::KeyRoleMap> LoadAuthorizedKeys(const std::string& path) = 0;
  // The first line of `path` (at most 4095 bytes, as read, newline kept);
  // "" for an empty file. An error's message is the system's reason alone.
  virtual Result<std::string> ReadFirstLine(const std::string& path) = 0;
  // The value of environment variable `name`; "" when unset.
  virtual std::string Getenv(const std::string& name) = 0;
  virtual std::string Hostname() = 0;
  // `path` made absolute against the working directory and normalized.
  virtual std::string AbsolutePath(const std::string& path) = 0;
  // Hardware threads (0 when unknown).
  virtual unsigned Cores() = 0;
};

// The real machine.
class SystemNodeEnv : public NodeEnv {
 public:
  Result<transport::CurveKeyPair> LoadKeyPair(const std::string& path) override;
  Result<std::string> LoadPublicKey(const std::string& path) override;
  Result<transport::KeyRoleMap> LoadAuthorizedKeys(const std::string& path) override;
  Result<std::string> ReadFirstLine(const std::string& path) override;
  std::string Getenv(const std::string& name) override;
  std::string Hostname() override;
  std::string AbsolutePath(const std::string& path) override;
  unsigned Cores() override;
};

}  // namespace apollo11::cli
