#pragma once
// A task's secret: where the worker finds its value. The pipeline, the
// snapshot, the journal and the DISPATCH carry only the reference text; the
// value is read on the worker at launch (executor/secret_resolver.h).
//
// Reference syntax (the value of one `secrets:` entry):
//   file:/ABS/PATH    a file's contents, one trailing newline dropped; the
//                     file must not be readable or writable by group/others
//   env:NAME          the worker's environment variable NAME
//   credential:NAME   a systemd credential: $CREDENTIALS_DIRECTORY/NAME

#include <string>
#include <string_view>

#include "common/status.h"

namespace apollo11::dsl {

struct SecretRef {
  enum class Source { kFile, kEnv, kCredential };
  Source source = Source::kFile;
  std::string name;  // the absolute path, the variable or the credential name

  bool operator==(const SecretRef&) const = default;
};

// Parses one reference; InvalidInput naming what is wrong ("a secret
// reference is file:/ABS/PATH, env:NAME or credential:NAME, found ...").
Result<SecretRef> ParseSecretRef(std::string_view text);

// The reference as the pipeline spells it ("env:TOKEN").
std::string ToString(const SecretRef& ref);

}  // namespace apollo11::dsl
