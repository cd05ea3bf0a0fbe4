// libFuzzer target for what a coordinator's dispatcher does with worker
// frames, not only whether they decode: a program (fuzz/dispatcher_frames.h)
// interleaves frames from three worker identities with the scheduler's and
// reconciler's own steps (enqueue, place, cancel, ack, lost worker, adopt
// after recovery) and clock advances. No frame may crash the dispatcher or
// make it send a frame a worker cannot decode, and a worker never holds more
// credit than slots.

#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "actors/dispatcher/dispatcher_core.h"
#include "common/clock.h"
#include "fuzz/dispatcher_frames.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/heap_budget.h"
#include "transport/codec.h"
#include "transport/protocol_mismatch.h"

namespace apollo11::fuzz {
namespace {

const char* const kWorkers[] = {"w1", "w2", "w3"};

std::string ExecId(uint8_t index) { return "r1.t" + std::to_string(index % 8); }

actors::QueuedExec MakeExec(uint8_t index) {
  actors::QueuedExec q;
  q.group = index & 8 ? "etl" : "default";
  q.priority = index % 3;
  q.expected_ms = 1 + index;
  q.dispatch.exec_id = ExecId(index);
  q.dispatch.attempt = 1 + (index >> 4) % 3;
  q.dispatch.task.command = "true";
  return q;
}

void CheckOutput(const actors::DispatcherCore& core, const actors::DispatcherOutput& out) {
  for (const auto& [identity, frame] : out.to_workers) {
    transport::Envelope env;
    if (transport::DecodeEnvelopeInto(frame.data(), frame.size(), &env).ok()) continue;
    // A worker of another protocol version is answered in its own version,
    // with a REFUSED it can read (transport/protocol_mismatch.h).
    Require(transport::IsOtherProtocolVersion(env) && env.version >= transport::kRefusedSince,
            "every frame the dispatcher sends decodes on the worker it is addressed to");
    Require(env.type == transport::ToWire(transport::MsgType::kRefused),
            "a worker of another version is only sent a REFUSED");
    Require(transport::BodyAs<transport::Refused>(env).ok(),
            "a REFUSED in another version decodes as one");
  }
  for (const actors::WorkerSnapshot& w : core.Snapshot()) {
    Require(w.credits <= w.slots + w.prefetch,
            "a worker never holds more credit than its slots and prefetch");
  }
}

void RunProgram(const uint8_t* data, size_t size) {
  FakeClock clock;
  actors::DispatcherCore core(&clock, actors::DispatcherOptions{});
  actors::DispatcherOutput out;
  size_t at = 0;
  while (at + 2 <= size) {
    const auto step =
        static_cast<DispatcherStep>(data[at] % static_cast<uint8_t>(DispatcherStep::kStepCount));
    const uint8_t arg = data[at + 1];
    at += 2;
    const std::string worker = kWorkers[arg % 3];
    out.Clear();
    switch (step) {
      case DispatcherStep::kFrame: {
        if (at >= size) return;
        const size_t len = std::min<size_t>(data[at], size - at - 1);
        core.OnWorkerFrame(worker, data + at + 1, len, &out);
        at += 1 + len;
        break;
      }
      case DispatcherStep::kEnqueue: {
        actors::Enqueue enqueue;
        enqueue.execs.push_back(MakeExec(arg));
        core.OnEnqueue(std::move(enqueue));
        break;
      }
      case DispatcherStep::kPlace: {
        core.Place(&out);
        if (arg & 1) {  // the scheduler journaled these placements: send them
          actors::ReleaseDispatch release;
          for (const auto& p : out.placed.placed) release.execs.push_back({p.exec_id, p.attempt});
          core.OnRelease(release, &out);
        }
        break;
      }
      case DispatcherStep::kHeartbeat:
        core.Heartbeat(&out);
        break;
      case DispatcherStep::kProbe:
        core.Probe(&out);
        break;
      case DispatcherStep::kCancel:
        core.OnCancel(actors::CancelExecs{{{ExecId(arg), 1u + (arg >> 4) % 3}}, "fuzz"}, &out);
        break;
      case DispatcherStep::kAck:
        core.OnAcks(actors::AckResults{{{worker, ExecId(arg >> 2), 1}}}, &out);
        break;
      case DispatcherStep::kWorkerLost:
        core.OnWorkerLost(actors::WorkerLost{worker, "fuzz"}, &out);
        break;
      case DispatcherStep::kAdopt: {
        actors::AdoptRunning adopt;
        adopt.execs.push_back({ExecId(arg >> 2), 1u + (arg >> 5) % 3, worker, 5});
        adopt.claim_until = clock.Now() + 100'000;
        core.OnAdopt(adopt);
        break;
      }
      case DispatcherStep::kAdvance:
        clock.Advance(int64_t{arg} * 4 * kMicrosPerMilli);
        break;
      case DispatcherStep::kStepCount:
        break;
    }
    CheckOutput(core, out);
  }
}

}  // namespace
}  // namespace apollo11::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);  // the dispatcher logs every dropped frame
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  apollo11::fuzz::HeapBudget budget;
  apollo11::fuzz::RunProgram(data, size);
  return 0;
}
