// ResolveSecret and ResolveSecrets: files with their mode checked, the
// worker's environment, systemd credentials; errors that name the cause and
// never the value; each pipeline reads only its own files and credentials.

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
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
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

// A task of pipeline shop.orders, whose files live in DIR/shop.orders/ or
// DIR/shop/.
ex::SecretScope Shop(const TempDir& d) { return {d.path, "shop.orders"}; }

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
  auto ok =
      ex::ResolveSecret(Ref("file:" + d.Write("shop/s", "hunter2\n", 0600)), Shop(d), FakeEnv({}));
  REQUIRE(ok.ok());
  CHECK(*ok == "hunter2");
  CHECK(*ex::ResolveSecret(Ref("file:" + d.Write("shop/r", "ro", 0400)), Shop(d), FakeEnv({})) ==
        "ro");

  auto open =
      ex::ResolveSecret(Ref("file:" + d.Write("shop/o", "hunter2", 0644)), Shop(d), FakeEnv({}));
  REQUIRE_FALSE(open.ok());
  CHECK(open.status().code() == StatusCode::kPermissionDenied);
  CHECK_THAT(open.status().message(), Catch::Contains("mode 0644"));
  CHECK(open.status().message().find("hunter2") == std::string::npos);
  auto group = ex::ResolveSecret(Ref("file:" + d.Write("shop/g", "x", 0640)), Shop(d), FakeEnv({}));
  CHECK(group.status().code() == StatusCode::kPermissionDenied);

  auto missing = ex::ResolveSecret(Ref("file:" + d.path + "/shop/none"), Shop(d), FakeEnv({}));
  CHECK(missing.status().code() == StatusCode::kNotFound);
  std::filesystem::create_directories(d.path + "/shop/sub");
  auto dir = ex::ResolveSecret(Ref("file:" + d.path + "/shop/sub"), Shop(d), FakeEnv({}));
  CHECK(dir.status().code() == StatusCode::kInvalidInput);
}

TEST_CASE("env and credential secrets come from the worker's environment", "[secrets]") {
  TempDir d;
  d.Write("shop.db", "credvalue\n", 0644);  // systemd owns the modes of its directory
  auto env = FakeEnv({{"TOKEN", "tok"}, {"CREDENTIALS_DIRECTORY", d.path}});
  CHECK(*ex::ResolveSecret(Ref("env:TOKEN"), Shop(d), env) == "tok");
  CHECK(ex::ResolveSecret(Ref("env:NOPE"), Shop(d), env).status().code() == StatusCode::kNotFound);
  CHECK(*ex::ResolveSecret(Ref("credential:shop.db"), Shop(d), env) == "credvalue");
  CHECK(ex::ResolveSecret(Ref("credential:shop.none"), Shop(d), env).status().code() ==
        StatusCode::kNotFound);
  auto no_dir = ex::ResolveSecret(Ref("credential:shop.db"), Shop(d), FakeEnv({}));
  CHECK_THAT(no_dir.status().message(), Catch::Contains("CREDENTIALS_DIRECTORY"));
}

TEST_CASE("a task's secrets resolve all or nothing, retryable only when a file is missing",
          "[secrets]") {
  TempDir d;
  const std::string good = d.Write("shop/good", "v1", 0600);
  auto env = FakeEnv({{"TOKEN", "tok"}});
  std::map<std::string, std::string> task_env = {{"A", "plain"}, {"TOKEN", "overridden"}};
  CHECK_FALSE(
      ex::ResolveSecrets({{"P", "file:" + good}, {"TOKEN", "env:TOKEN"}}, Shop(d), env, &task_env));
  CHECK(task_env ==
        std::map<std::string, std::string>{{"A", "plain"}, {"P", "v1"}, {"TOKEN", "tok"}});

  std::map<std::string, std::string> untouched;
  auto missing = ex::ResolveSecrets({{"P", "file:" + good}, {"Q", "file:" + d.path + "/shop/gone"}},
                                    Shop(d), env, &untouched);
  REQUIRE(missing);
  CHECK(missing->retryable);
  CHECK_THAT(missing->error, Catch::Contains("secret Q (file:"));
  CHECK(untouched.empty());

  auto mode = ex::ResolveSecrets({{"P", "file:" + d.Write("shop/open", "v", 0604)}}, Shop(d), env,
                                 &untouched);
  REQUIRE(mode);
  CHECK_FALSE(mode->retryable);
  auto unset = ex::ResolveSecrets({{"P", "env:UNSET"}}, Shop(d), env, &untouched);
  REQUIRE(unset);
  CHECK_FALSE(unset->retryable);
  CHECK(untouched.empty());
}

TEST_CASE("a pipeline reads only the files and credentials of its own scope", "[secrets]") {
  TempDir d;
  const auto env = FakeEnv({{"CREDENTIALS_DIRECTORY", d.path + "/creds"}});
  d.Write("shop.orders/own", "mine", 0600);  // the pipeline's own directory
  d.Write("shop/shared", "domain", 0600);    // its domain's
  const std::string theirs = d.Write("billing/key", "not-yours", 0600);
  d.Write("creds/shop.db", "c1", 0600);
  d.Write("creds/billing.db", "c2", 0600);
  CHECK(*ex::ResolveSecret(Ref("file:" + d.path + "/shop.orders/own"), Shop(d), env) == "mine");
  CHECK(*ex::ResolveSecret(Ref("file:" + d.path + "/shop/shared"), Shop(d), env) == "domain");
  CHECK(*ex::ResolveSecret(Ref("credential:shop.db"), Shop(d), env) == "c1");

  // Another pipeline's file, an existing one and a missing one alike, a
  // path that climbs out, and one outside the secrets directory.
  for (const std::string& path :
       {theirs, d.path + "/billing/none", d.path + "/shop/../billing/key",
        std::string("/etc/passwd"), d.path + "/shop.ordersX/own", d.path + "/top"}) {
    INFO(path);
    auto r = ex::ResolveSecret(Ref("file:" + path), Shop(d), env);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kPermissionDenied);
    CHECK_THAT(r.status().message(), Catch::Contains("is not a secret of pipeline shop.orders"));
    CHECK_THAT(r.status().message(), Catch::Contains(d.path + "/shop/"));
    CHECK(r.status().message().find("does not exist") == std::string::npos);
  }
  auto cred = ex::ResolveSecret(Ref("credential:billing.db"), Shop(d), env);
  CHECK(cred.status().code() == StatusCode::kPermissionDenied);
  CHECK_THAT(cred.status().message(), Catch::Contains("start with shop."));

  // A symlink in the scope's directory that leads out is refused once
  // opened; one that stays inside (as Kubernetes mounts them) is followed.
  REQUIRE(::symlink(theirs.c_str(), (d.path + "/shop/stolen").c_str()) == 0);
  auto stolen = ex::ResolveSecret(Ref("file:" + d.path + "/shop/stolen"), Shop(d), env);
  CHECK(stolen.status().code() == StatusCode::kPermissionDenied);
  d.Write("shop/..data/token", "linked", 0600);
  REQUIRE(::symlink("..data/token", (d.path + "/shop/token").c_str()) == 0);
  CHECK(*ex::ResolveSecret(Ref("file:" + d.path + "/shop/token"), Shop(d), env) == "linked");

  // The secrets directory may itself be a symlink (/etc/apollo11/secrets ->
  // a mounted volume).
  REQUIRE(::symlink(d.path.c_str(), (d.path + "-link").c_str()) == 0);
  const ex::SecretScope linked{d.path + "-link", "shop.orders"};
  CHECK(*ex::ResolveSecret(Ref("file:" + d.path + "-link/shop/shared"), linked, env) == "domain");
  std::filesystem::remove(d.path + "-link");

  // No pipeline name, or one that could climb, scopes nothing; env: is the
  // worker's and not scoped.
  for (const std::string& name : {std::string(), std::string(".."), std::string("a/b")}) {
    auto r = ex::ResolveSecret(Ref("file:" + d.path + "/shop/shared"), {d.path, name}, env);
    CHECK(r.status().code() == StatusCode::kPermissionDenied);
  }
  CHECK(ex::ResolveSecret(Ref("env:CREDENTIALS_DIRECTORY"), {d.path, ""}, env).ok());
  auto refused = ex::ResolveSecrets({{"K", "file:" + theirs}}, Shop(d), env, nullptr);
  REQUIRE(refused);
  CHECK_FALSE(refused->retryable);
}
