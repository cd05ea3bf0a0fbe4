// The coordinator's client protocol, in one process over inproc: a real
// Coordinator (three actor threads), a real LMDB journal, a DEALER client.

#include "actors/coordinator.h"

#include <catch2/catch.hpp>

#include "actors/actor_loop.h"
#include "dsl/parser.h"
#include "dsl/pipeline_json.h"
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
  transport::Encode(static_cast<uint16_t>(InternalType::kSubmitRun), submit, &frame);

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
  REQUIRE(env->type == static_cast<uint16_t>(InternalType::kSubmitReply));
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
