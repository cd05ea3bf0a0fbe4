#include "cli/node_flag_sources.h"

#include <cctype>
#include <vector>

#include "dsl/suggest.h"
#include "dsl/yaml_file.h"

namespace apollo11::cli {
namespace {

// The long names ("state-dir") of `start`'s options, for suggestions.
std::vector<std::string> ConfigKeys(const CLI::App& start) {
  std::vector<std::string> keys;
  for (const CLI::Option* opt : start.get_options()) {
    for (const std::string& name : opt->get_lnames()) {
      if (name != "help" && name != "config") keys.push_back(name);
    }
  }
  keys.push_back("alerts");
  return keys;
}

// The text a config value gives its option: a scalar's, or each of a list of
// scalars'. False for anything else (nothing, a mapping, a list holding one).
bool ConfigValues(const dsl::YamlNode& v, std::vector<std::string>* out) {
  if (v.IsScalar()) {
    out->emplace_back(v.Scalar());
    return true;
  }
  if (!v.IsSequence()) return false;
  for (dsl::YamlNode item : v.items()) {
    if (!item.IsScalar()) return false;
    out->emplace_back(item.Scalar());
  }
  return true;
}

}  // namespace

std::string FlagEnvName(const std::string& long_flag) {
  std::string name = "APOLLO11_";
  size_t start = long_flag.find_first_not_of('-');
  for (size_t i = start == std::string::npos ? long_flag.size() : start; i < long_flag.size();
       ++i) {
    const char c = long_flag[i];
    name += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return name;
}

void BindFlagEnvironment(CLI::App* start) {
  for (CLI::Option* opt : start->get_options()) {
    const std::vector<std::string>& names = opt->get_lnames();
    if (names.empty() || names.front() == "help") continue;
    opt->envname(FlagEnvName(names.front()));
  }
}

std::string NodeConfigPath(const std::string& given, bool default_exists) {
  if (!given.empty()) return given;
  return default_exists ? kDefaultNodeConfigFile : "";
}

Status ApplyNodeConfigFile(CLI::App& start, const std::string& path) {
  auto loaded = dsl::LoadYamlFile(path);
  if (!loaded.ok()) return Status::InvalidInput("config " + loaded.status().message());
  const dsl::YamlNode root = (*loaded)->root();
  if (!root.IsDefined() || root.IsNull()) return Status::Ok();
  if (!root.IsMap()) return Status::InvalidInput("config " + path + ": expected a mapping");
  for (dsl::YamlPair item : root.pairs()) {
    const std::string line = std::to_string(item.key.Mark().line + 1);
    if (!item.key.IsScalar()) {
      return Status::InvalidInput("config " + path + ":" + line + ": keys must be option names");
    }
    const std::string key(item.key.Scalar());
    if (key == "alerts") continue;  // a list of rules, not a flag: LoadAlertRules
    CLI::Option* opt = nullptr;
    try {
      opt = start.get_option("--" + key);
    } catch (const CLI::OptionNotFound&) {
    }
    if (opt == nullptr || key == "help") {
      return Status::InvalidInput("config " + path + ":" + line + ": unknown key '" + key + "'" +
                                  dsl::DidYouMean(key, ConfigKeys(start)));
    }
    if (opt->count() > 0 || key == "config") continue;  // command line or environment wins
    std::vector<std::string> values;
    if (!ConfigValues(item.value, &values)) {
      return Status::InvalidInput("config " + path + ":" + line + ": key '" + key +
                                  "' needs text or a list of text");
    }
    try {
      for (const std::string& v : values) opt->add_result(v);
      opt->run_callback();
    } catch (const std::exception& e) {
      return Status::InvalidInput("config " + path + ": key '" + key + "': " + e.what());
    }
  }
  return Status::Ok();
}

namespace {

// The role a flag belongs to, as its help text says ("coordinator: ..." or
// "worker: ..."), or "" for a flag of every role.
std::string FlagRole(const CLI::Option& option) {
  const std::string& help = option.get_description();
  for (const char* role : {"coordinator", "worker"}) {
    const std::string prefix = std::string(role) + ": ";
    if (help.rfind(prefix, 0) == 0) return role;
  }
  return "";
}

}  // namespace

Status CheckFlagsFitRole(const CLI::App& start, const std::string& role) {
  if (role == "all") return Status::Ok();
  for (const CLI::Option* opt : start.get_options()) {
    if (opt->count() == 0) continue;
    const std::string owner = FlagRole(*opt);
    if (owner.empty() || owner == role) continue;
    if (opt->get_lnames().empty()) continue;
    const std::string& name = opt->get_lnames().front();
    return Status::InvalidInput("--" + name + " is a " + owner + " setting (" +
                                opt->get_description() + ") and this node's role is " + role +
                                ": it would do nothing here; remove it (from the "
                                "command line, " +
                                FlagEnvName("--" + name) + " or the config file's key '" + name +
                                "'), or start the node with --role=all");
  }
  return Status::Ok();
}

}  // namespace apollo11::cli
