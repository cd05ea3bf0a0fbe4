// DispatcherCore: who may be a worker. A HELLO registers a worker id on the
// connection (ROUTER identity) it came from; the id stays bound to that
// connection, and under CURVE to that key, while the worker is registered.
// A second connection claiming a live worker's id, a key without the
// `worker` role, absurd slots or an unusable id get REFUSED: the worker stops
// instead of running tasks beside another.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "actors/dispatcher/dispatcher_core.h"
#include "common/log_event.h"
#include "ha/not_leader.h"
#include "transport/protocol_mismatch.h"

namespace apollo11::actors {
bool IsValidWorkerId(const std::string& id) {
  if (id.empty() || id.size() > kMaxWorkerNameBytes || id == "." || id == "..") return false;
  return std::all_of(id.begin(), id.end(), [](char c) { return c > 0x20 && c < 0x7f && c != '/'; });
}

DispatcherCore::Worker* DispatcherCore::WorkerAt(const std::string& route) {
  auto r = routes_.find(route);
  if (r == routes_.end()) return nullptr;
  auto w = workers_.find(r->second);
  return w == workers_.end() ? nullptr : &w->second;
}

bool DispatcherCore::Admitted(const Frame& f, DispatcherOutput* out) {
  using observability::WorkerRefusal;
  const bool hello = f.envelope.type == transport::ToWire(transport::MsgType::kHello);
  if (options_.standby) {
    // Every frame, not only HELLO: a worker still heartbeating a coordinator
    // that stood down learns where to go.
    ++dropped_frames_;
    transport::Refused refused;
    if (options_.ha) {
      const ha::RoleState role = options_.ha->Current();
      refused.reason = ha::NotLeaderReply(role.leader.worker_endpoint);
      refused.epoch = role.leader.worker_endpoint.empty() ? 0 : role.epoch;
    } else {
      refused.reason = ha::NotLeaderReply("");
    }
    Send(f.identity, transport::MsgType::kRefused, refused, out);
    return false;
  }
  if (options_.require_worker_role && !transport::Allows(f.peer.roles, transport::Action::kWork)) {
    const std::string why = "key " + f.peer.key + " may not act as a worker (its roles: " +
                            (f.peer.roles ? transport::FormatRoles(f.peer.roles) : "none") +
                            "); list it as 'worker KEY' in the authorized keys";
    if (hello) {
      RefuseHello(f, WorkerRefusal::kRole, why, out);
    } else {
      CountRefusal(WorkerRefusal::kRole, [&] { return "refused a frame: " + why; });
    }
    return false;
  }
  if (f.worker != nullptr && f.worker->key != f.peer.key) {
    // Only a peer that knows the connection's identity gets here.
    CountRefusal(WorkerRefusal::kDuplicateId, [&] {
      return "refused a frame for worker " + f.worker->id + " from another key " + f.peer.key;
    });
    return false;
  }
  return true;
}

void DispatcherCore::RefuseHello(const Frame& f, observability::WorkerRefusal reason,
                                 const std::string& why, DispatcherOutput* out) {
  ++dropped_frames_;
  Send(f.identity, transport::MsgType::kRefused, transport::Refused{why}, out);
  uint64_t suppressed = 0;
  if (!CountRefusal(reason, &suppressed)) return;
  LogEvent(spdlog::level::err, "worker_refused",
           {{"peer", Printable(f.identity)}, {"reason", why}, {"not_logged", suppressed}},
           "refused HELLO from peer {}: {}", Printable(f.identity), why);
}

void DispatcherCore::TellOtherVersion(const std::string& identity, uint32_t version,
                                      DispatcherOutput* out) {
  // A standby sends it to the leader first, as any worker: the leader may
  // speak its version (an upgrade under way), else it says why not.
  const std::string leader =
      options_.standby && options_.ha ? options_.ha->Current().leader.worker_endpoint : "";
  std::string frame = transport::EncodeRefusedAs(
      version,
      options_.standby ? ha::NotLeaderReply(leader) : transport::ProtocolMismatchReason(version));
  if (!frame.empty()) out->to_workers.emplace_back(identity, std::move(frame));
}

bool DispatcherCore::RouteConnected(const std::string& route) const {
  return !options_.connected || options_.connected(route);
}

DispatcherCore::Worker* DispatcherCore::Register(const Frame& f, const transport::Hello& hello,
                                                 DispatcherOutput* out) {
  using observability::WorkerRefusal;
  const std::string id = hello.worker_id.empty() ? f.identity : hello.worker_id;
  if (!IsValidWorkerId(id)) {
    RefuseHello(f, WorkerRefusal::kBadHello,
                "worker id '" + Printable(id) +
                    "' is not 1 to 128 printable characters without spaces or '/'",
                out);
    return nullptr;
  }
  if (hello.group.size() > kMaxWorkerNameBytes || hello.labels.size() > kMaxWorkerLabels ||
      std::any_of(hello.labels.begin(), hello.labels.end(),
                  [](const std::string& l) { return l.size() > kMaxWorkerNameBytes; })) {
    RefuseHello(f, WorkerRefusal::kBadHello,
                "worker " + id + ": a group or label over " + std::to_string(kMaxWorkerNameBytes) +
                    " bytes, or more than " + std::to_string(kMaxWorkerLabels) + " labels",
                out);
    return nullptr;
  }
  if (hello.slots > kMaxWorkerSlots) {
    RefuseHello(f, WorkerRefusal::kBadHello,
                "worker " + id + " offers " + std::to_string(hello.slots) + " slots; at most " +
                    std::to_string(kMaxWorkerSlots) + " (0: draining)",
                out);
    return nullptr;
  }
  if (f.worker != nullptr) {
    if (f.worker->id == id) return f.worker;  // a HELLO again on its connection
    RefuseHello(f, WorkerRefusal::kBadHello,
                "this connection is worker " + f.worker->id + "; it cannot become " + id, out);
    return nullptr;
  }
  auto existing = workers_.find(id);
  if (existing == workers_.end()) {
    if (workers_.size() >= kMaxWorkers) {
      RefuseHello(f, WorkerRefusal::kBadHello,
                  "the coordinator has " + std::to_string(workers_.size()) + " workers, its limit",
                  out);
      return nullptr;
    }
    Worker& w = workers_.emplace(id, Worker{}).first->second;
    w.id = id;
    w.route = f.identity;
    w.key = f.peer.key;
    w.joined_at = clock_->Now();
    routes_[f.identity] = id;
    LogEvent(spdlog::level::info, "worker_joined",
             {{"worker_id", id}, {"group", hello.group}, {"slots", hello.slots}},
             "worker {} joined: group {}, {} slots", id, hello.group, hello.slots);
    return &w;
  }
  Worker& w = existing->second;
  if (w.key != f.peer.key) {
    RefuseHello(f, WorkerRefusal::kDuplicateId,
                "worker id " + id + " is registered by another key (" + w.key + ")", out);
    return nullptr;
  }
  if (RouteConnected(w.route)) {
    RefuseHello(f, WorkerRefusal::kDuplicateId,
                "worker id " + id +
                    " is already connected from another process; give each worker its own "
                    "--worker-id (if that process is gone, start this one again once the "
                    "coordinator has declared it lost)",
                out);
    return nullptr;
  }
  // Its previous connection is gone (a restarted worker process): this one
  // takes the id over, and is treated as the same worker rejoining.
  LogEvent(spdlog::level::info, "worker_reconnected", {{"worker_id", id}},
           "worker {} rejoined from a new process; its previous connection is gone", id);
  routes_.erase(w.route);
  w.route = f.identity;
  routes_[f.identity] = id;
  return &w;
}

bool DispatcherCore::OnHello(const Frame& f, DispatcherOutput* out) {
  auto hello = transport::BodyAs<transport::Hello>(f.envelope);
  if (!hello.ok()) return false;
  const bool rejoin = f.worker != nullptr ||
                      workers_.count(hello->worker_id.empty() ? f.identity : hello->worker_id) > 0;
  Worker* w = Register(f, *hello, out);
  if (w == nullptr) return true;  // refused, and said so
  std::vector<transport::Probe> rejoin_probes;
  if (rejoin) rejoin_probes = RejoinProbes(*w, *hello);
  const Micros now = clock_->Now();
  w->group = hello->group.empty() ? "default" : hello->group;
  w->slots = hello->slots;
  w->prefetch = std::min(hello->prefetch, kMaxWorkerPrefetch);
  w->labels = hello->labels;
  std::sort(w->labels.begin(), w->labels.end());
  w->labels.erase(std::unique(w->labels.begin(), w->labels.end()), w->labels.end());
  w->credits = 0;  // it grants credit with CREDIT
  w->last_seen = now;
  w->last_heard = clock_->Steady();
  // Executions it claims that we did not place there are not ours to run,
  // unless they are ones the journal left RUNNING or READY before a restart.
  for (const auto& ref : hello->running) {
    if (Claim(w->id, w, ref.exec_id, ref.attempt)) continue;
    auto r = w->running.find(ref.exec_id);
    if (r == w->running.end() || r->second != ref.attempt) {
      transport::Cancel cancel{ref.exec_id, ref.attempt, options_.epoch};
      Send(w->route, transport::MsgType::kCancel, cancel, out);
    }
  }
  // What the journal says it runs and its HELLO does not list, it does not
  // hold (such a HELLO lists finished attempts too): handed back at once.
  // The finished ones stay in the window until their RESULT claims them.
  if (hello->lists_finished) {
    std::vector<std::string> listed;
    for (const auto& ref : hello->running) listed.push_back(ref.exec_id);
    for (const auto& ref : hello->finished) listed.push_back(ref.exec_id);
    std::sort(listed.begin(), listed.end());
    claims_.ReleaseUnlisted(w->id, listed, &out->gone);
  }
  if (options_.watchers != nullptr) options_.watchers->Forget(w->id);
  transport::Heartbeat hb;
  hb.epoch = options_.epoch;
  hb.answers_hello = true;  // after the CANCELs above
  Send(w->route, transport::MsgType::kHeartbeat, hb, out);
  for (const transport::Probe& probe : rejoin_probes) {
    Send(w->route, transport::MsgType::kProbe, probe, out);
  }
  roster_changed_ = true;
  return true;
}

}  // namespace apollo11::actors
