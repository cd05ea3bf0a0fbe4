// libFuzzer target for the replication frame decoder (replication/
// replication_frame.h) and the batch it carries (storage/batch_codec.h):
// bytes on the replication socket from anyone must give a frame or Corrupt,
// never a crash; what decodes must re-encode stably.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "fuzz/heap_budget.h"
#include "replication/replication_frame.h"
#include "storage/batch_codec.h"

namespace apollo11::fuzz {
namespace {

void DecodeFrame(std::string_view bytes) {
  auto frame = replication::DecodeFrame(bytes);
  if (!frame.ok()) {
    Require(!frame.status().message().empty(), "a refused frame says why");
  } else {
    const std::string once = replication::EncodeFrame(*frame);
    auto again = replication::DecodeFrame(once);
    Require(again.ok(), "a frame we encoded decodes");
    Require(replication::EncodeFrame(*again) == once, "re-encoding a decoded frame is stable");
  }
  // The payload of a batch frame, or the raw bytes, as a batch.
  auto batch = storage::codec::DecodeBatch(frame.ok() ? frame->payload : std::string(bytes));
  if (batch.ok()) {
    const std::string once = storage::codec::EncodeBatch(*batch);
    auto again = storage::codec::DecodeBatch(once);
    Require(again.ok(), "a batch we encoded decodes");
    Require(storage::codec::EncodeBatch(*again) == once, "re-encoding a batch is stable");
  }
}

}  // namespace
}  // namespace apollo11::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  apollo11::fuzz::HeapBudget budget;
  apollo11::fuzz::DecodeFrame(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
