// ResolveSecret and ResolveSecrets: files with their mode checked, the
// worker's environment, systemd credentials; errors that name the cause and
// never the value.

#include "executor/secret_resolver.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace ex = apollo11::executor;
namespace dsl = apollo11::dsl;
using apollo11::StatusCode;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/apollo11-secret-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string Write(const std::string& name, const std::string& content, mode_t mode) const {
    const std::string p = path + "/" + name;
    std::ofstream(p) << content;
    ::chmod(p.c_str(), mode);
    return p;
  }
};

ex::EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

dsl::SecretRef Ref(const std::string& text) {
  auto r = dsl::ParseSecretRef(text);
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("a secret reference is file:/ABS, env:NAME or credential:NAME", "[secrets]") {
  CHECK(Ref("file:/etc/apollo11/secrets/db1").source == dsl::SecretRef::Source::kFile);
  CHECK(Ref("env:UPSTREAM_TOKEN").name == "UPSTREAM_TOKEN");
  CHECK(Ref("credential:db.password").source == dsl::SecretRef::Source::kCredential);
  CHECK(dsl::ToString(Ref("env:X")) == "env:X");
  for (const char* bad :
       {"file:relative", "env:1BAD", "credential:../x", "credential:", "vault:x", "plain text"}) {
    INFO(bad);
    auto r = dsl::ParseSecretRef(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidInput);
  }
}

TEST_CASE("a secret file is read without its trailing newline, only when private", "[secrets]") {
  TempDir d;
  auto ok = ex::ResolveSecret(Ref("file:" + d.Write("s", "hunter2\n", 0600)), FakeEnv({}));
  REQUIRE(ok.ok());
  CHECK(*ok == "hunter2");
  CHECK(*ex::ResolveSecret(Ref("file:" + d.Write("r", "ro", 0400)), FakeEnv({})) == "ro");

  auto open = ex::ResolveSecret(Ref("file:" + d.Write("o", "hunter2", 0644)), FakeEnv({}));
  REQUIRE_FALSE(open.ok());
  CHECK(open.status().code() == StatusCode::kPermissionDenied);
  CHECK_THAT(open.status().message(), Catch::Contains("mode 0644"));
  CHECK(open.status().message().find("hunter2") == std::string::npos);
  auto group = ex::ResolveSecret(Ref("file:" + d.Write("g", "x", 0640)), FakeEnv({}));
  CHECK(group.status().code() == StatusCode::kPermissionDenied);

  auto missing = ex::ResolveSecret(Ref("file:" + d.path + "/none"), FakeEnv({}));
  CHECK(missing.status().code() == StatusCode::kNotFound);
  auto dir = ex::ResolveSecret(Ref("file:" + d.path), FakeEnv({}));
  CHECK(dir.status().code() == StatusCode::kInvalidInput);
}

TEST_CASE("env and credential secrets come from the worker's environment", "[secrets]") {
  TempDir d;
  d.Write("db", "credvalue\n", 0644);  // systemd owns the modes of its directory
  auto env = FakeEnv({{"TOKEN", "tok"}, {"CREDENTIALS_DIRECTORY", d.path}});
  CHECK(*ex::ResolveSecret(Ref("env:TOKEN"), env) == "tok");
  CHECK(ex::ResolveSecret(Ref("env:NOPE"), env).status().code() == StatusCode::kNotFound);
  CHECK(*ex::ResolveSecret(Ref("credential:db"), env) == "credvalue");
  CHECK(ex::ResolveSecret(Ref("credential:none"), env).status().code() == StatusCode::kNotFound);
  auto no_dir = ex::ResolveSecret(Ref("credential:db"), FakeEnv({}));
  CHECK_THAT(no_dir.status().message(), Catch::Contains("CREDENTIALS_DIRECTORY"));
}

TEST_CASE("a task's secrets resolve all or nothing, retryable only when a file is missing",
          "[secrets]") {
  TempDir d;
  const std::string good = d.Write("good", "v1", 0600);
  auto env = FakeEnv({{"TOKEN", "tok"}});
  std::map<std::string, std::string> task_env = {{"A", "plain"}, {"TOKEN", "overridden"}};
  CHECK_FALSE(ex::ResolveSecrets({{"P", "file:" + good}, {"TOKEN", "env:TOKEN"}}, env, &task_env));
  CHECK(task_env ==
        std::map<std::string, std::string>{{"A", "plain"}, {"P", "v1"}, {"TOKEN", "tok"}});

  std::map<std::string, std::string> untouched;
  auto missing = ex::ResolveSecrets({{"P", "file:" + good}, {"Q", "file:" + d.path + "/gone"}}, env,
                                    &untouched);
  REQUIRE(missing);
  CHECK(missing->retryable);
  CHECK_THAT(missing->error, Catch::Contains("secret Q (file:"));
  CHECK(untouched.empty());

  auto mode = ex::ResolveSecrets({{"P", "file:" + d.Write("open", "v", 0604)}}, env, &untouched);
  REQUIRE(mode);
  CHECK_FALSE(mode->retryable);
  auto unset = ex::ResolveSecrets({{"P", "env:UNSET"}}, env, &untouched);
  REQUIRE(unset);
  CHECK_FALSE(unset->retryable);
  CHECK(untouched.empty());
}
