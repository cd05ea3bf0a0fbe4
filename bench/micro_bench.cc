// Google Benchmark microbenchmarks of Apollo-11's hot paths:
//   codec      encode / decode+convert of DISPATCH and RESULT frames
//   journal    group commit of 1, 16, 256 transitions per write txn, with
//              Sync kFull, kNoMetaSync and kNone (items/s = transitions/s)
//   snapshot   packing and unpacking a 100k-task pipeline snapshot
//   dag_run    DagRun driving a 100k-task layered DAG to completion the way
//              the scheduler does (promote under a backlog of 1000, dispatch,
//              succeed), and compiling that DAG; items/s = tasks/s
//   placement  engine::PickWorker among 100 workers
//   metrics    what one transition, one latency observation and one scrape
//              of the coordinator's metrics cost
//   executor   spawn+reap of `sh -c /bin/true` through the Executor with 2
//              slots (wall time), and noop launch+report
//
//   ninja -C build-bench apollo11_micro_bench && build-bench/bench/apollo11_micro_bench

#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/clock.h"
#include "dsl/pipeline_json.h"
#include "engine/dag_run.h"
#include "engine/placement.h"
#include "engine/run_graph.h"
#include "executor/executor.h"
#include "observability/coordinator_metrics.h"
#include "observability/worker_metrics.h"
#include "storage/journal.h"
#include "storage/snapshot_pack.h"
#include "transport/codec.h"
#include "transport/messages.h"

namespace {

namespace tr = apollo11::transport;
namespace st = apollo11::storage;
namespace en = apollo11::engine;
namespace ex = apollo11::executor;

// ---------------------------------------------------------------- codec

tr::Dispatch SampleDispatch() {
  tr::Dispatch d;
  d.exec_id = "r20240611T101502-7f3a9c.t7_1234";
  d.attempt = 1;
  d.task.type = 0;  // shell
  d.task.command = "true";
  d.task.timeout_ms = 60000;
  d.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  d.task.env["APOLLO11_IDEMPOTENCY_KEY"] = d.exec_id;  // protocol 2: the key travels in env
  d.epoch = 3;
  return d;
}

tr::ResultMsg SampleResult() {
  tr::ResultMsg r;
  r.exec_id = "r20240611T101502-7f3a9c.t7_1234";
  r.attempt = 1;
  r.outcome = 0;
  r.exit_code = 0;
  r.output = "ok\n";
  r.started_at = 1718100902000000;
  r.finished_at = 1718100902001234;
  return r;
}

template <class T>
void EncodeBench(benchmark::State& state, tr::MsgType type, const T& value) {
  std::string buf;
  for (auto _ : state) {
    buf.clear();
    tr::Encode(type, value, &buf);
    benchmark::DoNotOptimize(buf.data());
  }
  state.counters["bytes"] = static_cast<double>(buf.size());
  state.SetItemsProcessed(state.iterations());
}

template <class T>
void DecodeBench(benchmark::State& state, tr::MsgType type, const T& value) {
  const std::string frame = tr::EncodeToString(type, value);
  tr::Envelope env;
  for (auto _ : state) {
    if (!tr::DecodeEnvelopeInto(frame.data(), frame.size(), &env).ok()) {
      state.SkipWithError("decode failed");
      return;
    }
    auto body = tr::BodyAs<T>(env);
    benchmark::DoNotOptimize(body);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_EncodeDispatch(benchmark::State& state) {
  EncodeBench(state, tr::MsgType::kDispatch, SampleDispatch());
}
void BM_DecodeDispatch(benchmark::State& state) {
  DecodeBench(state, tr::MsgType::kDispatch, SampleDispatch());
}
void BM_EncodeResult(benchmark::State& state) {
  EncodeBench(state, tr::MsgType::kResult, SampleResult());
}
void BM_DecodeResult(benchmark::State& state) {
  DecodeBench(state, tr::MsgType::kResult, SampleResult());
}
BENCHMARK(BM_EncodeDispatch);
BENCHMARK(BM_DecodeDispatch);
BENCHMARK(BM_EncodeResult);
BENCHMARK(BM_DecodeResult);

// ---------------------------------------------------------------- journal

// A fresh directory under $TMPDIR (or /tmp), removed with the object.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/a11-bench-XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// range(0) = transitions per commit, range(1) = 0 kFull / 1 kNoMetaSync /
// 2 kNone. Each transition also rewrites its execution record, as the
// scheduler does.
void BM_JournalCommit(benchmark::State& state) {
  const int batch_size = static_cast<int>(state.range(0));
  TempDir dir;
  st::JournalOptions options;
  constexpr st::JournalOptions::Sync kModes[] = {st::JournalOptions::Sync::kFull,
                                                 st::JournalOptions::Sync::kNoMetaSync,
                                                 st::JournalOptions::Sync::kNone};
  constexpr const char* kLabels[] = {"sync=full", "sync=nometa", "sync=none"};
  options.sync = kModes[state.range(1)];
  auto journal = st::Journal::Open(dir.path() + "/journal", options);
  if (dir.path().empty() || !journal.ok()) {
    state.SkipWithError("cannot open a journal in a temp dir");
    return;
  }
  st::Journal::Batch batch;
  const std::string run_id = "r20240611T101502-7f3a9c";
  long n = 0;
  for (auto _ : state) {
    for (int i = 0; i < batch_size; ++i, ++n) {
      st::TransitionRecord t;
      t.ts = 1718100902000000 + n;
      t.run_id = run_id;
      t.task_id = "t" + std::to_string(n);
      t.exec_id = run_id + "." + t.task_id;
      t.attempt = 1;
      t.from = apollo11::TaskState::kRunning;
      t.to = apollo11::TaskState::kSuccess;
      t.reason = "exit code 0";
      t.actor = "worker local-1";
      st::ExecutionRecord e;
      e.exec_id = t.exec_id;
      e.run_id = run_id;
      e.task_id = t.task_id;
      e.attempt = 1;
      e.state = t.to;
      batch.Append(std::move(t));
      batch.PutExecution(e);
    }
    if (!(*journal)->Commit(batch).ok()) {
      state.SkipWithError("commit failed");
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * batch_size);
  state.SetLabel(kLabels[state.range(1)]);
}
BENCHMARK(BM_JournalCommit)
    ->ArgNames({"batch", "sync"})
    ->ArgsProduct({{1, 16, 256}, {0, 1, 2}})
    ->MinTime(0.5)
    ->UseRealTime()  // fsync waits are the cost: count wall time, not CPU
    ->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------- dag_run

// A layered DAG: `layers` x `width` tasks, each depending on 1-3 random tasks
// of the layer above (the shape bench/gen_dag.py writes).
apollo11::dsl::PipelineSpec LayeredSpec(int layers, int width) {
  apollo11::dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = "bench.dag";
  std::mt19937 rng(1);
  for (int l = 0; l < layers; ++l) {
    for (int w = 0; w < width; ++w) {
      apollo11::dsl::TaskSpec t;
      t.id = "t" + std::to_string(l) + "_" + std::to_string(w);
      t.type = apollo11::dsl::TaskType::kNoop;
      if (l > 0) {
        const int deps = 1 + static_cast<int>(rng() % 3);
        for (int k = 0; k < deps; ++k) {
          apollo11::dsl::Dependency d;
          d.task = "t" + std::to_string(l - 1) + "_" + std::to_string(rng() % width);
          t.depends_on.push_back(std::move(d));
        }
      }
      spec.tasks.push_back(std::move(t));
    }
  }
  return spec;
}

std::shared_ptr<const en::RunGraph> LayeredGraph(int layers, int width) {
  auto graph = en::RunGraph::Compile(LayeredSpec(layers, width));
  if (!graph.ok()) return nullptr;
  return std::make_shared<const en::RunGraph>(std::move(graph).value());
}

// Compiling the same 100k-task spec into a RunGraph (what a submit costs
// before the run starts); items/s = tasks/s.
void BM_RunGraphCompile100k(benchmark::State& state) {
  const apollo11::dsl::PipelineSpec spec = LayeredSpec(10, 10000);
  for (auto _ : state) {
    state.PauseTiming();
    apollo11::dsl::PipelineSpec copy = spec;
    state.ResumeTiming();
    auto graph = en::RunGraph::Compile(std::move(copy));
    if (!graph.ok()) {
      state.SkipWithError("graph did not compile");
      return;
    }
    benchmark::DoNotOptimize(graph->size());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(spec.tasks.size()));
}
BENCHMARK(BM_RunGraphCompile100k)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// Packing and unpacking the canonical JSON of that 100k-task spec, as a
// submission and a recovery do (storage/snapshot_pack.h); bytes/s of JSON.
void BM_PackSnapshot100k(benchmark::State& state) {
  const std::string text = apollo11::dsl::CanonicalJson(LayeredSpec(10, 10000));
  for (auto _ : state) benchmark::DoNotOptimize(st::PackSnapshot(text).size());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_PackSnapshot100k)->Unit(benchmark::kMillisecond)->MinTime(1.0);

void BM_UnpackSnapshot100k(benchmark::State& state) {
  const std::string text = apollo11::dsl::CanonicalJson(LayeredSpec(10, 10000));
  const std::string packed = st::PackSnapshot(text);
  for (auto _ : state) benchmark::DoNotOptimize(st::UnpackSnapshot(packed)->size());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.counters["ratio"] = static_cast<double>(text.size()) / static_cast<double>(packed.size());
}
BENCHMARK(BM_UnpackSnapshot100k)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// Decoding that 100k-task snapshot, every task and dependency with its
// source location as a parsed file gives it: the coordinator's work for a
// submission and for each unfinished run's recovery. The text decoder
// (PipelineFromJsonText, DOM-free for plain tasks) beside a whole-document
// nlohmann DOM and PipelineFromJson; items/s = tasks/s.
std::string LocatedSnapshot100k() {
  apollo11::dsl::PipelineSpec spec = LayeredSpec(10, 10000);
  spec.source_file = "/srv/pipelines/bench.yaml";
  int line = 1;
  for (apollo11::dsl::TaskSpec& t : spec.tasks) {
    t.where = apollo11::dsl::SourceLocation{spec.source_file, line, 5};
    for (apollo11::dsl::Dependency& d : t.depends_on) {
      d.where = apollo11::dsl::SourceLocation{spec.source_file, ++line, 9};
    }
    line += 2;
  }
  return apollo11::dsl::CanonicalJson(spec);
}

void BM_SnapshotDecode100k(benchmark::State& state) {
  const std::string text = LocatedSnapshot100k();
  for (auto _ : state) {
    auto spec = apollo11::dsl::PipelineFromJsonText(text, apollo11::dsl::Locations::kCheckAndDrop);
    if (!spec.ok()) {
      state.SkipWithError("snapshot did not decode");
      return;
    }
    benchmark::DoNotOptimize(spec->tasks.size());
  }
  state.SetItemsProcessed(state.iterations() * 100000);
}
BENCHMARK(BM_SnapshotDecode100k)->Unit(benchmark::kMillisecond)->MinTime(1.0);

void BM_SnapshotDecodeDom100k(benchmark::State& state) {
  const std::string text = LocatedSnapshot100k();
  for (auto _ : state) {
    auto spec = apollo11::dsl::PipelineFromJson(nlohmann::json::parse(text));
    if (!spec.ok()) {
      state.SkipWithError("snapshot did not decode");
      return;
    }
    benchmark::DoNotOptimize(spec->tasks.size());
  }
  state.SetItemsProcessed(state.iterations() * 100000);
}
BENCHMARK(BM_SnapshotDecodeDom100k)->Unit(benchmark::kMillisecond)->MinTime(1.0);

void BM_DagRun100k(benchmark::State& state) {
  static const std::shared_ptr<const en::RunGraph> graph = LayeredGraph(10, 10000);
  if (!graph) {
    state.SkipWithError("graph did not compile");
    return;
  }
  constexpr int kMaxBacklog = 1000;
  long transitions = 0;
  for (auto _ : state) {
    en::DagRun run(graph);
    en::Effects fx;
    std::vector<int> in_flight;
    run.Start(0, &fx);
    while (!run.Finished()) {
      run.PromoteEligible(kMaxBacklog - static_cast<int>(in_flight.size()), &fx);
      in_flight.insert(in_flight.end(), fx.dispatch.begin(), fx.dispatch.end());
      transitions += static_cast<long>(fx.transitions.size());
      fx.clear();
      for (int task : in_flight) {
        (void)run.OnDispatched(task, run.attempt(task), "w1", 0, &fx);
        (void)run.OnResult(task, run.attempt(task), apollo11::AttemptOutcome::kSuccess, 0, true, "",
                           0, 0.5, &fx);
        transitions += static_cast<long>(fx.transitions.size());
        fx.clear();
      }
      in_flight.clear();
    }
    if (run.Outcome() != apollo11::RunStatus::kSuccess) {
      state.SkipWithError("run did not succeed");
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * graph->size());
  state.counters["transitions"] =
      benchmark::Counter(static_cast<double>(transitions), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DagRun100k)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// ---------------------------------------------------------------- placement

// 100 workers of one group with varied slots, credit and load; after each pick
// the chosen worker gets busier, so consecutive picks differ.
void BM_PickWorker100(benchmark::State& state) {
  std::mt19937 rng(7);
  std::vector<en::WorkerView> workers(100);
  for (size_t i = 0; i < workers.size(); ++i) {
    en::WorkerView& w = workers[i];
    w.id = "w" + std::to_string(i);
    w.group = i % 10 == 0 ? "gpu" : "default";
    w.slots = 1 + rng() % 8;
    w.credits = rng() % 4 == 0 ? 0 : 1 + rng() % 8;
    w.running = rng() % (w.slots + 1);
    w.expected_busy = static_cast<apollo11::Micros>(rng() % 10000000);
  }
  const std::string group = "default";
  for (auto _ : state) {
    const int pick = en::PickWorker(workers, group);
    benchmark::DoNotOptimize(pick);
    if (pick >= 0) workers[pick].expected_busy += 250000;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PickWorker100);

// ------------------------------------------------------------------ metrics

namespace ob = apollo11::observability;

// The scheduler's per-transition call: two gauge updates and a counter.
void BM_MetricsTransition(benchmark::State& state) {
  ob::Registry registry;
  ob::CoordinatorMetrics m(registry);
  ob::PipelineMetrics* pipeline = m.Pipeline("bench.p");
  int i = 0;
  for (auto _ : state) {
    m.Transition(apollo11::TaskState::kReady,
                 i++ % 2 ? apollo11::TaskState::kRunning : apollo11::TaskState::kSuccess, pipeline);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MetricsTransition);

// The dispatcher's per-placement call: one observation into 18 buckets.
void BM_HistogramObserve(benchmark::State& state) {
  ob::Registry registry;
  ob::CoordinatorMetrics m(registry);
  double v = 0.0003;
  for (auto _ : state) {
    m.dispatch_latency.Observe(v);
    v = v < 5 ? v * 1.7 : 0.0003;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HistogramObserve);

// One /metrics body of a --role=all node (every family registered).
void BM_MetricsScrape(benchmark::State& state) {
  ob::Registry registry;
  ob::CoordinatorMetrics c(registry);
  ob::WorkerMetrics w(registry);
  for (auto _ : state) benchmark::DoNotOptimize(registry.WriteText());
}
BENCHMARK(BM_MetricsScrape);

// ---------------------------------------------------------------- executor

// `sh -c /bin/true` through the Executor, two at a time, polled the way the
// worker actor polls it; items/s = tasks/s. Wall time: the cost is fork/exec
// and the wait for exit, not this thread's CPU.
void BM_ExecutorSpawnReap(benchmark::State& state) {
  constexpr size_t kSlots = 2;
  apollo11::SystemClock clock;
  ex::Executor executor(ex::ExecutorOptions{}, clock);
  ex::ExecRequest r;
  r.exec_id = "bench.true";
  r.type = apollo11::dsl::TaskType::kShell;
  r.command = "/bin/true";
  std::vector<ex::ExecOutcome> out;
  std::vector<zmq_pollitem_t> items;
  uint32_t attempt = 0;
  int64_t finished = 0;
  for (auto _ : state) {
    while (executor.running() < kSlots) {
      r.attempt = ++attempt;
      if (!executor.Launch(r).ok()) {
        state.SkipWithError("launch refused");
        return;
      }
    }
    // One iteration = at least one task finished.
    out.clear();
    while (out.empty()) {
      items.clear();
      executor.AppendPollItems(&items);
      zmq_poll(items.data(), static_cast<int>(items.size()), 100);
      executor.Process(clock.Steady(), &out);
    }
    for (const auto& o : out) {
      if (o.kind != ex::ExecOutcomeKind::kSuccess) {
        state.SkipWithError("a /bin/true task did not succeed");
        return;
      }
    }
    finished += static_cast<int64_t>(out.size());
  }
  state.SetItemsProcessed(finished);
}
BENCHMARK(BM_ExecutorSpawnReap)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(1.0);

// A noop is reported by the next Process() without a process: the executor's
// own bookkeeping per task. 32 launches per Process(), as a busy worker sees.
void BM_ExecutorNoop(benchmark::State& state) {
  apollo11::SystemClock clock;
  ex::Executor executor(ex::ExecutorOptions{}, clock);
  ex::ExecRequest r;
  r.exec_id = "bench.noop";
  r.type = apollo11::dsl::TaskType::kNoop;
  std::vector<ex::ExecOutcome> out;
  out.reserve(32);
  uint32_t attempt = 0;
  for (auto _ : state) {
    for (int i = 0; i < 32; ++i) {
      r.attempt = ++attempt;
      (void)executor.Launch(r);
    }
    out.clear();
    executor.Process(clock.Steady(), &out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * 32);
}
BENCHMARK(BM_ExecutorNoop);

}  // namespace

BENCHMARK_MAIN();
