#pragma once
// Which secrets a task may read on this worker. A pipeline author is not
// trusted with other pipelines' secrets, so a reference is honoured only
// inside the task's scope, decided by its pipeline's name (the coordinator
// sets APOLLO11_PIPELINE in every DISPATCH) and the worker's secrets
// directory (--secrets-dir):
//
//   file:PATH         PATH, with every symlink resolved, lies in
//                     DIR/PIPELINE/ or DIR/DOMAIN/, where DOMAIN is the
//                     pipeline name's first word ("shop" of "shop.orders")
//   credential:NAME   NAME starts with "DOMAIN." (systemd credentials are
//                     one flat directory per service)
//   env:NAME          not scoped: every task on a worker inherits the
//                     worker's environment anyway (docs/dsl.md, "Secrets")
//
// The path is checked as written before anything is opened, so a reference
// out of scope learns nothing about the file it names beyond "not yours";
// once opened, the file's real path (/proc/self/fd) is checked again, so a
// symlink (planted by a task that can write the directory, say) cannot lead
// out, and nothing can be swapped in between.

#include <string>

#include "common/status.h"
#include "dsl/secret_ref.h"

namespace apollo11::executor {

struct SecretScope {
  std::string dir;       // the worker's secrets directory
  std::string pipeline;  // the task's pipeline name
};

// The pipeline name's first dot-separated word.
std::string PipelineDomain(const std::string& pipeline);

// Ok when `ref` may be read for a task of `scope` as written (a path with
// `..` never may); otherwise PermissionDenied saying where this pipeline's
// secrets may live.
Status CheckSecretScope(const dsl::SecretRef& ref, const SecretScope& scope);

// Ok when the open file `fd` (named `path` in messages) really lies in the
// pipeline's or its domain's directory; PermissionDenied otherwise.
Status CheckOpenedSecret(int fd, const std::string& path, const SecretScope& scope);

}  // namespace apollo11::executor
