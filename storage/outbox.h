#pragma once
// A worker's durable outbox: the RESULT frames it has not seen acknowledged,
// in a small LMDB environment of its own (STATE_DIR/worker-ID/outbox), so a
// worker killed between finishing a task and the coordinator's ACK still
// delivers that result after it restarts.
//
// Durability: written with MDB_NOSYNC. A committed put is in the OS page
// cache before Put returns, so it survives the worker process being killed
// (kill -9, OOM) but not the machine losing power; after a power loss the
// coordinator's reconciliation requeues what the worker can no longer report.
// One thread (the worker actor) uses it. Values are opaque bytes.
//
// A second kind of record, in the sub-database "children": the process groups
// of the tasks this worker runs, so that a restart after kill -9 can stop the
// tasks its previous process left behind (see actors/orphan_guard.h).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace apollo11::storage {

// A task process group the worker started and has not yet reaped. The start
// time (field 22 of /proc/PID/stat, clock ticks since boot) tells the group's
// leader apart from a later process that reused its pid.
struct ChildGroup {
  int32_t pgid = 0;
  uint64_t start_time = 0;
  std::string exec_id;
  uint32_t attempt = 0;
  int64_t kill_grace_ms = 0;  // SIGTERM to SIGKILL, as the task asked
};

class Outbox {
 public:
  // Opens or creates the outbox in `dir` (created if missing).
  static Result<std::unique_ptr<Outbox>> Open(const std::string& dir);
  ~Outbox();
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  // Stores every (key, value) in one transaction, replacing equal keys.
  Status Put(const std::vector<std::pair<std::string, std::string>>& items);
  // Removes one key; a missing key is not an error.
  Status Erase(const std::string& key);
  // Removes every key in one transaction; missing keys are not an error.
  Status Erase(const std::vector<std::string>& keys);
  // Every stored value, in key order.
  Result<std::vector<std::pair<std::string, std::string>>> LoadAll() const;
  // How many results are stored (child groups are not counted).
  size_t size() const;

  // Records a started task process group, replacing one with the same pgid.
  Status PutChild(const ChildGroup& child);
  // Forgets a reaped group; a missing pgid is not an error.
  Status EraseChild(int32_t pgid);
  // Every recorded group, in pgid order.
  Result<std::vector<ChildGroup>> LoadChildren() const;

 private:
  struct Env;
  explicit Outbox(std::unique_ptr<Env> env);
  Status Grow();
  // `dbi` is an MDB_dbi (unsigned int), kept out of this header with lmdb.h.
  Status PutInto(unsigned dbi, const std::vector<std::pair<std::string, std::string>>& items,
                 const char* what);
  Status EraseFrom(unsigned dbi, const std::vector<std::string>& keys, const char* what);
  std::unique_ptr<Env> env_;
};

}  // namespace apollo11::storage
