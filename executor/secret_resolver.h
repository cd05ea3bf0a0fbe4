#pragma once
// Reading a task's secrets where the task runs. The one place a secret's value
// is read: the executor calls ResolveSecrets at launch, and any other code that
// needs a secret (a db task's password) calls ResolveSecret. Values go only
// into the returned string or the task's environment: never into an error
// message, a log line or anything sent back to the coordinator.

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "common/status.h"
#include "dsl/secret_ref.h"
#include "executor/secret_scope.h"

namespace apollo11::executor {

// The largest secret read from a file or credential, in bytes.
inline constexpr size_t kMaxSecretBytes = 64 << 10;

// Looks up an environment variable of the worker; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process's own environment (getenv).
EnvLookup ProcessEnv();

// The value `ref` names for a task of `scope`, read now. A file or
// credential loses one trailing newline. Errors name the reference and the
// cause, never the value:
//   PermissionDenied  out of the pipeline's scope (secret_scope.h)
//   NotFound          the file or credential does not exist, the variable is
//                     unset, $CREDENTIALS_DIRECTORY is unset
//   PermissionDenied  a secret file readable or writable by group or others
//                     (its mode is in the message), or not readable by us
//   InvalidInput      not a regular file, or larger than kMaxSecretBytes
//   Io                the read failed
Result<std::string> ResolveSecret(const dsl::SecretRef& ref, const SecretScope& scope,
                                  const EnvLookup& env);

// Why a task's secrets could not be resolved.
struct SecretFailure {
  std::string error;  // "secret DB_PASSWORD (file:/x): ..."; no value
  // True only when a file or credential does not exist (yet): provisioning
  // may catch up, so the task's retry policy applies. A wrong mode, an unset
  // variable, a bad reference or one out of scope fails for good.
  bool retryable = false;
};

// Resolves every `refs` entry (variable name -> reference text) into `task_env`,
// overriding what is there. Stops at the first failure, leaving `task_env`
// without any value resolved so far.
std::optional<SecretFailure> ResolveSecrets(const std::map<std::string, std::string>& refs,
                                            const SecretScope& scope, const EnvLookup& env,
                                            std::map<std::string, std::string>* task_env);

}  // namespace apollo11::executor
