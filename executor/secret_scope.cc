#include "executor/secret_scope.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "dsl/pipeline.h"

namespace apollo11::executor {
namespace {

// DIR/PIPELINE and DIR/DOMAIN, as written.
std::vector<std::string> ScopeDirs(const SecretScope& scope) {
  const std::string dir = std::filesystem::path(scope.dir).lexically_normal().string();
  const std::string base = dir.ends_with('/') ? dir : dir + "/";
  std::vector<std::string> dirs = {base + scope.pipeline};
  const std::string domain = PipelineDomain(scope.pipeline);
  if (domain != scope.pipeline) dirs.push_back(base + domain);
  return dirs;
}

std::string Where(const SecretScope& scope) {
  const std::vector<std::string> dirs = ScopeDirs(scope);
  std::string where = dirs[0] + "/";
  if (dirs.size() > 1) where += " or " + dirs[1] + "/";
  return where;
}

bool Within(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() + 1 && path.starts_with(dir) && path[dir.size()] == '/';
}

Status OutOfScope(const std::string& what, const SecretScope& scope) {
  return Status::PermissionDenied(what + " is not a secret of pipeline " + scope.pipeline +
                                  ": its files live in " + Where(scope) +
                                  " (--secrets-dir on the worker)");
}

Status CheckPipeline(const SecretScope& scope) {
  if (scope.dir.empty() || scope.dir[0] != '/') {
    return Status::PermissionDenied("this worker has no secrets directory (--secrets-dir)");
  }
  if (!dsl::IsPipelineName(scope.pipeline)) {  // it becomes a directory
    return Status::PermissionDenied("the task's pipeline name '" + scope.pipeline +
                                    "' cannot scope its secrets");
  }
  return Status::Ok();
}

}  // namespace

std::string PipelineDomain(const std::string& pipeline) {
  return pipeline.substr(0, pipeline.find('.'));
}

Status CheckSecretScope(const dsl::SecretRef& ref, const SecretScope& scope) {
  if (ref.source == dsl::SecretRef::Source::kEnv) return Status::Ok();
  APOLLO11_RETURN_IF_ERROR(CheckPipeline(scope));
  if (ref.source == dsl::SecretRef::Source::kCredential) {
    const std::string prefix = PipelineDomain(scope.pipeline) + ".";
    if (ref.name.starts_with(prefix) && ref.name.size() > prefix.size()) return Status::Ok();
    return Status::PermissionDenied("credential:" + ref.name + " is not a secret of pipeline " +
                                    scope.pipeline + ": its credentials' names start with " +
                                    prefix);
  }
  const std::filesystem::path path(ref.name);
  for (const auto& part : path) {
    if (part == "..") return OutOfScope("file:" + ref.name, scope);
  }
  const std::string normal = path.lexically_normal().string();
  for (const std::string& dir : ScopeDirs(scope)) {
    if (Within(normal, dir)) return Status::Ok();
  }
  return OutOfScope("file:" + ref.name, scope);
}

Status CheckOpenedSecret(int fd, const std::string& path, const SecretScope& scope) {
  APOLLO11_RETURN_IF_ERROR(CheckPipeline(scope));
  char real[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), real, sizeof real - 1);
  if (n <= 0) return OutOfScope("file:" + path, scope);
  const std::string opened(real, static_cast<size_t>(n));
  for (const std::string& dir : ScopeDirs(scope)) {
    char* resolved = ::realpath(dir.c_str(), nullptr);
    if (resolved == nullptr) continue;
    const bool inside = Within(opened, resolved);
    ::free(resolved);
    if (inside) return Status::Ok();
  }
  return OutOfScope("file:" + path, scope);
}

}  // namespace apollo11::executor
