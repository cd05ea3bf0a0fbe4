#include "storage/audit_records.h"

#include <msgpack.hpp>
#include <string>

namespace apollo11::storage {
namespace {

constexpr uint8_t kAuditFormat = 1;
constexpr uint32_t kAuditFields = 11;  // format, then the fields below
// A value holds 10 short strings: nothing in one needs more.
const msgpack::unpack_limit kLimits(32, 0, 64u << 10, 0, 0, 2);

void Cut(std::string* s) {
  if (s->size() <= kMaxAuditField) return;
  size_t end = kMaxAuditField - 3;
  // Back to the start of a UTF-8 sequence (not a continuation byte).
  while (end > 0 && (static_cast<unsigned char>((*s)[end]) & 0xC0) == 0x80) --end;
  s->resize(end);
  *s += "...";
}

}  // namespace

AuditRecord BoundedAudit(AuditRecord r) {
  for (std::string* s : {&r.principal, &r.role, &r.transport, &r.source, &r.request_id, &r.action,
                         &r.target, &r.outcome}) {
    Cut(s);
  }
  return r;
}

std::string EncodeAudit(const AuditRecord& r) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> p(buf);
  p.pack_array(kAuditFields);
  p.pack(kAuditFormat);
  p.pack(static_cast<int64_t>(r.at));
  p.pack(r.principal);
  p.pack(r.role);
  p.pack(r.transport);
  p.pack(r.source);
  p.pack(r.request_id);
  p.pack(r.action);
  p.pack(r.target);
  p.pack(r.ok);
  p.pack(r.outcome);
  return std::string(buf.data(), buf.size());
}

Result<AuditRecord> DecodeAudit(uint64_t id, std::string_view value) {
  try {
    msgpack::object_handle h =
        msgpack::unpack(value.data(), value.size(), nullptr, nullptr, kLimits);
    const msgpack::object& o = h.get();
    // A newer format may append fields; it may not have fewer.
    if (o.type != msgpack::type::ARRAY || o.via.array.size < kAuditFields ||
        o.via.array.ptr[0].as<uint8_t>() < kAuditFormat) {
      return Status::Corrupt("audit record has an unknown layout");
    }
    const msgpack::object* f = o.via.array.ptr;
    AuditRecord r;
    r.id = id;
    r.at = f[1].as<int64_t>();
    r.principal = f[2].as<std::string>();
    r.role = f[3].as<std::string>();
    r.transport = f[4].as<std::string>();
    r.source = f[5].as<std::string>();
    r.request_id = f[6].as<std::string>();
    r.action = f[7].as<std::string>();
    r.target = f[8].as<std::string>();
    r.ok = f[9].as<bool>();
    r.outcome = f[10].as<std::string>();
    return r;
  } catch (const std::exception& e) {
    return Status::Corrupt(std::string("audit record does not decode: ") + e.what());
  }
}

bool Matches(const AuditFilter& f, const AuditRecord& r) {
  if (r.at < f.since) return false;
  if (f.until != 0 && r.at >= f.until) return false;
  if (!f.principal.empty() && r.principal != f.principal) return false;
  return f.action.empty() || r.action == f.action;
}

}  // namespace apollo11::storage
