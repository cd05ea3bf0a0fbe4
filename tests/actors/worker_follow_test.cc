// A worker among several coordinators (HA, issue 14), socket-free: which one
// it talks to (the leader), how it follows a standby's "not the leader"
// refusal or a silent leader to the next, what it resends to a new leader,
// and that the epoch fence holds across coordinators.

#include <catch2/catch.hpp>
#include <map>

#include "actors/worker/coordinator_follower.h"
#include "actors/worker/worker_core.h"
#include "ha/not_leader.h"
#include "tests/actors/log_capture.h"
#include "tests/executor/fake_task_runner.h"
#include "transport/coordinator_endpoints.h"
#include "transport/protocol_mismatch.h"

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file
using transport::MsgType;

namespace {

constexpr size_t kA = 0, kB = 1, kC = 2;

std::string Frame(MsgType type, const auto& body) { return transport::EncodeToString(type, body); }

transport::Dispatch ShellDispatch(const std::string& exec_id, uint64_t epoch) {
  transport::Dispatch d;
  d.exec_id = exec_id;
  d.attempt = 1;
  d.epoch = epoch;
  d.task.type = static_cast<uint8_t>(dsl::TaskType::kShell);
  return d;
}

transport::Heartbeat Beat(uint64_t epoch, bool registered = true) {
  transport::Heartbeat hb;
  hb.epoch = epoch;
  hb.registered = registered;
  return hb;
}

transport::Refused NotLeader(const std::string& leader) {
  return transport::Refused{ha::NotLeaderReply(leader)};
}

struct Follow {
  FakeClock clock;
  testing::FakeTaskRunner runner;
  std::unique_ptr<WorkerCore> core;

  explicit Follow(const std::string& endpoints = "tcp://a:1,tcp://b:1,tcp://c:1") {
    WorkerOptions options;
    options.worker_id = "w1";
    options.slots = 2;
    options.heartbeat = Millis(100);
    options.liveness = 3;
    options.coordinator_endpoint = endpoints;
    core = std::make_unique<WorkerCore>(&runner, &clock, options);
    core->Hello();
    core->outbox().clear();
  }
  void Feed(size_t from, const std::string& frame) {
    core->OnFrame(frame.data(), frame.size(), from);
  }
  // The frames queued for the current coordinator, which are then cleared.
  std::vector<std::pair<MsgType, std::string>> Sent() {
    std::vector<std::pair<MsgType, std::string>> out;
    for (const std::string& f : core->outbox()) {
      auto env = transport::DecodeEnvelope(f.data(), f.size());
      REQUIRE(env.ok());
      out.emplace_back(static_cast<MsgType>(env->type), f);
    }
    core->outbox().clear();
    return out;
  }
  static size_t Count(const std::vector<std::pair<MsgType, std::string>>& sent, MsgType t) {
    size_t n = 0;
    for (const auto& [type, frame] : sent) n += type == t ? 1 : 0;
    return n;
  }
  static transport::Hello HelloIn(const std::vector<std::pair<MsgType, std::string>>& sent) {
    for (const auto& [type, frame] : sent) {
      if (type != MsgType::kHello) continue;
      auto env = transport::DecodeEnvelope(frame.data(), frame.size());
      auto hello = transport::BodyAs<transport::Hello>(*env);
      REQUIRE(hello.ok());
      return *hello;
    }
    FAIL("no HELLO sent");
    return {};
  }
  void FinishAll() {
    auto done = runner.Take();
    if (!done.empty()) core->OnFinished(done);
  }
};

}  // namespace

TEST_CASE("endpoint lists: commas separate, and malformed lists are refused clearly", "[follow]") {
  auto two = transport::ParseEndpointList("tcp://a:7011,tcp://b:7011", "--connect");
  REQUIRE(two.ok());
  CHECK(*two == std::vector<std::string>{"tcp://a:7011", "tcp://b:7011"});
  CHECK(transport::ParseEndpointList("inproc://x", "--connect")->size() == 1);
  for (const char* bad : {"", ",", "tcp://a:1,", ",tcp://a:1", "tcp://a:1,,tcp://b:1",
                          "tcp://a:1, tcp://b:1", "a:1", "tcp://a:1,b:1", "tcp://a:1,tcp://a:1"}) {
    auto parsed = transport::ParseEndpointList(bad, "--connect");
    INFO(bad);
    CHECK(parsed.status().code() == StatusCode::kInvalidInput);
    CHECK(parsed.status().message().find("--connect") != std::string::npos);
  }
  std::string many;
  for (int i = 0; i <= static_cast<int>(transport::kMaxCoordinatorEndpoints); ++i) {
    many += (i ? "," : "") + std::string("tcp://h:") + std::to_string(7000 + i);
  }
  CHECK_FALSE(transport::ParseEndpointList(many, "--coordinator").ok());
  CHECK(transport::ParseEndpointList("b:1", "--coordinator")
            .status()
            .message()
            .find("did you mean 'tcp://b:1'") != std::string::npos);
}

TEST_CASE("a worker says HELLO to the coordinator a standby names as the leader", "[follow]") {
  Follow f;
  CHECK(f.core->coordinators().current() == kA);
  f.Feed(kA, Frame(MsgType::kRefused, NotLeader("tcp://c:1")));
  CHECK(f.core->refusal().empty());  // not a reason to stop
  CHECK(f.core->coordinators().current() == kC);
  auto sent = f.Sent();
  CHECK(Follow::Count(sent, MsgType::kHello) == 1);
  CHECK(Follow::Count(sent, MsgType::kCredit) == 1);
}

TEST_CASE("with no leader named, a worker asks the next coordinator a heartbeat later",
          "[follow]") {
  Follow f;
  f.Feed(kA, Frame(MsgType::kRefused, NotLeader("")));
  CHECK(f.core->coordinators().current() == kB);
  CHECK(f.Sent().empty());  // not at once: standbys are not asked in a loop
  f.clock.Advance(100 * kMicrosPerMilli);
  CHECK_FALSE(f.core->Tick());
  CHECK(Follow::Count(f.Sent(), MsgType::kHello) == 1);
  // A standby naming itself counts as naming nobody.
  f.Feed(kB, Frame(MsgType::kRefused, NotLeader("tcp://b:1")));
  CHECK(f.core->coordinators().current() == kC);
  f.Feed(kC, Frame(MsgType::kRefused, NotLeader("tcp://elsewhere:9")));
  CHECK(f.core->coordinators().current() == kA);
}

TEST_CASE(
    "a silent leader is left for the next, which gets the HELLO inventory and every "
    "unacknowledged result",
    "[follow]") {
  Follow f;
  f.Feed(kA, Frame(MsgType::kHeartbeat, Beat(4)));
  f.Feed(kA, Frame(MsgType::kDispatch, ShellDispatch("r.done", 4)));
  f.Feed(kA, Frame(MsgType::kDispatch, ShellDispatch("r.busy", 4)));
  REQUIRE(f.runner.Complete("r.done", 1));
  f.FinishAll();
  f.Sent();  // the RESULT of r.done, never ACKed: the leader died first
  bool silent = false;
  for (int i = 0; i < 5 && !silent; ++i) {
    f.clock.Advance(100 * kMicrosPerMilli);
    silent = f.core->Tick();
  }
  REQUIRE(silent);
  CHECK(f.core->coordinators().current() == kB);
  f.core->Hello();  // what the actor does after a fresh socket
  auto sent = f.Sent();
  // The inventory lists both attempts it holds, the finished one apart (it
  // takes no slot): the new leader hands back at once only what the journal
  // places here and the HELLO lacks.
  transport::Hello hello = Follow::HelloIn(sent);
  CHECK(hello.lists_finished);
  REQUIRE(hello.running.size() == 1);
  CHECK(hello.running[0].exec_id == "r.busy");
  REQUIRE(hello.finished.size() == 1);
  CHECK(hello.finished[0].exec_id == "r.done");
  CHECK(Follow::Count(sent, MsgType::kResult) == 1);
  // The new leader (epoch 9) ACKs it; the old one's late ACK would have been dropped.
  f.Feed(kB, Frame(MsgType::kHeartbeat, Beat(9)));
  f.Sent();
  CHECK(f.core->unacked_results() == 1);
  f.Feed(kA, Frame(MsgType::kAck, transport::Ack{"r.done", 1}));
  CHECK(f.core->unacked_results() == 1);
  f.Feed(kB, Frame(MsgType::kAck, transport::Ack{"r.done", 1}));
  CHECK(f.core->unacked_results() == 0);
}

TEST_CASE("the epoch fence holds across coordinators: an old leader commands nothing", "[follow]") {
  Follow f;
  f.Feed(kA, Frame(MsgType::kHeartbeat, Beat(5)));
  f.Feed(kA, Frame(MsgType::kDispatch, ShellDispatch("r.t1", 5)));
  REQUIRE(f.runner.IsRunning("r.t1", 1));
  // A new term on coordinator B speaks: the worker follows it there.
  f.Feed(kB, Frame(MsgType::kHeartbeat, Beat(8)));
  CHECK(f.core->coordinators().current() == kB);
  CHECK(f.core->epoch_seen() == 8);
  CHECK(Follow::Count(f.Sent(), MsgType::kHello) == 1);
  // The old leader, paused and resumed, still believes in epoch 5.
  f.Feed(kA, Frame(MsgType::kDispatch, ShellDispatch("r.t2", 5)));
  f.Feed(kA, Frame(MsgType::kCancel, transport::Cancel{"r.t1", 1, 5}));
  f.Feed(kA, Frame(MsgType::kHeartbeat, Beat(5)));
  CHECK_FALSE(f.runner.IsRunning("r.t2", 1));
  CHECK(f.runner.launched.size() == 1);
  CHECK(f.runner.IsRunning("r.t1", 1));
  CHECK(f.core->coordinators().current() == kB);
  CHECK(f.core->epoch_seen() == 8);
  // The new leader's commands are obeyed.
  f.Feed(kB, Frame(MsgType::kCancel, transport::Cancel{"r.t1", 1, 8}));
  CHECK_FALSE(f.runner.IsRunning("r.t1", 1));
}

TEST_CASE(
    "a DISPATCH of a newer term from another coordinator moves the worker there, after "
    "the DISPATCH",
    "[follow]") {
  Follow f;
  f.Feed(kA, Frame(MsgType::kHeartbeat, Beat(3)));
  f.Sent();
  f.Feed(kC, Frame(MsgType::kDispatch, ShellDispatch("r.t1", 6)));
  CHECK(f.core->coordinators().current() == kC);
  CHECK(f.runner.IsRunning("r.t1", 1));
  auto sent = f.Sent();
  transport::Hello hello = Follow::HelloIn(sent);
  REQUIRE(hello.running.size() == 1);  // the DISPATCH is in the new leader's inventory
  CHECK(hello.running[0].exec_id == "r.t1");
}

TEST_CASE(
    "what a coordinator that is not current sends neither counts as its liveness nor "
    "acts",
    "[follow]") {
  Follow f;
  f.Feed(kA, Frame(MsgType::kHeartbeat, Beat(2)));
  bool silent = false;
  for (int i = 0; i < 5 && !silent; ++i) {
    f.clock.Advance(100 * kMicrosPerMilli);
    f.Feed(kB, Frame(MsgType::kHeartbeat, Beat(1)));  // an old term: dropped
    f.Feed(kB, Frame(MsgType::kProbe, transport::Probe{}));
    silent = f.core->Tick();
  }
  CHECK(silent);
  CHECK(f.core->coordinators().current() == kB);
}

TEST_CASE(
    "one coordinator: a standby's refusal is retried there a heartbeat later, never "
    "fatal",
    "[follow]") {
  Follow f("tcp://a:1");
  f.Feed(kA, Frame(MsgType::kRefused, NotLeader("tcp://b:1")));
  CHECK(f.core->refusal().empty());
  CHECK(f.core->coordinators().current() == kA);
  f.clock.Advance(100 * kMicrosPerMilli);
  f.core->Tick();
  CHECK(Follow::Count(f.Sent(), MsgType::kHello) == 1);
  f.Feed(kA, Frame(MsgType::kRefused, transport::Refused{"worker id w1 is taken"}));
  CHECK(f.core->refusal() == "worker id w1 is taken");
}

TEST_CASE("CoordinatorFollower: a leader named that is not in the list reads as unknown",
          "[follow]") {
  CoordinatorFollower follower({"tcp://a:1", "tcp://b:1"});
  CHECK_FALSE(follower.OnNotLeader(0, "tcp://z:1"));
  CHECK(follower.current() == 1);
  CHECK(follower.OnNotLeader(1, "tcp://a:1"));
  CHECK(follower.current() == 0);
  follower.OnSilent();
  CHECK(follower.current_endpoint() == "tcp://b:1");
  CoordinatorFollower none({});
  CHECK(none.size() == 1);
  none.OnSilent();
  CHECK(none.current() == 0);
}

TEST_CASE("a HELLO nobody answers within a heartbeat is said to the next coordinator", "[follow]") {
  Follow f;  // said HELLO to A, which is down
  f.clock.Advance(100 * kMicrosPerMilli);
  CHECK_FALSE(f.core->Tick());
  CHECK(f.core->coordinators().current() == kB);
  CHECK(Follow::Count(f.Sent(), MsgType::kHello) == 1);
  f.clock.Advance(100 * kMicrosPerMilli);
  f.core->Tick();
  CHECK(f.core->coordinators().current() == kC);
  f.Feed(kC, Frame(MsgType::kHeartbeat, Beat(3)));  // C answers: it stays there
  for (int i = 0; i < 2; ++i) {
    f.clock.Advance(100 * kMicrosPerMilli);
    f.core->Tick();
    f.Feed(kC, Frame(MsgType::kHeartbeat, Beat(3)));
  }
  CHECK(f.core->coordinators().current() == kC);
}

TEST_CASE(
    "a standby's refusals of frames sent before the worker moved to the leader change "
    "nothing and are not logged again",
    "[follow]") {
  // Issue 36: every REFUSED in flight from the standby (one per frame it
  // got: the HELLO and each result resent with it) made the worker say
  // HELLO to the leader again, with every result, and log one more line:
  // 800 to 1,900 lines per worker per failover.
  testing::LogCapture log;
  Follow f;
  f.Feed(kA, Frame(MsgType::kHeartbeat, Beat(4)));
  for (const char* id : {"r.t1", "r.t2"}) {
    f.Feed(kA, Frame(MsgType::kDispatch, ShellDispatch(id, 4)));
  }
  f.clock.Advance(kMicrosPerMilli);
  for (const char* id : {"r.t1", "r.t2"}) REQUIRE(f.runner.Complete(id, 1));
  f.FinishAll();
  f.Sent();
  // A stood down, now a standby naming C: it refuses the two results, the
  // credit and the heartbeat that were on their way.
  for (int i = 0; i < 4; ++i) f.Feed(kA, Frame(MsgType::kRefused, NotLeader("tcp://c:1")));
  CHECK(f.core->coordinators().current() == kC);
  auto sent = f.Sent();
  CHECK(Follow::Count(sent, MsgType::kHello) == 1);
  CHECK(Follow::Count(sent, MsgType::kResult) == 2);
  CHECK(log.Count("is not the leader") == 1);
}

TEST_CASE("the same 'is not the leader' line is logged once per 10 s, then with its count",
          "[follow]") {
  testing::LogCapture log;
  Follow f("tcp://a:1");  // one coordinator, a standby that names nobody in the list
  for (int i = 0; i < 50; ++i) {
    f.Feed(kA, Frame(MsgType::kRefused, NotLeader("tcp://z:1")));
    f.clock.Advance(10 * kMicrosPerMilli);
  }
  CHECK(log.Count("is not the leader") == 1);
  f.clock.Advance(10 * kMicrosPerSecond);
  f.core->Tick();  // the flood stopped: its count is logged once
  CHECK(log.Count("49 more like it were not logged") == 1);
  f.Feed(kA, Frame(MsgType::kRefused, NotLeader("tcp://z:1")));
  CHECK(log.Count("is not the leader") == 2);  // the count's line, and no other
  f.clock.Advance(10 * kMicrosPerSecond);
  f.Feed(kA, Frame(MsgType::kRefused, NotLeader("tcp://z:1")));
  CHECK(log.Count("is not the leader") == 3);
  CHECK(log.Count("1 more like it in the last 10 s") == 1);
}

TEST_CASE(
    "a coordinator of another protocol version is logged once with its refusal, and the "
    "worker keeps trying quietly instead of stopping",
    "[follow][protocol]") {
  testing::LogCapture log;
  Follow f("tcp://a:1,tcp://b:1");
  // A, a newer coordinator (version kProtocolVersion + 1), refuses us in our
  // version, naming both; B is silent.
  const std::string refusal = transport::ProtocolMismatchReason(transport::kProtocolVersion - 1);
  for (int i = 0; i < 5; ++i) {
    f.Feed(kA, Frame(MsgType::kRefused, transport::Refused{refusal}));
    f.clock.Advance(100 * kMicrosPerMilli);
    f.core->Tick();
    f.Sent();
    f.clock.Advance(100 * kMicrosPerMilli);
    f.core->Tick();  // B: no answer either; back to A
    f.Sent();
  }
  CHECK(f.core->refusal().empty());  // not a reason to stop
  CHECK(log.Count("speaks another protocol version") == 1);
  CHECK(log.Count("is silent") == 1);  // B's, once; A's is said by the mismatch
  CHECK(log.Count("worker protocol " + std::to_string(transport::kProtocolVersion)) >= 1);
  CHECK(log.Count("no answer from the coordinator at tcp://a:1") == 0);
  // A frame A sends in its own version: dropped quietly (the mismatch is known).
  std::string newer;
  transport::EncodeAs(transport::kProtocolVersion + 1, transport::ToWire(MsgType::kHeartbeat),
                      Beat(9), &newer);
  f.Feed(kA, newer);
  CHECK(log.Count("malformed") == 0);
  CHECK(log.Count("speaks another protocol version") == 1);
  // Once A speaks this version, it is heard, and a later mismatch is news again.
  f.Feed(kA, Frame(MsgType::kHeartbeat, Beat(3)));
  f.Feed(kA, Frame(MsgType::kRefused, transport::Refused{refusal}));
  CHECK(log.Count("speaks another protocol version") == 2);
}

namespace {

// The WATCH frames queued since the last call, by coordinator; then cleared.
std::map<size_t, transport::Watch> Watches(WorkerCore& core) {
  std::map<size_t, transport::Watch> out;
  for (const auto& [to, frame] : core.watch_outbox()) {
    auto env = transport::DecodeEnvelope(frame.data(), frame.size());
    REQUIRE(env.ok());
    REQUIRE(env->type == transport::ToWire(MsgType::kWatch));
    auto watch = transport::BodyAs<transport::Watch>(*env);
    REQUIRE(watch.ok());
    out[to] = *watch;
  }
  core.watch_outbox().clear();
  return out;
}

}  // namespace

TEST_CASE("a worker watches every coordinator it does not follow, at each heartbeat",
          "[follow][watch]") {
  Follow f;
  Watches(*f.core);  // those of the constructor's HELLO
  f.Feed(kA, Frame(MsgType::kHeartbeat, Beat(4)));
  f.clock.Advance(100 * kMicrosPerMilli);
  CHECK_FALSE(f.core->Tick());
  auto watches = Watches(*f.core);
  REQUIRE(watches.size() == 2);
  CHECK(watches.count(kA) == 0);
  CHECK(watches[kB].worker_id == "w1");
  CHECK(watches[kB].epoch_seen == 4);
  CHECK(watches[kC].epoch_seen == 4);
  // Between heartbeats, nothing.
  f.clock.Advance(50 * kMicrosPerMilli);
  CHECK_FALSE(f.core->Tick());
  CHECK(Watches(*f.core).empty());
  // A single coordinator is never watched.
  Follow one("tcp://a:1");
  one.clock.Advance(100 * kMicrosPerMilli);
  CHECK_FALSE(one.core->Tick());
  CHECK(one.core->watch_outbox().empty());
}

TEST_CASE("a new leader's announcement to a watching worker is followed at once",
          "[follow][watch]") {
  Follow f;
  f.Feed(kA, Frame(MsgType::kHeartbeat, Beat(4)));
  f.Sent();
  Watches(*f.core);
  // kB, elected in epoch 5, announces itself: a HEARTBEAT of its term that
  // says the worker is not registered there.
  f.Feed(kB, Frame(MsgType::kHeartbeat, Beat(5)));
  CHECK(f.core->coordinators().current() == kB);
  auto sent = f.Sent();
  CHECK(Follow::Count(sent, MsgType::kHello) == 1);
  // It now watches kA and kC.
  auto watches = Watches(*f.core);
  CHECK(watches.count(kB) == 0);
  CHECK(watches.count(kA) == 1);
  CHECK(watches.count(kC) == 1);
  // The old leader's term is fenced off: its heartbeat does not take the worker back.
  f.Feed(kA, Frame(MsgType::kHeartbeat, Beat(4)));
  CHECK(f.core->coordinators().current() == kB);
}

TEST_CASE("a 'not the leader' refusal from before the newest term is dropped, not followed",
          "[follow][watch]") {
  Follow f;
  f.Feed(kB, Frame(MsgType::kHeartbeat, Beat(19)));
  REQUIRE(f.core->coordinators().current() == kB);
  f.Sent();
  // kB refused the worker while it was still a standby of the epoch-2
  // leader at kA; the frame arrives after kB began leading in epoch 19.
  transport::Refused late = NotLeader("tcp://a:1");
  late.epoch = 2;
  f.Feed(kB, Frame(MsgType::kRefused, late));
  CHECK(f.core->coordinators().current() == kB);
  CHECK(f.core->stale_refusals() == 1);
  CHECK(f.Sent().empty());
  // One naming a newer term is followed, as is one that names no epoch (an
  // older coordinator, or no leader known).
  transport::Refused newer = NotLeader("tcp://c:1");
  newer.epoch = 20;
  f.Feed(kB, Frame(MsgType::kRefused, newer));
  CHECK(f.core->coordinators().current() == kC);
  f.Feed(kC, Frame(MsgType::kRefused, NotLeader("tcp://a:1")));
  CHECK(f.core->coordinators().current() == kA);
  CHECK(f.core->stale_refusals() == 1);
}

TEST_CASE("with a long heartbeat a worker still watches every second", "[follow][watch]") {
  FakeClock clock;
  testing::FakeTaskRunner runner;
  WorkerOptions options;
  options.worker_id = "w1";
  options.slots = 1;
  options.heartbeat = Millis(10000);  // the default
  options.coordinator_endpoint = "tcp://a:1,tcp://b:1";
  WorkerCore core(&runner, &clock, options);
  core.Hello();
  CHECK(Watches(core).size() == 1);  // with the first HELLO
  CHECK(core.NextTick() <= clock.Steady() + kMicrosPerSecond);
  clock.Advance(999 * kMicrosPerMilli);
  core.Tick();
  CHECK(Watches(core).empty());
  clock.Advance(1 * kMicrosPerMilli);
  core.Tick();
  auto watches = Watches(core);
  REQUIRE(watches.size() == 1);
  CHECK(watches.count(kB) == 1);
}

TEST_CASE(
    "a queue kept across a silent leader starts once the new leader answers the HELLO, and what "
    "it cancels never starts",
    "[follow][queue]") {
  FakeClock clock;
  testing::FakeTaskRunner runner;
  WorkerOptions options;
  options.worker_id = "w1";
  options.slots = 1;
  options.prefetch = 2;
  options.heartbeat = Millis(100);
  options.liveness = 3;
  options.coordinator_endpoint = "tcp://a:1,tcp://b:1";
  WorkerCore core(&runner, &clock, options);
  auto feed = [&](size_t from, const std::string& frame) {
    core.OnFrame(frame.data(), frame.size(), from);
  };
  core.Hello();
  transport::Heartbeat answer = Beat(4);
  answer.answers_hello = true;
  feed(kA, Frame(MsgType::kHeartbeat, answer));
  for (const char* id : {"r.run", "r.next", "r.given"}) {
    feed(kA, Frame(MsgType::kDispatch, ShellDispatch(id, 4)));
  }
  REQUIRE(runner.IsRunning("r.run", 1));
  REQUIRE(core.queued() == 2);
  // The leader dies: after --liveness silent heartbeats the worker moves on,
  // keeping its queue (it used to drop it, and the new leader requeued it).
  bool silent = false;
  for (int i = 0; i < 5 && !silent; ++i) {
    clock.Advance(100 * kMicrosPerMilli);
    silent = core.Tick();
  }
  REQUIRE(silent);
  CHECK(core.queued() == 2);
  core.Hello();  // what the actor does after a fresh socket
  core.outbox().clear();
  // Its running task ends; the slot frees, but nothing starts before the
  // new leader has answered the HELLO.
  REQUIRE(runner.Complete("r.run", 1));
  auto done = runner.Take();
  core.OnFinished(done);
  CHECK_FALSE(runner.IsRunning("r.next", 1));
  // The new leader (kB, epoch 9) gave r.given to another worker meanwhile:
  // its CANCEL comes before the answer, so r.given never starts.
  feed(kB, Frame(MsgType::kCancel, transport::Cancel{"r.given", 1, 9}));
  transport::Heartbeat new_answer = Beat(9);
  new_answer.answers_hello = true;
  feed(kB, Frame(MsgType::kHeartbeat, new_answer));
  CHECK(core.coordinators().current() == kB);
  CHECK(runner.IsRunning("r.next", 1));
  CHECK(core.queued() == 0);
  for (const auto& req : runner.launched) CHECK(req.exec_id != "r.given");
}
