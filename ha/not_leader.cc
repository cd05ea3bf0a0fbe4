#include "ha/not_leader.h"

namespace apollo11::ha {

std::string NotLeaderReply(std::string_view endpoint, std::string_view detail) {
  std::string out(kNotLeaderPrefix);
  out += endpoint.empty() ? kLeaderUnknown : endpoint;
  if (!detail.empty()) {
    out += "; ";
    out += detail;
  }
  return out;
}

std::optional<std::string> ParseNotLeader(std::string_view text) {
  if (text.substr(0, kNotLeaderPrefix.size()) != kNotLeaderPrefix) return std::nullopt;
  std::string_view rest = text.substr(kNotLeaderPrefix.size());
  if (const size_t detail = rest.find("; "); detail != std::string_view::npos) {
    rest = rest.substr(0, detail);
  }
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\n' || rest.back() == '\r' ||
                           rest.back() == '\t')) {
    rest.remove_suffix(1);
  }
  if (rest.empty() || rest == kLeaderUnknown) return std::string();
  for (char c : rest) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return std::string();
  }
  return std::string(rest);
}

}  // namespace apollo11::ha
