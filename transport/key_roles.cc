#include "transport/key_roles.h"

#include <array>
#include <utility>

namespace apollo11::transport {
namespace {

constexpr std::array<std::pair<std::string_view, KeyRoles>, 4> kRoles = {{
    {"worker", kRoleWorker},
    {"reader", kRoleReader},
    {"client", kRoleClient},
    {"admin", kRoleAdmin},
}};

}  // namespace

std::optional<KeyRoles> ParseRole(std::string_view name) {
  for (const auto& [n, role] : kRoles) {
    if (n == name) return role;
  }
  return std::nullopt;
}

std::string FormatRoles(KeyRoles roles) {
  std::string out;
  for (const auto& [n, role] : kRoles) {
    if ((roles & role) == 0) continue;
    if (!out.empty()) out += ',';
    out += n;
  }
  return out;
}

KeyRoles ParseRoles(std::string_view text) {
  KeyRoles roles = 0;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::optional<KeyRoles> role = ParseRole(text.substr(0, comma));
    if (role) roles |= *role;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return roles;
}

}  // namespace apollo11::transport
