#include "replication/journal_replica_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

namespace apollo11::replication {
namespace {

Status SyncPath(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) return Status::Io("open " + path + ": " + std::strerror(errno));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Status::Io("fsync " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace

JournalReplicaStore::JournalReplicaStore(std::string dir, std::unique_ptr<storage::Journal> journal)
    : dir_(std::move(dir)), journal_(std::move(journal)) {}

JournalReplicaStore::~JournalReplicaStore() {
  if (copy_ != nullptr) std::fclose(copy_);
}

Status JournalReplicaStore::BeginCopy(uint64_t size) {
  (void)size;
  if (copy_ != nullptr) std::fclose(copy_);
  std::error_code ec;
  std::filesystem::remove_all(CopyDir(), ec);
  std::filesystem::create_directories(CopyDir(), ec);
  if (ec) return Status::Io("create " + CopyDir() + ": " + ec.message());
  const std::string path = CopyDir() + "/data.mdb";
  copy_ = std::fopen(path.c_str(), "wb");
  if (copy_ == nullptr) return Status::Io("create " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

Status JournalReplicaStore::AppendCopy(std::string_view bytes) {
  if (copy_ == nullptr) return Status::Io("no copy under way");
  if (std::fwrite(bytes.data(), 1, bytes.size(), copy_) != bytes.size()) {
    return Status::Io("write " + CopyDir() + "/data.mdb: " + std::strerror(errno));
  }
  return Status::Ok();
}

Status JournalReplicaStore::InstallCopy() {
  if (copy_ == nullptr) return Status::Io("no copy under way");
  const bool flushed = std::fflush(copy_) == 0 && ::fsync(::fileno(copy_)) == 0;
  std::fclose(copy_);
  copy_ = nullptr;
  const std::string copied = CopyDir() + "/data.mdb";
  if (!flushed) return Status::Io("write " + copied + ": " + std::strerror(errno));
  {
    storage::JournalOptions check;
    check.read_only = true;
    auto opened = storage::Journal::Open(CopyDir(), check);
    if (!opened.ok()) return opened.status();
  }
  journal_.reset();
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (::rename(copied.c_str(), (dir_ + "/data.mdb").c_str()) != 0) {
    Status failed = Status::Io("install " + copied + ": " + std::strerror(errno));
    auto reopened = storage::Journal::Open(dir_, {});
    if (reopened.ok()) journal_ = std::move(*reopened);
    return failed;
  }
  APOLLO11_RETURN_IF_ERROR(SyncPath(dir_, O_RDONLY | O_DIRECTORY));
  std::filesystem::remove_all(CopyDir(), ec);
  auto reopened = storage::Journal::Open(dir_, {});
  if (!reopened.ok()) return reopened.status();
  journal_ = std::move(*reopened);
  return Status::Ok();
}

}  // namespace apollo11::replication
