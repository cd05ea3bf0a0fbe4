#include "transport/codec.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "transport/messages.h"

namespace apollo11::transport {
namespace {

Dispatch SampleDispatch() {
  Dispatch d;
  d.exec_id = "run-20240101-abcd.data_clean";
  d.attempt = 2;
  d.task.type = 2;
  d.task.script = "scripts/clean.py";
  d.task.args = {"--in", "raw.csv"};
  d.task.headers = {{"Accept", "application/json"}};
  d.task.expect_status = {200, 204};
  d.task.env = {{"A", "1"}, {"B", "2"}};
  d.task.timeout_ms = 30000;
  d.task.precheck = "test -f done";
  d.task.run_precheck = true;
  d.trace_id = "trace-1";
  d.epoch = 7;
  return d;
}

ResultMsg SampleResult() {
  ResultMsg r;
  r.exec_id = "run-20240101-abcd.data_clean";
  r.attempt = 2;
  r.outcome = static_cast<uint8_t>(Outcome::kFailed);
  r.exit_code = 1;
  r.retryable = false;
  r.output = "line1\nline2\n";
  r.error = "exit code 1";
  r.started_at = 1700000000000000;
  r.finished_at = 1700000000500000;
  return r;
}

template <class T>
void CheckRoundTrip(MsgType type, const T& value) {
  std::string frame = EncodeToString(type, value);
  auto env = DecodeEnvelope(frame.data(), frame.size());
  REQUIRE(env.ok());
  CHECK(env->version == kProtocolVersion);
  CHECK(env->type == ToWire(type));
  auto back = BodyAs<T>(*env);
  REQUIRE(back.ok());
  CHECK(*back == value);
}

std::string Bytes(std::initializer_list<uint8_t> b) { return std::string(b.begin(), b.end()); }

// This build's protocol version as the one byte it encodes to.
constexpr uint8_t kV = static_cast<uint8_t>(kProtocolVersion);

}  // namespace

TEST_CASE("every wire message survives an encode/decode round trip", "[codec]") {
  CheckRoundTrip(MsgType::kHello, Hello{"etl", 8, {"gpu", "ssd"}, {{"r.a", 1}, {"r.b", 3}}, "w1"});
  CheckRoundTrip(MsgType::kHello, Hello{"etl", 8, {}, {{"r.a", 1}}, "w1", 2, true, {{"r.b", 3}}});
  CheckRoundTrip(MsgType::kWatch, Watch{"w1", 42});
  CheckRoundTrip(MsgType::kCredit, Credit{5});
  CheckRoundTrip(MsgType::kDispatch, SampleDispatch());
  CheckRoundTrip(MsgType::kStarted, Started{"r.a", 1, 1700000000000001});
  CheckRoundTrip(MsgType::kResult, SampleResult());
  CheckRoundTrip(MsgType::kAck, Ack{"r.a", 1});
  CheckRoundTrip(MsgType::kHeartbeat, Heartbeat{3, false});
  CheckRoundTrip(MsgType::kProbe, Probe{{{"r.a", 1}, {"r.b", 2}}});
  CheckRoundTrip(MsgType::kProbeReply, ProbeReply{{{"r.a", 1, 1}, {"r.b", 2, 2}}});
  CheckRoundTrip(MsgType::kCancel, Cancel{"r.a", 1, 9});
  CheckRoundTrip(MsgType::kBye, Bye{});
  // Defaults survive too (empty strings, zero, the non-zero defaults).
  CheckRoundTrip(MsgType::kDispatch, Dispatch{});
  CheckRoundTrip(MsgType::kResult, ResultMsg{});
}

TEST_CASE("the ACK frame has fixed golden bytes", "[codec]") {
  // [version, 6, ["r1.t1", 2]]: if this changes, the wire format changed and
  // kProtocolVersion must be bumped.
  std::string frame = EncodeToString(MsgType::kAck, Ack{"r1.t1", 2});
  CHECK(frame == Bytes({0x93, kV, 0x06, 0x92, 0xa5, 'r', '1', '.', 't', '1', 0x02}));
}

TEST_CASE("Encode appends to the buffer without touching what is there", "[codec]") {
  std::string buf = "xy";
  Encode(MsgType::kCredit, Credit{3}, &buf);
  CHECK(buf == Bytes({'x', 'y', 0x93, kV, 0x02, 0x91, 0x03}));
}

TEST_CASE("message type names cover the protocol", "[codec]") {
  CHECK(std::string(MsgTypeName(ToWire(MsgType::kDispatch))) == "DISPATCH");
  CHECK(std::string(MsgTypeName(ToWire(MsgType::kProbeReply))) == "PROBE_REPLY");
  CHECK(std::string(MsgTypeName(999)) == "UNKNOWN");
}

TEST_CASE("a frame from another protocol version is rejected naming both versions", "[codec]") {
  // An ACK of version 1, the layout before the dead fields were removed.
  std::string frame = Bytes({0x93, 0x01, 0x06, 0x92, 0xa1, 'x', 0x01});
  Envelope env;
  Status s = DecodeEnvelopeInto(frame.data(), frame.size(), &env);
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == StatusCode::kInvalidInput);
  CHECK_THAT(s.message(), Catch::Contains("version 1") &&
                              Catch::Contains("version " + std::to_string(kProtocolVersion)));
  // The peer's version is kept so a receiver can tell this from garbage.
  CHECK(env.version == 1);
  CHECK(IsOtherProtocolVersion(env));
  std::string garbage = Bytes({0x93, kV, 0xa1, 'x', 0x90});
  CHECK_FALSE(DecodeEnvelopeInto(garbage.data(), garbage.size(), &env).ok());
  CHECK_FALSE(IsOtherProtocolVersion(env));
}

TEST_CASE("a RESULT stored by a version-1 worker still decodes from its outbox", "[codec]") {
  ResultMsg want = SampleResult();
  std::string frame = EncodeToString(MsgType::kResult, want);
  REQUIRE(static_cast<uint8_t>(frame[1]) == kProtocolVersion);
  frame[1] = 0x01;  // the same RESULT layout, written before the version bump
  auto back = DecodeStoredResult(frame.data(), frame.size());
  REQUIRE(back.ok());
  CHECK(*back == want);
  // On the wire the same frame is refused, and a future version is refused here too.
  CHECK_FALSE(DecodeEnvelope(frame.data(), frame.size()).ok());
  frame[1] = static_cast<char>(kProtocolVersion + 1);
  CHECK_FALSE(DecodeStoredResult(frame.data(), frame.size()).ok());
}

TEST_CASE("an unknown message type is returned to the caller to count", "[codec]") {
  std::string frame;
  Encode(uint16_t{500}, Credit{1}, &frame);
  auto env = DecodeEnvelope(frame.data(), frame.size());
  REQUIRE(env.ok());
  CHECK(env->type == 500);
  CHECK(std::string(MsgTypeName(env->type)) == "UNKNOWN");
}

TEST_CASE("malformed envelopes are errors, not crashes", "[codec]") {
  const std::vector<std::string> bad = {
      "",                                         // empty
      Bytes({0x01}),                              // not an array
      Bytes({0x92, 0x02, 0x06}),                  // 2 elements
      Bytes({0x94, 0x02, 0x06, 0x90, 0x90}),      // 4 elements
      Bytes({0x93, 0xa1, '1', 0x06, 0x90}),       // version is a string
      Bytes({0x93, 0xff, 0x06, 0x90}),            // version negative
      Bytes({0x93, kV, 0xce, 0, 1, 0, 0, 0x90}),  // type > 65535
      Bytes({0x93, kV, 0xa1, 'x', 0x90}),         // type is a string
      Bytes({0x93, kV, 0x06, 0x90, 0x00}),        // trailing byte
      Bytes({0xc1}),                              // never-used byte
  };
  for (const auto& frame : bad) {
    auto env = DecodeEnvelope(frame.data(), frame.size());
    CHECK_FALSE(env.ok());
    if (!env.ok()) CHECK(env.status().code() == StatusCode::kInvalidInput);
  }
}

TEST_CASE("every truncation of a valid frame is an error", "[codec]") {
  std::string frame = EncodeToString(MsgType::kDispatch, SampleDispatch());
  Envelope env;
  for (size_t len = 0; len < frame.size(); ++len) {
    INFO("length " << len);
    CHECK_FALSE(DecodeEnvelopeInto(frame.data(), len, &env).ok());
  }
  CHECK(DecodeEnvelopeInto(frame.data(), frame.size(), &env).ok());
}

TEST_CASE("a 5-byte array header claiming 2^32 elements is a bounded error", "[codec]") {
  std::string bomb = Bytes({0xdd, 0xff, 0xff, 0xff, 0xff});
  auto env = DecodeEnvelope(bomb.data(), bomb.size());
  REQUIRE_FALSE(env.ok());
  // Also as the body of an otherwise valid envelope, and for maps and strings.
  for (const std::string& frame : {Bytes({0x93, kV, 0x03, 0xdd, 0xff, 0xff, 0xff, 0xff}),
                                   Bytes({0x93, kV, 0x03, 0xdf, 0xff, 0xff, 0xff, 0xff}),
                                   Bytes({0x93, kV, 0x03, 0xdb, 0xff, 0xff, 0xff, 0xff}),
                                   Bytes({0x93, kV, 0x03, 0xc6, 0xff, 0xff, 0xff, 0xff})}) {
    CHECK_FALSE(DecodeEnvelope(frame.data(), frame.size()).ok());
  }
}

TEST_CASE("nested arrays each claiming many elements do not allocate per claim", "[codec]") {
  // 32 nested headers each claiming 65535 elements: without the clamp to the
  // frame length this would reserve 32 * 65535 objects before failing.
  std::string frame;
  for (int i = 0; i < 30; ++i) frame += Bytes({0xdc, 0xff, 0xff});
  auto env = DecodeEnvelope(frame.data(), frame.size());
  REQUIRE_FALSE(env.ok());
  CHECK_THAT(env.status().message(), Catch::Contains("array size overflow"));
}

TEST_CASE("a nesting depth bomb is rejected", "[codec]") {
  std::string frame = Bytes({0x93, kV, 0x03});
  frame += std::string(10000, '\x91');
  frame += '\x01';
  auto env = DecodeEnvelope(frame.data(), frame.size());
  REQUIRE_FALSE(env.ok());
  CHECK_THAT(env.status().message(), Catch::Contains("depth"));
}

TEST_CASE("a frame larger than the limit is rejected before parsing", "[codec]") {
  ResultMsg r;
  r.output = std::string(5000, 'o');
  std::string frame = EncodeToString(MsgType::kResult, r);
  DecodeLimits limits;
  limits.max_frame = 4096;
  auto env = DecodeEnvelope(frame.data(), frame.size(), limits);
  REQUIRE_FALSE(env.ok());
  CHECK_THAT(env.status().message(), Catch::Contains("exceeds the limit"));
  limits.max_frame = 1 << 20;
  limits.str = 1000;
  CHECK_FALSE(DecodeEnvelope(frame.data(), frame.size(), limits).ok());
}

TEST_CASE("a DISPATCH body read as a RESULT is a shape error", "[codec]") {
  std::string frame = EncodeToString(MsgType::kDispatch, SampleDispatch());
  auto env = DecodeEnvelope(frame.data(), frame.size());
  REQUIRE(env.ok());
  auto wrong = BodyAs<ResultMsg>(*env);
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().code() == StatusCode::kInvalidInput);
  CHECK_THAT(wrong.status().message(), Catch::Contains("DISPATCH"));
}

TEST_CASE("a string where an integer is expected is a shape error", "[codec]") {
  // ACK body ["r.a", "two"].
  std::string frame = Bytes({0x93, kV, 0x06, 0x92, 0xa3, 'r', '.', 'a', 0xa3, 't', 'w', 'o'});
  auto env = DecodeEnvelope(frame.data(), frame.size());
  REQUIRE(env.ok());
  CHECK_FALSE(BodyAs<Ack>(*env).ok());
  // An integer out of range for the field (300 into uint8 outcome).
  std::string big = Bytes({0x93, kV, 0x05, 0x93, 0xa1, 'x', 0x01, 0xcd, 0x01, 0x2c});
  auto env2 = DecodeEnvelope(big.data(), big.size());
  REQUIRE(env2.ok());
  CHECK_FALSE(BodyAs<ResultMsg>(*env2).ok());
}

TEST_CASE("a shorter body from an older peer keeps the defaults", "[codec]") {
  // RESULT body with only exec_id and attempt.
  std::string frame = Bytes({0x93, kV, 0x05, 0x92, 0xa1, 'x', 0x03});
  auto env = DecodeEnvelope(frame.data(), frame.size());
  REQUIRE(env.ok());
  auto r = BodyAs<ResultMsg>(*env);
  REQUIRE(r.ok());
  CHECK(r->exec_id == "x");
  CHECK(r->attempt == 3);
  CHECK(r->retryable);
}

template <class T>
void TryBody(const Envelope& env) {
  (void)BodyAs<T>(env);
}

void DecodeAsEverything(const std::string& frame, Envelope* env, int* decoded) {
  if (!DecodeEnvelopeInto(frame.data(), frame.size(), env).ok()) return;
  ++*decoded;
  TryBody<Hello>(*env);
  TryBody<Credit>(*env);
  TryBody<Dispatch>(*env);
  TryBody<Started>(*env);
  TryBody<ResultMsg>(*env);
  TryBody<Ack>(*env);
  TryBody<Heartbeat>(*env);
  TryBody<Probe>(*env);
  TryBody<ProbeReply>(*env);
  TryBody<Cancel>(*env);
  TryBody<Bye>(*env);
}

TEST_CASE("10k seeded random and mutated inputs never crash the decoder", "[codec]") {
  std::mt19937 rng(20240611);
  Envelope env;
  int decoded = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string frame(rng() % 64, '\0');
    for (char& c : frame) c = static_cast<char>(rng());
    DecodeAsEverything(frame, &env, &decoded);
  }
  const std::string valid[] = {
      EncodeToString(MsgType::kDispatch, SampleDispatch()),
      EncodeToString(MsgType::kResult, SampleResult()),
      EncodeToString(MsgType::kHello, Hello{"g", 1, {"l"}, {{"e", 1}}, ""})};
  for (int i = 0; i < 5000; ++i) {
    std::string frame = valid[i % 3];
    int flips = 1 + rng() % 4;
    for (int f = 0; f < flips; ++f) frame[rng() % frame.size()] = static_cast<char>(rng());
    DecodeAsEverything(frame, &env, &decoded);
  }
  // Some mutations leave a well-formed envelope, so the body paths ran too.
  CHECK(decoded > 0);
}

TEST_CASE("a HEARTBEAT body of the wrong shape is refused at decode", "[codec]") {
  // The fuzzer's find under version 1 (a load sent as the integer 2^64 - 242),
  // now in a frame of this version: its first field is no epoch.
  std::string frame =
      Bytes({0x93, kV,   0x07, 0x95, 0x91, 0x92, 0xa8, 'r',  '1',  '.',  'g',  'r',  'e',  'e',
             't',  0x01, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0e, 0x40, 0x00, 0xc2});
  auto env = DecodeEnvelope(frame.data(), frame.size());
  REQUIRE(env.ok());
  auto body = BodyAs<Heartbeat>(*env);
  REQUIRE_FALSE(body.ok());
  CHECK_THAT(body.status().message(), Catch::Contains("HEARTBEAT"));
}

TEST_CASE("CheckFits refuses what the receiver's decoder refuses, naming the limit",
          "[codec][limits]") {
  Dispatch d;
  d.exec_id = "r1.t";
  CHECK(CheckFits(MsgType::kDispatch, d).ok());
  // One string over the worker link's string limit: small frame, refused.
  d.task.command = std::string(kWireMaxStringBytes + 1, 'c');
  Status one = CheckFits(MsgType::kDispatch, d);
  REQUIRE_FALSE(one.ok());
  CHECK_THAT(one.message(), Catch::Contains("one string at most 1048576 bytes"));
  std::string frame;
  Encode(MsgType::kDispatch, d, &frame);
  CHECK_FALSE(DecodeEnvelope(frame.data(), frame.size()).ok());  // the receiver agrees
  // More map pairs than a map may hold.
  d.task.command.clear();
  for (size_t i = 0; i <= kWireMaxMapPairs; ++i) d.task.env["V" + std::to_string(i)] = "v";
  CHECK_FALSE(CheckFits(MsgType::kDispatch, d).ok());
  // Over the frame limit.
  d.task.env.clear();
  for (int i = 0; i < 17; ++i) d.task.inputs.push_back({1, "u", std::string(1 << 20, 'o')});
  Status big = CheckFits(MsgType::kDispatch, d);
  REQUIRE_FALSE(big.ok());
  CHECK_THAT(big.message(), Catch::Contains("exceeds the frame limit of 16777216 bytes"));
  // EncodedSize counts exactly what Encode writes.
  frame.clear();
  Encode(MsgType::kDispatch, d, &frame);
  CHECK(EncodedSize(MsgType::kDispatch, d) == frame.size());
}

// The fuzzers start from fuzz/corpus/transport_decode; a seed written before a
// protocol bump only reaches the "other version" refusal (CI's dispatcher
// fuzzer ran on such seeds for a whole protocol version). Regenerate them with
// fuzz_write_seed_corpus (docs/fuzzing.md) when this fails.
TEST_CASE("every generated frame seed speaks this build's protocol, one per message type",
          "[codec][fuzz]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(APOLLO11_SOURCE_DIR) / "fuzz/corpus/transport_decode";
  std::set<uint16_t> types;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".msgpack") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string frame((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto env = DecodeEnvelope(frame.data(), frame.size());
    INFO(entry.path().filename().string());
    REQUIRE(env.ok());
    types.insert(env->type);
  }
  for (uint16_t t = ToWire(MsgType::kHello); t <= ToWire(MsgType::kWatch); ++t) {
    INFO(MsgTypeName(t));
    CHECK(types.count(t) == 1);
  }
}

}  // namespace apollo11::transport
