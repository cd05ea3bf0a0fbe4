#pragma once
// Checks an LMDB data file before it is mapped. LMDB maps the whole file and
// trusts its meta page: a file cut short (a bad copy, a disk that filled up in
// a restore, a truncate) makes the first read past its end kill the process
// with SIGBUS. Reading the two meta pages with read(2) instead tells a short,
// empty or foreign file apart, with a message that says how to restore it.

#include <cstdint>
#include <string>

#include "common/status.h"

namespace apollo11::storage {

// What the newest valid meta page of an LMDB data file says.
struct DataFileMeta {
  uint32_t page_size = 0;
  uint64_t last_page = 0;  // highest page number in use
  uint64_t txn_id = 0;     // of the newest committed transaction
  uint64_t file_size = 0;  // bytes on disk
};

// Reads and checks the data file at `path` (an existing file). Corrupt when it
// is empty, has no valid meta page, or is shorter than (last page + 1) pages of
// the newest valid meta; Io when it cannot be read. Never maps the file.
// `what` names the file in the message ("journal data file") and `restore`
// ends it: what the operator should do.
Result<DataFileMeta> CheckDataFile(const std::string& path, const std::string& what,
                                   const std::string& restore);

}  // namespace apollo11::storage
