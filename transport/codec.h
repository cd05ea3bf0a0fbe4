#pragma once
// The one msgpack codec for every frame Apollo-11 sends, on the network and
// between actors: a frame is ONE msgpack array [protocol_version, type, body]
// with `body` a MSGPACK_DEFINE struct. Decoding never trusts the bytes: sizes
// are capped before anything is allocated and every msgpack exception is
// turned into a Status. Adding a message is three lines: a struct with
// MSGPACK_DEFINE, a MsgType value (64.. for internal ones), a handler.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <msgpack.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"
#include "common/wire_limits.h"
#include "transport/messages.h"

namespace apollo11::transport {

// Bounds on what one decode may allocate. The defaults are the worker link's
// (common/wire_limits.h), which every sender on that link sizes its messages
// by; each one is also clamped to what the frame's length can hold.
struct DecodeLimits {
  size_t max_frame = kWireMaxFrameBytes;  // bytes in one frame
  size_t array = kWireMaxArrayItems;      // elements in one array
  size_t map = kWireMaxMapPairs;          // pairs in one map
  size_t str = kWireMaxStringBytes;       // bytes in one string
  size_t bin = kWireMaxFrameBytes;        // bytes in one bin
  size_t ext = 1u << 20;                  // bytes in one ext
  size_t depth = 32;                      // container nesting
};

namespace codec_internal {
// Appends msgpack output to a std::string (msgpack's packer "buffer" concept).
struct StringSink {
  std::string* out;
  void write(const char* data, size_t size) { out->append(data, size); }
};
// Counts what would be written, for EncodedSize.
struct CountingSink {
  size_t bytes = 0;
  void write(const char*, size_t size) { bytes += size; }
};
}  // namespace codec_internal

// Appends the frame [version, type, body] to *out: a frame in another
// version's envelope, for a message whose layout that version shares (the
// REFUSED a worker of another version is sent: transport/protocol_mismatch.h).
template <class T>
void EncodeAs(uint32_t version, uint16_t type, const T& body, std::string* out) {
  codec_internal::StringSink sink{out};
  msgpack::packer<codec_internal::StringSink> packer(sink);
  packer.pack_array(3);
  packer.pack_uint32(version);
  packer.pack_uint16(type);
  packer.pack(body);
}

// Appends the frame [kProtocolVersion, type, body] to *out (nothing else), so
// a caller that reuses one string per loop allocates only when it grows.
template <class T>
void Encode(uint16_t type, const T& body, std::string* out) {
  EncodeAs(kProtocolVersion, type, body, out);
}

// Same with the enum.
template <class T>
void Encode(MsgType type, const T& body, std::string* out) {
  Encode(ToWire(type), body, out);
}

// The size of the frame Encode(type, body) would produce, without allocating
// it: what a sender compares with the receiver's DecodeLimits::max_frame.
template <class T>
size_t EncodedSize(MsgType type, const T& body) {
  codec_internal::CountingSink sink;
  msgpack::packer<codec_internal::CountingSink> packer(sink);
  packer.pack_array(3);
  packer.pack_uint32(kProtocolVersion);
  packer.pack_uint16(ToWire(type));
  packer.pack(body);
  return sink.bytes;
}

// Convenience: a fresh string holding one frame.
template <class T>
std::string EncodeToString(MsgType type, const T& body) {
  std::string out;
  Encode(ToWire(type), body, &out);
  return out;
}

// A decoded frame. `body` points into `zone`, which the Envelope owns; it
// does not reference the input bytes, so those may be freed right away.
// Reusing one Envelope with DecodeEnvelopeInto keeps the zone's first chunk
// and avoids per-message allocation. Not thread-safe; move-only.
struct Envelope {
  uint32_t version = 0;
  uint16_t type = 0;
  msgpack::object body;
  msgpack::zone zone;

  Envelope() = default;
  Envelope(Envelope&&) = default;
  Envelope& operator=(Envelope&&) = default;
  Envelope(const Envelope&) = delete;
  Envelope& operator=(const Envelope&) = delete;
};

// Decodes one frame into *env (clearing what it held). Errors are
// InvalidInput with a sentence naming the problem: too large, malformed or
// truncated msgpack, limits exceeded, trailing bytes, wrong envelope shape,
// protocol version mismatch (naming both versions). Never throws. The type is
// NOT checked against MsgType: unknown types are returned for the caller to
// count and drop.
Status DecodeEnvelopeInto(const void* data, size_t size, Envelope* env,
                          const DecodeLimits& limits = {});

// True when the last DecodeEnvelopeInto into `env` refused the frame only for
// its protocol version (then env.version is the peer's): a peer of another
// build, worth telling the operator about once rather than counting as noise.
inline bool IsOtherProtocolVersion(const Envelope& env) {
  return env.version != 0 && env.version != kProtocolVersion;
}

// Same, returning a fresh Envelope.
Result<Envelope> DecodeEnvelope(const void* data, size_t size, const DecodeLimits& limits = {});

// Converts the envelope's body to T. A body of the wrong shape (a DISPATCH
// read as RESULT, a string where an int is expected, an integer out of T's
// range) is InvalidInput naming the message type. Never throws. Missing
// trailing fields keep their defaults; extra trailing fields are ignored.
template <class T>
Result<T> BodyAs(const Envelope& env) {
  try {
    T value{};
    env.body.convert(value);
    return value;
  } catch (const std::exception& e) {
    return Status::InvalidInput(std::string("body of ") + MsgTypeName(env.type) + " (type " +
                                std::to_string(env.type) + ") has the wrong shape: " + e.what());
  }
}

// Ok when a peer decoding with `limits` accepts the frame Encode(type, body)
// would produce; otherwise InvalidInput naming the size and the limit it
// breaks. The sender's half of every limit the receiver enforces: a frame
// that cannot be received is never sent. Cheap for small bodies (counted,
// not encoded); a larger one is encoded and decoded once. Never throws.
template <class T>
Status CheckFits(MsgType type, const T& body, const DecodeLimits& limits = {}) {
  const size_t size = EncodedSize(type, body);
  const std::string what =
      std::string("a ") + MsgTypeName(ToWire(type)) + " of " + std::to_string(size) + " bytes";
  if (size > limits.max_frame) {
    return Status::InvalidInput(what + " exceeds the frame limit of " +
                                std::to_string(limits.max_frame) + " bytes");
  }
  // No string, array or map in a frame this small can break a limit.
  if (size <= std::min({limits.str, limits.bin, limits.ext, limits.array, 2 * limits.map})) {
    return Status::Ok();
  }
  std::string frame;
  Encode(type, body, &frame);
  Envelope env;
  Status decoded = DecodeEnvelopeInto(frame.data(), frame.size(), &env, limits);
  if (decoded.ok()) return Status::Ok();
  return Status::InvalidInput(what + " breaks a limit (one string at most " +
                              std::to_string(limits.str) + " bytes, one map at most " +
                              std::to_string(limits.map) + " pairs, one array at most " +
                              std::to_string(limits.array) + " items): " + decoded.message());
}

// Cuts a RESULT the dispatcher's decoder would refuse (CheckFits with the
// default limits) to fit: output and stderr tails keep their last, the error
// its first, quarter of the string limit, and the error says so. A RESULT
// that fits is left alone. Never sent as is, it would be resent and dropped
// forever.
void FitResultToWire(ResultMsg* r);

// A RESULT frame from a worker's outbox (storage/outbox.h), written by this
// build or by an older one whose ResultMsg had the same layout (versions
// kResultLayoutSince.. kProtocolVersion), so results survive an upgrade.
// Errors as DecodeEnvelopeInto and BodyAs. Never throws.
Result<ResultMsg> DecodeStoredResult(const void* data, size_t size);

}  // namespace apollo11::transport
