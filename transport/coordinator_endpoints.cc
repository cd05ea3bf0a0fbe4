#include "transport/coordinator_endpoints.h"

#include <algorithm>

namespace apollo11::transport {
namespace {

std::string Quoted(std::string_view what, std::string_view text) {
  return std::string(what) + " '" + std::string(text.substr(0, 200)) + "'";
}

}  // namespace

Result<std::vector<std::string>> ParseEndpointList(std::string_view text, std::string_view what) {
  std::vector<std::string> endpoints;
  if (text.empty()) return Status::InvalidInput(std::string(what) + ": no endpoint given");
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    std::string_view item = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty()) {
      return Status::InvalidInput(Quoted(what, text) +
                                  ": an empty item (want ENDPOINT[,ENDPOINT...], e.g. "
                                  "tcp://c1:7011,tcp://c2:7011)");
    }
    if (item.find_first_of(" \t\r\n") != std::string_view::npos) {
      return Status::InvalidInput(Quoted(what, text) + ": '" + std::string(item) +
                                  "' contains a space (separate endpoints with commas only)");
    }
    if (item.find("://") == std::string_view::npos) {
      return Status::InvalidInput(Quoted(what, text) + ": '" + std::string(item) +
                                  "' names no transport; did you mean 'tcp://" + std::string(item) +
                                  "'?");
    }
    if (std::find(endpoints.begin(), endpoints.end(), item) != endpoints.end()) {
      return Status::InvalidInput(Quoted(what, text) + ": '" + std::string(item) +
                                  "' is listed twice");
    }
    endpoints.emplace_back(item);
    if (endpoints.size() > kMaxCoordinatorEndpoints) {
      return Status::InvalidInput(Quoted(what, text) + ": more than " +
                                  std::to_string(kMaxCoordinatorEndpoints) + " endpoints");
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return endpoints;
}

}  // namespace apollo11::transport
