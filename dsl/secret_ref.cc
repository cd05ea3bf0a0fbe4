#include "dsl/secret_ref.h"

#include "dsl/field_reader.h"

namespace apollo11::dsl {
namespace {

constexpr std::string_view kFile = "file:";
constexpr std::string_view kEnv = "env:";
constexpr std::string_view kCredential = "credential:";

bool IsCredentialName(std::string_view s) {
  if (s.empty() || s == "." || s == ".." || s.size() > 255) return false;
  for (char c : s) {
    if (c == '/' || c == '\0') return false;
  }
  return true;
}

}  // namespace

Result<SecretRef> ParseSecretRef(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidInput(why + " (a secret reference is file:/ABS/PATH, env:NAME or " +
                                "credential:NAME), found '" + std::string(text) + "'");
  };
  SecretRef ref;
  if (text.starts_with(kFile)) {
    ref.source = SecretRef::Source::kFile;
    ref.name = std::string(text.substr(kFile.size()));
    if (ref.name.empty() || ref.name[0] != '/')
      return bad("a secret file must be an absolute path");
    if (ref.name.find('\0') != std::string::npos) return bad("a secret file path holds a NUL");
    return ref;
  }
  if (text.starts_with(kEnv)) {
    ref.source = SecretRef::Source::kEnv;
    ref.name = std::string(text.substr(kEnv.size()));
    if (!internal::IsEnvName(ref.name))
      return bad("env: must name a variable ([A-Za-z_][A-Za-z0-9_]*)");
    return ref;
  }
  if (text.starts_with(kCredential)) {
    ref.source = SecretRef::Source::kCredential;
    ref.name = std::string(text.substr(kCredential.size()));
    if (!IsCredentialName(ref.name)) {
      return bad("credential: must name a file of $CREDENTIALS_DIRECTORY (no '/')");
    }
    return ref;
  }
  return bad("unknown secret source");
}

std::string ToString(const SecretRef& ref) {
  switch (ref.source) {
    case SecretRef::Source::kFile:
      return std::string(kFile) + ref.name;
    case SecretRef::Source::kEnv:
      return std::string(kEnv) + ref.name;
    case SecretRef::Source::kCredential:
      return std::string(kCredential) + ref.name;
  }
  return ref.name;
}

}  // namespace apollo11::dsl
