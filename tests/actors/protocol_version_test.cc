// A worker of another protocol version: its frames are refused at decode, and
// the dispatcher says so once per peer instead of once per frame; the worker
// is told why in a REFUSED written in its own version.

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "actors/dispatcher/dispatcher_core.h"
#include "common/clock.h"
#include "ha/not_leader.h"
#include "ha/role_board.h"
#include "tests/actors/log_capture.h"
#include "transport/codec.h"
#include "transport/protocol_mismatch.h"

namespace apollo11::actors {
namespace {

using testing::LogCapture;

// A HEARTBEAT as a version-1 worker sends it: [1, 7, [running, load, epoch, sent_at]].
std::string VersionOneHeartbeat() {
  const uint8_t bytes[] = {0x93, 0x01, 0x07, 0x94, 0x90, 0x00, 0x01, 0x00};
  return std::string(reinterpret_cast<const char*>(bytes), sizeof bytes);
}

// A HEARTBEAT as a worker of protocol `version` would send it.
std::string HeartbeatIn(uint32_t version) {
  std::string frame;
  transport::EncodeAs(version, transport::ToWire(transport::MsgType::kHeartbeat),
                      transport::Heartbeat{}, &frame);
  return frame;
}

// The reason of the REFUSED in `frame`, which must be in `version`'s envelope.
std::string RefusalIn(const std::string& frame, uint32_t version) {
  transport::Envelope env;
  (void)transport::DecodeEnvelopeInto(frame.data(), frame.size(), &env);
  REQUIRE(env.version == version);
  REQUIRE(env.type == transport::ToWire(transport::MsgType::kRefused));
  auto refused = transport::BodyAs<transport::Refused>(env);
  REQUIRE(refused.ok());
  return refused->reason;
}

}  // namespace

TEST_CASE(
    "a worker of another protocol version is told so in its own version, with both versions "
    "and the upgrade order",
    "[dispatcher][protocol]") {
  // Issue 36: such a worker got no answer at all.
  FakeClock clock;
  DispatcherCore core(&clock, {});
  DispatcherOutput out;
  const uint32_t ours = transport::kProtocolVersion;
  for (const uint32_t theirs : {ours - 1, ours + 1}) {
    out.Clear();
    const std::string frame = HeartbeatIn(theirs);
    core.OnWorkerFrame("w-" + std::to_string(theirs), frame.data(), frame.size(), &out);
    REQUIRE(out.to_workers.size() == 1);
    CHECK(out.to_workers[0].first == "w-" + std::to_string(theirs));
    const std::string why = RefusalIn(out.to_workers[0].second, theirs);
    INFO(why);
    CHECK(transport::IsProtocolMismatch(why));
    CHECK(why.find("this coordinator speaks worker protocol " + std::to_string(ours) +
                   ", the worker " + std::to_string(theirs)) != std::string::npos);
    CHECK(why.find("upgrades the workers first") != std::string::npos);
    CHECK(why.find("then the standbys, then the leader") != std::string::npos);
    CHECK(why.find(theirs < ours ? "start the worker on the coordinator's release"
                                 : "waits, retrying") != std::string::npos);
  }
  CHECK(core.workers() == 0);
}

TEST_CASE("a standby sends a worker of another protocol version to the leader, in its version",
          "[dispatcher][protocol]") {
  FakeClock clock;
  ha::RoleBoard board(&clock, ha::Member{"c2", "tcp://c2:7011", "tcp://c2:7012", ""});
  board.Publish(ha::Role::kStandby, 7, ha::Member{"c1", "tcp://c1:7011", "tcp://c1:7012", ""}, 0);
  DispatcherOptions options;
  options.ha = &board;
  options.standby = true;
  DispatcherCore core(&clock, options);
  DispatcherOutput out;
  const uint32_t old = transport::kProtocolVersion - 1;
  const std::string frame = HeartbeatIn(old);
  core.OnWorkerFrame("w-old", frame.data(), frame.size(), &out);
  REQUIRE(out.to_workers.size() == 1);
  // The leader may speak its version (an upgrade under way); if not, it says so.
  CHECK(RefusalIn(out.to_workers[0].second, old) == ha::NotLeaderReply("tcp://c1:7011"));
}

TEST_CASE("a worker of another protocol version is reported once per peer, naming both versions",
          "[dispatcher][protocol]") {
  FakeClock clock;
  DispatcherCore core(&clock, {});
  DispatcherOutput out;
  LogCapture log;
  const std::string old_frame = VersionOneHeartbeat();
  for (int i = 0; i < 3; ++i) core.OnWorkerFrame("old1", old_frame.data(), old_frame.size(), &out);
  core.OnWorkerFrame("old2", old_frame.data(), old_frame.size(), &out);
  CHECK(core.dropped_frames() == 4);
  CHECK(out.to_workers.empty());
  CHECK(core.workers() == 0);
  CHECK(log.Count("speaks another protocol version") == 2);
  CHECK(log.Count("protocol version 1 is not supported (this build speaks version " +
                  std::to_string(transport::kProtocolVersion) + ")") == 2);

  // Once it speaks this version it is heard; a relapse is reported again.
  transport::Hello hello;
  hello.slots = 1;
  const std::string good = transport::EncodeToString(transport::MsgType::kHello, hello);
  core.OnWorkerFrame("old1", good.data(), good.size(), &out);
  CHECK(core.workers() == 1);
  core.OnWorkerFrame("old1", old_frame.data(), old_frame.size(), &out);
  CHECK(log.Count("speaks another protocol version") == 3);
}

}  // namespace apollo11::actors
