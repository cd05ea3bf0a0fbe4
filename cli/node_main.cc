// `apollo11-node`: the daemon. `start --role=coordinator|worker|all`.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/version.h"

int main(int argc, char** argv) {
  CLI::App app{"apollo11-node: runs Apollo-11 coordinator and worker actors"};
  app.set_version_flag("--version", std::string("apollo11-node ") + apollo11::kVersion);
  app.require_subcommand(1);
  std::string role = "all";
  auto* start = app.add_subcommand("start", "start the node's actors and serve until SIGTERM");
  start->add_option("--role", role, "coordinator, worker or all (one box)")
      ->check(CLI::IsMember({"coordinator", "worker", "all"}));
  int exit_code = 0;
  start->callback([&] {
    std::fprintf(stderr,
                 "apollo11-node: --role=%s is not available in this build yet; use "
                 "`apollo11 run FILE` for an embedded run\n",
                 role.c_str());
    exit_code = 3;
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return exit_code;
}
