// Where a node's settings come from besides its flags: APOLLO11_<FLAG>, the
// config file (with "did you mean" for a mistyped key), the default config
// path, and the state dir defaults of the CLI and of a node.

#include "cli/node_flag_sources.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>

#include "cli/state_dir.h"
#include "tests/actors/cli_harness.h"

namespace apollo11::cli {
namespace {

using apollo11::testing::ScratchDir;

struct StartApp {
  CLI::App app{"test"};
  CLI::App* start = app.add_subcommand("start");
  std::string role, state_dir, heartbeat = "10s";
  bool insecure = false;
  std::vector<std::string> labels;
  StartApp() {
    start->add_option("--role", role);
    start->add_option("--state-dir", state_dir);
    start->add_option("--heartbeat", heartbeat);
    start->add_option("--labels", labels)->delimiter(',');
    start->add_flag("--insecure", insecure);
    BindFlagEnvironment(start);
  }
  void Parse(std::vector<std::string> args) {
    args.insert(args.begin(), "start");
    std::reverse(args.begin(), args.end());
    app.parse(args);
  }
};

GetenvFn EnvOf(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) {
    auto it = vars.find(name);
    return it == vars.end() ? std::string() : it->second;
  };
}

TEST_CASE("a node flag's environment variable is APOLLO11_ and its name in capitals",
          "[cli][node]") {
  CHECK(FlagEnvName("--state-dir") == "APOLLO11_STATE_DIR");
  CHECK(FlagEnvName("--api-token-file") == "APOLLO11_API_TOKEN_FILE");
  CHECK(FlagEnvName("--role") == "APOLLO11_ROLE");
}

TEST_CASE("the command line wins over the environment, the environment over the config file",
          "[cli][node]") {
  ScratchDir dir;
  const std::string file =
      dir.Write("node.yaml", "role: worker\nheartbeat: 3s\nstate-dir: /from/file\n");
  ::setenv("APOLLO11_HEARTBEAT", "2s", 1);
  ::setenv("APOLLO11_STATE_DIR", "/from/env", 1);
  ::setenv("APOLLO11_INSECURE", "true", 1);
  ::setenv("APOLLO11_LABELS", "gpu,ssd", 1);
  StartApp a;
  a.Parse({"--heartbeat", "1s"});
  ::unsetenv("APOLLO11_HEARTBEAT");
  ::unsetenv("APOLLO11_STATE_DIR");
  ::unsetenv("APOLLO11_INSECURE");
  ::unsetenv("APOLLO11_LABELS");
  REQUIRE(ApplyNodeConfigFile(*a.start, file).ok());
  CHECK(a.heartbeat == "1s");
  CHECK(a.state_dir == "/from/env");
  CHECK(a.insecure);
  CHECK(a.labels == std::vector<std::string>{"gpu", "ssd"});
  CHECK(a.role == "worker");
}

TEST_CASE("a mistyped config key is refused with its line and the key it resembles",
          "[cli][node]") {
  ScratchDir dir;
  StartApp a;
  a.Parse({});
  Status s = ApplyNodeConfigFile(*a.start, dir.Write("node.yaml", "role: all\nheartbaet: 1s\n"));
  REQUIRE_FALSE(s.ok());
  CHECK(s.message() == "config " + dir.path() +
                           "/node.yaml:2: unknown key 'heartbaet' (did you mean 'heartbeat'?)");
  s = ApplyNodeConfigFile(*a.start, dir.Write("far.yaml", "colour: blue\n"));
  REQUIRE_FALSE(s.ok());
  CHECK(s.message() == "config " + dir.path() + "/far.yaml:1: unknown key 'colour'");
}

TEST_CASE("a config file goes through the pipeline YAML guard before yaml-cpp reads it",
          "[cli][node]") {
  ScratchDir dir;
  StartApp a;
  a.Parse({});
  Status s = ApplyNodeConfigFile(*a.start, dir.path() + "/missing.yaml");
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("no such file") != std::string::npos);
  // yaml-cpp alone takes a quote the file ends inside as text. REQUIRE: if the
  // guard is gone, stop before the next input.
  s = ApplyNodeConfigFile(*a.start, dir.Write("cut.yaml", "role: 'all\n"));
  REQUIRE(s.message().find("cut.yaml:1:7: error: quoted text opened here") != std::string::npos);
  // Eight bytes on which yaml-cpp 0.7 alone allocates until the kernel kills it.
  s = ApplyNodeConfigFile(*a.start, dir.Write("node.yaml", "&x o\n? \n"));
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().rfind("config " + dir.path() +
                              "/node.yaml:2:1: error: '? ' (an explicit "
                              "mapping key) is not supported",
                          0) == 0);
}

TEST_CASE("a config value that is not text or a list of text is refused with its key and line",
          "[cli][node]") {
  ScratchDir dir;
  StartApp a;
  a.Parse({});
  const std::string prefix = "config " + dir.path() + "/node.yaml:2: key ";
  Status s = ApplyNodeConfigFile(*a.start, dir.Write("node.yaml", "role: all\nheartbeat:\n"));
  CHECK(s.message() == prefix + "'heartbeat' needs text or a list of text");
  s = ApplyNodeConfigFile(*a.start, dir.Write("node.yaml", "role: all\nlabels: {a: b}\n"));
  CHECK(s.message() == prefix + "'labels' needs text or a list of text");
  s = ApplyNodeConfigFile(*a.start, dir.Write("node.yaml", "role: all\nlabels: [gpu, [ssd]]\n"));
  CHECK(s.message() == prefix + "'labels' needs text or a list of text");
  s = ApplyNodeConfigFile(*a.start, dir.Write("node.yaml", "[role, all]\n"));
  CHECK(s.message() == "config " + dir.path() + "/node.yaml: expected a mapping");
  REQUIRE(ApplyNodeConfigFile(*a.start, dir.Write("ok.yaml", "labels: [gpu, ssd]\n")).ok());
  CHECK(a.labels == std::vector<std::string>{"gpu", "ssd"});
}

TEST_CASE("an empty config file sets nothing", "[cli][node]") {
  ScratchDir dir;
  StartApp a;
  a.Parse({});
  CHECK(ApplyNodeConfigFile(*a.start, dir.Write("node.yaml", "# nothing yet\n")).ok());
  CHECK(ApplyNodeConfigFile(*a.start, dir.Write("blank.yaml", "\n")).ok());
  CHECK(ApplyNodeConfigFile(*a.start, dir.Write("null.yaml", "---\n")).ok());
  CHECK(a.heartbeat == "10s");
}

TEST_CASE("the config file defaults to /etc/apollo11/node.yaml only when it exists",
          "[cli][node]") {
  CHECK(NodeConfigPath("", true) == "/etc/apollo11/node.yaml");
  CHECK(NodeConfigPath("", false) == "");
  CHECK(NodeConfigPath("mine.yaml", true) == "mine.yaml");
}

TEST_CASE("the CLI's state dir is APOLLO11_STATE_DIR, then XDG_STATE_HOME, then HOME",
          "[cli][state]") {
  CHECK(ClientStateDir("flag", EnvOf({{"APOLLO11_STATE_DIR", "/e"}})) == "flag");
  CHECK(ClientStateDir("", EnvOf({{"APOLLO11_STATE_DIR", "/e"}, {"XDG_STATE_HOME", "/x"}})) ==
        "/e");
  CHECK(ClientStateDir("", EnvOf({{"XDG_STATE_HOME", "/x"}, {"HOME", "/h"}})) == "/x/apollo11");
  CHECK(ClientStateDir("", EnvOf({{"HOME", "/h"}})) == "/h/.local/state/apollo11");
  CHECK(ClientStateDir("", EnvOf({})) == ".apollo11");
}

TEST_CASE("a node's state dir is systemd's STATE_DIRECTORY, or /var/lib/apollo11 as a service",
          "[cli][state]") {
  CHECK(NodeStateDir("", EnvOf({{"STATE_DIRECTORY", "/var/lib/apollo11:/var/lib/other"},
                                {"HOME", "/h"}})) == "/var/lib/apollo11");
  CHECK(NodeStateDir("", EnvOf({{"INVOCATION_ID", "abc"}, {"HOME", "/h"}})) == "/var/lib/apollo11");
  CHECK(NodeStateDir("", EnvOf({{"APOLLO11_STATE_DIR", "/e"}, {"STATE_DIRECTORY", "/s"}})) == "/e");
  CHECK(NodeStateDir("f", EnvOf({{"STATE_DIRECTORY", "/s"}})) == "f");
  CHECK(NodeStateDir("", EnvOf({{"HOME", "/h"}})) == "/h/.local/state/apollo11");
}

}  // namespace
}  // namespace apollo11::cli
