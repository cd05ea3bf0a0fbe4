#pragma once
// The port between the scheduler and its durable state, as the five parts
// its consumers use: RunLog (commits, replicated batches, the epoch: the
// scheduler's writer, a standby's applier), RunReader (runs, executions,
// history, snapshots: recovery and the queries), RegistryStore (the
// pipeline registry), ScheduleStore (schedules and fires) and AuditStore
// (the audit trail). A consumer
// takes the part it needs; whatever holds the whole journal takes RunStore.
// storage::Journal (LMDB) is the real implementation; MemoryRunStore and
// FaultyRunStore serve the tests, and one contract test per part holds all
// three to it (tests/storage/run_store_contract_test.cc).
//
// Threads: one writer thread (the scheduler) commits. Read methods may be
// called from any thread unless an implementation says otherwise.

#include "storage/audit_store.h"
#include "storage/registry_store.h"
#include "storage/run_log.h"
#include "storage/run_reader.h"
#include "storage/schedule_store.h"

namespace apollo11::storage {

class RunStore : public RunLog,
                 public RunReader,
                 public RegistryStore,
                 public ScheduleStore,
                 public AuditStore {
 public:
  ~RunStore() override = default;
};

// The read-only parts of a store, for a consumer that answers
// questions about all of them (QueryService).
struct StoreReaders {
  RunReader* runs = nullptr;
  RegistryStore* registry = nullptr;
  ScheduleStore* schedules = nullptr;
  AuditStore* audit = nullptr;
};
inline StoreReaders ReadersOf(RunStore* store) { return {store, store, store, store}; }

}  // namespace apollo11::storage
