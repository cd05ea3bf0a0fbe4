#include "actors/worker/log_slices.h"

#include <algorithm>

#include "common/wire_limits.h"

namespace apollo11::actors {
namespace {

// Within the dispatcher's string limit, with room for the reply's other fields.
constexpr uint32_t kMaxSlice = static_cast<uint32_t>(kWireMaxStringBytes - 1024);

}  // namespace

transport::LogReply LogSlices::NodeLines(const transport::LogRequest& request) const {
  // This node's log lines about the execution, every attempt (bounded scan:
  // tens of ms of this thread at most).
  transport::LogReply reply;
  reply.request_id = request.request_id;
  if (node_log_ == nullptr) {
    reply.error = "worker " + worker_id_ + " keeps no log file";
  } else if (auto lines = node_log_->LinesAbout(request.exec_id); !lines.ok()) {
    reply.error = lines.status().message();
  } else {
    std::string all;
    for (const std::string& l : *lines) all += l + "\n";
    reply.size = all.size();
    if (request.offset < all.size()) {
      reply.data = all.substr(
          request.offset, request.max_bytes ? std::min(request.max_bytes, kMaxSlice) : kMaxSlice);
    }
  }
  return reply;
}

transport::LogReply LogSlices::Answer(const transport::LogRequest& request, bool running) const {
  if (request.stream == transport::kLogStreamEvents) return NodeLines(request);
  transport::LogReply reply;
  reply.request_id = request.request_id;
  reply.running = running;
  const uint64_t max_bytes =
      std::min<uint64_t>(request.max_bytes ? request.max_bytes : kMaxSlice, kMaxSlice);
  auto slice = runner_->ReadOutput(request.exec_id, request.attempt, request.stream == 1,
                                   request.offset, max_bytes);
  if (slice.ok()) {
    reply.size = slice->size;
    reply.data = std::move(slice->data);
  } else if (slice.status().code() != StatusCode::kNotFound) {
    reply.error = "worker " + worker_id_ + " keeps no log files";
  } else {
    // Nothing written (yet): the file appears with the first byte. An
    // attempt that printed nothing is not an error; the client says so.
    reply.size = 0;
  }
  return reply;
}

}  // namespace apollo11::actors
