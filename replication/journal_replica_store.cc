#include "replication/journal_replica_store.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

namespace apollo11::replication {

JournalReplicaStore::~JournalReplicaStore() {
  if (copy_ != nullptr) std::fclose(copy_);
}

Status JournalReplicaStore::BeginCopy(uint64_t size) {
  (void)size;
  if (copy_ != nullptr) std::fclose(copy_);
  copy_ = nullptr;
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
    if (!opened.ok()) return opened.status();  // a bad copy: the journal is untouched
  }
  Status installed = journal_->InstallCopy(copied);
  std::error_code ec;
  std::filesystem::remove_all(CopyDir(), ec);
  // A failure past the check may have left the journal closed: apply nothing
  // more (the node reports it; a restart opens whichever data file is there).
  if (!installed.ok()) usable_ = false;
  return installed;
}

}  // namespace apollo11::replication
