// A worker of another protocol version: its frames are refused at decode, and
// the dispatcher says so once per peer instead of once per frame.

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "actors/dispatcher/dispatcher_core.h"
#include "common/clock.h"
#include "tests/actors/log_capture.h"
#include "transport/codec.h"

namespace apollo11::actors {
namespace {

using testing::LogCapture;

// A HEARTBEAT as a version-1 worker sends it: [1, 7, [running, load, epoch, sent_at]].
std::string VersionOneHeartbeat() {
  const uint8_t bytes[] = {0x93, 0x01, 0x07, 0x94, 0x90, 0x00, 0x01, 0x00};
  return std::string(reinterpret_cast<const char*>(bytes), sizeof bytes);
}

}  // namespace

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
