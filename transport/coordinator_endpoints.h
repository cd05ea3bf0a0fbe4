#pragma once
// The comma-separated coordinator endpoint lists `--connect`,
// `--coordinator` and $APOLLO11_COORDINATOR take (HA, issue 14; the refusal
// naming the leader is ha/not_leader.h).

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace apollo11::transport {

// At most this many coordinators in one list.
inline constexpr size_t kMaxCoordinatorEndpoints = 16;

// "tcp://a:7011,tcp://b:7011" as its endpoints, in order. Refuses (naming
// `what`, e.g. "--connect") an empty list or item, an item without a
// transport ("host:port"), one with spaces, a duplicate, and more than
// kMaxCoordinatorEndpoints items.
Result<std::vector<std::string>> ParseEndpointList(std::string_view text, std::string_view what);

}  // namespace apollo11::transport
