#include "storage/data_file_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

namespace apollo11::storage {
namespace {

// LMDB's on-disk layout (mdb.c, 64-bit builds): each meta page is a 16-byte
// page header (pgno, pad, flags at byte 10, lower/upper) and then MDB_meta:
// magic, version, address, mapsize, two 48-byte MDB_db (the free DB's md_pad
// holds the page size), mm_last_pg, mm_txnid.
constexpr size_t kPageHeader = 16;
constexpr size_t kFlagsOffset = 10;
constexpr uint16_t kMetaPageFlag = 0x08;
constexpr uint32_t kMagic = 0xBEEFC0DE;
constexpr size_t kMagicOffset = kPageHeader + 0;
constexpr size_t kVersionOffset = kPageHeader + 4;
constexpr size_t kPageSizeOffset = kPageHeader + 24;  // mm_dbs[0].md_pad
constexpr size_t kLastPageOffset = kPageHeader + 120;
constexpr size_t kTxnIdOffset = kPageHeader + 128;
constexpr size_t kMetaBytes = kTxnIdOffset + 8;

template <typename T>
T Load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct Meta {
  uint32_t page_size;
  uint64_t last_page;
  uint64_t txn_id;
};

// The meta in `page` when it is one LMDB would accept.
std::optional<Meta> ParseMeta(const unsigned char* page) {
  const uint32_t version = Load<uint32_t>(page + kVersionOffset);
  const uint32_t page_size = Load<uint32_t>(page + kPageSizeOffset);
  if (Load<uint32_t>(page + kMagicOffset) != kMagic || (version != 1 && version != 999) ||
      (Load<uint16_t>(page + kFlagsOffset) & kMetaPageFlag) == 0 || page_size < 512 ||
      page_size > 65536 || (page_size & (page_size - 1)) != 0) {
    return std::nullopt;
  }
  return Meta{page_size, Load<uint64_t>(page + kLastPageOffset),
              Load<uint64_t>(page + kTxnIdOffset)};
}

// Reads kMetaBytes at `offset`; false when the file is shorter.
bool ReadAt(int fd, off_t offset, unsigned char* out, int* error) {
  size_t got = 0;
  while (got < kMetaBytes) {
    ssize_t n = pread(fd, out + got, kMetaBytes - got, offset + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) *error = errno;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Result<DataFileMeta> CheckDataFile(const std::string& path, const std::string& what,
                                   const std::string& restore) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Io("cannot open " + path + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    close(fd);
    return Status::Io("cannot stat " + path + ": " + std::strerror(e));
  }
  DataFileMeta out;
  out.file_size = static_cast<uint64_t>(st.st_size);
  unsigned char page[kMetaBytes];
  int error = 0;
  std::optional<Meta> first, second;
  if (ReadAt(fd, 0, page, &error)) first = ParseMeta(page);
  if (first && ReadAt(fd, first->page_size, page, &error)) second = ParseMeta(page);
  close(fd);
  if (error != 0) return Status::Io("cannot read " + path + ": " + std::strerror(error));
  if (out.file_size == 0) {
    return Status::Corrupt(what + " " + path +
                           " is empty (0 bytes): it was truncated or never written. " + restore);
  }
  if (!first) {
    return Status::Corrupt(what + " " + path + " (" + std::to_string(out.file_size) +
                           " bytes) is not an LMDB data file or its first meta page is damaged. " +
                           restore);
  }
  const Meta& newest =
      second && second->page_size == first->page_size && second->txn_id > first->txn_id ? *second
                                                                                        : *first;
  out.page_size = newest.page_size;
  out.last_page = newest.last_page;
  out.txn_id = newest.txn_id;
  const uint64_t pages = newest.last_page + 1;
  if (newest.last_page > (UINT64_MAX / newest.page_size) - 1 ||
      out.file_size < pages * newest.page_size) {
    return Status::Corrupt(
        what + " " + path + " is " + std::to_string(out.file_size) +
        " bytes, but its newest meta page (transaction " + std::to_string(newest.txn_id) +
        ") uses " + std::to_string(pages) + " pages of " + std::to_string(newest.page_size) +
        " bytes (" + std::to_string(pages * newest.page_size) +
        " bytes): the file was cut short (truncated, a partial copy or restore). " + restore);
  }
  return out;
}

}  // namespace apollo11::storage
