#include "transport/key_roles.h"

#include <array>
#include <cstdlib>
#include <utility>

namespace apollo11::transport {
namespace {

constexpr std::array<std::pair<std::string_view, KeyRoles>, 4> kRoles = {{
    {"worker", kRoleWorker},
    {"viewer", kRoleViewer},
    {"operator", kRoleOperator},
    {"admin", kRoleAdmin},
}};

struct OlderName {
  std::string_view name;
  KeyRoles role;
  std::string_view note;
};
constexpr std::array<OlderName, 2> kOlderNames = {{
    {"reader", kRoleViewer, "role 'reader' is read as 'viewer' (the same rights)"},
    {"client", kRoleOperator,
     "role 'client' is read as 'operator', which may trigger, rerun and cancel runs but not "
     "submit a pipeline file or register one (give such a key 'admin')"},
}};

constexpr KeyRoles kReaders = kRoleViewer | kRoleOperator | kRoleAdmin;
constexpr KeyRoles kOperators = kRoleOperator | kRoleAdmin;

constexpr std::array<ActionRule, 15> kRules = {{
    {Action::kRead, "read", kReaders},
    {Action::kReadSnapshot, "read a whole snapshot", kOperators},
    {Action::kTrigger, "trigger", kOperators},
    {Action::kRerun, "rerun", kOperators},
    {Action::kCancel, "cancel", kOperators},
    {Action::kConfirm, "confirm", kOperators},
    {Action::kPause, "pause", kOperators},
    {Action::kUnpause, "unpause", kOperators},
    {Action::kBackfill, "backfill", kOperators},
    {Action::kSubmit, "submit", kRoleAdmin},
    {Action::kRegister, "register", kRoleAdmin},
    {Action::kRemove, "remove", kRoleAdmin},
    {Action::kResign, "resign", kRoleAdmin},
    {Action::kReadAudit, "read the audit trail", kRoleAdmin},
    {Action::kWork, "work", kRoleWorker},
}};

}  // namespace

std::optional<KeyRoles> ParseRole(std::string_view name) {
  for (const auto& [n, role] : kRoles) {
    if (n == name) return role;
  }
  for (const OlderName& o : kOlderNames) {
    if (o.name == name) return o.role;
  }
  return std::nullopt;
}

std::string_view RoleNameNote(std::string_view name) {
  for (const OlderName& o : kOlderNames) {
    if (o.name == name) return o.note;
  }
  return "";
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

std::span<const ActionRule> ActionRules() { return kRules; }

const ActionRule& RuleOf(Action a) {
  const auto i = static_cast<size_t>(a);
  if (i >= kRules.size() || kRules[i].action != a) std::abort();  // the table is out of order
  return kRules[i];
}

std::string RolesThatMay(Action a) {
  std::string out;
  const KeyRoles may = RuleOf(a).roles;
  int left = 0;
  for (const auto& [n, role] : kRoles) left += (may & role) != 0;
  for (const auto& [n, role] : kRoles) {
    if ((may & role) == 0) continue;
    if (!out.empty())
      out += --left == 0 ? " or " : ", ";
    else
      --left;
    out += n;
  }
  return out;
}

}  // namespace apollo11::transport
