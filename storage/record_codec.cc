#include "storage/record_codec.h"

#include <msgpack.hpp>

#include "common/ids.h"

namespace apollo11::storage::codec {
namespace {

constexpr uint8_t kTransitionFormat = 1;
constexpr uint8_t kExecutionFormat = 1;
constexpr uint8_t kRunFormat = 1;
constexpr uint8_t kRegistryFormat = 1;

using Packer = msgpack::packer<msgpack::sbuffer>;

// A string, as pk.pack(std::string) writes it.
void PackText(Packer& pk, std::string_view text) {
  pk.pack_str(static_cast<uint32_t>(text.size()));
  pk.pack_str_body(text.data(), static_cast<uint32_t>(text.size()));
}

// Our own values are small; the limits only stop a corrupt header from
// allocating gigabytes (array, map, str, bin, ext, depth).
const msgpack::unpack_limit kLimits(64, 100000, 64u << 20, 64u << 20, 1024, 4);
// An execution's seq list: one flat array of uints.
const msgpack::unpack_limit kSeqLimits(1u << 20, 1, 1, 1, 1, 2);

// Reads the elements of a record array in order; missing trailing fields keep
// their defaults. Throws msgpack::type_error on a type mismatch.
class FieldReader {
 public:
  explicit FieldReader(const msgpack::object& o) : array_(o.via.array) {}
  template <typename T>
  void Next(T& out) {
    if (i_ < array_.size) array_.ptr[i_].convert(out);
    ++i_;
  }
  template <typename T>
  void Next(Rare<T>& out) {
    T value = out;
    Next(value);
    out = std::move(value);
  }
  void NextState(TaskState& out) {
    uint8_t v = static_cast<uint8_t>(out);
    Next(v);
    if (v >= kTaskStateCount) throw msgpack::type_error();
    out = static_cast<TaskState>(v);
  }
  void NextSlowFlag(SlowFlag& out) {
    uint8_t v = static_cast<uint8_t>(out);
    Next(v);
    if (v > static_cast<uint8_t>(SlowFlag::kKept)) throw msgpack::type_error();
    out = static_cast<SlowFlag>(v);
  }
  // Passes over a field without reading it (a reserved slot).
  void Skip() { ++i_; }
  void NextRunStatus(RunStatus& out) {
    uint8_t v = static_cast<uint8_t>(out);
    Next(v);
    if (v > static_cast<uint8_t>(RunStatus::kCanceled)) throw msgpack::type_error();
    out = static_cast<RunStatus>(v);
  }

 private:
  const msgpack::object_array& array_;
  uint32_t i_ = 0;
};

std::string Take(msgpack::sbuffer& buf) { return std::string(buf.data(), buf.size()); }

// Unpacks `value`, checks it is an array whose first element is a format
// version we know, and runs `read` over the remaining fields.
template <typename Read>
Status DecodeArray(std::string_view what, std::string_view value, uint8_t max_format, Read&& read) {
  try {
    msgpack::object_handle handle =
        msgpack::unpack(value.data(), value.size(), nullptr, nullptr, kLimits);
    const msgpack::object& o = handle.get();
    if (o.type != msgpack::type::ARRAY || o.via.array.size == 0) {
      return Status::Corrupt(std::string(what) + " record is not a msgpack array");
    }
    FieldReader fields(o);
    uint8_t format = 0;
    fields.Next(format);
    if (format == 0 || format > max_format) {
      return Status::Corrupt(std::string(what) + " record has unknown format " +
                             std::to_string(format));
    }
    read(fields);
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Corrupt(std::string(what) + " record does not decode: " + e.what());
  }
}

}  // namespace

std::string EncodeTransition(const TransitionRecord& r) {
  msgpack::sbuffer buf(64 + r.reason.size());
  Packer pk(buf);
  // Trailing fields are written only when set: a plain transition keeps its
  // 10, a note adds one, a placement adds the worker (after the note flag).
  pk.pack_array(!r.worker_id.empty() ? 12 : r.note ? 11 : 10);
  pk.pack(kTransitionFormat);
  pk.pack(r.ts);
  pk.pack(r.run_id);
  pk.pack(r.task_id);
  if (r.exec_id == MakeExecId(r.run_id, r.task_id)) {
    pk.pack(std::string_view());
  } else {
    pk.pack(r.exec_id);
  }
  pk.pack(r.attempt);
  pk.pack(static_cast<uint8_t>(r.from));
  pk.pack(static_cast<uint8_t>(r.to));
  pk.pack(r.reason);
  pk.pack(r.actor);
  if (r.note || !r.worker_id.empty()) pk.pack(r.note);
  if (!r.worker_id.empty()) pk.pack(r.worker_id);
  return Take(buf);
}

Result<TransitionRecord> DecodeTransition(uint64_t seq, std::string_view value) {
  TransitionRecord r;
  r.seq = seq;
  Status s = DecodeArray("transition", value, kTransitionFormat, [&](FieldReader& f) {
    f.Next(r.ts);
    f.Next(r.run_id);
    f.Next(r.task_id);
    f.Next(r.exec_id);
    f.Next(r.attempt);
    f.NextState(r.from);
    f.NextState(r.to);
    f.Next(r.reason);
    f.Next(r.actor);
    f.Next(r.note);
    f.Next(r.worker_id);
  });
  if (!s.ok()) return s;
  if (r.exec_id.empty()) r.exec_id = MakeExecId(r.run_id, r.task_id);
  return r;
}

std::string EncodeExecution(const ExecutionRecord& r) {
  return EncodeExecution(r, r.run_id.get(), r.trace_id.get());
}

std::string EncodeExecution(const ExecutionRecord& r, std::string_view run_id,
                            std::string_view trace_id) {
  msgpack::sbuffer buf(128 + r.output.size() + r.error.size() + r.task_output.size());
  Packer pk(buf);
  pk.pack_array(24);
  pk.pack(kExecutionFormat);
  PackText(pk, run_id);
  pk.pack(r.task_id);
  pk.pack(r.attempt);
  pk.pack(static_cast<uint8_t>(r.state));
  pk.pack(r.worker_id);
  pk.pack(r.exit_code);
  pk.pack(r.ready_at);
  pk.pack(r.started_at);
  pk.pack(r.finished_at);
  pk.pack(r.next_retry_at);
  pk.pack(r.deadline);
  pk.pack(r.retries_used);
  pk.pack(r.requeues);
  pk.pack(r.error.get());
  pk.pack(r.output.get());
  PackText(pk, trace_id);
  pk.pack_nil();  // reserved
  pk.pack(static_cast<uint8_t>(r.slow));
  pk.pack(r.slow_reason.get());
  pk.pack(r.flagged_at);
  pk.pack(r.logs_truncated.get());  // appended: older records decode with it empty
  pk.pack(r.task_output.get());     // appended likewise
  pk.pack(r.item.get());            // appended likewise
  return Take(buf);
}

Result<ExecutionRecord> DecodeExecution(std::string_view exec_id, std::string_view value) {
  ExecutionRecord r;
  r.exec_id = std::string(exec_id);
  Status s = DecodeArray("execution", value, kExecutionFormat, [&](FieldReader& f) {
    f.Next(r.run_id);
    f.Next(r.task_id);
    f.Next(r.attempt);
    f.NextState(r.state);
    f.Next(r.worker_id);
    f.Next(r.exit_code);
    f.Next(r.ready_at);
    f.Next(r.started_at);
    f.Next(r.finished_at);
    f.Next(r.next_retry_at);
    f.Next(r.deadline);
    f.Next(r.retries_used);
    f.Next(r.requeues);
    f.Next(r.error);
    f.Next(r.output);
    f.Next(r.trace_id);
    f.Skip();  // reserved
    f.NextSlowFlag(r.slow);
    f.Next(r.slow_reason);
    f.Next(r.flagged_at);
    f.Next(r.logs_truncated);
    f.Next(r.task_output);
    f.Next(r.item);
  });
  if (!s.ok()) return s;
  return r;
}

std::string EncodeRun(const RunRecord& r) {
  msgpack::sbuffer buf(128);
  Packer pk(buf);
  pk.pack_array(13);
  pk.pack(kRunFormat);
  pk.pack(r.pipeline_name);
  pk.pack(r.pipeline_hash);
  pk.pack(static_cast<uint8_t>(r.status));
  pk.pack(r.created_at);
  pk.pack(r.started_at);
  pk.pack(r.finished_at);
  pk.pack(r.task_count);
  pk.pack(r.reason);
  pk.pack(r.params);
  pk.pack_nil();  // reserved
  pk.pack(r.pipeline_version);
  pk.pack(r.rerun_of);  // appended: older records decode with it empty
  return Take(buf);
}

Result<RunRecord> DecodeRun(std::string_view run_id, std::string_view value) {
  RunRecord r;
  r.run_id = std::string(run_id);
  Status s = DecodeArray("run", value, kRunFormat, [&](FieldReader& f) {
    f.Next(r.pipeline_name);
    f.Next(r.pipeline_hash);
    f.NextRunStatus(r.status);
    f.Next(r.created_at);
    f.Next(r.started_at);
    f.Next(r.finished_at);
    f.Next(r.task_count);
    f.Next(r.reason);
    f.Next(r.params);
    f.Skip();  // reserved
    f.Next(r.pipeline_version);
    f.Next(r.rerun_of);
  });
  if (!s.ok()) return s;
  return r;
}

std::string EncodePipelineVersion(const PipelineVersionRecord& r) {
  msgpack::sbuffer buf(64);
  Packer pk(buf);
  pk.pack_array(4);
  pk.pack(kRegistryFormat);
  pk.pack(r.hash);
  pk.pack(r.added_at);
  pk.pack(r.added_by);
  return Take(buf);
}

Result<PipelineVersionRecord> DecodePipelineVersion(std::string_view name, uint32_t version,
                                                    std::string_view value) {
  PipelineVersionRecord r;
  r.name = std::string(name);
  r.version = version;
  Status s = DecodeArray("pipeline version", value, kRegistryFormat, [&](FieldReader& f) {
    f.Next(r.hash);
    f.Next(r.added_at);
    f.Next(r.added_by);
  });
  if (!s.ok()) return s;
  return r;
}

std::string EncodePipelineState(const PipelineStateRecord& r) {
  msgpack::sbuffer buf(64);
  Packer pk(buf);
  pk.pack_array(6);
  pk.pack(kRegistryFormat);
  pk.pack(r.active);
  pk.pack(r.latest);
  pk.pack(r.paused);
  pk.pack(r.changed_at);
  pk.pack(r.paused_by);
  return Take(buf);
}

Result<PipelineStateRecord> DecodePipelineState(std::string_view name, std::string_view value) {
  PipelineStateRecord r;
  r.name = std::string(name);
  Status s = DecodeArray("pipeline state", value, kRegistryFormat, [&](FieldReader& f) {
    f.Next(r.active);
    f.Next(r.latest);
    f.Next(r.paused);
    f.Next(r.changed_at);
    f.Next(r.paused_by);
  });
  if (!s.ok()) return s;
  return r;
}

std::string EncodeTriggerKey(const TriggerKeyRecord& r) {
  msgpack::sbuffer buf(48);
  Packer pk(buf);
  pk.pack_array(3);
  pk.pack(kRegistryFormat);
  pk.pack(r.run_id);
  pk.pack(r.at);
  return Take(buf);
}

Result<TriggerKeyRecord> DecodeTriggerKey(std::string_view value) {
  TriggerKeyRecord r;
  Status s = DecodeArray("trigger key", value, kRegistryFormat, [&](FieldReader& f) {
    f.Next(r.run_id);
    f.Next(r.at);
  });
  if (!s.ok()) return s;
  return r;
}

std::string EncodeExecutionValue(std::string_view record, const std::vector<uint64_t>& seqs) {
  msgpack::sbuffer buf(record.size() + 8 + 5 * seqs.size());
  buf.write(record.data(), record.size());
  Packer pk(buf);
  pk.pack_array(static_cast<uint32_t>(seqs.size()));
  for (uint64_t seq : seqs) pk.pack(seq);
  return Take(buf);
}

Status SplitExecutionValue(std::string_view value, std::string_view* record,
                           std::vector<uint64_t>* seqs) {
  seqs->clear();
  try {
    size_t off = 0;
    msgpack::object_handle first =
        msgpack::unpack(value.data(), value.size(), off, nullptr, nullptr, kLimits);
    *record = value.substr(0, off);
    if (off == value.size()) return Status::Ok();
    size_t end = off;
    msgpack::object_handle rest =
        msgpack::unpack(value.data(), value.size(), end, nullptr, nullptr, kSeqLimits);
    if (end != value.size()) return Status::Corrupt("execution value has trailing bytes");
    rest.get().convert(*seqs);
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Corrupt(std::string("execution value does not decode: ") + e.what());
  }
}

std::string EncodeSeqKey(uint64_t seq) {
  std::string key(8, '\0');
  for (int i = 7; i >= 0; --i) {
    key[i] = static_cast<char>(seq & 0xff);
    seq >>= 8;
  }
  return key;
}

uint64_t DecodeSeqKey(std::string_view key) {
  uint64_t seq = 0;
  for (size_t i = 0; i < 8 && i < key.size(); ++i) {
    seq = (seq << 8) | static_cast<uint8_t>(key[i]);
  }
  return seq;
}

}  // namespace apollo11::storage::codec
