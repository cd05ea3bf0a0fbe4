// The dispatcher's worker-protocol table (actors/dispatcher/worker_protocol.h) and
// DispatcherCore following it: which message is accepted in which state, and
// what a refused one costs (counted, logged, never fatal); and the two
// pieces of dispatcher state beside it, the ready queue and the claim window.

#include "actors/dispatcher/worker_protocol.h"

#include <catch2/catch.hpp>

#include "actors/dispatcher/claim_window.h"
#include "actors/dispatcher/dispatcher_core.h"
#include "actors/dispatcher/ready_queue.h"

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file
using transport::MsgType;

namespace {

std::string HelloFrame(const std::string& id, uint32_t slots, const std::string& group = "default",
                       std::vector<transport::ExecRef> running = {}) {
  (void)id;  // the identity is the ROUTER's, not a HELLO field
  transport::Hello h;
  h.group = group;
  h.slots = slots;
  h.running = std::move(running);
  return transport::EncodeToString(MsgType::kHello, h);
}

std::string CreditFrame(uint32_t n) {
  return transport::EncodeToString(MsgType::kCredit, transport::Credit{n});
}

std::string ResultFrame(const std::string& exec_id, uint32_t attempt) {
  transport::ResultMsg r;
  r.exec_id = exec_id;
  r.attempt = attempt;
  return transport::EncodeToString(MsgType::kResult, r);
}

// The types of the frames sent to `identity`.
std::vector<MsgType> SentTo(const DispatcherOutput& out, const std::string& identity) {
  std::vector<MsgType> types;
  for (const auto& [id, frame] : out.to_workers) {
    if (id != identity) continue;
    auto env = transport::DecodeEnvelope(frame.data(), frame.size());
    REQUIRE(env.ok());
    types.push_back(static_cast<MsgType>(env->type));
  }
  return types;
}

bool AskedHello(const DispatcherOutput& out, const std::string& identity) {
  for (const auto& [id, frame] : out.to_workers) {
    auto env = transport::DecodeEnvelope(frame.data(), frame.size());
    REQUIRE(env.ok());
    if (id != identity || env->type != transport::ToWire(MsgType::kHeartbeat)) continue;
    auto hb = transport::BodyAs<transport::Heartbeat>(*env);
    REQUIRE(hb.ok());
    if (!hb->registered) return true;
  }
  return false;
}

struct Dispatcher {
  FakeClock clock;
  DispatcherCore core{&clock, {}};
  DispatcherOutput out;
  void Feed(const std::string& identity, const std::string& frame) {
    core.OnWorkerFrame(identity, frame.data(), frame.size(), &out);
  }
  void Enqueue(const std::string& exec_id) {
    actors::Enqueue e;
    QueuedExec q;
    q.dispatch.exec_id = exec_id;
    q.dispatch.attempt = 1;
    e.execs.push_back(std::move(q));
    core.OnEnqueue(std::move(e));
  }
};

}  // namespace

TEST_CASE("the worker protocol table: only HELLO registers, and nothing else counts before it",
          "[dispatcher][protocol]") {
  const auto u = WorkerState::kUnregistered;
  CHECK(DecideWorkerAction(u, transport::ToWire(MsgType::kHello)) == WorkerAction::kRegister);
  for (MsgType t : {MsgType::kCredit, MsgType::kStarted, MsgType::kResult, MsgType::kHeartbeat,
                    MsgType::kProbeReply, MsgType::kLogReply, MsgType::kBye, MsgType::kDispatch}) {
    INFO(transport::MsgTypeName(transport::ToWire(t)));
    CHECK(DecideWorkerAction(u, transport::ToWire(t)) == WorkerAction::kAskHello);
  }
  CHECK(DecideWorkerAction(u, 99) == WorkerAction::kAskHello);
}

TEST_CASE("the worker protocol table: a registered worker's messages each have their handler",
          "[dispatcher][protocol]") {
  const auto r = WorkerState::kRegistered;
  CHECK(DecideWorkerAction(r, transport::ToWire(MsgType::kHello)) == WorkerAction::kRegister);
  CHECK(DecideWorkerAction(r, transport::ToWire(MsgType::kCredit)) == WorkerAction::kCredit);
  CHECK(DecideWorkerAction(r, transport::ToWire(MsgType::kStarted)) == WorkerAction::kStarted);
  CHECK(DecideWorkerAction(r, transport::ToWire(MsgType::kResult)) == WorkerAction::kResult);
  CHECK(DecideWorkerAction(r, transport::ToWire(MsgType::kHeartbeat)) == WorkerAction::kHeartbeat);
  CHECK(DecideWorkerAction(r, transport::ToWire(MsgType::kProbeReply)) ==
        WorkerAction::kProbeReply);
  CHECK(DecideWorkerAction(r, transport::ToWire(MsgType::kLogReply)) == WorkerAction::kLogReply);
  CHECK(DecideWorkerAction(r, transport::ToWire(MsgType::kBye)) == WorkerAction::kBye);
  // What only the dispatcher sends, the runtime's own types and unknown ones.
  for (uint16_t t : {transport::ToWire(MsgType::kDispatch), transport::ToWire(MsgType::kAck),
                     transport::ToWire(MsgType::kProbe), transport::ToWire(MsgType::kCancel),
                     transport::ToWire(MsgType::kLogRequest), transport::ToWire(MsgType::kTerm),
                     uint16_t{0}, uint16_t{99}, uint16_t{65535}}) {
    INFO(t);
    CHECK(DecideWorkerAction(r, t) == WorkerAction::kRefuse);
    CHECK(IsRefusal(DecideWorkerAction(r, t)));
  }
}

TEST_CASE("a CREDIT before HELLO is refused, counted, and the peer asked to say HELLO",
          "[dispatcher][protocol]") {
  Dispatcher d;
  d.Feed("w1", CreditFrame(4));
  CHECK(d.core.refused_frames() == 1);
  CHECK(d.core.workers() == 0);
  CHECK(AskedHello(d.out, "w1"));
  // The credit was not kept for later: after HELLO, nothing is placed until
  // the worker grants credit again.
  d.Feed("w1", HelloFrame("w1", 4));
  d.Enqueue("r.a");
  d.out.Clear();
  d.core.Place(&d.out);
  CHECK(d.out.placed.placed.empty());
  d.Feed("w1", CreditFrame(1));
  d.core.Place(&d.out);
  CHECK(d.out.placed.placed.size() == 1);
}

TEST_CASE("a RESULT before HELLO is refused, and its sender asked to say HELLO",
          "[dispatcher][protocol]") {
  Dispatcher d;
  d.Feed("w1", ResultFrame("r.a", 1));
  CHECK(d.out.results.items.empty());
  CHECK(d.core.workers() == 0);
  CHECK(AskedHello(d.out, "w1"));
  CHECK(d.core.refused_frames() == 1);
}

TEST_CASE("a RESULT or STARTED for an execution another worker holds is refused",
          "[dispatcher][protocol]") {
  Dispatcher d;
  d.Feed("w1", HelloFrame("w1", 1));
  d.Feed("w1", CreditFrame(1));
  d.Feed("w2", HelloFrame("w2", 1));
  d.Enqueue("r.a");
  d.core.Place(&d.out);
  REQUIRE(d.out.placed.placed.size() == 1);
  REQUIRE(d.out.placed.placed[0].worker_id == "w1");
  d.out.Clear();
  d.Feed("w2", ResultFrame("r.a", 1));
  d.Feed("w2", transport::EncodeToString(MsgType::kStarted, transport::Started{"r.a", 1, 5}));
  CHECK(d.out.results.items.empty());
  CHECK(d.out.started.items.empty());
  CHECK(d.core.refused_frames() == 2);
  // Another attempt is nobody's: it goes on, to be ACKed as stale.
  d.Feed("w2", ResultFrame("r.a", 7));
  CHECK(d.out.results.items.size() == 1);
  // The holder's own report counts, and a resend of it still goes on.
  d.Feed("w1", ResultFrame("r.a", 1));
  d.Feed("w1", ResultFrame("r.a", 1));
  CHECK(d.out.results.items.size() == 3);
  CHECK(d.core.refused_frames() == 2);
}

TEST_CASE("a recovered execution is claimed only by the worker the journal names",
          "[dispatcher][recovery]") {
  Dispatcher d;
  AdoptRunning adopt;
  adopt.claim_until = d.clock.Now() + kMicrosPerSecond;
  adopt.execs.push_back({"r.a", 1, "w1", 100});
  d.core.OnAdopt(adopt);
  d.Feed("w2", HelloFrame("w2", 1));
  d.Feed("w2", ResultFrame("r.a", 1));
  CHECK(d.out.results.items.empty());
  CHECK(d.core.unclaimed() == 1);
  d.Feed("w1", HelloFrame("w1", 1));
  d.Feed("w1", ResultFrame("r.a", 1));
  CHECK(d.out.results.items.size() == 1);
  CHECK(d.core.unclaimed() == 0);
}

TEST_CASE("a second HELLO re-registers: new slots and labels, no credit, one worker",
          "[dispatcher][protocol]") {
  Dispatcher d;
  d.Feed("w1", HelloFrame("w1", 2, "etl"));
  d.Feed("w1", CreditFrame(2));
  const Micros joined = d.core.Snapshot().at(0).joined_at;
  d.clock.Advance(5 * kMicrosPerSecond);
  d.out.Clear();
  d.Feed("w1", HelloFrame("w1", 3, "gpu"));
  CHECK(d.core.refused_frames() == 0);
  REQUIRE(d.core.workers() == 1);
  const WorkerSnapshot w = d.core.Snapshot().at(0);
  CHECK(w.group == "gpu");
  CHECK(w.slots == 3);
  CHECK(w.credits == 0);  // credit comes with CREDIT again
  CHECK(w.joined_at == joined);
  CHECK(w.last_seen == d.clock.Now());
  CHECK(SentTo(d.out, "w1") == std::vector<MsgType>{MsgType::kHeartbeat});
  CHECK_FALSE(AskedHello(d.out, "w1"));
}

TEST_CASE("a DISPATCH sent by a worker is refused and counted, and the worker stays",
          "[dispatcher][protocol]") {
  Dispatcher d;
  d.Feed("w1", HelloFrame("w1", 1));
  d.out.Clear();
  d.Feed("w1", transport::EncodeToString(MsgType::kDispatch, transport::Dispatch{}));
  d.Feed("w1", transport::EncodeToString(MsgType::kAck, transport::Ack{"r.a", 1}));
  CHECK(d.core.refused_frames() == 2);
  CHECK(d.core.dropped_frames() == 2);
  CHECK(d.core.HasWorker("w1"));
  CHECK(d.out.to_workers.empty());
}

TEST_CASE("BYE from a worker that never said HELLO is refused, and from a registered one it leaves",
          "[dispatcher][protocol]") {
  Dispatcher d;
  const std::string bye = transport::EncodeToString(MsgType::kBye, transport::Bye{});
  d.Feed("w1", bye);
  CHECK(d.core.refused_frames() == 1);
  CHECK(d.out.gone.empty());
  d.Feed("w1", HelloFrame("w1", 1));
  d.Feed("w1", bye);
  CHECK(d.core.workers() == 0);
  REQUIRE(d.out.gone.size() == 1);
  CHECK(d.out.gone[0].reason.find("BYE") != std::string::npos);
}

TEST_CASE("liveness is reported on the steady clock, and last_seen shown stays wall time",
          "[dispatcher][protocol]") {
  Dispatcher d;
  d.Feed("w1", HelloFrame("w1", 1));
  const Micros steady = d.clock.Steady();
  d.clock.StepWall(-3600 * kMicrosPerSecond);  // an operator sets the clock back an hour
  d.Feed("w1", transport::EncodeToString(MsgType::kHeartbeat, transport::Heartbeat{}));
  WorkersSeen seen = d.core.Seen();
  REQUIRE(seen.workers.size() == 1);
  CHECK(seen.workers[0].last_seen == steady);  // not an hour in the past
  CHECK(d.core.Snapshot().at(0).last_seen == d.clock.Now());
}

TEST_CASE("the ready queue replaces an older attempt and offers by priority, then arrival",
          "[dispatcher]") {
  ReadyQueue queue;
  auto exec = [](const std::string& id, uint32_t attempt, int priority) {
    QueuedExec q;
    q.priority = priority;
    q.dispatch.exec_id = id;
    q.dispatch.attempt = attempt;
    return q;
  };
  queue.Push(exec("r.a", 1, 0));
  queue.Push(exec("r.b", 1, 5));
  queue.Push(exec("r.c", 1, 0));
  queue.Push(exec("r.a", 2, 0));  // a newer attempt of r.a: replaces it, queued last
  CHECK(queue.size() == 3);
  std::vector<std::string> offered;
  queue.Visit([](const std::string& group) { return group == "default"; },
              [&](QueuedExec& q) {
                offered.push_back(q.dispatch.exec_id + "/" + std::to_string(q.dispatch.attempt));
                return q.dispatch.exec_id == "r.c" ? ReadyQueue::Offer::kSkip
                                                   : ReadyQueue::Offer::kTake;
              });
  CHECK(offered == std::vector<std::string>{"r.b/1", "r.c/1", "r.a/2"});
  CHECK(queue.size() == 1);
  CHECK(queue.Contains("r.c"));
  CHECK(queue.Remove("r.c"));
  CHECK_FALSE(queue.Remove("r.c"));
  CHECK(queue.size() == 0);
}

TEST_CASE("the claim window keeps what is claimed in time and hands back the rest by worker",
          "[dispatcher][recovery]") {
  ClaimWindow window;
  AdoptRunning adopt;
  adopt.claim_until = 1000;
  adopt.execs.push_back({"r.a", 1, "w1", 500});
  adopt.execs.push_back({"r.b", 2, "w1", 0});
  adopt.execs.push_back({"r.c", 1, "w2", 0});
  window.Adopt(adopt);
  CHECK_FALSE(window.Claim("w1", "r.a", 2).has_value());  // another attempt
  CHECK(window.Claim("w1", "r.a", 1) == std::optional<int64_t>(500));
  window.Drop("r.c");  // canceled meanwhile
  std::vector<WorkerGone> gone;
  window.ReleaseDue(999, &gone);
  CHECK(gone.empty());
  window.ReleaseDue(1000, &gone);
  REQUIRE(gone.size() == 1);
  CHECK(gone[0].worker_id == "w1");
  REQUIRE(gone[0].execs.size() == 1);
  CHECK(gone[0].execs[0] == transport::ExecRef{"r.b", 2});
  CHECK(window.size() == 0);
}

namespace {

std::string NamedHello(const std::string& worker_id, uint32_t slots) {
  transport::Hello h;
  h.worker_id = worker_id;
  h.slots = slots;
  return transport::EncodeToString(MsgType::kHello, h);
}

// The reason of the REFUSED sent to `identity`, or "" when none was.
std::string RefusalTo(const DispatcherOutput& out, const std::string& identity) {
  for (const auto& [id, frame] : out.to_workers) {
    auto env = transport::DecodeEnvelope(frame.data(), frame.size());
    REQUIRE(env.ok());
    if (id != identity || env->type != transport::ToWire(MsgType::kRefused)) continue;
    auto refused = transport::BodyAs<transport::Refused>(*env);
    REQUIRE(refused.ok());
    return refused->reason;
  }
  return "";
}

}  // namespace

TEST_CASE("a HELLO with absurd slots or an unusable worker id is refused with its reason",
          "[dispatcher][protocol]") {
  Dispatcher d;
  d.Feed("w1/a", NamedHello("w1", 4294967295u));
  CHECK(RefusalTo(d.out, "w1/a").find("4294967295 slots") != std::string::npos);
  d.Feed("w2/a", NamedHello("../etc", 1));
  CHECK(RefusalTo(d.out, "w2/a").find("not 1 to 128 printable") != std::string::npos);
  d.Feed("w3/a", NamedHello(std::string(200, 'x'), 1));
  CHECK_FALSE(RefusalTo(d.out, "w3/a").empty());
  CHECK(d.core.workers() == 0);
  CHECK(d.core.refused_frames() == 3);
  d.Feed("w4/a", NamedHello("w4", 0));  // 0 slots: draining, allowed
  CHECK(d.core.workers() == 1);
}

TEST_CASE("a second connection claiming a live worker's id is refused, a restarted one takes over",
          "[dispatcher][protocol]") {
  bool first_connected = true;
  FakeClock clock;
  DispatcherOptions options;
  options.connected = [&](const std::string& route) { return route != "w1/a" || first_connected; };
  DispatcherCore core(&clock, options);
  DispatcherOutput out;
  auto feed = [&](const std::string& route, const std::string& frame) {
    core.OnWorkerFrame(route, frame.data(), frame.size(), &out);
  };
  feed("w1/a", NamedHello("w1", 1));
  REQUIRE(core.HasWorker("w1"));
  feed("w1/b", NamedHello("w1", 1));
  CHECK(RefusalTo(out, "w1/b").find("already connected") != std::string::npos);
  CHECK(core.workers() == 1);
  // w1/b is not w1: what it sends is not believed.
  out.Clear();
  feed("w1/b", ResultFrame("r.a", 1));
  CHECK(out.results.items.empty());
  // The first process died: its connection is gone, the next one takes over.
  first_connected = false;
  out.Clear();
  feed("w1/c", NamedHello("w1", 2));
  CHECK(RefusalTo(out, "w1/c").empty());
  REQUIRE(core.workers() == 1);
  CHECK(core.Snapshot().at(0).slots == 2);
  CHECK(SentTo(out, "w1/c") == std::vector<MsgType>{MsgType::kHeartbeat});
  out.Clear();
  feed("w1/a", CreditFrame(1));  // the old connection is not the worker any more
  CHECK(AskedHello(out, "w1/a"));
}

TEST_CASE("under CURVE only worker keys are heard, and a worker id stays with its key",
          "[dispatcher][protocol][security]") {
  FakeClock clock;
  DispatcherOptions options;
  options.require_worker_role = true;
  options.connected = [](const std::string&) { return false; };
  DispatcherCore core(&clock, options);
  DispatcherOutput out;
  auto feed = [&](const std::string& route, const transport::PeerAuth& peer,
                  const std::string& frame) {
    core.OnWorkerFrame(route, peer, frame.data(), frame.size(), &out);
  };
  const transport::PeerAuth client{"KEY-C", transport::kRoleOperator | transport::kRoleViewer};
  const transport::PeerAuth worker{"KEY-W", transport::kRoleWorker};
  const transport::PeerAuth other_worker{"KEY-X", transport::kRoleWorker};
  feed("w1/a", client, NamedHello("w1", 1));
  CHECK(RefusalTo(out, "w1/a").find("may not act as a worker (its roles: viewer,operator)") !=
        std::string::npos);
  CHECK(core.workers() == 0);
  feed("w1/a", transport::PeerAuth{}, NamedHello("w1", 1));  // no key at all
  CHECK(core.workers() == 0);
  feed("w1/b", worker, NamedHello("w1", 1));
  REQUIRE(core.HasWorker("w1"));
  out.Clear();
  // Even with its first connection gone, the id stays with its key.
  feed("w1/c", other_worker, NamedHello("w1", 1));
  CHECK(RefusalTo(out, "w1/c").find("registered by another key") != std::string::npos);
  // A frame on w1's connection from another key is not w1's.
  out.Clear();
  feed("w1/b", other_worker, ResultFrame("r.a", 1));
  CHECK(out.results.items.empty());
  CHECK(core.refused_frames() == 4);
}

TEST_CASE("what is remembered about peers stays bounded however many ids come and go",
          "[dispatcher][protocol]") {
  Dispatcher d;
  for (int i = 0; i < 6000; ++i) {
    const std::string id = "rnd" + std::to_string(i);
    d.Feed(id, HelloFrame(id, 1));
    d.core.OnWorkerLost({id, "lost"}, &d.out);
    d.out.Clear();
  }
  CHECK(d.core.workers() == 0);
  CHECK(d.core.remembered_peers() <= 4096);
}

TEST_CASE("a RESULT's error and stderr tail are cut to their named limits",
          "[dispatcher][protocol]") {
  Dispatcher d;
  d.Feed("w1", HelloFrame("w1", 1));
  transport::ResultMsg r;
  r.exec_id = "r.a";
  r.attempt = 1;
  r.error = std::string(kMaxResultErrorBytes * 10, 'e');
  r.stderr_tail = std::string(kMaxStderrTailBytes - 1, 's') + "\xc3\xa9";  // ends in 'é'
  d.Feed("w1", transport::EncodeToString(MsgType::kResult, r));
  REQUIRE(d.out.results.items.size() == 1);
  const transport::ResultMsg& got = d.out.results.items[0].result;
  CHECK(got.error.size() <= kMaxResultErrorBytes);
  CHECK(got.error.find("[cut: 40960 bytes]") != std::string::npos);
  CHECK(got.stderr_tail.size() <= kMaxStderrTailBytes);
  CHECK(got.stderr_tail.find("\xc3 [cut") == std::string::npos);  // no half character
}

TEST_CASE("a LOG_REPLY counts only from the worker that was asked", "[dispatcher][protocol]") {
  Dispatcher d;
  d.Feed("w1", HelloFrame("w1", 1));
  d.Feed("w2", HelloFrame("w2", 1));
  LogFetch fetch;
  fetch.worker_id = "w1";
  fetch.request.request_id = 7;
  d.core.OnLogFetch(fetch, &d.out);
  transport::LogReply reply;
  reply.request_id = 7;
  reply.data = "forged";
  d.Feed("w2", transport::EncodeToString(MsgType::kLogReply, reply));
  CHECK(d.out.logs.empty());
  CHECK(d.core.refused_frames() == 1);
  reply.data = "real";
  d.Feed("w1", transport::EncodeToString(MsgType::kLogReply, reply));
  REQUIRE(d.out.logs.size() == 1);
  CHECK(d.out.logs[0].reply.data == "real");
  d.Feed("w1", transport::EncodeToString(MsgType::kLogReply, reply));  // answered already
  CHECK(d.out.logs.size() == 1);
}
