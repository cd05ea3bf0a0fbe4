#pragma once
// Encoding of journal records as compact msgpack arrays. Internal to storage/.
// Each value starts with a record-format version; decoders accept arrays with
// more fields (written by a newer minor format) or fewer (older), so fields
// can be appended without a migration. Keys (seq, exec_id, run_id) are not
// repeated inside values. Each record's fields are listed once (its Layout in
// record_codec.cc), and the encoder and the decoder both walk that list;
// tests/storage/record_bytes_test.cc pins the bytes.

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "storage/records.h"

namespace apollo11::storage::codec {

// Encoders never fail. `exec_id` of a transition is left out when it equals
// MakeExecId(run_id, task_id), which is nearly always.
std::string EncodeTransition(const TransitionRecord& r);
std::string EncodeExecution(const ExecutionRecord& r);
// The same, with the run id and trace id given rather than r's: the
// scheduler keeps them once per run, not in each of its records.
std::string EncodeExecution(const ExecutionRecord& r, std::string_view run_id,
                            std::string_view trace_id);
std::string EncodeRun(const RunRecord& r);

// Decoders return Corrupt for anything that is not a record they wrote; the
// key-derived field (seq, exec_id, run_id) is passed in.
Result<TransitionRecord> DecodeTransition(uint64_t seq, std::string_view value);
Result<ExecutionRecord> DecodeExecution(std::string_view exec_id, std::string_view value);
Result<RunRecord> DecodeRun(std::string_view run_id, std::string_view value);

// A stored execution value (schema 2): the record, then the seqs of the
// execution's transitions as a second msgpack value (an array of uints), so
// its history needs no index entry of its own. Values written before schema 2
// hold the record alone; their history is in the exec_index table.
std::string EncodeExecutionValue(std::string_view record, const std::vector<uint64_t>& seqs);
// Splits a stored execution value into the bytes of its record and its seqs
// (empty for a value without them). Corrupt when either part does not decode.
Status SplitExecutionValue(std::string_view value, std::string_view* record,
                           std::vector<uint64_t>* seqs);
// registry: the values of the registry table; the key-derived fields (name,
// version, key) are not encoded and are passed to the decoders.
std::string EncodePipelineVersion(const PipelineVersionRecord& r);
Result<PipelineVersionRecord> DecodePipelineVersion(std::string_view name, uint32_t version,
                                                    std::string_view value);
std::string EncodePipelineState(const PipelineStateRecord& r);
Result<PipelineStateRecord> DecodePipelineState(std::string_view name, std::string_view value);
std::string EncodeTriggerKey(const TriggerKeyRecord& r);
Result<TriggerKeyRecord> DecodeTriggerKey(std::string_view value);

// Big-endian u64, so byte order is numeric order (LMDB compares with memcmp).
std::string EncodeSeqKey(uint64_t seq);
uint64_t DecodeSeqKey(std::string_view key);  // key must be 8 bytes

}  // namespace apollo11::storage::codec
