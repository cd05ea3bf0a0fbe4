#include "storage/run_logs.h"

#include <algorithm>
#include <filesystem>

namespace apollo11::storage {

namespace fs = std::filesystem;

std::vector<std::string> RunLogDirs(const std::string& state_dir) {
  std::vector<std::string> dirs;
  std::error_code ec;
  if (fs::is_directory(fs::path(state_dir) / "logs", ec)) {
    dirs.push_back((fs::path(state_dir) / "logs").string());
  }
  for (fs::directory_iterator it(state_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("worker-", 0) != 0) continue;
    std::error_code dir_ec;
    if (fs::is_directory(it->path() / "logs", dir_ec))
      dirs.push_back((it->path() / "logs").string());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

LogRemoval RemoveRunLogs(const std::vector<std::string>& dirs, const std::set<std::string>& run_ids,
                         bool dry_run) {
  LogRemoval removal;
  if (run_ids.empty()) return removal;
  // File names carry the run id with '/' replaced, as the executor writes it.
  std::set<std::string> names;
  for (std::string id : run_ids) {
    std::replace(id.begin(), id.end(), '/', '_');
    names.insert(std::move(id));
  }
  for (const std::string& dir : dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      const auto dot = name.find('.');
      if (dot == std::string::npos || !names.count(name.substr(0, dot))) continue;
      std::error_code file_ec;
      if (!it->is_regular_file(file_ec)) continue;
      std::error_code size_ec;
      const uintmax_t size = it->file_size(size_ec);
      if (!dry_run && !fs::remove(it->path(), file_ec)) {
        removal.errors.push_back(it->path().string() + ": " + file_ec.message());
        continue;
      }
      ++removal.files;
      removal.bytes += size_ec ? 0 : size;
    }
    if (ec) removal.errors.push_back(dir + ": " + ec.message());
  }
  return removal;
}

}  // namespace apollo11::storage
