#pragma once
// Pipeline snapshots as the run store holds them.
//
// A snapshot of kPackAtLeast bytes or more is stored deflated (zlib, fastest
// level) behind an 8-byte tag and its length; a smaller one, and every
// snapshot stored before packing existed, is its JSON text as is. A JSON text
// never begins with the tag's NUL byte, so the two cannot be confused.
//
// Why: a 100k-task snapshot is about 17 MB of JSON. Held as text, it sat in
// the batch and again in LMDB's dirty pages while its run's first commit was
// written, at the coordinator's peak RSS, and took 17 MB of the journal; it
// deflates about six to one.

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace apollo11::storage {

inline constexpr size_t kPackAtLeast = 64 << 10;
// No snapshot unpacks to more than this (a client's frame is at most 64 MiB):
// a forged length cannot make a reader allocate more.
inline constexpr size_t kMaxUnpackedSnapshot = 256 << 20;

// The stored form of `text`: packed when it is kPackAtLeast bytes or more
// and deflating makes it smaller, or when it begins with the tag; else
// `text` itself. Text over kMaxUnpackedSnapshot (no frame carries that
// much) is stored as it is.
std::string PackSnapshot(std::string text);

// The JSON text of a stored snapshot. Corrupt: a packed value that does not
// inflate to exactly its recorded length, or records more than
// kMaxUnpackedSnapshot.
Result<std::string> UnpackSnapshot(std::string_view stored);

bool IsPackedSnapshot(std::string_view stored);

// The length of the JSON text `stored` holds: for a packed one, the length
// its header records (unchecked: UnpackSnapshot checks it), else its size.
size_t SnapshotTextBytes(std::string_view stored);

}  // namespace apollo11::storage
