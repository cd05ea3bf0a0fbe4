#include "dsl/param_values.h"

#include <cerrno>
#include <cstdlib>
#include <string_view>

#include "dsl/task_limits.h"

namespace apollo11::dsl {
namespace {

bool IsInteger(std::string_view v) {
  if (!v.empty() && (v[0] == '-' || v[0] == '+')) v.remove_prefix(1);
  if (v.empty() || v.size() > 18) return false;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool IsNumber(const std::string& v) {
  if (v.empty() || v.size() > 64 || v.find_first_of(" \t\n") != std::string::npos) return false;
  if (v.find_first_not_of("0123456789+-.eE") != std::string::npos) return false;
  errno = 0;
  char* end = nullptr;
  (void)std::strtod(v.c_str(), &end);
  return errno == 0 && end == v.c_str() + v.size();
}

bool IsBoolean(std::string_view v) { return v == "true" || v == "false"; }

bool ReadsAs(const char* type, const std::string& value) {
  const std::string_view t = type;
  if (t == "integer") return IsInteger(value);
  if (t == "number") return IsNumber(value);
  if (t == "boolean") return IsBoolean(value);
  return true;
}

}  // namespace

const char* ParamType(const std::string& default_value) {
  if (IsInteger(default_value)) return "integer";
  if (IsNumber(default_value)) return "number";
  if (IsBoolean(default_value)) return "boolean";
  return "string";
}

Result<std::map<std::string, std::string>> ResolveParams(
    const std::string& pipeline, const std::map<std::string, std::string>& declared,
    const std::map<std::string, std::string>& given) {
  std::map<std::string, std::string> out = declared;
  for (const auto& [key, value] : given) {
    auto it = declared.find(key);
    if (it == declared.end()) {
      std::string names;
      for (const auto& [k, v] : declared) names += (names.empty() ? "" : ", ") + k;
      return Status::InvalidInput("pipeline " + pipeline + " declares no param '" + key +
                                  "' (declared: " + (names.empty() ? "none" : names) + ")");
    }
    const char* type = ParamType(it->second);
    if (!ReadsAs(type, value)) {
      return Status::InvalidInput("param '" + key + "' of pipeline " + pipeline + " is " + type +
                                  " (its default is '" + it->second + "'): '" + value +
                                  "' is not " +
                                  (std::string_view(type) == "integer" ? "an " : "a ") + type);
    }
    out[key] = value;
  }
  Status limits = CheckParamLimits(out);
  if (!limits.ok()) return limits;
  return out;
}

Status ParseParamArg(const std::string& arg, std::map<std::string, std::string>* out) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::InvalidInput("-p takes key=value, got '" + arg + "'");
  }
  (*out)[arg.substr(0, eq)] = arg.substr(eq + 1);
  return Status::Ok();
}

}  // namespace apollo11::dsl
