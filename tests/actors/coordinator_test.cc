// The coordinator's client protocol, in one process over inproc: a real
// Coordinator (three actor threads), a real LMDB journal, a DEALER client.

#include "actors/coordinator.h"

#include <catch2/catch.hpp>

#include "actors/actor_loop.h"
#include "dsl/parser.h"
#include "dsl/pipeline_json.h"
#include "storage/snapshot_pack.h"
#include "tests/actors/cli_harness.h"
#include "transport/codec.h"
#include "transport/sockets.h"

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file

TEST_CASE("a submitted run is in the journal when its run id reaches the client", "[coordinator]") {
  // Regression: SubmitReply left before the run was committed, so a client
  // asking for the run's status straight away was told "no run" (seen with
  // `submit --wait` on a loaded machine). A big pipeline makes the commit
  // slow enough that the old order failed nearly every time.
  testing::ScratchDir dir;
  auto journal = storage::Journal::Open(dir.path() + "/journal", {});
  REQUIRE(journal.ok());
  SystemClock clock;
  zmq::context_t ctx;
  CoordinatorConfig config;
  config.worker_endpoint = "inproc://coordinator-test-workers";
  config.client_endpoint = "inproc://coordinator-test-clients";
  config.instance = "coordinator-test";
  auto coordinator = Coordinator::Start(ctx, journal->get(), &clock, config);
  REQUIRE(coordinator.ok());

  auto parsed =
      dsl::ParsePipelineText(testing::LayeredDag(5000, 8, "noop", 7), dir.path() + "/dag.yaml", {});
  REQUIRE(parsed.ok());
  SubmitRun submit;
  submit.pipeline_json = dsl::CanonicalJson(*parsed.pipeline);
  submit.pipeline_hash = dsl::ContentHash(*parsed.pipeline);
  std::string frame;
  transport::Encode(static_cast<uint16_t>(ClientType::kSubmitRun), submit, &frame);

  zmq::socket_t client(ctx, zmq::socket_type::dealer);
  transport::SocketOptions options;
  options.max_msg_size = static_cast<int64_t>(ClientLimits().max_frame);
  REQUIRE(transport::ConfigureDealer(client, "test-client", options).ok());
  REQUIRE(transport::Connect(client, (*coordinator)->client_endpoint()).ok());
  REQUIRE(transport::Send(client, frame, /*dontwait=*/false).ok());
  zmq::pollitem_t items[] = {{client.handle(), 0, ZMQ_POLLIN, 0}};
  auto polled = transport::Poll(items, std::chrono::milliseconds(60000));
  REQUIRE(polled.ok());
  REQUIRE(*polled == 1);
  auto reply_frame = transport::Recv(client, /*dontwait=*/true);
  REQUIRE(reply_frame.ok());
  auto env = transport::DecodeEnvelope(reply_frame->data(), reply_frame->size(), ClientLimits());
  REQUIRE(env.ok());
  REQUIRE(env->type == static_cast<uint16_t>(ClientType::kSubmitReply));
  auto reply = transport::BodyAs<SubmitReply>(*env);
  REQUIRE(reply.ok());
  REQUIRE(reply->error.empty());
  // Straight away, without waiting: the run is durable already.
  auto run = (*journal)->GetRun(reply->run_id);
  REQUIRE(run.ok());
  CHECK(run->has_value());
  client.close();
  (*coordinator)->Stop();
}

namespace {

// A coordinator on inproc endpoints over a scratch journal.
struct InprocCoordinator {
  testing::ScratchDir dir;
  std::unique_ptr<storage::Journal> journal;
  SystemClock clock;
  zmq::context_t ctx;
  std::unique_ptr<Coordinator> coordinator;
  explicit InprocCoordinator(const std::string& name) {
    auto opened = storage::Journal::Open(dir.path() + "/journal", {});
    REQUIRE(opened.ok());
    journal = std::move(*opened);
    CoordinatorConfig config;
    config.worker_endpoint = "inproc://" + name + "-workers";
    config.client_endpoint = "inproc://" + name + "-clients";
    config.instance = name;
    auto started = Coordinator::Start(ctx, journal.get(), &clock, config);
    REQUIRE(started.ok());
    coordinator = std::move(*started);
  }
};

// Sends `frame` from a fresh DEALER and returns the first reply's envelope
// type and raw bytes.
std::pair<uint16_t, std::string> AskRaw(zmq::context_t& ctx, const std::string& endpoint,
                                        const std::string& frame) {
  // Each ask its own identity: the scheduler sends a submitter its run's
  // progress, which must not reach the next ask as its answer.
  static int asks = 0;
  zmq::socket_t client(ctx, zmq::socket_type::dealer);
  REQUIRE(transport::ConfigureDealer(client, "raw-client-" + std::to_string(++asks), {}).ok());
  REQUIRE(transport::Connect(client, endpoint).ok());
  REQUIRE(transport::Send(client, frame, /*dontwait=*/false).ok());
  zmq::pollitem_t items[] = {{client.handle(), 0, ZMQ_POLLIN, 0}};
  auto polled = transport::Poll(items, std::chrono::milliseconds(10000));
  REQUIRE(polled.ok());
  REQUIRE(*polled == 1);
  auto msg = transport::Recv(client, /*dontwait=*/true);
  REQUIRE(msg.ok());
  std::string raw(static_cast<const char*>(msg->data()), msg->size());
  auto env = transport::DecodeEnvelope(raw.data(), raw.size(), ClientLimits());
  REQUIRE(env.ok());
  client.close();
  return {env->type, raw};
}

}  // namespace

TEST_CASE("a client of another protocol version is told so in a reply it can read",
          "[coordinator][protocol]") {
  InprocCoordinator c("coordinator-version-test");
  // A version 1 query: no version field, the kind a string.
  std::string frame;
  transport::Encode(static_cast<uint16_t>(ClientType::kQuery),
                    std::make_tuple(std::string("status"), std::string("r1"), std::string(),
                                    uint32_t{20}, uint64_t{0}, uint32_t{0}),
                    &frame);
  auto [type, raw] = AskRaw(c.ctx, c.coordinator->client_endpoint(), frame);
  REQUIRE(type == static_cast<uint16_t>(ClientType::kQueryReply));
  auto env = transport::DecodeEnvelope(raw.data(), raw.size(), ClientLimits());
  REQUIRE(env.ok());
  // ... answered in the version 1 layout: error, json, data, journal_error.
  auto v1 = transport::BodyAs<std::tuple<std::string, std::string, std::string, std::string>>(*env);
  REQUIRE(v1.ok());
  CHECK(std::get<0>(*v1).find("client protocol version " + std::to_string(kClientProtocolVersion) +
                              ", the client 1") != std::string::npos);

  // A newer version is refused in the current layout with kUnsupported.
  Query newer;
  newer.version = kClientProtocolVersion + 1;
  frame.clear();
  transport::Encode(static_cast<uint16_t>(ClientType::kQuery), newer, &frame);
  auto [type2, raw2] = AskRaw(c.ctx, c.coordinator->client_endpoint(), frame);
  REQUIRE(type2 == static_cast<uint16_t>(ClientType::kQueryReply));
  auto env2 = transport::DecodeEnvelope(raw2.data(), raw2.size(), ClientLimits());
  REQUIRE(env2.ok());
  auto reply = transport::BodyAs<QueryReply>(*env2);
  REQUIRE(reply.ok());
  CHECK(reply->code == static_cast<uint8_t>(StatusCode::kUnsupported));

  // An unknown kind number is refused clearly, and the scheduler serves on.
  Query unknown;
  unknown.kind = static_cast<QueryKind>(77);
  frame.clear();
  transport::Encode(static_cast<uint16_t>(ClientType::kQuery), unknown, &frame);
  auto [type3, raw3] = AskRaw(c.ctx, c.coordinator->client_endpoint(), frame);
  auto env3 = transport::DecodeEnvelope(raw3.data(), raw3.size(), ClientLimits());
  REQUIRE(env3.ok());
  auto refused = transport::BodyAs<QueryReply>(*env3);
  REQUIRE(refused.ok());
  CHECK(refused->code == static_cast<uint8_t>(StatusCode::kInvalidInput));
  CHECK(refused->error.find("unknown query kind 77") != std::string::npos);
  CHECK_FALSE(c.coordinator->failure().has_value());
  c.coordinator->Stop();
  CHECK_FALSE(c.coordinator->failure().has_value());  // a Stop is no failure
}

TEST_CASE(
    "a packed submission runs the pipeline it packs and a corrupt one is refused as malformed",
    "[coordinator][protocol]") {
  InprocCoordinator c("coordinator-packed-test");
  auto parsed = dsl::ParsePipelineText(testing::LayeredDag(2000, 4, "noop", 3),
                                       c.dir.path() + "/dag.yaml", {});
  REQUIRE(parsed.ok());
  const std::string json = dsl::CanonicalJson(*parsed.pipeline);
  SubmitRun submit;
  submit.pipeline_hash = dsl::ContentHash(*parsed.pipeline);
  submit.pipeline_json = storage::PackSnapshot(json);
  REQUIRE(storage::IsPackedSnapshot(submit.pipeline_json));
  REQUIRE(submit.pipeline_json.size() < json.size() / 3);
  std::string frame;
  transport::Encode(static_cast<uint16_t>(ClientType::kSubmitRun), submit, &frame);
  auto [type, raw] = AskRaw(c.ctx, c.coordinator->client_endpoint(), frame);
  REQUIRE(type == static_cast<uint16_t>(ClientType::kSubmitReply));
  auto env = transport::DecodeEnvelope(raw.data(), raw.size(), ClientLimits());
  REQUIRE(env.ok());
  auto reply = transport::BodyAs<SubmitReply>(*env);
  REQUIRE(reply.ok());
  REQUIRE(reply->error.empty());
  // The run keeps the JSON the client packed, whatever form it is stored in.
  auto run = c.journal->GetRun(reply->run_id);
  REQUIRE(run.ok());
  REQUIRE(run->has_value());
  auto stored = c.journal->GetPipeline((*run)->pipeline_hash);
  REQUIRE(stored.ok());
  REQUIRE(stored->has_value());
  CHECK(**stored == json);

  // Bytes flipped inside the deflated body: refused, and nothing is started.
  submit.pipeline_json[submit.pipeline_json.size() / 2] ^= 0x5a;
  submit.pipeline_json[submit.pipeline_json.size() / 2 + 1] ^= 0x33;
  frame.clear();
  transport::Encode(static_cast<uint16_t>(ClientType::kSubmitRun), submit, &frame);
  auto [type2, raw2] = AskRaw(c.ctx, c.coordinator->client_endpoint(), frame);
  REQUIRE(type2 == static_cast<uint16_t>(ClientType::kSubmitReply));
  auto env2 = transport::DecodeEnvelope(raw2.data(), raw2.size(), ClientLimits());
  REQUIRE(env2.ok());
  auto refused = transport::BodyAs<SubmitReply>(*env2);
  REQUIRE(refused.ok());
  CHECK(refused->code == static_cast<uint8_t>(StatusCode::kInvalidInput));
  CHECK(refused->error.rfind("malformed submission: ", 0) == 0);
  CHECK(refused->run_id.empty());
  CHECK_FALSE(c.coordinator->failure().has_value());
  c.coordinator->Stop();
}

TEST_CASE("an actor whose loop ends without a TERM is reported with its reason",
          "[coordinator][supervisor]") {
  InprocCoordinator c("coordinator-failure-test");
  CHECK_FALSE(c.coordinator->WaitFailure(std::chrono::milliseconds(50)).has_value());
  // Terminating the context under the actors ends every loop without a TERM.
  c.ctx.shutdown();
  auto failure = c.coordinator->WaitFailure(std::chrono::milliseconds(10000));
  REQUIRE(failure.has_value());
  CHECK(failure->find("actor ") == 0);
  CHECK(failure->find("terminated") != std::string::npos);
  c.coordinator->Stop();
}

TEST_CASE("the supervisor records a loop that throws or fails, not one stopped by TERM",
          "[supervisor]") {
  zmq::context_t ctx;
  ActorSupervisor supervisor;
  auto ok = transport::Actor::Start(ctx, "serves",
                                    supervisor.Supervise("serves", [](transport::ActorPipe& pipe) {
                                      pipe.SignalReady(Status::Ok());
                                      for (;;) {
                                        auto cmd = pipe.Recv();
                                        if (!cmd.ok() || pipe.IsTerm(*cmd)) return Status::Ok();
                                      }
                                    }));
  REQUIRE(ok.ok());
  REQUIRE((*ok)->Stop(std::chrono::milliseconds(5000)).ok());
  CHECK_FALSE(supervisor.failure().has_value());

  auto thrower = transport::Actor::Start(
      ctx, "thrower", supervisor.Supervise("thrower", [](transport::ActorPipe& pipe) -> Status {
        pipe.SignalReady(Status::Ok());
        throw std::runtime_error("json dump of bad bytes");
      }));
  REQUIRE(thrower.ok());
  auto failure = supervisor.WaitFailure(std::chrono::milliseconds(10000));
  REQUIRE(failure.has_value());
  CHECK(*failure == "actor thrower: threw: json dump of bad bytes");

  ActorSupervisor early;
  auto refused = transport::Actor::Start(
      ctx, "early",
      early.Supervise("early", [](transport::ActorPipe&) { return Status::Io("cannot bind"); }));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("cannot bind") != std::string::npos);
  CHECK(early.failure().has_value());
  CHECK((*thrower)->Stop(std::chrono::milliseconds(5000)).ok());
}
