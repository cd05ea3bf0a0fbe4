#include "storage/record_codec.h"

#include <msgpack.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "common/ids.h"

namespace apollo11::storage::codec {
namespace {

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

constexpr int kSlowFlagCount = static_cast<int>(SlowFlag::kKept) + 1;
constexpr int kRunStatusCount = static_cast<int>(RunStatus::kCanceled) + 1;

// The texts an execution's encoder may be handed instead of the record's own
// (the scheduler keeps them once per run, not in each record).
enum PerRunText { kRunIdText = 0, kTraceIdText = 1 };

// Each record's value is a msgpack array: its format version, then the
// fields its Layout lists, in that order. The one list is walked by the
// encoder (Packing) and the decoder (Unpacking) alike. A field is only ever
// appended: a decoder gives the fields an older value lacks their defaults
// and skips those a newer one adds. Fields derived from the key (a
// transition's seq, an execution's exec id, a run's id, registry names) are
// not in the value.
//
// What a Fields walk calls on its `io`:
//   io(v)                 a field, as msgpack packs its type
//   io.Enum(v, count)     an enum as a uint8; a value >= count does not decode
//   io.Reserved()         a slot written nil and skipped on read
//   io.Implied(v, made)   text written empty when it equals made() (from the
//                         fields before it) and read back as made() if empty
//   io.PerRun(v, which)   text the encoder may be handed (PerRunText)
//   io.Trailing(v)        written only when it or a Trailing field after it
//                         differs from its default; Trailing fields come last
template <class Record>
struct Layout;

template <>
struct Layout<TransitionRecord> {
  static constexpr uint8_t kFormat = 1;
  static constexpr const char* kName = "transition";
  static size_t SizeHint(const TransitionRecord& r) { return 64 + r.reason.size(); }
  template <class Io, class R>
  static void Fields(Io& io, R& r) {
    io(r.ts);
    io(r.run_id);
    io(r.task_id);
    io.Implied(r.exec_id, [&r] { return MakeExecId(r.run_id, r.task_id); });
    io(r.attempt);
    io.Enum(r.from, kTaskStateCount);
    io.Enum(r.to, kTaskStateCount);
    io(r.reason);
    io(r.actor);
    io.Trailing(r.note);       // appended: a note has 11 fields
    io.Trailing(r.worker_id);  // appended: a placement 12 (the note flag before it)
  }
};

template <>
struct Layout<ExecutionRecord> {
  static constexpr uint8_t kFormat = 1;
  static constexpr const char* kName = "execution";
  static size_t SizeHint(const ExecutionRecord& r) {
    return 128 + r.output.get().size() + r.error.get().size() + r.task_output.get().size();
  }
  template <class Io, class R>
  static void Fields(Io& io, R& r) {
    io.PerRun(r.run_id, kRunIdText);
    io(r.task_id);
    io(r.attempt);
    io.Enum(r.state, kTaskStateCount);
    io(r.worker_id);
    io(r.exit_code);
    io(r.ready_at);
    io(r.started_at);
    io(r.finished_at);
    io(r.next_retry_at);
    io(r.deadline);
    io(r.retries_used);
    io(r.requeues);
    io(r.error);
    io(r.output);
    io.PerRun(r.trace_id, kTraceIdText);
    io.Reserved();
    io.Enum(r.slow, kSlowFlagCount);
    io(r.slow_reason);
    io(r.flagged_at);
    io(r.logs_truncated);  // appended: older records decode with it empty
    io(r.task_output);     // appended likewise
    io(r.item);            // appended likewise
  }
};

template <>
struct Layout<RunRecord> {
  static constexpr uint8_t kFormat = 1;
  static constexpr const char* kName = "run";
  static size_t SizeHint(const RunRecord&) { return 128; }
  template <class Io, class R>
  static void Fields(Io& io, R& r) {
    io(r.pipeline_name);
    io(r.pipeline_hash);
    io.Enum(r.status, kRunStatusCount);
    io(r.created_at);
    io(r.started_at);
    io(r.finished_at);
    io(r.task_count);
    io(r.reason);
    io(r.params);
    io.Reserved();
    io(r.pipeline_version);
    io(r.rerun_of);          // appended: older records decode with it empty
    io(r.handled_failures);  // appended likewise (0)
  }
};

// registry: the values of the registry table.
template <>
struct Layout<PipelineVersionRecord> {
  static constexpr uint8_t kFormat = 1;
  static constexpr const char* kName = "pipeline version";
  static size_t SizeHint(const PipelineVersionRecord&) { return 64; }
  template <class Io, class R>
  static void Fields(Io& io, R& r) {
    io(r.hash);
    io(r.added_at);
    io(r.added_by);
  }
};

template <>
struct Layout<PipelineStateRecord> {
  static constexpr uint8_t kFormat = 1;
  static constexpr const char* kName = "pipeline state";
  static size_t SizeHint(const PipelineStateRecord&) { return 64; }
  template <class Io, class R>
  static void Fields(Io& io, R& r) {
    io(r.active);
    io(r.latest);
    io(r.paused);
    io(r.changed_at);
    io(r.paused_by);
  }
};

template <>
struct Layout<TriggerKeyRecord> {
  static constexpr uint8_t kFormat = 1;
  static constexpr const char* kName = "trigger key";
  static size_t SizeHint(const TriggerKeyRecord&) { return 48; }
  template <class Io, class R>
  static void Fields(Io& io, R& r) {
    io(r.run_id);
    io(r.at);
  }
};

// Counts the fields a record's value holds: all but the Trailing fields
// after the last one that is set.
class Counting {
 public:
  template <class T>
  void operator()(const T&) {
    Keep();
  }
  template <class E>
  void Enum(const E&, int) {
    Keep();
  }
  void Reserved() { Keep(); }
  template <class Made>
  void Implied(const std::string&, Made&&) {
    Keep();
  }
  template <class T>
  void PerRun(const T&, PerRunText) {
    Keep();
  }
  template <class T>
  void Trailing(const T& v) {
    ++seen_;
    if (!(v == T{})) fields_ = seen_;
  }
  uint32_t fields() const { return fields_; }

 private:
  void Keep() { fields_ = ++seen_; }
  uint32_t seen_ = 0;
  uint32_t fields_ = 0;
};

// Packs the first `fields` fields of a record.
class Packing {
 public:
  Packing(Packer& pk, uint32_t fields, const std::string_view* per_run)
      : pk_(pk), left_(fields), per_run_(per_run) {}
  template <class T>
  void operator()(const T& v) {
    if (Take()) pk_.pack(v);
  }
  template <class T, class P>
  void operator()(const Rare<T, P>& v) {
    if (Take()) pk_.pack(v.get());
  }
  template <class E>
  void Enum(const E& v, int) {
    if (Take()) pk_.pack(static_cast<uint8_t>(v));
  }
  void Reserved() {
    if (Take()) pk_.pack_nil();
  }
  template <class Made>
  void Implied(const std::string& v, Made&& made) {
    if (Take()) PackText(pk_, v == made() ? std::string_view("") : std::string_view(v));
  }
  template <class T>
  void PerRun(const T& v, PerRunText which) {
    if (!Take()) return;
    PackText(pk_, per_run_ != nullptr ? per_run_[which]
                                      : std::string_view(static_cast<const std::string&>(v)));
  }
  template <class T>
  void Trailing(const T& v) {
    (*this)(v);
  }

 private:
  bool Take() {
    if (left_ == 0) return false;
    --left_;
    return true;
  }
  Packer& pk_;
  uint32_t left_;
  const std::string_view* per_run_;
};

// Reads a record's fields in order from its array; fields the array lacks
// keep their defaults. Throws msgpack::type_error on a type mismatch or an
// enum value out of range.
class Unpacking {
 public:
  explicit Unpacking(const msgpack::object_array& array) : array_(array) {}
  template <class T>
  void operator()(T& out) {
    if (i_ < array_.size) array_.ptr[i_].convert(out);
    ++i_;
  }
  template <class T, class P>
  void operator()(Rare<T, P>& out) {
    T value = out;
    (*this)(value);
    out = std::move(value);
  }
  template <class E>
  void Enum(E& out, int count) {
    uint8_t v = static_cast<uint8_t>(out);
    (*this)(v);
    if (v >= count) throw msgpack::type_error();
    out = static_cast<E>(v);
  }
  void Reserved() { ++i_; }
  template <class Made>
  void Implied(std::string& out, Made&& made) {
    (*this)(out);
    if (out.empty()) out = made();
  }
  template <class T>
  void PerRun(T& out, PerRunText) {
    (*this)(out);
  }
  template <class T>
  void Trailing(T& out) {
    (*this)(out);
  }

 private:
  const msgpack::object_array& array_;
  uint32_t i_ = 0;
};

// `r` as its value: its format, then its Layout's fields. `per_run`, when
// given, holds the PerRunText texts to write instead of the record's own.
template <class Record>
std::string EncodeValue(const Record& r, const std::string_view* per_run = nullptr) {
  Counting counting;
  Layout<Record>::Fields(counting, r);
  msgpack::sbuffer buf(Layout<Record>::SizeHint(r));
  Packer pk(buf);
  pk.pack_array(1 + counting.fields());
  pk.pack(Layout<Record>::kFormat);
  Packing packing(pk, counting.fields(), per_run);
  Layout<Record>::Fields(packing, r);
  return std::string(buf.data(), buf.size());
}

// Unpacks `value`, checks it is an array whose first element is a format
// version we know, and reads its fields into *r (whose key-derived fields
// the caller sets).
template <class Record>
Status DecodeValue(std::string_view value, Record* r) {
  const std::string what = Layout<Record>::kName;
  try {
    msgpack::object_handle handle =
        msgpack::unpack(value.data(), value.size(), nullptr, nullptr, kLimits);
    const msgpack::object& o = handle.get();
    if (o.type != msgpack::type::ARRAY || o.via.array.size == 0) {
      return Status::Corrupt(what + " record is not a msgpack array");
    }
    Unpacking fields(o.via.array);
    uint8_t format = 0;
    fields(format);
    if (format == 0 || format > Layout<Record>::kFormat) {
      return Status::Corrupt(what + " record has unknown format " + std::to_string(format));
    }
    Layout<Record>::Fields(fields, *r);
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Corrupt(what + " record does not decode: " + e.what());
  }
}

}  // namespace

std::string EncodeTransition(const TransitionRecord& r) { return EncodeValue(r); }

Result<TransitionRecord> DecodeTransition(uint64_t seq, std::string_view value) {
  TransitionRecord r;
  r.seq = seq;
  APOLLO11_RETURN_IF_ERROR(DecodeValue(value, &r));
  return r;
}

std::string EncodeExecution(const ExecutionRecord& r) {
  return EncodeExecution(r, r.run_id.get(), r.trace_id.get());
}

std::string EncodeExecution(const ExecutionRecord& r, std::string_view run_id,
                            std::string_view trace_id) {
  const std::string_view per_run[] = {run_id, trace_id};  // indexed by PerRunText
  return EncodeValue(r, per_run);
}

Result<ExecutionRecord> DecodeExecution(std::string_view exec_id, std::string_view value) {
  ExecutionRecord r;
  r.exec_id = std::string(exec_id);
  APOLLO11_RETURN_IF_ERROR(DecodeValue(value, &r));
  return r;
}

std::string EncodeRun(const RunRecord& r) { return EncodeValue(r); }

Result<RunRecord> DecodeRun(std::string_view run_id, std::string_view value) {
  RunRecord r;
  r.run_id = std::string(run_id);
  APOLLO11_RETURN_IF_ERROR(DecodeValue(value, &r));
  return r;
}

std::string EncodePipelineVersion(const PipelineVersionRecord& r) { return EncodeValue(r); }

Result<PipelineVersionRecord> DecodePipelineVersion(std::string_view name, uint32_t version,
                                                    std::string_view value) {
  PipelineVersionRecord r;
  r.name = std::string(name);
  r.version = version;
  APOLLO11_RETURN_IF_ERROR(DecodeValue(value, &r));
  return r;
}

std::string EncodePipelineState(const PipelineStateRecord& r) { return EncodeValue(r); }

Result<PipelineStateRecord> DecodePipelineState(std::string_view name, std::string_view value) {
  PipelineStateRecord r;
  r.name = std::string(name);
  APOLLO11_RETURN_IF_ERROR(DecodeValue(value, &r));
  return r;
}

std::string EncodeTriggerKey(const TriggerKeyRecord& r) { return EncodeValue(r); }

Result<TriggerKeyRecord> DecodeTriggerKey(std::string_view value) {
  TriggerKeyRecord r;
  APOLLO11_RETURN_IF_ERROR(DecodeValue(value, &r));
  return r;
}

std::string EncodeExecutionValue(std::string_view record, const std::vector<uint64_t>& seqs) {
  msgpack::sbuffer buf(record.size() + 8 + 5 * seqs.size());
  buf.write(record.data(), record.size());
  Packer pk(buf);
  pk.pack_array(static_cast<uint32_t>(seqs.size()));
  for (uint64_t seq : seqs) pk.pack(seq);
  return std::string(buf.data(), buf.size());
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
