// apollo11-node as a service, through the real binaries: --role required,
// settings from APOLLO11_<FLAG>, systemd readiness over $NOTIFY_SOCKET, and
// SIGHUP reloading the log file, the alert rules and the authorized keys
// with their roles while the node keeps serving.

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>
#include <string>

#include "cli/version_config.h"
#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"

using apollo11::testing::Alive;
using apollo11::testing::Apollo11;
using apollo11::testing::CmdResult;
using apollo11::testing::Node;
using apollo11::testing::NodeProc;
using apollo11::testing::Nodes;
using apollo11::testing::ParseJson;
using apollo11::testing::Run;
using apollo11::testing::ScratchDir;
using apollo11::testing::SpawnNamed;
using apollo11::testing::StartNode;
using apollo11::testing::WaitExit;
using apollo11::testing::WaitFor;

namespace {

// A unix datagram socket at `path`, as systemd's notify socket.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(path.size() < sizeof(addr.sun_path));
    path.copy(addr.sun_path, path.size());
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  }
  ~NotifySocket() { ::close(fd_); }
  // The next datagram within `timeout_ms`, or "" if none came.
  std::string Next(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) != 1) return "";
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

 private:
  int fd_ = -1;
};

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

TEST_CASE("the version line names the project version, the git commit and the protocol",
          "[cluster][service]") {
  for (const std::string& bin : {Apollo11(), Node()}) {
    CmdResult r = Run({bin, "--version"});
    CHECK(r.exit_code == 0);
    const std::string name = bin.substr(bin.rfind('/') + 1);
    INFO(r.out);
    CHECK(r.out.rfind(name + " " + APOLLO11_VERSION + " (commit ", 0) == 0);
    CHECK(std::regex_search(r.out, std::regex(", protocol [0-9]+\\)\n$")));
    CHECK(r.out.find("(commit , ") == std::string::npos);
  }
}

TEST_CASE("apollo11-node start without --role is refused, naming the three roles",
          "[cluster][service]") {
  ScratchDir dir;
  CmdResult r = Run({Node(), "start", "--state-dir", dir.path() + "/s"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--role: coordinator, worker or all") != std::string::npos);
}

TEST_CASE("node flags come from APOLLO11_ variables, and the command line wins",
          "[cluster][service]") {
  ScratchDir dir;
  // The environment gives the role and the state dir; the command line's
  // --http-bind wins over the environment's unusable one.
  const pid_t pid = SpawnNamed(
      {"env", "APOLLO11_ROLE=coordinator", "APOLLO11_STATE_DIR=" + dir.path() + "/from-env",
       "APOLLO11_BIND=tcp://127.0.0.1:0", "APOLLO11_API_BIND=tcp://127.0.0.1:0",
       "APOLLO11_HTTP_BIND=not-an-address", Node(), "start", "--http-bind", "127.0.0.1:0"},
      dir.path(), "node");
  REQUIRE(pid > 0);
  const bool up = WaitFor([&] { return !FirstLine(dir.Read("node.out")).empty(); }, 10000);
  INFO(dir.Read("node.err"));
  REQUIRE(up);
  auto listening = ParseJson(FirstLine(dir.Read("node.out")));
  CHECK(listening.value("role", "") == "coordinator");
  CHECK(std::filesystem::exists(dir.path() + "/from-env/journal"));
  ::kill(pid, SIGTERM);
  CHECK(WaitExit(pid, 20000) == 0);
}

TEST_CASE("an API token given in APOLLO11_API_TOKEN does not reach the tasks' environment",
          "[cluster][service]") {
  ScratchDir dir;
  const std::string token = "token-from-the-environment-0123";
  const pid_t pid =
      SpawnNamed({"env", "APOLLO11_API_TOKEN=" + token, Node(), "start", "--role", "all",
                  "--state-dir", dir.path() + "/s", "--bind", "tcp://127.0.0.1:0", "--api-bind",
                  "tcp://127.0.0.1:0", "--http-bind", "127.0.0.1:0", "--heartbeat", "100ms"},
                 dir.path(), "node");
  REQUIRE(pid > 0);
  REQUIRE(WaitFor([&] { return !FirstLine(dir.Read("node.out")).empty(); }, 10000));
  auto listening = ParseJson(FirstLine(dir.Read("node.out")));
  const std::string api = listening["api"].get<std::string>();
  std::string file = dir.Write("env.yaml",
                               "version: \"1.0\"\nname: test.env\npipeline:\n"
                               "  - id: a\n    type: shell\n    command: \"env > " +
                                   dir.path() + "/task.env\"\n");
  CmdResult submitted = Run({Apollo11(), "submit", file, "--coordinator", api});
  REQUIRE(submitted.exit_code == 0);
  const std::string run_id = FirstLine(submitted.out);
  CmdResult done = Run({Apollo11(), "status", run_id, "--wait", "--json", "--coordinator", api});
  CHECK(ParseJson(done.out).value("state", "") == "SUCCESS");
  REQUIRE(dir.Exists("task.env"));
  CHECK(dir.Read("task.env").find("APOLLO11_RUN_ID=") != std::string::npos);
  CHECK(dir.Read("task.env").find(token) == std::string::npos);
  ::kill(pid, SIGTERM);
  CHECK(WaitExit(pid, 20000) == 0);
}

TEST_CASE("a node tells NOTIFY_SOCKET READY=1 once it serves and STOPPING=1 when it stops",
          "[cluster][service]") {
  ScratchDir dir;
  NotifySocket notify(dir.path() + "/notify");
  const pid_t pid = SpawnNamed(
      {"env", "NOTIFY_SOCKET=" + dir.path() + "/notify", Node(), "start", "--role", "all",
       "--state-dir", dir.path() + "/s", "--bind", "tcp://127.0.0.1:0", "--api-bind",
       "tcp://127.0.0.1:0", "--http-bind", "127.0.0.1:0", "--heartbeat", "100ms"},
      dir.path(), "node");
  REQUIRE(pid > 0);
  const std::string ready = notify.Next(15000);
  INFO(dir.Read("node.err"));
  CHECK(ready.find("READY=1") != std::string::npos);
  // By then the node has printed its endpoints, and they answer.
  auto listening = ParseJson(FirstLine(dir.Read("node.out")));
  REQUIRE(listening.is_object());
  CmdResult workers = Run({Apollo11(), "workers", "--json", "--timeout", "3", "--coordinator",
                           listening["api"].get<std::string>()});
  CHECK(workers.exit_code == 0);
  CmdResult health =
      Run({"curl", "-sf", "http://" + listening["http"].get<std::string>() + "/healthz"});
  CHECK(health.exit_code == 0);
  ::kill(pid, SIGTERM);
  CHECK(notify.Next(15000).find("STOPPING=1") != std::string::npos);
  CHECK(WaitExit(pid, 20000) == 0);
}

TEST_CASE("SIGHUP reloads the authorized keys with their roles, the alert rules and the log file",
          "[cluster][service]") {
  ScratchDir dir;
  const std::string d = dir.path();
  for (const char* who : {"coord", "ops", "gone"}) {
    REQUIRE(Run({Apollo11(), "keygen", d + "/" + who}).exit_code == 0);
  }
  auto key = [&](const char* who) { return FirstLine(dir.Read(std::string(who) + ".pub")); };
  dir.Write("authorized", "worker " + key("ops") + "\nreader " + key("gone") + "\n");
  dir.Write("node.yaml", "alert-fold-window: 100ms\n");
  NodeProc coord =
      StartNode(dir, "coord",
                {"--role", "all", "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
                 "--curve-key", d + "/coord.key", "--authorized-keys", d + "/authorized",
                 "--config", d + "/node.yaml"});
  Nodes guard{{&coord}};
  auto as = [&](const std::string& who) {
    return Run({Apollo11(), "runs", "--json", "--timeout", "3", "--key", d + "/" + who + ".key",
                "--server-key", d + "/coord.pub", "--coordinator",
                coord.listening["api"].get<std::string>()});
  };
  CmdResult before = as("ops");
  CHECK(before.exit_code != 0);
  CHECK(before.err.find("may not read (role viewer, operator or admin may)") != std::string::npos);
  CHECK(as("gone").exit_code == 0);

  // ops becomes an admin (who may submit a pipeline file), gone is removed,
  // an alert rule appears, and the log file is moved away as logrotate would.
  dir.Write("authorized", "admin " + key("ops") + "\n");
  dir.Write("node.yaml",
            "log-level: info\nalerts:\n  - name: failures\n    events: [run_failed]\n"
            "    command: \"touch " +
                d + "/alerted\"\n");
  std::filesystem::rename(d + "/coord/coordinator.log", d + "/coord/coordinator.log.old");
  REQUIRE(::kill(coord.pid, SIGHUP) == 0);
  const bool reloaded = WaitFor(
      [&] {
        return dir.Read("coord.err").find("authorized keys with their roles in force") !=
               std::string::npos;
      },
      10000);
  INFO(dir.Read("coord.err"));
  REQUIRE(reloaded);
  CHECK(Alive(coord.pid));
  CHECK(dir.Read("coord.err").find("SIGHUP received") != std::string::npos);
  CHECK(dir.Read("coord.err").find("reload: 1 alert rules in force") != std::string::npos);
  CHECK(dir.Read("coord/coordinator.log").find("log file") != std::string::npos);
  CHECK(as("ops").exit_code == 0);
  CmdResult refused = as("gone");
  CHECK(refused.exit_code != 0);
  CHECK(refused.err.find("refused by the coordinator's authentication") != std::string::npos);
  // The new rule fires.
  std::string failing = dir.Write("fail.yaml",
                                  "version: \"1.0\"\nname: test.fail\npipeline:\n"
                                  "  - id: a\n    type: shell\n    command: \"exit 1\"\n");
  CmdResult submitted =
      Run({Apollo11(), "submit", failing, "--timeout", "3", "--key", d + "/ops.key", "--server-key",
           d + "/coord.pub", "--coordinator", coord.listening["api"].get<std::string>()});
  CHECK(submitted.exit_code == 0);
  CHECK(WaitFor([&] { return dir.Exists("alerted"); }, 15000));

  // A config file start would refuse (a misspelled key) is refused whole:
  // its new alert rule is not taken either.
  dir.Write("node.yaml",
            "alert-fold-windw: 5s\nalerts:\n  - name: a\n    events: [run_failed]\n"
            "    command: \"true\"\n  - name: b\n    events: [run_failed]\n"
            "    command: \"true\"\n");
  REQUIRE(::kill(coord.pid, SIGHUP) == 0);
  REQUIRE(WaitFor(
      [&] {
        return dir.Read("coord.err")
                   .find(
                       "unknown key 'alert-fold-windw' (did you mean "
                       "'alert-fold-window'?)") != std::string::npos;
      },
      10000));
  CHECK(dir.Read("coord.err").find("reload failed, keeping the running configuration") !=
        std::string::npos);
  CHECK(dir.Read("coord.err").find("reload: 2 alert rules in force") == std::string::npos);
  dir.Write("node.yaml", "log-level: info\n");

  // A broken key file: the reload is refused, logged, and the keys stay.
  dir.Write("authorized", "reader not-a-key\n");
  REQUIRE(::kill(coord.pid, SIGHUP) == 0);
  REQUIRE(WaitFor(
      [&] {
        return dir.Read("coord.err").find("reload failed, keeping the running configuration") !=
               std::string::npos;
      },
      10000));
  CHECK(Alive(coord.pid));
  CHECK(as("ops").exit_code == 0);
}
