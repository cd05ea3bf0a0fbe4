// The chaos test (issue "crash recovery"): a coordinator and three workers
// over tcp loopback (heartbeat 100 ms) run a few hundred tasks mixing quick
// ones, slow ones, retries and failure branches, while a random process is
// killed with SIGKILL at a random moment and started again, over and over.
// Every task appends "EXEC_ID ATTEMPT IDEMPOTENCY_KEY" to a ledger. At the
// end, against the journal and the ledger:
//   1. every run is final, and every task ends as it does without faults;
//   2. no task reached SUCCESS twice;
//   3. an idempotency key ran more than once only for an attempt the journal
//      shows retried or requeued, and no (exec, attempt) ran twice;
//   4. journal sequence numbers are gap-free and every transition is legal
//      (and each execution's transitions chain: one's `to` is the next `from`);
//   5. nothing is left RUNNING or PENDING.
//
// The follow mode (HA, issue 14) moves the coordinator between two endpoints
// at each of its restarts; workers and the CLI are given both.
//
// CI runs one round with a dozen kills. By hand, for a long run:
//   APOLLO11_CHAOS_ROUNDS=20 APOLLO11_CHAOS_KILLS=12 ./tests/actors/chaos_test
// (APOLLO11_CHAOS_SEED fixes the random choices.) The totals are printed.

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "engine/task_state.h"
#include "storage/journal.h"
#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"

using namespace apollo11;           // NOLINT: test file
using namespace apollo11::testing;  // NOLINT: test file

namespace {

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// The pipeline: layers of quick and slow tasks, tasks that fail the first
// time their key runs and succeed on retry, and tasks that always fail with
// a failure handler (runs) and a success dependent (SKIPPED). Outcomes do not
// depend on timing, so a faulty run must end exactly like a fault-free one.
std::string ChaosPipeline(const std::string& name, const std::string& ledger,
                          const std::string& marks, unsigned seed) {
  std::mt19937 rng(seed);
  const std::string record =
      "echo $APOLLO11_EXECUTION_ID $APOLLO11_ATTEMPT $APOLLO11_IDEMPOTENCY_KEY >> " + ledger;
  std::ostringstream y;
  y << "version: \"1.0\"\nname: " << name << "\npipeline:\n";
  const int layers = 8, width = 24;
  for (int l = 0; l < layers; ++l) {
    for (int i = 0; i < width; ++i) {
      const std::string id = "t" + std::to_string(l) + "_" + std::to_string(i);
      const int kind = static_cast<int>(rng() % 10);
      y << "  - id: " << id << "\n    type: shell\n";
      if (kind < 6) {  // quick
        y << "    command: \"" << record << "\"\n";
      } else if (kind < 8) {  // slow
        y << "    command: \"" << record << "; sleep 0." << (3 + rng() % 7) << "\"\n";
      } else {  // fails the first time its key runs, then succeeds on retry
        y << "    command: \"" << record << "; test -e " << marks
          << "/$APOLLO11_IDEMPOTENCY_KEY && exit 0; touch " << marks
          << "/$APOLLO11_IDEMPOTENCY_KEY; exit 1\"\n"
          << "    retry: {max_retries: 3, delay: 100ms}\n";
      }
      if (l > 0) {
        std::set<int> deps{static_cast<int>(rng() % width), static_cast<int>(rng() % width)};
        y << "    depends_on: [";
        bool first = true;
        for (int d : deps) {
          y << (first ? "" : ", ") << "t" << (l - 1) << "_" << d;
          first = false;
        }
        y << "]\n";
      }
    }
  }
  for (int b = 0; b < 4; ++b) {
    const std::string f = "broken" + std::to_string(b);
    y << "  - id: " << f << "\n    type: shell\n    command: \"" << record << "; exit 1\"\n"
      << "    depends_on: [t2_" << b << "]\n"
      << "  - id: handler" << b << "\n    type: shell\n    command: \"" << record << "\"\n"
      << "    depends_on: [{task: " << f << ", on: failure}]\n"
      << "  - id: after" << b << "\n    type: shell\n    command: \"" << record << "\"\n"
      << "    depends_on: [" << f << "]\n";
  }
  return y.str();
}

struct LedgerLine {
  std::string exec;
  uint32_t attempt;
  std::string key;
};

std::vector<LedgerLine> ReadLedger(const ScratchDir& dir, const std::string& name) {
  std::vector<LedgerLine> lines;
  std::istringstream in(dir.Read(name));
  LedgerLine l;
  while (in >> l.exec >> l.attempt >> l.key) lines.push_back(l);
  return lines;
}

std::string Endpoint(int port) { return "tcp://127.0.0.1:" + std::to_string(port); }

struct Totals {
  int kills = 0, coordinator_kills = 0, worker_kills = 0, requeued_reruns = 0, retries = 0;
};

// One round: a fresh cluster, two runs of the pipeline, `kills` kills. With
// `follow`, the coordinator comes back on the other of two endpoint pairs
// each time (its journal with it, as a standby holding the replicated
// journal takes over), and workers and the CLI are given both: they must
// follow it.
void ChaosRound(unsigned seed, int kills, Totals* totals, bool follow = false) {
  ScratchDir dir;
  std::mt19937 rng(seed);
  std::filesystem::create_directories(dir.path() + "/marks");
  std::filesystem::create_directories(dir.path() + "/marks_ref");

  // The reference: the same pipeline, embedded, without faults.
  const std::string ref_file = dir.Write(
      "ref.yaml",
      ChaosPipeline("test.chaos", dir.path() + "/ledger_ref", dir.path() + "/marks_ref", seed));
  CmdResult ref = Run({Apollo11(), "run", ref_file, "--state-dir", dir.path() + "/ref", "--json"});
  auto expected = ParseJson(ref.out);
  INFO(ref.err);
  REQUIRE(expected.is_object());

  const std::string workers = Endpoint(FreeTcpPort()), api = Endpoint(FreeTcpPort());
  const std::string workers_b = Endpoint(FreeTcpPort()), api_b = Endpoint(FreeTcpPort());
  NodeProc coordinators;  // what the CLI is given: --coordinator LIST
  coordinators.listening["api"] = follow ? api + "," + api_b : api;
  std::vector<NodeProc> procs(4);
  std::vector<std::string> names = {"coord", "w1", "w2", "w3"};
  std::vector<int> generation(4, 0);
  auto start = [&](int i) {
    const std::string out = names[i] + "." + std::to_string(generation[i]++);
    if (i == 0) {
      // Kills here come ten times faster than any real failure rate: a task
      // may lose its worker more often than the default cap of 3 allows.
      const bool b = follow && generation[i] % 2 == 0;
      procs[0] = StartNode(dir, out,
                           {"--role", "coordinator", "--bind", b ? workers_b : workers,
                            "--api-bind", b ? api_b : api, "--max-requeues", "50"},
                           "coord");
    } else {
      procs[i] = StartWorkerAt(dir, follow ? workers + "," + workers_b : workers, names[i], 3, out);
    }
  };
  for (int i = 0; i < 4; ++i) start(i);
  Nodes guard{{&procs[0], &procs[1], &procs[2], &procs[3]}};
  REQUIRE(WaitFor([&] { return WorkerCount(procs[0]) == 3; }, 10000));

  const std::string file =
      dir.Write("chaos.yaml",
                ChaosPipeline("test.chaos", dir.path() + "/ledger", dir.path() + "/marks", seed));
  std::vector<std::string> run_ids;
  for (int r = 0; r < 2; ++r) {
    CmdResult sub = Cli(coordinators, {"submit", file});
    INFO(sub.err);
    REQUIRE(sub.exit_code == 0);
    run_ids.push_back(sub.out.substr(0, sub.out.find('\n')));
  }

  for (int k = 0; k < kills; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 700));
    const int victim = static_cast<int>(rng() % 4);
    ::kill(procs[victim].pid, SIGKILL);
    WaitExit(procs[victim].pid, 5000);
    procs[victim].pid = -1;
    ++totals->kills;
    ++(victim == 0 ? totals->coordinator_kills : totals->worker_kills);
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 300));
    start(victim);
  }

  // Every run ends, as it does without faults.
  for (const std::string& run_id : run_ids) {
    CmdResult st = Cli(coordinators, {"status", run_id, "--wait", "--json", "--timeout", "120"});
    auto summary = ParseJson(st.out);
    INFO(run_id << " " << st.err);
    REQUIRE(summary.is_object());
    CHECK(summary["state"] == expected["state"]);
    for (auto& [task, t] : expected["tasks"].items()) {
      if (summary["tasks"][task]["state"] == t["state"]) continue;
      // Say why, with the execution's whole history.
      INFO(Cli(coordinators, {"history", run_id + "." + task}).out);
      CHECK(summary["tasks"][task]["state"] == t["state"]);
    }
  }
  for (NodeProc& p : procs) {
    ::kill(p.pid, SIGKILL);
    WaitExit(p.pid, 5000);
    p.pid = -1;
  }

  // The journal, read directly.
  auto opened = storage::Journal::Open(dir.path() + "/coord/journal",
                                       storage::JournalOptions{.read_only = true});
  REQUIRE(opened.ok());
  storage::Journal& journal = **opened;
  std::set<uint64_t> seqs;
  std::map<std::pair<std::string, uint32_t>, std::vector<storage::TransitionRecord>> by_attempt;
  for (const std::string& run_id : run_ids) {
    auto history = journal.HistoryOfRun(run_id);
    REQUIRE(history.ok());
    std::map<std::string, TaskState> last;
    std::map<std::string, int> successes;
    for (const storage::TransitionRecord& t : *history) {
      INFO(t.exec_id << " seq " << t.seq << " " << ToString(t.from) << "->" << ToString(t.to)
                     << " (" << t.reason << ")");
      CHECK(seqs.insert(t.seq).second);
      CHECK(IsAllowedTransition(t.from, t.to));  // 4
      auto prev = last.find(t.exec_id);
      CHECK((prev == last.end() ? TaskState::kPending : prev->second) == t.from);  // 4
      last[t.exec_id] = t.to;
      if (t.to == TaskState::kSuccess) CHECK(++successes[t.exec_id] == 1);  // 2
      if (t.to == TaskState::kRetrying) ++totals->retries;
      by_attempt[{t.exec_id, t.attempt}].push_back(t);
    }
    auto execs = journal.ExecutionsOfRun(run_id);
    REQUIRE(execs.ok());
    for (const storage::ExecutionRecord& e : *execs) {  // 5
      INFO(e.exec_id);
      CHECK(IsFinal(e.state));
    }
  }
  REQUIRE(!seqs.empty());
  CHECK(*seqs.begin() == 1);  // 4: gap-free from the first to the last
  CHECK(*seqs.rbegin() == seqs.size());
  CHECK(journal.last_seq() == seqs.size());

  // 3: the ledger against the journal.
  std::map<std::pair<std::string, uint32_t>, int> ran;
  std::map<std::string, std::set<uint32_t>> attempts_of_key;
  for (const LedgerLine& l : ReadLedger(dir, "ledger")) {
    ++ran[{l.exec, l.attempt}];
    attempts_of_key[l.key].insert(l.attempt);
  }
  for (const auto& [ea, n] : ran) {
    INFO(ea.first << " attempt " << ea.second);
    CHECK(n == 1);  // an attempt never runs twice
    // ...and only an attempt the journal shows dispatched runs.
    bool dispatched = false;
    for (const auto& t : by_attempt[ea]) dispatched = dispatched || t.to == TaskState::kRunning;
    CHECK(dispatched);
  }
  for (const auto& [key, attempts] : attempts_of_key) {
    if (attempts.size() < 2) continue;
    // Every attempt but the last ended by a retry or a requeue the journal
    // explains (a lost or restarted worker, or nobody claiming it).
    const uint32_t last_attempt = *attempts.rbegin();
    for (uint32_t a : attempts) {
      if (a == last_attempt) continue;
      // A retry is journaled under the failed attempt (RUNNING->RETRYING); a
      // requeue under the new one (RUNNING->READY, attempt + 1).
      bool explained = false;
      for (const storage::TransitionRecord& t : by_attempt[{key, a}]) {
        if (t.from == TaskState::kRunning && t.to == TaskState::kRetrying) explained = true;
      }
      for (const storage::TransitionRecord& t : by_attempt[{key, a + 1}]) {
        if (t.from == TaskState::kRunning && t.to == TaskState::kReady) {
          explained = true;
          ++totals->requeued_reruns;
          INFO(t.reason);
          CHECK((t.reason.find("worker") != std::string::npos ||
                 t.reason.find("claimed") != std::string::npos));
        }
      }
      std::string story;
      for (const auto& t : by_attempt[{key, a + 1}]) {
        story += std::string(ToString(t.from)) + "->" + ToString(t.to) + " (" + t.reason + "); ";
      }
      INFO(key << " attempt " << a << ": " << story);
      CHECK(explained);
    }
  }
}

}  // namespace

TEST_CASE(
    "chaos: random kill -9 of the coordinator and workers loses nothing and runs nothing "
    "twice",
    "[chaos][recovery]") {
  const int rounds = EnvInt("APOLLO11_CHAOS_ROUNDS", 1);
  const int kills = EnvInt("APOLLO11_CHAOS_KILLS", 12);
  const unsigned seed = static_cast<unsigned>(
      EnvInt("APOLLO11_CHAOS_SEED", static_cast<int>(std::random_device{}())));
  Totals totals;
  for (int r = 0; r < rounds; ++r) {
    INFO("round " << r << " seed " << seed + r);
    ChaosRound(seed + static_cast<unsigned>(r), kills, &totals);
  }
  std::printf(
      "chaos: %d rounds, seed %u: %d kills (%d coordinator, %d worker); %d retries; %d attempts "
      "rerun after a requeue\n",
      rounds, seed, totals.kills, totals.coordinator_kills, totals.worker_kills, totals.retries,
      totals.requeued_reruns);
}

TEST_CASE(
    "chaos (follow): workers and the CLI follow a coordinator that comes back elsewhere, losing "
    "nothing and running nothing twice",
    "[chaos][recovery][follow]") {
  const int rounds = EnvInt("APOLLO11_CHAOS_ROUNDS", 1);
  const int kills = EnvInt("APOLLO11_CHAOS_KILLS", 12);
  const unsigned seed = static_cast<unsigned>(
      EnvInt("APOLLO11_CHAOS_SEED", static_cast<int>(std::random_device{}())));
  Totals totals;
  for (int r = 0; r < rounds; ++r) {
    INFO("round " << r << " seed " << seed + r);
    ChaosRound(seed + static_cast<unsigned>(r), kills, &totals, /*follow=*/true);
  }
  std::printf(
      "chaos (follow): %d rounds, seed %u: %d kills (%d coordinator, %d worker); %d retries; %d "
      "attempts rerun after a requeue\n",
      rounds, seed, totals.kills, totals.coordinator_kills, totals.worker_kills, totals.retries,
      totals.requeued_reruns);
}
