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

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace apollo11::storage {

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
  // Every stored value, in key order.
  Result<std::vector<std::pair<std::string, std::string>>> LoadAll() const;
  size_t size() const;

 private:
  struct Env;
  explicit Outbox(std::unique_ptr<Env> env);
  Status Grow();
  std::unique_ptr<Env> env_;
};

}  // namespace apollo11::storage
