#include "transport/codec.h"

#include <algorithm>
#include <string>

namespace apollo11::transport {
namespace {

// Each array element takes at least one byte and each map pair two, so no
// array in a frame of `size` bytes can honestly claim more than `size`
// elements. Clamping the limits this way stops a 5-byte header claiming
// 100000 elements from allocating 2.4 MB before the truncation is noticed.
msgpack::unpack_limit ClampedLimit(const DecodeLimits& l, size_t size) {
  return msgpack::unpack_limit(std::min(l.array, size), std::min(l.map, size / 2),
                               std::min(l.str, size), std::min(l.bin, size), std::min(l.ext, size),
                               l.depth);
}

Status Malformed(const std::string& why) { return Status::InvalidInput("malformed frame: " + why); }

}  // namespace

Status DecodeEnvelopeInto(const void* data, size_t size, Envelope* env,
                          const DecodeLimits& limits) {
  env->version = 0;
  env->type = 0;
  env->body = msgpack::object();
  if (size > limits.max_frame) {
    return Status::InvalidInput("frame of " + std::to_string(size) +
                                " bytes exceeds the limit of " + std::to_string(limits.max_frame));
  }
  if (size == 0) return Malformed("empty");
  msgpack::object root;
  try {
    env->zone.clear();
    size_t offset = 0;
    root = msgpack::unpack(env->zone, static_cast<const char*>(data), size, offset, nullptr,
                           nullptr, ClampedLimit(limits, size));
    if (offset != size) {
      return Malformed(std::to_string(size - offset) + " trailing bytes after the message");
    }
  } catch (const msgpack::insufficient_bytes&) {
    return Malformed("truncated");
  } catch (const std::exception& e) {
    // parse_error, *_size_overflow, depth_size_overflow, bad_alloc, ...
    return Malformed(e.what());
  }
  if (root.type != msgpack::type::ARRAY || root.via.array.size != 3) {
    return Malformed("not a [version, type, body] array");
  }
  const msgpack::object& version = root.via.array.ptr[0];
  const msgpack::object& type = root.via.array.ptr[1];
  if (version.type != msgpack::type::POSITIVE_INTEGER || version.via.u64 > UINT32_MAX) {
    return Malformed("protocol version is not an unsigned 32-bit integer");
  }
  if (version.via.u64 != kProtocolVersion) {
    // Kept for IsOtherProtocolVersion and DecodeStoredResult.
    env->version = static_cast<uint32_t>(version.via.u64);
    if (type.type == msgpack::type::POSITIVE_INTEGER && type.via.u64 <= UINT16_MAX) {
      env->type = static_cast<uint16_t>(type.via.u64);
      env->body = root.via.array.ptr[2];
    }
    return Status::InvalidInput("protocol version " + std::to_string(version.via.u64) +
                                " is not supported (this build speaks version " +
                                std::to_string(kProtocolVersion) + ")");
  }
  if (type.type != msgpack::type::POSITIVE_INTEGER || type.via.u64 > UINT16_MAX) {
    return Malformed("message type is not an unsigned 16-bit integer");
  }
  env->version = static_cast<uint32_t>(version.via.u64);
  env->type = static_cast<uint16_t>(type.via.u64);
  env->body = root.via.array.ptr[2];
  return Status::Ok();
}

void FitResultToWire(ResultMsg* r) {
  if (CheckFits(MsgType::kResult, *r).ok()) return;
  constexpr size_t kShare = kWireMaxStringBytes / 4;
  for (std::string* tail : {&r->output, &r->stderr_tail}) {
    if (tail->size() > kShare) tail->erase(0, tail->size() - kShare);
  }
  if (r->error.size() > kShare) r->error.resize(kShare);
  r->error += " (result texts cut to fit the worker link)";
}

Result<ResultMsg> DecodeStoredResult(const void* data, size_t size) {
  Envelope env;
  Status s = DecodeEnvelopeInto(data, size, &env);
  const bool same_layout = IsOtherProtocolVersion(env) && env.version >= kResultLayoutSince &&
                           env.version < kProtocolVersion;
  if (!s.ok() && !same_layout) return s;
  return BodyAs<ResultMsg>(env);
}

Result<Envelope> DecodeEnvelope(const void* data, size_t size, const DecodeLimits& limits) {
  Envelope env;
  Status s = DecodeEnvelopeInto(data, size, &env, limits);
  if (!s.ok()) return s;
  return env;
}

}  // namespace apollo11::transport
