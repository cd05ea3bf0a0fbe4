#include "ha/ha_elector.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/json_dump.h"
#include "ha/in_sync.h"

namespace apollo11::ha {
namespace {

constexpr Micros kRetry = 500 * kMicrosPerMilli;  // after an etcd error
constexpr Micros kMinWait = 200 * kMicrosPerMilli, kMaxWait = 2 * kMicrosPerSecond;

// A key from etcd as a log may show it: printable ASCII, at most 100 bytes.
std::string Printable(const std::string& key) {
  std::string out = key.substr(0, 100);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  }
  return key.size() > 100 ? out + "..." : out;
}

}  // namespace

std::string EncodeMember(const Member& m) {
  return nlohmann::json{{"name", m.name},
                        {"worker", m.worker_endpoint},
                        {"client", m.client_endpoint},
                        {"replication", m.replication_endpoint}}
      .dump();
}

Member DecodeMember(const std::string& value) {
  auto doc = ParseJsonBounded(value);
  Member m{"?", "", "", ""};
  if (!doc.is_object()) return m;
  auto str = [&](const char* k) {
    auto it = doc.find(k);
    return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  m.name = str("name").empty() ? "?" : str("name");
  m.worker_endpoint = str("worker");
  m.client_endpoint = str("client");
  m.replication_endpoint = str("replication");
  return m;
}

std::string ForeignKeyReason(const EtcdLeader& leader) {
  if (leader.key.lease == 0) {
    return "it has no lease (every coordinator's key has one; this one would never expire)";
  }
  auto doc = ParseJsonBounded(leader.value);
  auto text = [&](const char* k) {
    auto it = doc.find(k);
    return it != doc.end() && it->is_string() && !it->get<std::string>().empty();
  };
  if (!doc.is_object() || !text("name") || !text("worker") || !text("client")) {
    return "its value is not a coordinator's record (name, worker and client endpoints)";
  }
  return "";
}

HaElector::HaElector(EtcdPort* etcd, const Clock* clock, RoleBoard* board, ElectorOptions options,
                     ElectorEvents events)
    : etcd_(etcd),
      clock_(clock),
      board_(board),
      options_(std::move(options)),
      events_(std::move(events)),
      value_(EncodeMember(board->Current().self)) {}

Micros HaElector::Margin() const {
  if (options_.margin.count() > 0) return options_.margin.count() * kMicrosPerMilli;
  return std::max<Micros>(TtlMicros() / 4, 300 * kMicrosPerMilli);
}

void HaElector::Error(const Status& s) {
  if (events_.etcd_error) events_.etcd_error(s);
}

Micros HaElector::Step() {
  const Micros now = clock_->Steady();
  const Micros next = leading_ ? LeaderStep(now) : StandbyStep(now);
  steps_.fetch_add(1);
  return next;
}

Micros HaElector::LeaderStep(Micros now) {
  if (now >= act_until_) {
    StepDown("the lease was not renewed in time (no keepalive answered within TTL " +
             std::to_string(ttl_s_) + " s less the " + std::to_string(Margin() / kMicrosPerMilli) +
             " ms safety margin)");
    return clock_->Steady();
  }
  if (resign_requested_.exchange(false)) {
    Resign();
    return clock_->Steady();
  }
  if (now < next_keepalive_) return std::min(next_keepalive_, act_until_);
  const Micros sent = clock_->Steady();
  auto alive = etcd_->KeepAlive(lease_);
  if (!alive.ok()) {
    Error(alive.status());
    next_keepalive_ = clock_->Steady() + kMinWait;
  } else if (alive->ttl_s <= 0) {
    StepDown("etcd no longer has the lease");
    return clock_->Steady();
  } else {
    act_until_ = std::max(act_until_, sent + alive->ttl_s * kMicrosPerSecond - Margin());
    board_->SetActUntil(act_until_);
    next_keepalive_ = sent + TtlMicros() / 3;
    // The lease lives; is the key still the leader (an operator may delete it)?
    auto leader = etcd_->Leader(options_.election);
    if (leader.ok() && (!leader->has_value() || (*leader)->key.key != key_.key)) {
      StepDown("the election key is no longer this node's");
      return clock_->Steady();
    }
  }
  if (clock_->Steady() >= act_until_) return clock_->Steady();
  return std::min(next_keepalive_, act_until_);
}

Micros HaElector::StandbyStep(Micros now) {
  if (lease_ == 0) {
    auto lease = etcd_->GrantLease(options_.lease_ttl_s);
    if (!lease.ok()) {
      Error(lease.status());
      board_->Publish(Role::kStandby, last_epoch_, Member{}, 0);
      return clock_->Steady() + kRetry;
    }
    lease_ = lease->id;
    ttl_s_ = lease->ttl_s;
  } else {
    auto alive = etcd_->KeepAlive(lease_);
    if (!alive.ok()) {
      Error(alive.status());
      board_->Publish(Role::kStandby, last_epoch_, Member{}, 0);
      return clock_->Steady() + kRetry;
    }
    if (alive->ttl_s <= 0) {
      lease_ = 0;
      return clock_->Steady();
    }
  }
  resign_requested_.store(false);
  const Micros wait = std::clamp<Micros>(TtlMicros() / 3, kMinWait, kMaxWait);
  if (!MayCampaign()) {
    ObserveLeader();
    return clock_->Steady() + wait;
  }
  if (now < hold_until_) {
    ObserveLeader();
    if (board_->Current().leader.name.empty())
      return std::min(hold_until_, clock_->Steady() + wait);
    hold_until_ = 0;  // someone else leads: campaign (and wait in line) again
  }
  auto won = etcd_->Campaign(options_.election, lease_, value_, Millis(wait / kMicrosPerMilli));
  if (won.ok()) {
    Win(*won);
  } else if (won.status().code() == StatusCode::kBusy) {
    ObserveLeader();
  } else {
    Error(won.status());
    board_->Publish(Role::kStandby, last_epoch_, Member{}, 0);
    return clock_->Steady() + kRetry;
  }
  return clock_->Steady();
}

void HaElector::Win(const EtcdLeaderKey& key) {
  // The lease's time base: only a keepalive sent now bounds when it expires.
  const Micros sent = clock_->Steady();
  auto alive = etcd_->KeepAlive(lease_);
  if (!alive.ok() || alive->ttl_s <= 0) {
    if (!alive.ok()) Error(alive.status());
    (void)etcd_->Resign(key);
    lease_ = 0;
    return;
  }
  // The old leader may have dropped this node from the record while it
  // waited in line.
  if (!MayCampaign()) {
    (void)etcd_->Resign(key);
    return;
  }
  if (events_.begin_term) {
    Status s = events_.begin_term(key.rev);
    if (!s.ok()) {
      // Refuse to lead in an epoch the journal has used; a new key has a
      // newer revision.
      Error(Status::InvalidInput("refusing to lead in epoch " + std::to_string(key.rev) + ": " +
                                 s.message() + "; campaigning again for a newer revision"));
      (void)etcd_->Resign(key);
      return;
    }
  }
  if (!ClaimInSync(key)) {
    (void)etcd_->Resign(key);
    return;
  }
  leading_ = true;
  key_ = key;
  {
    MutexLock lock(&key_mu_);
    held_key_ = key;
  }
  last_epoch_ = std::max(last_epoch_, key.rev);
  act_until_ = sent + alive->ttl_s * kMicrosPerSecond - Margin();
  next_keepalive_ = sent + TtlMicros() / 3;
  board_->Publish(Role::kLeader, key.rev, board_->Current().self, act_until_);
}

void HaElector::StepDown(const std::string& why) {
  leading_ = false;
  ForgetKey();
  board_->Publish(Role::kStandby, last_epoch_, Member{}, 0);
  if (events_.lease_lost) events_.lease_lost(why);
  // Whatever etcd still holds of this term goes, so a standby need not wait
  // for the TTL; the next term takes a new lease (and so a new key).
  (void)etcd_->Revoke(lease_);
  lease_ = 0;
}

void HaElector::Resign() {
  leading_ = false;
  ForgetKey();
  board_->Publish(Role::kStandby, last_epoch_, Member{}, 0);
  Status s = etcd_->Resign(key_);
  if (!s.ok()) Error(s);
  // Let a standby win before this node stands again.
  hold_until_ = clock_->Steady() + TtlMicros();
}

std::optional<EtcdLeaderKey> HaElector::HeldKey() const {
  MutexLock lock(&key_mu_);
  return held_key_;
}

void HaElector::ForgetKey() {
  MutexLock lock(&key_mu_);
  held_key_.reset();
}

bool HaElector::MayCampaign() {
  if (options_.in_sync_key.empty()) return true;
  const std::string self = board_->Current().self.name;
  auto value = etcd_->Get(options_.in_sync_key);
  bool may = false;
  std::string why;
  if (!value.ok()) {
    Error(value.status());
    return false;  // etcd unreachable: a campaign would fail as well
  }
  if (!value->has_value()) {
    may = true;
    why = "no in-sync record yet (a new cluster)";
  } else if (auto record = DecodeInSync(**value); !record.ok()) {
    why = record.status().message() + " (key " + options_.in_sync_key + ")";
  } else if (record->in_sync.count(self) > 0) {
    may = true;
    why = "the in-sync record of epoch " + std::to_string(record->epoch) + " names " + self;
  } else {
    std::string names;
    for (const std::string& n : record->in_sync) names += (names.empty() ? "" : ", ") + n;
    why = "the leader of epoch " + std::to_string(record->epoch) + " (" + record->leader +
          ") released batches this node may not have; in sync: " + names +
          ". Not campaigning until it catches up from a leader";
  }
  if (eligible_.exchange(may) != may && events_.eligibility) events_.eligibility(may, why);
  return may;
}

bool HaElector::ClaimInSync(const EtcdLeaderKey& key) {
  if (options_.in_sync_key.empty()) return true;
  InSyncRecord record{key.rev, board_->Current().self.name, {board_->Current().self.name}};
  auto put = etcd_->PutIfLeader(key, options_.in_sync_key, EncodeInSync(record));
  if (put.ok() && *put) return true;
  Error(put.ok() ? Status::Busy("etcd: the election key of epoch " + std::to_string(key.rev) +
                                " vanished before the in-sync record was written")
                 : put.status());
  return false;
}

void HaElector::RemoveForeignKey(const EtcdLeaderKey& key, const std::string& why) {
  // etcd's campaign waits behind it for as long as it exists: remove it,
  // but only that very key (a txn on its create revision).
  auto removed = etcd_->DeleteIfCreated(key.key, key.rev);
  std::string what = "ignored the key " + Printable(key.key) + " (create revision " +
                     std::to_string(key.rev) + ") first in line under the election: " + why;
  if (!removed.ok()) {
    what += "; could not remove it: " + removed.status().message();
  } else if (*removed) {
    what += "; removed it";
  }
  if (events_.foreign_key && (key.rev != last_foreign_rev_ || !removed.ok())) {
    events_.foreign_key(what);
  }
  last_foreign_rev_ = key.rev;
}

void HaElector::ObserveLeader() {
  auto leader = etcd_->Leader(options_.election);
  if (!leader.ok()) {
    Error(leader.status());
    board_->Publish(Role::kStandby, last_epoch_, Member{}, 0);
    return;
  }
  if (!leader->has_value()) {
    board_->Publish(Role::kStandby, last_epoch_, Member{}, 0);
    return;
  }
  if (const std::string why = ForeignKeyReason(**leader); !why.empty()) {
    // Not a leader, nor an epoch: nobody is told to follow it.
    RemoveForeignKey((*leader)->key, why);
    board_->Publish(Role::kStandby, last_epoch_, Member{}, 0);
    return;
  }
  last_epoch_ = std::max(last_epoch_, (*leader)->key.rev);
  board_->Publish(Role::kStandby, (*leader)->key.rev, DecodeMember((*leader)->value), 0);
}

void HaElector::Shutdown() {
  if (leading_) {
    leading_ = false;
    ForgetKey();
    board_->Publish(Role::kStandby, last_epoch_, Member{}, 0);
    (void)etcd_->Resign(key_);
  }
  if (lease_ != 0) (void)etcd_->Revoke(lease_);
  lease_ = 0;
}

}  // namespace apollo11::ha
