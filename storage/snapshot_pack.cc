#include "storage/snapshot_pack.h"

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <memory>

namespace apollo11::storage {
namespace {

// "\0A1z" then the unpacked length, 4 bytes little-endian; the deflated
// bytes follow.
constexpr char kTag[4] = {'\0', 'A', '1', 'z'};
constexpr size_t kHeader = 8;

}  // namespace

bool IsPackedSnapshot(std::string_view stored) {
  return stored.size() >= kHeader && std::memcmp(stored.data(), kTag, sizeof kTag) == 0;
}

std::string PackSnapshot(std::string text) {
  // Text that begins with the tag (never JSON) is packed whatever its size,
  // so that no stored value reads as something it is not.
  const bool looks_packed = IsPackedSnapshot(text);
  if ((text.size() < kPackAtLeast && !looks_packed) || text.size() > kMaxUnpackedSnapshot) {
    return text;
  }
  uLongf packed_size = compressBound(static_cast<uLong>(text.size()));
  // Deflate's worst case is a little more than the text, and it writes about
  // a sixth of that. Left uninitialised, the pages it never writes never
  // become resident; a zero-filled std::string of that size made a 1M-task
  // snapshot's packing cost 180 MB of RSS beside the text.
  std::unique_ptr<Bytef[]> packed(new Bytef[packed_size]);
  int rc = compress2(packed.get(), &packed_size, reinterpret_cast<const Bytef*>(text.data()),
                     static_cast<uLong>(text.size()), Z_BEST_SPEED);
  if (rc != Z_OK) return text;  // only Z_MEM_ERROR: stored as it is
  if (kHeader + packed_size >= text.size() && !looks_packed) return text;  // did not shrink
  std::string out;
  out.reserve(kHeader + packed_size);
  out.append(kTag, sizeof kTag);
  const auto n = static_cast<uint32_t>(text.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out.append(reinterpret_cast<const char*>(packed.get()), packed_size);
  return out;
}

size_t SnapshotTextBytes(std::string_view stored) {
  if (!IsPackedSnapshot(stored)) return stored.size();
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) {
    n |= static_cast<uint32_t>(static_cast<uint8_t>(stored[4 + i])) << (8 * i);
  }
  return n;
}

Result<std::string> UnpackSnapshot(std::string_view stored) {
  if (!IsPackedSnapshot(stored)) return std::string(stored);
  const auto n = static_cast<uint32_t>(SnapshotTextBytes(stored));
  // Deflate cannot shrink data more than about 1032:1: a length beyond that
  // (or beyond the limit) is forged, and is refused before it is allocated.
  constexpr size_t kMaxRatio = 1032;
  const size_t packed = stored.size() - kHeader;
  if (n > kMaxUnpackedSnapshot || n > packed * kMaxRatio + 64) {
    return Status::Corrupt("packed pipeline snapshot claims " + std::to_string(n) + " bytes from " +
                           std::to_string(packed) + " packed, more than deflate can give (limit " +
                           std::to_string(kMaxUnpackedSnapshot) + ")");
  }
  std::string text(n, '\0');
  uLongf got = n;
  uLong used = static_cast<uLong>(packed);
  int rc = uncompress2(reinterpret_cast<Bytef*>(text.data()), &got,
                       reinterpret_cast<const Bytef*>(stored.data() + kHeader), &used);
  // Bytes after the deflate stream are refused: a submission's packed form
  // is journaled as it arrives, and nothing unread may ride along in it.
  if (rc == Z_OK && got == n && used != packed) {
    return Status::Corrupt("packed pipeline snapshot has " + std::to_string(packed - used) +
                           " bytes after its deflate stream");
  }
  if (rc != Z_OK || got != n) {
    return Status::Corrupt(
        "packed pipeline snapshot does not inflate to its " + std::to_string(n) + " bytes (zlib: " +
        (rc == Z_OK ? std::string("short by ") + std::to_string(n - got) + " bytes"
                    : std::string(zError(rc))) +
        ")");
  }
  return text;
}

}  // namespace apollo11::storage
