// The dispatcher's side of worker-side queues (issue 18): credit up to a
// worker's slots + prefetch and never beyond, queued work counted in
// placement, a queued execution handed back with the rest when its worker is
// lost, and a reservation never sent freeing its credit.

#include <catch2/catch.hpp>

#include "actors/dispatcher/dispatcher_core.h"
#include "tests/actors/cli_harness.h"

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file

namespace {

std::string HelloFrame(uint32_t slots, uint32_t prefetch) {
  transport::Hello h;
  h.group = "default";
  h.slots = slots;
  h.prefetch = prefetch;
  return transport::EncodeToString(transport::MsgType::kHello, h);
}

std::string CreditFrame(uint32_t n) {
  return transport::EncodeToString(transport::MsgType::kCredit, transport::Credit{n});
}

QueuedExec Exec(const std::string& id, int64_t expected_ms = 100) {
  QueuedExec q;
  q.group = "default";
  q.dispatch.exec_id = id;
  q.dispatch.attempt = 1;
  q.expected_ms = expected_ms;
  return q;
}

void Join(DispatcherCore& core, const std::string& id, uint32_t slots, uint32_t prefetch,
          uint32_t credit, DispatcherOutput* out) {
  const std::string hello = HelloFrame(slots, prefetch);
  core.OnWorkerFrame(id, hello.data(), hello.size(), out);
  const std::string c = CreditFrame(credit);
  core.OnWorkerFrame(id, c.data(), c.size(), out);
}

}  // namespace

TEST_CASE("the dispatcher sends up to slots + prefetch to a worker and never more",
          "[dispatcher][queue]") {
  FakeClock clock;
  DispatcherCore core(&clock, {});
  DispatcherOutput out;
  Join(core, "w1", 2, 3, 100, &out);  // a flood is cut to the capacity, 5
  Enqueue e;
  for (int i = 0; i < 8; ++i) e.execs.push_back(Exec("r.t" + std::to_string(i)));
  core.OnEnqueue(std::move(e));
  out.Clear();
  core.Place(&out);
  CHECK(out.placed.placed.size() == 5);  // 2 running + 3 queued on the worker, one turn
  CHECK(core.queued() == 3);
  auto snap = core.Snapshot();
  REQUIRE(snap.size() == 1);
  CHECK(snap[0].running == 5);
  CHECK(snap[0].credits == 0);

  // Credit beyond what is free is refused even with five held.
  const std::string more = CreditFrame(10);
  core.OnWorkerFrame("w1", more.data(), more.size(), &out);
  out.Clear();
  core.Place(&out);
  CHECK(out.placed.placed.empty());

  // A worker that predates queues (prefetch 0 in its HELLO) gets its slots only.
  DispatcherCore old(&clock, {});
  Join(old, "w0", 2, 0, 100, &out);
  Enqueue e2;
  for (int i = 0; i < 4; ++i) e2.execs.push_back(Exec("r.u" + std::to_string(i)));
  old.OnEnqueue(std::move(e2));
  out.Clear();
  old.Place(&out);
  CHECK(out.placed.placed.size() == 2);

  // An absurd prefetch is cut to kMaxWorkerPrefetch.
  DispatcherCore big(&clock, {});
  Join(big, "w2", 1, 1u << 30, 1u << 30, &out);
  Enqueue e3;
  for (uint32_t i = 0; i < kMaxWorkerPrefetch + 10; ++i) {
    e3.execs.push_back(Exec("r.v" + std::to_string(i)));
  }
  big.OnEnqueue(std::move(e3));
  out.Clear();
  big.Place(&out);
  CHECK(out.placed.placed.size() == 1 + kMaxWorkerPrefetch);
}

TEST_CASE("placement counts queued work: a worker with a long queue is busier",
          "[dispatcher][queue]") {
  FakeClock clock;
  DispatcherCore core(&clock, {});
  DispatcherOutput out;
  Join(core, "w1", 1, 8, 9, &out);
  // w1 takes a long task and queues another: 2 x 10 s expected.
  Enqueue first;
  first.execs.push_back(Exec("r.long1", 10000));
  first.execs.push_back(Exec("r.long2", 10000));
  core.OnEnqueue(std::move(first));
  core.Place(&out);
  // w2 joins with one slot and the same prefetch, idle.
  Join(core, "w2", 1, 8, 9, &out);
  out.Clear();
  Enqueue next;
  next.execs.push_back(Exec("r.short", 100));
  core.OnEnqueue(std::move(next));
  core.Place(&out);
  REQUIRE(out.placed.placed.size() == 1);
  CHECK(out.placed.placed[0].worker_id == "w2");
}

TEST_CASE("a lost worker's queued executions are handed back with its running ones",
          "[dispatcher][queue]") {
  FakeClock clock;
  DispatcherCore core(&clock, {});
  DispatcherOutput out;
  Join(core, "w1", 1, 3, 4, &out);
  Enqueue e;
  for (int i = 0; i < 4; ++i) e.execs.push_back(Exec("r.t" + std::to_string(i)));
  core.OnEnqueue(std::move(e));
  core.Place(&out);
  ReleaseDispatch release;
  for (const auto& p : out.placed.placed) release.execs.push_back({p.exec_id, p.attempt});
  out.Clear();
  core.OnRelease(release, &out);
  CHECK(out.to_workers.size() == 4);  // one running, three queued there
  out.Clear();
  core.OnWorkerLost({"w1", "worker w1 lost: no heartbeat"}, &out);
  REQUIRE(out.gone.size() == 1);
  CHECK(out.gone[0].execs.size() == 4);
}
