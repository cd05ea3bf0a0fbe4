// libFuzzer target for journal values (storage/record_codec.h): a corrupted
// or foreign LMDB file must give a Corrupt status, never a crash. Each input
// is tried as a transition, an execution and a run record; what decodes must
// re-encode to bytes that decode and encode the same again. Each is also
// tried as a stored pipeline snapshot (storage/snapshot_pack.h).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "fuzz/heap_budget.h"
#include "storage/audit_records.h"
#include "storage/record_codec.h"
#include "storage/snapshot_pack.h"

namespace apollo11::fuzz {
namespace {

namespace codec = storage::codec;

// Decode(value) -> Encode -> Decode -> Encode gives the same bytes twice.
template <class Decode, class Encode>
void CheckRecord(std::string_view value, Decode decode, Encode encode) {
  auto record = decode(value);
  if (!record.ok()) {
    Require(!record.status().message().empty(), "a refused record says why");
    return;
  }
  const std::string once = encode(*record);
  auto again = decode(once);
  Require(again.ok(), "a record we encoded decodes");
  Require(encode(*again) == once, "re-encoding a decoded record is stable");
}

void DecodeRecords(std::string_view value) {
  const uint64_t seq = codec::DecodeSeqKey(value);
  CheckRecord(
      value, [&](std::string_view v) { return codec::DecodeTransition(seq, v); },
      [](const storage::TransitionRecord& r) { return codec::EncodeTransition(r); });
  CheckRecord(
      value, [](std::string_view v) { return codec::DecodeExecution("r1.t1", v); },
      [](const storage::ExecutionRecord& r) { return codec::EncodeExecution(r); });
  CheckRecord(
      value, [](std::string_view v) { return codec::DecodeRun("r1", v); },
      [](const storage::RunRecord& r) { return codec::EncodeRun(r); });
  CheckRecord(
      value, [&](std::string_view v) { return storage::DecodeAudit(seq, v); },
      [](const storage::AuditRecord& r) { return storage::EncodeAudit(r); });
  std::string_view record;
  std::vector<uint64_t> seqs;
  if (codec::SplitExecutionValue(value, &record, &seqs).ok()) {
    const std::string again = codec::EncodeExecutionValue(record, seqs);
    std::string_view record2;
    std::vector<uint64_t> seqs2;
    Require(codec::SplitExecutionValue(again, &record2, &seqs2).ok(),
            "an execution value we encoded splits");
    Require(record2 == record && seqs2 == seqs, "an execution value splits as it was built");
  }
  // A pipeline snapshot as stored: packed or not, it unpacks or is refused,
  // and what unpacks packs back to a value that unpacks to the same text.
  auto text = storage::UnpackSnapshot(value);
  if (!text.ok()) {
    Require(!text.status().message().empty(), "a refused snapshot says why");
    return;
  }
  auto again = storage::UnpackSnapshot(storage::PackSnapshot(*text));
  Require(again.ok() && *again == *text, "a snapshot we packed unpacks to its text");
}

}  // namespace
}  // namespace apollo11::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  apollo11::fuzz::HeapBudget budget;
  apollo11::fuzz::DecodeRecords(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
