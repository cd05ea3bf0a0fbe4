#pragma once
// The audit trail's records: one per request to change something (submit,
// trigger, rerun, cancel, confirm, pause, unpause, backfill, pipelines add
// and rm, resign, reload), whether it was done or refused, with who asked,
// through what, from where, and what came of it. They ride in the journal's
// batches (RunBatch::PutAudit), so they are replicated with everything else
// and a standby that takes over lists what its leader did; they are kept by
// their own retention (AuditStore::PruneAudit), not the runs'.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"

namespace apollo11::storage {

struct AuditRecord {
  // The record's place in the trail, assigned when it is stored: the number
  // of the batch it was committed in, times 65536, plus its index in that
  // batch. The same on every replica; increasing along the trail.
  uint64_t id = 0;
  Micros at = 0;           // wall, when the coordinator decided
  std::string principal;   // "alice" (an API token), "key:Ab3dE9fG1h2J" (a CURVE key), "local"
  std::string role;        // the principal's roles, "operator" or "worker,admin"; "" when none
  std::string transport;   // "http", "zmq" or "signal"
  std::string source;      // the caller's address ("10.0.0.7"), or what is known of it
  std::string request_id;  // the HTTP request's X-Request-Id, or one the coordinator made
  std::string action;      // transport::ActionRules' name: "cancel", "trigger", ...
  std::string target;      // what it acted on: a run id, a pipeline name, an execution id
  bool ok = false;         // done (true), or refused or failed
  std::string outcome;     // what was done ("run r-...") or why not (the error sentence)

  bool operator==(const AuditRecord&) const = default;
};

// At most this many audit records are stored per batch (the id's index is
// 16 bits); a batch never holds more than a turn's requests.
inline constexpr size_t kMaxAuditPerBatch = 65535;
// No field of a record is longer than this: a longer one (a forged target,
// an error quoting a whole file) is cut, with "..." at its end.
inline constexpr size_t kMaxAuditField = 1024;

// The id of the `index`-th record of batch `batch_no`.
inline uint64_t AuditId(uint64_t batch_no, size_t index) { return (batch_no << 16) | index; }

// `r` with every field cut to kMaxAuditField (at a UTF-8 boundary).
AuditRecord BoundedAudit(AuditRecord r);

// Stored values: a msgpack array that starts with its format version; the id
// is the key and is not in the value. Decode: Corrupt for anything else.
std::string EncodeAudit(const AuditRecord& r);
Result<AuditRecord> DecodeAudit(uint64_t id, std::string_view value);

// Which records a listing wants. Empty strings and 0 match everything.
struct AuditFilter {
  Micros since = 0;       // at >= since
  Micros until = 0;       // at < until (0: no bound)
  std::string principal;  // exactly this principal
  std::string action;     // exactly this action
  size_t limit = 100;     // at most this many, the newest
  // A listing reads at most this many records, newest first, and stops
  // there (a filter that matches little would otherwise read the whole
  // trail, on the thread that answers queries: the scheduler's).
  size_t max_scan = 100'000;
};
bool Matches(const AuditFilter& f, const AuditRecord& r);

}  // namespace apollo11::storage
