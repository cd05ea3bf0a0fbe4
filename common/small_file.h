#pragma once
// Reading a small file whole without exceptions. std::ifstream read through
// std::istreambuf_iterator throws std::ios_base::failure when read(2) fails
// (libstdc++'s basic_filebuf::underflow), which /proc files of a process that
// exits between open and read do with ESRCH; a worker scanning /proc must
// not die of a process ending.

#include <cstddef>
#include <optional>
#include <string>

namespace apollo11 {

// The first `max_bytes` bytes of the file at `path`, or nullopt when it cannot
// be opened or read (errno says why). Never throws but std::bad_alloc.
std::optional<std::string> ReadSmallFile(const std::string& path, size_t max_bytes);

}  // namespace apollo11
