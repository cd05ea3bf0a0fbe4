#pragma once
// A RunBatch as bytes, for shipping a committed batch to a replica: one
// msgpack array of every kind of record a batch holds (transitions,
// executions, runs, snapshots, durations, pipeline versions and states,
// trigger keys, schedules, fires, audit records) in the journal's own record
// encoding. The
// decoder takes bytes from the network: anything else than what
// EncodeBatch wrote is Corrupt, never a crash. It also reads formats 1 and 2
// (an older leader's, without the registry and schedule records, or without
// the audit records), so standbys are upgraded before their leader.

#include <string>
#include <string_view>

#include "common/status.h"
#include "storage/run_batch.h"

namespace apollo11::storage::codec {

// Never fails. Transitions go without their seq (the receiver numbers them).
std::string EncodeBatch(const RunBatch& batch);
// Corrupt for bytes EncodeBatch did not write (or a newer format).
Result<RunBatch> DecodeBatch(std::string_view bytes);

}  // namespace apollo11::storage::codec
