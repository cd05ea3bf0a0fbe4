#include "executor/secret_resolver.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace apollo11::executor {
namespace {

std::string ModeText(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// Reads a secret file; `check_mode` refuses one group/others may read or
// write; `scope`, when given, one whose real path lies out of it.
Result<std::string> ReadSecretFile(const std::string& path, bool check_mode,
                                   const SecretScope* scope) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return Status::NotFound(path + " does not exist");
    if (err == EACCES) return Status::PermissionDenied(path + " is not readable by the worker");
    return Status::Io("cannot open " + path + ": " + std::strerror(err));
  }
  struct stat st {};
  std::string value;
  Status status = scope != nullptr ? CheckOpenedSecret(fd, path, *scope) : Status::Ok();
  if (!status.ok()) {
    // out of scope: nothing more is said about the file
  } else if (::fstat(fd, &st) != 0) {
    status = Status::Io("cannot stat " + path + ": " + std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    status = Status::InvalidInput(path + " is not a regular file");
  } else if (check_mode && (st.st_mode & 077) != 0) {
    status = Status::PermissionDenied(path + " has mode " + ModeText(st.st_mode) +
                                      ": group and others must have no access (chmod 600 it)");
  } else if (st.st_size > static_cast<off_t>(kMaxSecretBytes)) {
    status = Status::InvalidInput(path + " is larger than " + std::to_string(kMaxSecretBytes) +
                                  " bytes");
  } else {
    char buf[4096];
    while (status.ok()) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        status = Status::Io("cannot read " + path + ": " + std::strerror(errno));
        break;
      }
      value.append(buf, static_cast<size_t>(n));
      if (value.size() > kMaxSecretBytes) {
        status = Status::InvalidInput(path + " is larger than " + std::to_string(kMaxSecretBytes) +
                                      " bytes");
      }
    }
  }
  ::close(fd);
  if (!status.ok()) return status;
  if (!value.empty() && value.back() == '\n') value.pop_back();
  if (!value.empty() && value.back() == '\r') value.pop_back();
  return value;
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

Result<std::string> ResolveSecret(const dsl::SecretRef& ref, const SecretScope& scope,
                                  const EnvLookup& env) {
  APOLLO11_RETURN_IF_ERROR(CheckSecretScope(ref, scope));
  switch (ref.source) {
    case dsl::SecretRef::Source::kFile:
      return ReadSecretFile(ref.name, /*check_mode=*/true, &scope);
    case dsl::SecretRef::Source::kEnv: {
      std::optional<std::string> v = env(ref.name);
      if (!v) return Status::NotFound("the worker's environment has no " + ref.name);
      return *v;
    }
    case dsl::SecretRef::Source::kCredential: {
      std::optional<std::string> dir = env("CREDENTIALS_DIRECTORY");
      if (!dir || dir->empty()) {
        return Status::NotFound(
            "$CREDENTIALS_DIRECTORY is not set (the worker is not a systemd service with "
            "LoadCredential=)");
      }
      // systemd owns the directory and its modes; no mode check here.
      return ReadSecretFile(*dir + "/" + ref.name, /*check_mode=*/false, nullptr);
    }
  }
  return Status::Internal("unknown secret source");
}

std::optional<SecretFailure> ResolveSecrets(const std::map<std::string, std::string>& refs,
                                            const SecretScope& scope, const EnvLookup& env,
                                            std::map<std::string, std::string>* task_env) {
  std::map<std::string, std::string> values;
  for (const auto& [name, text] : refs) {
    auto ref = dsl::ParseSecretRef(text);
    if (!ref.ok()) return SecretFailure{"secret " + name + ": " + ref.status().message(), false};
    auto value = ResolveSecret(*ref, scope, env);
    if (!value.ok()) {
      const bool absent =
          value.status().code() == StatusCode::kNotFound &&
          ref->source != dsl::SecretRef::Source::kEnv &&
          !(ref->source == dsl::SecretRef::Source::kCredential && !env("CREDENTIALS_DIRECTORY"));
      return SecretFailure{"secret " + name + " (" + text + "): " + value.status().message(),
                           absent};
    }
    values[name] = std::move(*value);
  }
  for (auto& [name, value] : values) (*task_env)[name] = std::move(value);
  return std::nullopt;
}

}  // namespace apollo11::executor
