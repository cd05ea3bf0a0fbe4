#include "replication/replication_frame.h"

#include <array>
#include <exception>
#include <msgpack.hpp>
#include <string>

namespace apollo11::replication {
namespace {

constexpr uint8_t kFrameFormat = 2;  // 2: batch_epoch added
constexpr uint32_t kFields = 12;
// A frame is one batch or one copy chunk: the limits stop a forged header
// from allocating more (array, map, str, bin, ext, depth).
const msgpack::unpack_limit kLimits(16, 0, 1u << 16, 64u << 20, 0, 2);

std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

}  // namespace

uint32_t Crc32(std::string_view data, uint32_t crc) {
  static const std::array<uint32_t, 256> kTable = MakeCrcTable();
  crc = ~crc;
  for (char ch : data) crc = kTable[(crc ^ static_cast<uint8_t>(ch)) & 0xff] ^ (crc >> 8);
  return ~crc;
}

std::string EncodeFrame(const ReplicationFrame& f) {
  msgpack::sbuffer buf(64 + f.payload.size());
  msgpack::packer<msgpack::sbuffer> p(buf);
  p.pack_array(kFields);
  p.pack(kFrameFormat);
  p.pack(static_cast<uint8_t>(f.type));
  p.pack(f.epoch);
  p.pack(f.sender);
  p.pack(f.batch);
  p.pack(f.seq);
  p.pack(f.credit);
  p.pack(static_cast<int64_t>(f.committed_at));
  p.pack(f.offset);
  p.pack(f.checksum);
  p.pack_bin(static_cast<uint32_t>(f.payload.size()));
  p.pack_bin_body(f.payload.data(), static_cast<uint32_t>(f.payload.size()));
  p.pack(f.batch_epoch);
  return std::string(buf.data(), buf.size());
}

Result<ReplicationFrame> DecodeFrame(std::string_view bytes) {
  try {
    size_t offset = 0;
    msgpack::object_handle handle =
        msgpack::unpack(bytes.data(), bytes.size(), offset, nullptr, nullptr, kLimits);
    if (offset != bytes.size()) return Status::Corrupt("replication frame has trailing bytes");
    const msgpack::object& o = handle.get();
    if (o.type != msgpack::type::ARRAY || o.via.array.size < kFields) {
      return Status::Corrupt("replication frame is not an array of 12 fields");
    }
    const msgpack::object* v = o.via.array.ptr;
    if (v[0].as<uint8_t>() != kFrameFormat) {
      return Status::Corrupt("replication frame has an unknown format");
    }
    ReplicationFrame f;
    const uint8_t type = v[1].as<uint8_t>();
    if (type == 0 || type > kFrameTypeLast) {
      return Status::Corrupt("replication frame has an unknown type " + std::to_string(type));
    }
    f.type = static_cast<FrameType>(type);
    f.epoch = v[2].as<uint64_t>();
    f.sender = v[3].as<std::string>();
    f.batch = v[4].as<uint64_t>();
    f.seq = v[5].as<uint64_t>();
    f.credit = v[6].as<uint64_t>();
    f.committed_at = static_cast<Micros>(v[7].as<int64_t>());
    f.offset = v[8].as<uint64_t>();
    f.checksum = v[9].as<uint32_t>();
    if (v[10].type != msgpack::type::BIN) return Status::Corrupt("replication frame payload");
    f.payload.assign(v[10].via.bin.ptr, v[10].via.bin.size);
    f.batch_epoch = v[11].as<uint64_t>();
    return f;
  } catch (const std::exception& e) {
    return Status::Corrupt(std::string("replication frame does not decode: ") + e.what());
  }
}

}  // namespace apollo11::replication
