#pragma once
// Multi-process cluster helpers for tests: `apollo11-node` processes started
// in a scratch dir (heartbeat 100 ms, liveness 3), their JSON "listening"
// line, and the `apollo11` CLI pointed at a coordinator.

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/actors/cli_harness.h"

namespace apollo11::testing {

std::string Node();

// A node process and its parsed "listening" line.
struct NodeProc {
  pid_t pid = -1;
  nlohmann::json listening;
};

// Starts `apollo11-node start ARGS` with stdout/stderr in DIR/NAME.out/.err
// and its state dir in DIR/STATE (STATE defaults to NAME), and waits for the
// listening line. HTTP binds a free loopback port ("http" in the listening
// line), so nodes of concurrent tests never collide on the default 8011.
// Heartbeat 100 ms and liveness 3 unless `default_timing` (the product's
// defaults: only what ARGS says).
NodeProc StartNode(const ScratchDir& dir, const std::string& name, std::vector<std::string> args,
                   const std::string& state = "", bool default_timing = false);
// A coordinator; port 0 picks free ports. `name` also names its state dir
// ("coord"): a restarted coordinator passes a new name and state "coord".
NodeProc StartCoordinator(const ScratchDir& dir, const std::string& bind = "tcp://127.0.0.1:0",
                          const std::string& api_bind = "tcp://127.0.0.1:0",
                          const std::string& name = "coord", const std::string& state = "");
NodeProc StartWorker(const ScratchDir& dir, const NodeProc& coord, const std::string& id, int slots,
                     const std::string& group = "default", const std::string& name = "");
// A worker connected to an explicit endpoint (e.g. a coordinator being restarted).
NodeProc StartWorkerAt(const ScratchDir& dir, const std::string& endpoint, const std::string& id,
                       int slots, const std::string& name = "");

CmdResult Cli(const NodeProc& coord, std::vector<std::string> args, const std::string& cwd = "");
size_t WorkerCount(const NodeProc& coord);

// A TCP port on 127.0.0.1 free at the time of the call.
int FreeTcpPort();

// Kills every listed node at the end of a test, whatever happened.
struct Nodes {
  std::vector<NodeProc*> all;
  ~Nodes();
};

}  // namespace apollo11::testing
