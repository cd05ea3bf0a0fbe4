// Scratch measurement: ns per encode+decode+convert of DISPATCH and RESULT,
// reusing the encode buffer and the Envelope as a receive loop would;
// thread CPU time per message.

#include <time.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "transport/codec.h"
#include "transport/messages.h"

using namespace apollo11::transport;  // NOLINT: scratch program

// This thread's CPU time: less distorted than wall time on a shared machine.
std::chrono::nanoseconds ThreadCpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

template <class T>
void Measure(const char* name, MsgType type, const T& value) {
  constexpr int kIters = 200000;
  std::string buf;
  Envelope env;
  size_t sink = 0;
  auto start = ThreadCpu();
  for (int i = 0; i < kIters; ++i) {
    buf.clear();
    Encode(type, value, &buf);
    sink += buf.size();
  }
  auto mid = ThreadCpu();
  for (int i = 0; i < kIters; ++i) {
    if (!DecodeEnvelopeInto(buf.data(), buf.size(), &env).ok()) return;
    auto v = BodyAs<T>(env);
    sink += v.ok();
  }
  auto end = ThreadCpu();
  auto ns = [](auto d) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count() / double(kIters);
  };
  std::printf("%-9s %4zu bytes: encode %6.0f ns, decode+convert %6.0f ns, total %6.0f ns (%zu)\n",
              name, buf.size(), ns(mid - start), ns(end - mid), ns(end - start), sink % 10);
}

int main() {
  Dispatch d;
  d.exec_id = "run-20240101-abcd.data_clean";
  d.attempt = 1;
  d.task.type = 1;
  d.task.command = "python3 scripts/clean.py --in raw.csv";
  d.task.env = {{"A", "1"}, {"B", "2"}};
  d.task.run_id = "run-20240101-abcd";
  d.task.task_id = "data_clean";
  d.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  d.idempotency_key = "run-20240101-abcd.data_clean";
  d.deadline = 1700000000123456;
  d.epoch = 3;
  ResultMsg r;
  r.exec_id = d.exec_id;
  r.attempt = 1;
  r.output = "ok\n";
  r.started_at = 1700000000000000;
  r.finished_at = 1700000000500000;
  for (int round = 0; round < 2; ++round) {
    Measure("DISPATCH", MsgType::kDispatch, d);
    Measure("RESULT", MsgType::kResult, r);
  }
}
