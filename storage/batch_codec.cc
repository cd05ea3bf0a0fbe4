#include "storage/batch_codec.h"

#include <msgpack.hpp>
#include <string>
#include <utility>
#include <vector>

#include "storage/record_codec.h"

namespace apollo11::storage::codec {
namespace {

constexpr uint8_t kBatchFormat = 1;
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

}  // namespace

std::string EncodeBatch(const RunBatch& batch) {
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_array(7);
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
  return std::string(buf.data(), buf.size());
}

Result<RunBatch> DecodeBatch(std::string_view bytes) {
  try {
    msgpack::object_handle handle =
        msgpack::unpack(bytes.data(), bytes.size(), nullptr, nullptr, kLimits);
    const msgpack::object_array& top = Array(handle.get());
    if (top.size < 7 || top.ptr[0].as<uint8_t>() != kBatchFormat) {
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
    return out;
  } catch (const std::exception& e) {
    return Status::Corrupt(std::string("replicated batch does not decode: ") + e.what());
  }
}

}  // namespace apollo11::storage::codec
