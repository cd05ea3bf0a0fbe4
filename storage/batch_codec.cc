#include "storage/batch_codec.h"

#include <msgpack.hpp>
#include <string>
#include <utility>
#include <vector>

#include "storage/record_codec.h"
#include "storage/schedule_records.h"

namespace apollo11::storage::codec {
namespace {

// Format 1 carried transitions, executions, runs, snapshots and durations
// only: a standby lost the registry, trigger keys, schedules and fires (a
// new leader knew no registered pipeline and fired every due time again).
// Format 2 adds them; format 3 the audit records (field 12). A batch of an
// older format (an older leader's) still decodes.
constexpr uint8_t kBatchFormat = 3;
constexpr uint32_t kFormat1Fields = 7, kFormat2Fields = 12, kFormat3Fields = 13;
using Packer = msgpack::packer<msgpack::sbuffer>;
// A batch holds at most a scheduler turn; the limits stop a forged header
// from allocating gigabytes (array, map, str, bin, ext, depth).
const msgpack::unpack_limit kLimits(1u << 20, 16, 64u << 20, 64u << 20, 16, 4);

void PackBin(Packer& p, std::string_view s) {
  p.pack_bin(static_cast<uint32_t>(s.size()));
  p.pack_bin_body(s.data(), static_cast<uint32_t>(s.size()));
}

void PackRuns(Packer& p, const std::vector<RunRecord>& runs) {
  p.pack_array(static_cast<uint32_t>(runs.size()));
  for (const RunRecord& r : runs) {
    p.pack_array(2);
    p.pack(r.run_id);
    PackBin(p, EncodeRun(r));
  }
}

// The elements of a msgpack array, or type_error.
const msgpack::object_array& Array(const msgpack::object& o) {
  if (o.type != msgpack::type::ARRAY) throw msgpack::type_error();
  return o.via.array;
}
// A (key, value) pair array.
std::pair<std::string, const msgpack::object*> Pair(const msgpack::object& o) {
  const msgpack::object_array& a = Array(o);
  if (a.size != 2) throw msgpack::type_error();
  return {a.ptr[0].as<std::string>(), &a.ptr[1]};
}
// Calls `f` on each element of the array `o`.
template <typename F>
void Each(const msgpack::object& o, F&& f) {
  const msgpack::object_array& a = Array(o);
  for (uint32_t i = 0; i < a.size; ++i) f(a.ptr[i]);
}
std::string_view Bin(const msgpack::object& o) {
  if (o.type != msgpack::type::BIN) throw msgpack::type_error();
  return std::string_view(o.via.bin.ptr, o.via.bin.size);
}

template <typename T>
T Check(Result<T> r) {
  if (!r.ok()) throw msgpack::type_error();
  return std::move(r).value();
}

void ReadRuns(const msgpack::object& o, bool created, RunBatch* out) {
  Each(o, [&](const msgpack::object& e) {
    auto [id, value] = Pair(e);
    RunRecord r = Check(DecodeRun(id, Bin(*value)));
    if (created) {
      out->CreateRun(r);
    } else {
      out->PutRun(r);
    }
  });
}

// Format 2's fields 7-11: pipeline versions [name, version, value],
// pipeline states [name, value], trigger keys [name, key, value], schedules
// and fires (values).
void PackRegistryAndSchedules(Packer& p, const RunBatch& batch) {
  p.pack_array(static_cast<uint32_t>(batch.pipeline_versions().size()));
  for (const PipelineVersionRecord& v : batch.pipeline_versions()) {
    p.pack_array(3);
    p.pack(v.name);
    p.pack(v.version);
    PackBin(p, EncodePipelineVersion(v));
  }
  p.pack_array(static_cast<uint32_t>(batch.pipeline_states().size()));
  for (const PipelineStateRecord& st : batch.pipeline_states()) {
    p.pack_array(2);
    p.pack(st.name);
    PackBin(p, EncodePipelineState(st));
  }
  p.pack_array(static_cast<uint32_t>(batch.trigger_keys().size()));
  for (const TriggerKeyRecord& k : batch.trigger_keys()) {
    p.pack_array(3);
    p.pack(k.name);
    p.pack(k.key);
    PackBin(p, EncodeTriggerKey(k));
  }
  p.pack_array(static_cast<uint32_t>(batch.schedule_records().size()));
  for (const ScheduleRecord& r : batch.schedule_records()) PackBin(p, EncodeSchedule(r));
  p.pack_array(static_cast<uint32_t>(batch.fire_records().size()));
  for (const FireRecord& f : batch.fire_records()) PackBin(p, EncodeFire(f));
}

void ReadRegistryAndSchedules(const msgpack::object_array& top, RunBatch* out) {
  Each(top.ptr[7], [&](const msgpack::object& e) {
    const msgpack::object_array& a = Array(e);
    if (a.size != 3) throw msgpack::type_error();
    out->PutPipelineVersion(Check(
        DecodePipelineVersion(a.ptr[0].as<std::string>(), a.ptr[1].as<uint32_t>(), Bin(a.ptr[2]))));
  });
  Each(top.ptr[8], [&](const msgpack::object& e) {
    auto [name, value] = Pair(e);
    out->PutPipelineState(Check(DecodePipelineState(name, Bin(*value))));
  });
  Each(top.ptr[9], [&](const msgpack::object& e) {
    const msgpack::object_array& a = Array(e);
    if (a.size != 3) throw msgpack::type_error();
    TriggerKeyRecord k = Check(DecodeTriggerKey(Bin(a.ptr[2])));
    k.name = a.ptr[0].as<std::string>();
    k.key = a.ptr[1].as<std::string>();
    out->PutTriggerKey(k);
  });
  Each(top.ptr[10],
       [&](const msgpack::object& e) { out->PutSchedule(Check(DecodeSchedule(Bin(e)))); });
  Each(top.ptr[11], [&](const msgpack::object& e) { out->PutFire(Check(DecodeFire(Bin(e)))); });
}

}  // namespace

std::string EncodeBatch(const RunBatch& batch) {
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_array(kFormat3Fields);
  p.pack(kBatchFormat);
  p.pack_array(static_cast<uint32_t>(batch.transition_records().size()));
  for (const TransitionRecord& t : batch.transition_records()) PackBin(p, EncodeTransition(t));
  p.pack_array(static_cast<uint32_t>(batch.execution_records().size()));
  for (const EncodedExecution& x : batch.execution_records()) {
    p.pack_array(2);
    p.pack(x.exec_id);
    PackBin(p, x.value);
  }
  PackRuns(p, batch.run_records());
  PackRuns(p, batch.created_run_records());
  p.pack_array(static_cast<uint32_t>(batch.pipeline_snapshots().size()));
  for (const auto& [hash, json] : batch.pipeline_snapshots()) {
    p.pack_array(2);
    p.pack(hash);
    p.pack(json);
  }
  p.pack_array(static_cast<uint32_t>(batch.duration_samples().size()));
  for (const auto& [key, micros] : batch.duration_samples()) {
    p.pack_array(2);
    p.pack(key);
    p.pack(static_cast<int64_t>(micros));
  }
  PackRegistryAndSchedules(p, batch);
  p.pack_array(static_cast<uint32_t>(batch.audit_records().size()));
  for (const AuditRecord& r : batch.audit_records()) PackBin(p, EncodeAudit(r));
  return std::string(buf.data(), buf.size());
}

Result<RunBatch> DecodeBatch(std::string_view bytes) {
  try {
    msgpack::object_handle handle =
        msgpack::unpack(bytes.data(), bytes.size(), nullptr, nullptr, kLimits);
    const msgpack::object_array& top = Array(handle.get());
    const uint8_t format = top.size > 0 ? top.ptr[0].as<uint8_t>() : 0;
    const uint32_t needed = format == 1   ? kFormat1Fields
                            : format == 2 ? kFormat2Fields
                                          : kFormat3Fields;
    if (format == 0 || format > kBatchFormat || top.size < needed) {
      return Status::Corrupt("replicated batch has an unknown format");
    }
    RunBatch out;
    Each(top.ptr[1],
         [&](const msgpack::object& t) { out.Append(Check(DecodeTransition(0, Bin(t)))); });
    Each(top.ptr[2], [&](const msgpack::object& e) {
      auto [id, value] = Pair(e);
      const std::string_view bytes = Bin(*value);
      (void)Check(DecodeExecution(id, bytes));  // a value that does not decode is refused
      out.PutEncodedExecution(std::move(id), std::string(bytes));
    });
    ReadRuns(top.ptr[3], /*created=*/false, &out);
    ReadRuns(top.ptr[4], /*created=*/true, &out);
    Each(top.ptr[5], [&](const msgpack::object& e) {
      auto [hash, json] = Pair(e);
      out.PutPackedPipeline(hash, json->as<std::string>());  // as stored: packed when large
    });
    Each(top.ptr[6], [&](const msgpack::object& e) {
      auto [key, micros] = Pair(e);
      out.RecordDuration(key, static_cast<Micros>(micros->as<int64_t>()));
    });
    if (format >= 2) ReadRegistryAndSchedules(top, &out);
    if (format >= 3) {
      Each(top.ptr[12], [&](const msgpack::object& e) {
        if (out.audits() >= kMaxAuditPerBatch) throw msgpack::type_error();
        out.PutAudit(Check(DecodeAudit(0, Bin(e))));
      });
    }
    return out;
  } catch (const std::exception& e) {
    return Status::Corrupt(std::string("replicated batch does not decode: ") + e.what());
  }
}

}  // namespace apollo11::storage::codec
