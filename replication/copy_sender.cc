#include "replication/copy_sender.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "transport/sockets.h"

namespace apollo11::replication {

CopySender::CopySender(storage::Journal* journal, size_t chunk_bytes, Micros stall)
    : journal_(journal), chunk_bytes_(std::max<size_t>(chunk_bytes, 1)), stall_(stall) {}

CopySender::~CopySender() {
  if (copy_) Finish(nullptr);
}

void CopySender::Request(const std::string& peer) {
  if (copy_ && copy_->peer == peer) {
    Finish("it asked again");
  } else if (std::find(queue_.begin(), queue_.end(), peer) != queue_.end()) {
    return;
  }
  queue_.push_back(peer);
}

void CopySender::OnAck(const std::string& peer, uint64_t offset, Micros steady_now) {
  if (!copy_ || copy_->peer != peer || offset <= copy_->acked) return;
  copy_->acked = std::min(offset, copy_->sent);  // never more than was sent
  copy_->last_progress = steady_now;
}

bool CopySender::Ready() const {
  if (blocked_) return false;
  if (!copy_) return !queue_.empty();
  const CopyUnderWay& c = *copy_;
  if (!c.pending.empty()) return true;
  if (c.sent < c.size) return c.sent - c.acked < kCopyWindowChunks * chunk_bytes_;
  return !c.end_sent;
}

bool CopySender::Start(const ReplicationLeaderCore& core, const std::string& peer, Micros now) {
  const std::string dir = journal_->dir() + ".send-copy";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  auto position = journal_->CopyTo(dir);
  if (!position.ok()) {
    spdlog::warn("replication: cannot copy the journal for standby {}: {}", peer,
                 position.status().message());
    return false;
  }
  const std::string file = dir + "/data.mdb";
  const uint64_t size = std::filesystem::file_size(file, ec);
  std::FILE* f = ec ? nullptr : std::fopen(file.c_str(), "rb");
  if (f == nullptr) {
    spdlog::warn("replication: cannot read the journal copy {}", file);
    std::filesystem::remove_all(dir, ec);
    return false;
  }
  copy_.emplace();
  copy_->peer = peer;
  copy_->file = f;
  copy_->size = size;
  copy_->position = *position;
  copy_->last_progress = now;
  copy_->pending = core.CopyBeginFrame(size);  // sent first by SendChunks
  return true;
}

bool CopySender::SendChunks(zmq::socket_t& router, const ReplicationLeaderCore& core) {
  CopyUnderWay& c = *copy_;
  if (chunk_.size() != chunk_bytes_) chunk_.assign(chunk_bytes_, '\0');
  for (;;) {
    if (c.pending.empty()) {
      if (c.sent >= c.size || c.sent - c.acked >= kCopyWindowChunks * chunk_bytes_) return true;
      const size_t n = std::fread(chunk_.data(), 1, chunk_.size(), c.file);
      if (n == 0) {  // the copy file ended early: send what there is
        c.size = c.sent;
        return true;
      }
      const std::string_view bytes(chunk_.data(), n);
      c.crc = Crc32(bytes, c.crc);
      c.pending = core.CopyChunkFrame(c.sent, bytes);
      c.sent += n;
    }
    const Status sent = transport::SendTo(router, c.peer, c.pending);
    if (sent.code() == StatusCode::kBusy) {
      blocked_ = true;
      return true;
    }
    if (!sent.ok()) return false;
    c.pending.clear();
  }
}

int CopySender::Pump(zmq::socket_t& router, const ReplicationLeaderCore& core, Micros steady_now) {
  blocked_ = false;
  if (copy_ && steady_now - copy_->last_progress > stall_) Finish("no progress");
  while (!copy_ && !queue_.empty()) {
    const std::string peer = queue_.front();
    queue_.pop_front();
    Start(core, peer, steady_now);
  }
  if (!copy_) return 0;
  if (!SendChunks(router, core)) {
    Finish("it is gone");
    return 0;
  }
  CopyUnderWay& c = *copy_;
  if (blocked_ || !c.pending.empty() || c.sent < c.size) return 0;
  if (!c.end_sent) {
    const Status end = transport::SendTo(router, c.peer, core.CopyEndFrame(c.size, c.crc));
    if (end.code() == StatusCode::kBusy) {
      blocked_ = true;
      return 0;
    }
    if (!end.ok()) {
      Finish("it is gone");
      return 0;
    }
    c.end_sent = true;
    spdlog::info("replication: sent standby {} a journal copy of {} bytes at batch {} seq {}",
                 c.peer, c.size, c.position.batch, c.position.seq);
    Finish(nullptr);
    return 1;
  }
  return 0;
}

void CopySender::Finish(const char* why) {
  if (why != nullptr) {
    spdlog::warn("replication: the journal copy for standby {} stopped at {} of {} bytes: {}",
                 copy_->peer, copy_->sent, copy_->size, why);
  }
  if (copy_->file != nullptr) std::fclose(copy_->file);
  std::error_code ec;
  std::filesystem::remove_all(journal_->dir() + ".send-copy", ec);
  copy_.reset();
}

}  // namespace apollo11::replication
