#pragma once
// What the rest of a coordinator reads about high availability: is this node
// the leader, in which epoch, and who leads otherwise. The HA elector
// (ha/ha_elector.h) publishes into a RoleBoard; the coordinator, replication,
// /healthz, /api/cluster and metrics read it through this interface.
// Without --ha-etcd a node has no RoleView at all (a single coordinator
// leads forever, exactly as before HA).

#include <cstdint>
#include <functional>
#include <string>

namespace apollo11::ha {

enum class Role : uint8_t {
  kStandby = 0,  // campaigning (or cut off from etcd): read-only, schedules nothing
  kLeader = 1,   // holds the election key with a live lease: the only one that acts
};

// "leader" / "standby": the words /healthz, /api/cluster and logs use.
const char* RoleName(Role role);

// One coordinator as it advertises itself in the election value.
struct Member {
  std::string name;             // --ha-name
  std::string worker_endpoint;  // where workers connect (first --ha-advertise)
  std::string client_endpoint;  // where clients connect (second --ha-advertise)
  // Where standbys fetch the journal from (third --ha-advertise; replication
  // part); empty when not advertised.
  std::string replication_endpoint;
  bool operator==(const Member&) const = default;
};

struct RoleState {
  Role role = Role::kStandby;
  // While leading: this term's epoch (the election key's create_revision,
  // journaled as a term record, above every epoch the journal used before).
  // While standby: the newest leader epoch observed, 0 if none.
  uint64_t epoch = 0;
  // The current leader (this node when role == kLeader); empty name when no
  // leader is known (etcd unreachable, nobody elected).
  Member leader;
  // This node.
  Member self;
  // Times this node became leader since it started (apollo11_ha_failovers_total
  // counts leadership changes observed, see RoleBoard).
  uint64_t terms_won = 0;
  bool operator==(const RoleState&) const = default;
};

class RoleView {
 public:
  virtual ~RoleView() = default;
  // A consistent copy of the current state. Any thread. Never says leader
  // once MayAct() is false (the leader's deadline passed).
  virtual RoleState Current() const = 0;
  // True only while this node leads AND its lease is still surely valid by
  // its own steady clock (lease start + TTL - safety margin). Check it right
  // before an effect leaves the process (a DISPATCH, a CANCEL, a replicated
  // batch): after a SIGSTOP past the lease it is false before the elector
  // thread has even noticed. Cheap (two atomic loads and a clock read); any
  // thread.
  virtual bool MayAct() const = 0;
  // Called with the new state after every change of role, epoch or leader,
  // on the elector's thread; must not block long. Returns an id for
  // Unsubscribe. A listener added late is not called for past changes:
  // read Current() after subscribing.
  using Listener = std::function<void(const RoleState&)>;
  virtual uint64_t Subscribe(Listener listener) = 0;
  // Stops calling that listener; once it returns, the listener is not
  // running and will not be called again. Never call it from a listener.
  virtual void Unsubscribe(uint64_t id) = 0;
};

}  // namespace apollo11::ha
