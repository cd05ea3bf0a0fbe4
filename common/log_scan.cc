#include "common/log_scan.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace apollo11 {
namespace {

// Rotated files beyond this index are not looked for (nodes keep 3).
constexpr int kMaxRotated = 16;

// The lines of `file` containing `needle`, reading only its last `budget`
// bytes (a partial first line is skipped); `budget` is reduced by what was read.
Status ScanFile(const std::string& file, const std::string& needle, uint64_t* budget,
                std::vector<std::string>* lines) {
  FILE* in = std::fopen(file.c_str(), "rb");
  if (!in) {
    if (errno == ENOENT) return Status::Ok();
    return Status::Io("cannot read " + file + ": " + std::strerror(errno));
  }
  std::fseek(in, 0, SEEK_END);
  const long end = std::ftell(in);
  const uint64_t size = end > 0 ? static_cast<uint64_t>(end) : 0;
  const uint64_t take = std::min(size, *budget);
  *budget -= take;
  std::string data(take, '\0');
  std::fseek(in, static_cast<long>(size - take), SEEK_SET);
  data.resize(std::fread(data.data(), 1, take, in));
  std::fclose(in);
  size_t pos = 0;
  if (take < size) {  // started mid-line: drop the fragment
    pos = data.find('\n');
    pos = pos == std::string::npos ? data.size() : pos + 1;
  }
  // Search the whole buffer, not line by line: most lines do not match, and
  // one find over 32 MiB is several times faster than a find per line.
  while (pos < data.size()) {
    const size_t hit = data.find(needle, pos);
    if (hit == std::string::npos) break;
    const size_t prev_nl = data.rfind('\n', hit);
    const size_t start = prev_nl == std::string::npos || prev_nl < pos ? pos : prev_nl + 1;
    size_t nl = data.find('\n', hit);
    if (nl == std::string::npos) nl = data.size();
    lines->emplace_back(data.data() + start, nl - start);
    pos = nl + 1;
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> LogFilesOldestFirst(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string stem = (p.parent_path() / p.stem()).string();
  const std::string ext = p.extension().string();
  std::vector<std::string> files;
  std::error_code ec;
  for (int i = kMaxRotated; i >= 1; --i) {
    std::string rotated = stem + "." + std::to_string(i) + ext;
    if (std::filesystem::exists(rotated, ec)) files.push_back(std::move(rotated));
  }
  if (std::filesystem::exists(path, ec)) files.push_back(path);
  return files;
}

Result<std::vector<std::string>> ScanLogLines(const std::string& path, const std::string& needle,
                                              uint64_t max_bytes) {
  std::vector<std::string> files = LogFilesOldestFirst(path);
  // Newest first while the budget lasts, then put the chunks in time order.
  std::vector<std::vector<std::string>> chunks;
  uint64_t budget = max_bytes;
  for (auto it = files.rbegin(); it != files.rend() && budget > 0; ++it) {
    std::vector<std::string> lines;
    Status s = ScanFile(*it, needle, &budget, &lines);
    if (!s.ok()) return s;
    chunks.push_back(std::move(lines));
  }
  std::vector<std::string> out;
  for (auto it = chunks.rbegin(); it != chunks.rend(); ++it) {
    for (auto& l : *it) out.push_back(std::move(l));
  }
  return out;
}

}  // namespace apollo11
