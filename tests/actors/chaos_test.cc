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
// at each of its restarts; workers and the CLI are given both. The HA mode
// runs three coordinators ($APOLLO11_CHAOS_COORDINATORS, 2 or 3) elected
// through real etcd and replicating their journal; the victim may be the
// leader, a standby or a worker; the checks are read from the final leader's
// journal, and
//   6. every standby's journal catches up and gives the same histories.
// Kills come back to back, whoever the victim: a standby killed and then the
// leader before the standby is in sync again leaves nobody who may lead
// until a coordinator that has every released batch is back (the in-sync
// record, docs/ha.md "Sync and async"); nothing may run twice meanwhile.
// ctest runs it as chaos_ha (with the etcd_cluster fixture):
//   APOLLO11_ETCD_STATE=STATE ./tests/actors/chaos_test "[chaos-ha]"
//
// CI runs one round with a dozen kills, at 100 ms heartbeats and (HA) a 2 s
// lease. By hand, for a long run:
//   APOLLO11_CHAOS_ROUNDS=20 APOLLO11_CHAOS_KILLS=12 ./tests/actors/chaos_test
// (APOLLO11_CHAOS_SEED fixes the random choices; APOLLO11_CHAOS_DEFAULTS=1
// starts every node with the product's default heartbeat, liveness and
// lease.) The totals are printed.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
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

// How the coordinators come and go.
//   kSingle  one coordinator, restarted in place;
//   kFollow  one coordinator that comes back on the other of two endpoint
//            pairs each time (its journal with it); workers and the CLI are
//            given both and must follow it;
//   kHa      three coordinators (or $APOLLO11_CHAOS_COORDINATORS) elected
//            through the real etcd of the etcd_cluster fixture
//            ($APOLLO11_ETCD_STATE), replicating their journal (--ha-etcd
//            --replication-bind, sync); any may be the victim, leader or
//            standby.
enum class ChaosMode { kSingle, kFollow, kHa };

// The etcd client URLs of the fixture named by $APOLLO11_ETCD_STATE.
std::string EtcdEndpoints() {
  const char* state = std::getenv("APOLLO11_ETCD_STATE");
  REQUIRE(state != nullptr);  // ctest's chaos_ha test sets it
  std::ifstream in(state);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("ETCD_ENDPOINTS=", 0) != 0) continue;
    std::string v = line.substr(15);
    v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
    return v;
  }
  FAIL("no ETCD_ENDPOINTS in " << state);
  return "";
}

// The processes of one round: coordinators first, then three workers.
class ChaosCluster {
 public:
  ChaosCluster(const ScratchDir& dir, ChaosMode mode) : dir_(dir), mode_(mode) {
    coordinators_ =
        mode == ChaosMode::kHa ? std::clamp(EnvInt("APOLLO11_CHAOS_COORDINATORS", 3), 2, 3) : 1;
    names_ = {"coord"};
    if (mode == ChaosMode::kHa) {
      names_.clear();
      for (size_t i = 0; i < coordinators_; ++i) names_.push_back("c" + std::to_string(i + 1));
    }
    for (const char* w : {"w1", "w2", "w3"}) names_.push_back(w);
    for (int i = 0; i < 3; ++i) {
      workers_.push_back(Endpoint(FreeTcpPort()));
      api_.push_back(Endpoint(FreeTcpPort()));
      replication_.push_back(Endpoint(FreeTcpPort()));
    }
    if (mode == ChaosMode::kHa) {
      etcd_ = EtcdEndpoints();
      election_ =
          "apollo11-test/chaos-" + std::to_string(::getpid()) + "-" + std::to_string(FreeTcpPort());
    }
    cli_.listening["api"] =
        Joined(api_, mode == ChaosMode::kSingle ? 1 : std::max<size_t>(2, coordinators_));
    procs_.resize(names_.size());
    generation_.assign(names_.size(), 0);
  }

  size_t size() const { return procs_.size(); }
  bool IsCoordinator(size_t i) const { return i < coordinators_; }
  NodeProc& proc(size_t i) { return procs_[i]; }
  // What the CLI is given: --coordinator with every client endpoint.
  const NodeProc& cli() const { return cli_; }

  void Start(size_t i) {
    const std::string out = names_[i] + "." + std::to_string(generation_[i]++);
    if (!IsCoordinator(i)) {
      const size_t endpoints = mode_ == ChaosMode::kSingle ? 1 : std::max<size_t>(2, coordinators_);
      procs_[i] = StartNode(dir_, out,
                            {"--role", "worker", "--connect", Joined(workers_, endpoints),
                             "--worker-id", names_[i], "--slots", "3"},
                            names_[i], default_timing_);
      return;
    }
    // Kills here come ten times faster than any real failure rate: a task
    // may lose its worker more often than the default cap of 3 allows.
    std::vector<std::string> args = {"--role", "coordinator", "--max-requeues", "50"};
    size_t at = i;  // which endpoint pair
    if (mode_ == ChaosMode::kFollow) at = generation_[i] % 2 == 0 ? 1 : 0;
    args.insert(args.end(), {"--bind", workers_[at], "--api-bind", api_[at]});
    if (mode_ == ChaosMode::kHa) {
      args.insert(args.end(), {"--replication-bind", replication_[i], "--insecure", "--ha-etcd",
                               etcd_, "--ha-name", names_[i], "--ha-election", election_});
      if (!default_timing_) args.insert(args.end(), {"--ha-lease", "2s"});
    }
    procs_[i] = StartNode(dir_, out, args, names_[i], default_timing_);
  }

  // The state dir (under the scratch dir) of the coordinator that leads
  // now: the only one, or the HA leader (empty when none leads).
  std::string LeaderState() {
    if (mode_ != ChaosMode::kHa) return names_[0];
    for (size_t i = 0; i < coordinators_; ++i) {
      CmdResult r = Run(
          {"curl", "-s", "http://" + procs_[i].listening["http"].get<std::string>() + "/healthz"});
      auto h = ParseJson(r.out);
      if (h.is_object() && h["role"] == "leader") return names_[i];
    }
    return "";
  }
  // The other coordinators' state dirs (HA), or none.
  std::vector<std::string> StandbyStates(const std::string& leader) const {
    std::vector<std::string> out;
    if (mode_ != ChaosMode::kHa) return out;
    for (size_t i = 0; i < coordinators_; ++i) {
      if (names_[i] != leader) out.push_back(names_[i]);
    }
    return out;
  }
  // HA: true once a coordinator leads and has a standby in sync (so the
  // first kill of the leader fails over instead of waiting for it).
  bool StandbyInSync() {
    for (size_t i = 0; i < coordinators_; ++i) {
      const std::string http = "http://" + procs_[i].listening["http"].get<std::string>();
      auto doc = ParseJson(Run({"curl", "-s", "--max-time", "1", http + "/api/cluster"}).out);
      if (!doc.is_object() || doc["role"] != "leader") continue;
      if (doc["in_sync"].is_array() && !doc["in_sync"].empty()) return true;
    }
    return false;
  }

  size_t MostWorkers() {
    size_t most = 0;
    for (size_t i = 0; i < coordinators_; ++i) most = std::max(most, WorkerCount(procs_[i]));
    return most;
  }

 private:
  const ScratchDir& dir_;
  // "a,b,...": the first `n` of `endpoints`.
  static std::string Joined(const std::vector<std::string>& endpoints, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out += (i ? "," : "") + endpoints[i];
    return out;
  }

  const ChaosMode mode_;
  const bool default_timing_ = EnvInt("APOLLO11_CHAOS_DEFAULTS", 0) != 0;
  size_t coordinators_ = 1;
  std::vector<std::string> names_, workers_, api_, replication_;
  std::string etcd_, election_;
  NodeProc cli_;
  std::vector<NodeProc> procs_;
  std::vector<int> generation_;
};

// `journal`'s histories of `runs`, each transition as one comparable line.
std::vector<std::string> Histories(storage::Journal& journal,
                                   const std::vector<std::string>& runs) {
  std::vector<std::string> out;
  for (const std::string& run_id : runs) {
    auto history = journal.HistoryOfRun(run_id);
    REQUIRE(history.ok());
    for (const storage::TransitionRecord& t : *history) {
      out.push_back(std::to_string(t.seq) + " " + t.exec_id + " " + ToString(t.from) + "->" +
                    ToString(t.to) + " " + t.reason);
    }
  }
  return out;
}

// HA: the standby's journal catches up with the leader's and then gives the
// same history for every run.
void CheckStandbyEqual(const ScratchDir& dir, const std::string& leader, const std::string& standby,
                       const std::vector<std::string>& runs) {
  auto open = [&](const std::string& name) {
    return storage::Journal::Open(dir.path() + "/" + name + "/journal",
                                  storage::JournalOptions{.read_only = true});
  };
  const bool caught_up = WaitFor(
      [&] {
        auto a = open(leader), b = open(standby);
        return a.ok() && b.ok() && (*a)->last_seq() == (*b)->last_seq() &&
               (*a)->last_batch() == (*b)->last_batch();
      },
      20000);
  CHECK(caught_up);
  auto a = open(leader), b = open(standby);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(Histories(**a, runs) == Histories(**b, runs));
}

// One round: a fresh cluster, two runs of the pipeline, `kills` kills.
void ChaosRound(unsigned seed, int kills, Totals* totals, ChaosMode mode = ChaosMode::kSingle) {
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

  ChaosCluster cluster(dir, mode);
  for (size_t i = 0; i < cluster.size(); ++i) cluster.Start(i);
  Nodes guard{{}};
  for (size_t i = 0; i < cluster.size(); ++i) guard.all.push_back(&cluster.proc(i));
  REQUIRE(WaitFor([&] { return cluster.MostWorkers() == 3; }, 20000));
  if (mode == ChaosMode::kHa) REQUIRE(WaitFor([&] { return cluster.StandbyInSync(); }, 30000));

  const std::string file =
      dir.Write("chaos.yaml",
                ChaosPipeline("test.chaos", dir.path() + "/ledger", dir.path() + "/marks", seed));
  std::vector<std::string> run_ids;
  for (int r = 0; r < 2; ++r) {
    CmdResult sub = Cli(cluster.cli(), {"submit", file});
    INFO(sub.err);
    REQUIRE(sub.exit_code == 0);
    run_ids.push_back(sub.out.substr(0, sub.out.find('\n')));
  }

  for (int k = 0; k < kills; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 700));
    const size_t victim = rng() % cluster.size();
    NodeProc& p = cluster.proc(victim);
    ::kill(p.pid, SIGKILL);
    WaitExit(p.pid, 5000);
    p.pid = -1;
    ++totals->kills;
    ++(cluster.IsCoordinator(victim) ? totals->coordinator_kills : totals->worker_kills);
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 300));
    cluster.Start(victim);
  }

  // Every run ends, as it does without faults.
  for (const std::string& run_id : run_ids) {
    CmdResult st = Cli(cluster.cli(), {"status", run_id, "--wait", "--json", "--timeout", "120"});
    auto summary = ParseJson(st.out);
    INFO(run_id << " " << st.err);
    REQUIRE(summary.is_object());
    CHECK(summary["state"] == expected["state"]);
    for (auto& [task, t] : expected["tasks"].items()) {
      if (summary["tasks"][task]["state"] == t["state"]) continue;
      // Say why, with the execution's whole history.
      INFO(Cli(cluster.cli(), {"history", run_id + "." + task}).out);
      CHECK(summary["tasks"][task]["state"] == t["state"]);
    }
  }
  std::string leader;
  REQUIRE(WaitFor([&] { return !(leader = cluster.LeaderState()).empty(); }, 10000));
  for (const std::string& standby : cluster.StandbyStates(leader)) {
    CheckStandbyEqual(dir, leader, standby, run_ids);
  }
  for (size_t i = 0; i < cluster.size(); ++i) {
    ::kill(cluster.proc(i).pid, SIGKILL);
    WaitExit(cluster.proc(i).pid, 5000);
    cluster.proc(i).pid = -1;
  }

  // The journal (the leader's), read directly.
  auto opened = storage::Journal::Open(dir.path() + "/" + leader + "/journal",
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
      // A note (a slow flag: at the default --heartbeat a task whose worker
      // was killed stays RUNNING past the 10 s slow floor) changes no state.
      CHECK((t.note ? t.from == t.to : IsAllowedTransition(t.from, t.to)));  // 4
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

// Runs $APOLLO11_CHAOS_ROUNDS rounds (default 1) of $APOLLO11_CHAOS_KILLS
// kills (default 12) in `mode` and prints the totals under `label`.
void RunChaos(ChaosMode mode, const char* label) {
  const int rounds = EnvInt("APOLLO11_CHAOS_ROUNDS", 1);
  const int kills = EnvInt("APOLLO11_CHAOS_KILLS", 12);
  const unsigned seed = static_cast<unsigned>(
      EnvInt("APOLLO11_CHAOS_SEED", static_cast<int>(std::random_device{}())));
  Totals totals;
  for (int r = 0; r < rounds; ++r) {
    INFO("round " << r << " seed " << seed + r);
    ChaosRound(seed + static_cast<unsigned>(r), kills, &totals, mode);
  }
  std::printf(
      "%s: %d rounds, seed %u: %d kills (%d coordinator, %d worker); %d retries; %d attempts "
      "rerun after a requeue\n",
      label, rounds, seed, totals.kills, totals.coordinator_kills, totals.worker_kills,
      totals.retries, totals.requeued_reruns);
}

}  // namespace

TEST_CASE(
    "chaos: random kill -9 of the coordinator and workers loses nothing and runs nothing "
    "twice",
    "[chaos][recovery]") {
  RunChaos(ChaosMode::kSingle, "chaos");
}

TEST_CASE(
    "chaos (follow): workers and the CLI follow a coordinator that comes back elsewhere, losing "
    "nothing and running nothing twice",
    "[chaos][recovery][follow]") {
  RunChaos(ChaosMode::kFollow, "chaos (follow)");
}

// Hidden from discovery: ctest runs it as chaos_ha, with the etcd fixture.
TEST_CASE(
    "chaos (HA): random kill -9 of the leader, the standby and workers loses nothing and runs "
    "nothing twice, and the standby's journal equals the leader's",
    "[.][chaos-ha]") {
  RunChaos(ChaosMode::kHa, "chaos (HA)");
}
