// Run identity against a real coordinator process: ids are unique under a
// burst of submissions from several clients, and only the coordinator names
// a run.

#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "actors/actor_loop.h"
#include "cli/remote.h"
#include "common/ids.h"
#include "dsl/pipeline_json.h"
#include "storage/journal.h"
#include "tests/actors/cluster_harness.h"
#include "transport/codec.h"

using namespace apollo11;           // NOLINT: test file
using namespace apollo11::testing;  // NOLINT: test file

namespace {

actors::SubmitRun OneTask() {
  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = "test.burst";
  dsl::TaskSpec t;
  t.id = "a";
  t.type = dsl::TaskType::kShell;
  t.command = "true";
  spec.tasks.push_back(t);
  actors::SubmitRun s;
  s.pipeline_json = dsl::CanonicalJson(spec);
  s.pipeline_hash = dsl::ContentHash(spec);
  return s;
}

}  // namespace

TEST_CASE("a burst of 2,000 submissions from 8 clients is accepted with 2,000 distinct run ids",
          "[cluster][ids]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  Nodes guard{{&coord}};
  const std::string endpoint = coord.listening["api"].get<std::string>();
  constexpr int kClients = 8, kEach = 250;
  std::vector<std::vector<std::string>> ids(kClients);
  std::vector<std::vector<std::string>> errors(kClients);
  const auto began = std::chrono::steady_clock::now();
  {
    std::vector<std::jthread> clients;
    for (int c = 0; c < kClients; ++c) {
      clients.emplace_back([&, c] {
        auto remote = cli::RemoteCoordinator::Connect(endpoint, "", "", std::chrono::seconds(30));
        if (!remote.ok()) {
          errors[c].push_back(remote.status().ToString());
          return;
        }
        for (int i = 0; i < kEach; ++i) {
          auto id = (*remote)->Submit(OneTask());
          if (id.ok()) {
            ids[c].push_back(*id);
          } else {
            errors[c].push_back(id.status().ToString());
          }
        }
      });
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  WARN("2,000 submissions in " << seconds << " s");
  std::set<std::string> distinct;
  for (int c = 0; c < kClients; ++c) {
    INFO("client " << c << ": " << (errors[c].empty() ? "" : errors[c].front()));
    CHECK(errors[c].empty());
    distinct.insert(ids[c].begin(), ids[c].end());
  }
  CHECK(distinct.size() == kClients * kEach);

  // Every run has its own record in the journal: none was overwritten.
  REQUIRE(::kill(coord.pid, SIGTERM) == 0);
  REQUIRE(WaitExit(coord.pid, 20000) >= 0);
  coord.pid = -1;
  storage::JournalOptions ro;
  ro.read_only = true;
  auto journal = storage::Journal::Open(dir.path() + "/coord/journal", ro);
  REQUIRE(journal.ok());
  auto runs = (*journal)->ListRuns(10'000);
  REQUIRE(runs.ok());
  std::set<std::string> stored;
  for (const auto& r : *runs) stored.insert(r.run_id);
  CHECK(stored == distinct);
}

namespace {

// SubmitRun as clients before the coordinator chose every run id sent it.
struct LegacySubmitRun {
  uint16_t version = actors::kClientProtocolVersion;
  std::string pipeline_json;
  std::string pipeline_hash;
  std::map<std::string, std::string> params;
  std::string requested_run_id;
  MSGPACK_DEFINE(version, pipeline_json, pipeline_hash, params, requested_run_id);
};

// Sends one legacy submission on a fresh DEALER and returns the reply.
actors::SubmitReply SubmitLegacy(const std::string& endpoint, const std::string& requested) {
  actors::SubmitRun base = OneTask();
  LegacySubmitRun legacy;
  legacy.pipeline_json = base.pipeline_json;
  legacy.pipeline_hash = base.pipeline_hash;
  legacy.requested_run_id = requested;
  std::string frame;
  transport::Encode(static_cast<uint16_t>(actors::ClientType::kSubmitRun), legacy, &frame);
  zmq::context_t ctx;
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(endpoint);
  dealer.send(zmq::buffer(frame), zmq::send_flags::none);
  actors::SubmitReply reply;
  reply.code = 255;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    zmq::pollitem_t item[] = {{dealer.handle(), 0, ZMQ_POLLIN, 0}};
    zmq::poll(item, 1, std::chrono::milliseconds(100));
    if (!(item[0].revents & ZMQ_POLLIN)) continue;
    zmq::message_t msg;
    if (!dealer.recv(msg, zmq::recv_flags::none)) continue;
    auto env = transport::DecodeEnvelope(msg.data(), msg.size(), actors::ClientLimits());
    if (!env.ok() || env->type != static_cast<uint16_t>(actors::ClientType::kSubmitReply)) {
      continue;
    }
    auto decoded = transport::BodyAs<actors::SubmitReply>(*env);
    REQUIRE(decoded.ok());
    return *decoded;
  }
  FAIL("no reply to a legacy submission");
  return reply;
}

}  // namespace

TEST_CASE("a client cannot choose a run id: neither an existing run's nor one with a dot",
          "[cluster][ids]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  NodeProc w1 = StartWorker(dir, coord, "w1", 2);
  Nodes guard{{&coord, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  const std::string endpoint = coord.listening["api"].get<std::string>();
  auto remote = cli::RemoteCoordinator::Connect(endpoint, "", "", std::chrono::seconds(10));
  REQUIRE(remote.ok());
  auto first = (*remote)->Submit(OneTask());
  REQUIRE(first.ok());
  REQUIRE(WaitFor(
      [&] {
        auto s = ParseJson(Cli(coord, {"status", *first, "--json"}).out);
        return s.is_object() && s["state"] == "SUCCESS";
      },
      10000));
  const std::string before = Cli(coord, {"status", *first, "--json"}).out;

  // Reusing a finished run's id, and an id with a '.', are both refused.
  for (const std::string& requested : {*first, std::string("nightly.1")}) {
    actors::SubmitReply reply = SubmitLegacy(endpoint, requested);
    INFO(requested << ": " << reply.error);
    CHECK(reply.code == static_cast<uint8_t>(StatusCode::kInvalidInput));
    CHECK(reply.run_id.empty());
    CHECK(reply.error.find("run ids are chosen by the coordinator") != std::string::npos);
  }
  CHECK(Cli(coord, {"status", *first, "--json"}).out == before);  // untouched
  // An older client that left the field empty is served as before.
  actors::SubmitReply plain = SubmitLegacy(endpoint, "");
  CHECK(plain.code == 0);
  CHECK(IsValidRunId(plain.run_id));
  CHECK(plain.run_id != *first);
  auto runs = ParseJson(Cli(coord, {"runs", "--json"}).out);
  REQUIRE(runs.is_array());
  CHECK(runs.size() == 2);
}
