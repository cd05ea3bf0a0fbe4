// libFuzzer target for what etcd's JSON gateway answers (ha/etcd_codec.h):
// garbage, truncated or hostile bodies must give a Status, never a crash.
// Base64 that decodes must re-encode to text that decodes the same.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "fuzz/heap_budget.h"
#include "ha/etcd_codec.h"
#include "ha/ha_elector.h"

namespace apollo11::fuzz {
namespace {

template <class T>
void CheckRefusal(const Result<T>& r) {
  if (!r.ok()) Require(!r.status().message().empty(), "a refused answer says why");
}

}  // namespace
}  // namespace apollo11::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  apollo11::fuzz::HeapBudget budget;
  using namespace apollo11;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  fuzz::CheckRefusal(ha::DecodeGrant(body));
  fuzz::CheckRefusal(ha::DecodeKeepAlive(body));
  fuzz::CheckRefusal(ha::DecodeCampaign(body));
  fuzz::CheckRefusal(ha::DecodeLeader(body));
  fuzz::CheckRefusal(ha::DecodeAuthenticate(body));
  (void)ha::IsInvalidTokenAnswer(body);
  if (auto leader = ha::DecodeLeader(body); leader.ok() && leader->has_value()) {
    (void)ha::ForeignKeyReason(**leader);  // the elector's check of a leader key
  }
  (void)ha::DecodeEmpty(body);
  if (auto raw = ha::Base64Decode(body)) {
    fuzz::Require(ha::Base64Decode(ha::Base64Encode(*raw)) == raw, "base64 round-trips");
  }
  return 0;
}
