#include "tests/sim/cluster_sim.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "dsl/pipeline_json.h"
#include "ha/in_sync.h"
#include "ha/role_change.h"
#include "storage/batch_codec.h"
#include "tests/sim/cluster_sim_node.h"
#include "transport/messages.h"

namespace apollo11::sim {

using actors::ClientType;
using namespace cluster;  // NOLINT: this file's own helpers

dsl::TaskSpec ClusterTask(const std::string& id, std::vector<std::string> deps) {
  dsl::TaskSpec t;
  t.id = id;
  t.type = dsl::TaskType::kShell;
  t.command = "true";
  for (auto& d : deps) t.depends_on.push_back({d, dsl::DependencyCondition::kSuccess, {}});
  return t;
}

ClusterSim::ClusterSim(ClusterOptions options)
    : options_(options),
      random_(options.seed),
      scheduler_random_(engine::NewSeededRandom(options.seed)),
      etcd_(&clock_) {
  start_ = clock_.Steady();
  trace_ = std::getenv("APOLLO11_SIM_TRACE") != nullptr;
  if (!trace_) spdlog::set_level(spdlog::level::off);  // the actors' own logs
  // APOLLO11_SIM_TRACE=debug: the actors' debug lines too.
  if (trace_ && std::string(std::getenv("APOLLO11_SIM_TRACE")) == "debug") {
    spdlog::set_level(spdlog::level::debug);
  }
  for (size_t i = 0; i < options_.coordinators; ++i) {
    nodes_.push_back(std::make_unique<Node>(i, &etcd_, &clock_));
    worker_endpoints_.push_back(nodes_.back()->self.worker_endpoint);
  }
  std::string connect;
  for (const std::string& e : worker_endpoints_) connect += (connect.empty() ? "" : ",") + e;
  for (size_t i = 0; i < options_.coordinators; ++i) StartNode(i);
  for (size_t j = 0; j < options_.workers; ++j) {
    auto w = std::make_unique<Worker>();
    w->id = "w" + std::to_string(j);
    actors::WorkerOptions wo;
    wo.worker_id = w->id;
    wo.slots = options_.slots;
    wo.heartbeat = options_.heartbeat;
    wo.liveness = options_.liveness;
    wo.health_interval = Millis(0);
    wo.coordinator_endpoint = connect;
    w->core = std::make_unique<actors::WorkerCore>(&w->runner, &clock_, wo);
    w->core->Hello();
    workers_.push_back(std::move(w));
  }
}

ClusterSim::~ClusterSim() {
  for (auto& n : nodes_) n->store().SetCommitObserver(nullptr);
}

void ClusterSim::StartNode(size_t i) {
  Node& n = *nodes_[i];
  ha::ElectorOptions eo{kElection, options_.lease_ttl_s, Millis(0),
                        options_.sync ? ha::InSyncKey(kElection) : ""};
  ha::ElectorEvents events;
  events.begin_term = [&n](uint64_t epoch) {
    auto term = n.store().BeginTerm(epoch);
    return term.ok() ? Status::Ok() : term.status();
  };
  n.elector = std::make_unique<ha::HaElector>(&n.etcd, &clock_, &n.board, eo, events);
  // Nodes start at different times: their electors' phases (keepalives,
  // campaign waits) are not in step, as in a real cluster.
  const Micros ttl = options_.lease_ttl_s * kMicrosPerSecond;
  n.elector_due = clock_.Steady() + std::uniform_int_distribution<Micros>(0, ttl)(random_);
  // As Node::Start with --ha-etcd: the coordinator starts as a standby.
  auto epoch = n.store().Epoch();
  StartCoordinator(n, /*standby=*/true, epoch.ok() ? *epoch : 0);
}

bool ClusterSim::Runs(const Node& n) const { return n.alive && clock_.Steady() >= n.paused_until; }

void ClusterSim::Trace(const std::string& what) const {
  if (trace_)
    std::fprintf(stderr, "sim %6lld ms  %s\n",
                 static_cast<long long>((clock_.Steady() - start_) / kMicrosPerMilli),
                 what.c_str());
}

void ClusterSim::Violation(const std::string& what) {
  Trace("VIOLATION " + what);
  std::ostringstream line;
  line << "t=" << clock_.Steady() / kMicrosPerMilli << "ms: " << what;
  violations_.push_back(line.str());
}

// ---- driving ------------------------------------------------------------------

void ClusterSim::Round() {
  clock_.Advance(Ms(options_.step));
  enum class Part : uint8_t { kElector, kScheduler, kDispatcher, kReconciler, kReplication };
  std::vector<std::pair<int, int>> parts;  // (node or -1 - worker, part)
  for (auto& n : nodes_) {
    if (!Runs(*n)) continue;
    for (int p = 0; p <= static_cast<int>(Part::kReplication); ++p) {
      parts.emplace_back(static_cast<int>(n->index), p);
    }
  }
  for (size_t j = 0; j < workers_.size(); ++j) parts.emplace_back(-1 - static_cast<int>(j), 0);
  std::shuffle(parts.begin(), parts.end(), random_);
  for (auto [who, part] : parts) {
    if (who < 0) {
      WorkerTurn(*workers_[static_cast<size_t>(-1 - who)]);
      continue;
    }
    Node& n = *nodes_[static_cast<size_t>(who)];
    if (!Runs(n)) continue;  // killed by an earlier part of this round
    switch (static_cast<Part>(part)) {
      case Part::kElector:
        ElectorTurn(n);
        break;
      case Part::kScheduler:
        SchedulerTurn(n);
        break;
      case Part::kDispatcher:
        DispatcherTurn(n);
        break;
      case Part::kReconciler:
        ReconcilerTurn(n);
        break;
      case Part::kReplication:
        ReplicationTurn(n);
        break;
    }
  }
}

void ClusterSim::RunFor(Millis d) {
  const Micros until = clock_.Steady() + Ms(d);
  while (clock_.Steady() < until) Round();
}

bool ClusterSim::RunUntil(const std::function<bool()>& done, Millis limit) {
  const Micros until = clock_.Steady() + Ms(limit);
  while (!done()) {
    if (clock_.Steady() >= until) return false;
    Round();
  }
  return true;
}

int ClusterSim::Leader() const {
  for (const auto& n : nodes_) {
    if (Runs(*n) && n->sched && !n->standby && n->board.MayAct()) {
      return static_cast<int>(n->index);
    }
  }
  return -1;
}

void ClusterSim::Kill(size_t node) {
  Node& n = *nodes_.at(node);
  Trace("kill -9 " + n.name);
  n.alive = false;  // its lease expires in etcd on its own
  n.etcd.LeaveLine();
  StopCoordinator(n);
  n.store().SetCommitObserver(nullptr);
  n.rep_leader.reset();
  n.in_sync.reset();
  n.rep_standby.reset();
  n.rep_in.clear();
}

void ClusterSim::Restart(size_t node) {
  Node& n = *nodes_.at(node);
  Trace("restart " + n.name);
  n.alive = true;
  n.paused_until = 0;
  n.etcd.cut = false;
  n.etcd.Reset();
  n.board.Publish(ha::Role::kStandby, 0, ha::Member{}, 0);
  n.following.clear();
  StartNode(node);
}

bool ClusterSim::RegisterEverySecond(const std::string& name,
                                     const std::vector<dsl::TaskSpec>& tasks, Millis limit) {
  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = name;
  spec.tasks = tasks;
  spec.schedule = "* * * * * *";
  spec.overlap = "allow";
  spec.catchup = "all";
  spec.catchup_window = Millis(600000);
  spec.max_active_runs = 100;
  actors::RegistryRequest r;
  r.op = static_cast<uint8_t>(actors::RegistryOp::kAdd);
  r.name = name;
  r.pipeline_json = dsl::CanonicalJson(spec);
  r.pipeline_hash = dsl::ContentHash(spec);
  r.actor = "sim";
  std::string frame;
  transport::Encode(static_cast<uint16_t>(ClientType::kRegistry), r, &frame);
  if (!RunUntil([&] { return Leader() >= 0; }, limit)) return false;
  Node& leader = *nodes_[static_cast<size_t>(Leader())];
  leader.from_clients.emplace_back("registrar", frame);
  return RunUntil([&] { return !LeaderFires(name).empty(); }, limit);
}

std::map<Micros, std::set<std::string>> ClusterSim::FireRuns(const std::string& pipeline) {
  std::map<Micros, std::set<std::string>> runs;
  for (const auto& n : nodes_) {
    auto fires = n->store().Fires(pipeline, 0, clock_.Now());
    if (!fires.ok()) continue;
    for (const storage::FireRecord& f : *fires) {
      if (f.state == storage::FireState::kStarted) runs[f.scheduled_at].insert(f.run_id);
    }
  }
  return runs;
}

std::set<Micros> ClusterSim::LeaderFires(const std::string& pipeline) {
  std::set<Micros> times;
  const int leader = Leader();
  if (leader < 0) return times;
  auto fires = nodes_[static_cast<size_t>(leader)]->store().Fires(pipeline, 0, clock_.Now());
  if (!fires.ok()) return times;
  for (const storage::FireRecord& f : *fires) {
    if (f.state == storage::FireState::kStarted) times.insert(f.scheduled_at);
  }
  return times;
}

bool ClusterSim::Launched(const std::string& exec_id) const {
  for (const auto& w : workers_) {
    for (const executor::ExecRequest& req : w->runner.launched) {
      if (req.exec_id == exec_id) return true;
    }
  }
  return false;
}

void ClusterSim::CutEtcd(size_t node, bool cut) { nodes_.at(node)->etcd.cut = cut; }

void ClusterSim::CutReplication(size_t node, bool cut) { nodes_.at(node)->replication_cut = cut; }

void ClusterSim::Pause(size_t node, Millis d) {
  nodes_.at(node)->paused_until = clock_.Steady() + Ms(d);
}

// ---- clients -------------------------------------------------------------------

std::string ClusterSim::Submit(const std::string& name, const std::vector<dsl::TaskSpec>& tasks,
                               Millis limit) {
  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = name;
  spec.tasks = tasks;
  actors::SubmitRun s;
  s.pipeline_json = dsl::CanonicalJson(spec);
  s.pipeline_hash = dsl::ContentHash(spec);
  std::string frame;
  transport::Encode(static_cast<uint16_t>(ClientType::kSubmitRun), s, &frame);
  const Micros until = clock_.Steady() + Ms(limit);
  while (clock_.Steady() < until) {
    if (!RunUntil([&] { return Leader() >= 0; }, Millis(Ms(limit) / kMicrosPerMilli))) break;
    const std::string client = "client-" + std::to_string(clock_.Steady());
    nodes_[static_cast<size_t>(Leader())]->from_clients.emplace_back(client, frame);
    std::string run_id;
    RunUntil(
        [&] {
          auto it = replies_.find(client);
          if (it != replies_.end()) run_id = it->second;
          return it != replies_.end();
        },
        Millis(2000));
    if (!run_id.empty()) return run_id;
  }
  return "";
}

void ClusterSim::DeliverToClient(Node& n, actors::ClientFrame f) {
  auto env = transport::DecodeEnvelope(f.frame.data(), f.frame.size(), actors::ClientLimits());
  if (!env.ok() || env->type != static_cast<uint16_t>(ClientType::kSubmitReply)) return;
  auto reply = transport::BodyAs<actors::SubmitReply>(*env);
  if (!reply.ok()) return;
  if (!reply->run_id.empty()) {
    auto run = n.store().GetRun(reply->run_id);
    if (!run.ok() || !run->has_value()) {
      Violation(n.name + " answered run " + reply->run_id + " before it was durable");
    }
  }
  replies_[f.identity] = reply->run_id;
}

size_t ClusterSim::InSync() const {
  const int leader = Leader();
  if (leader < 0) return 0;
  const Node& n = *nodes_[static_cast<size_t>(leader)];
  return n.in_sync ? n.in_sync->in_sync().size() : 0;
}

bool ClusterSim::AllSucceeded(const std::vector<std::string>& runs) const {
  const int leader = Leader();
  if (leader < 0) return false;
  Node& n = *nodes_[static_cast<size_t>(leader)];
  for (const std::string& id : runs) {
    auto run = n.store().GetRun(id);
    if (!run.ok() || !run->has_value() || (*run)->status != RunStatus::kSuccess) return false;
  }
  return true;
}

}  // namespace apollo11::sim
