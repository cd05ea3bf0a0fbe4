#include "alerts/alert_config.h"

#include <set>

#include "dsl/yaml_file.h"

namespace apollo11::alerts {

namespace {

std::string Where(const dsl::YamlNode& node, const std::string& rule) {
  return "alerts: rule " + rule + " (line " + std::to_string(node.Mark().line + 1) + ")";
}

Result<std::string> Scalar(const dsl::YamlNode& node, const std::string& where,
                           const std::string& key) {
  if (!node.IsScalar()) return Status::InvalidInput(where + ": '" + key + "' must be a string");
  return std::string(node.Scalar());
}

Result<Millis> Duration(const dsl::YamlNode& node, const std::string& where,
                        const std::string& key) {
  auto text = Scalar(node, where, key);
  if (!text.ok()) return text.status();
  auto d = ParseDuration(*text);
  if (!d.ok()) return Status::InvalidInput(where + ": '" + key + "': " + d.status().message());
  if (d->count() <= 0) return Status::InvalidInput(where + ": '" + key + "' must be positive");
  return *d;
}

Result<int> Count(const dsl::YamlNode& node, const std::string& where, const std::string& key,
                  int max) {
  auto text = Scalar(node, where, key);
  if (!text.ok()) return text.status();
  int value = -1;
  try {
    size_t used = 0;
    value = std::stoi(*text, &used);
    if (used != text->size()) value = -1;
  } catch (const std::exception&) {
    value = -1;
  }
  if (value < 0 || value > max) {
    return Status::InvalidInput(where + ": '" + key + "' must be a whole number from 0 to " +
                                std::to_string(max) + ", not '" + *text + "'");
  }
  return value;
}

Result<WebhookTarget> ParseWebhook(const dsl::YamlNode& node, const std::string& where) {
  WebhookTarget target;
  if (node.IsScalar()) {  // `webhook: URL` is short for `webhook: {url: URL}`
    target.url = std::string(node.Scalar());
  } else if (node.IsMap()) {
    for (dsl::YamlPair item : node.pairs()) {
      const std::string key(item.key.Scalar());
      if (key == "url") {
        auto url = Scalar(item.value, where, "webhook.url");
        if (!url.ok()) return url.status();
        target.url = *url;
      } else if (key == "timeout") {
        auto d = Duration(item.value, where, "webhook.timeout");
        if (!d.ok()) return d.status();
        target.timeout = *d;
      } else if (key == "retries") {
        auto n = Count(item.value, where, "webhook.retries", 20);
        if (!n.ok()) return n.status();
        target.retries = *n;
      } else if (key == "backoff") {
        auto d = Duration(item.value, where, "webhook.backoff");
        if (!d.ok()) return d.status();
        target.backoff = *d;
      } else {
        return Status::InvalidInput(where + ": unknown webhook key '" + key +
                                    "' (known: url, timeout, retries, backoff)");
      }
    }
  } else {
    return Status::InvalidInput(where + ": 'webhook' must be a URL or a mapping with 'url'");
  }
  if (target.url.rfind("http://", 0) != 0 && target.url.rfind("https://", 0) != 0) {
    return Status::InvalidInput(where + ": webhook url '" + target.url +
                                "' must start with http:// or https://");
  }
  return target;
}

Result<AlertRule> ParseRule(const dsl::YamlNode& node, size_t index) {
  std::string label = "#" + std::to_string(index + 1);
  if (!node.IsMap()) return Status::InvalidInput(Where(node, label) + ": expected a mapping");
  if (node["name"].IsScalar()) label = "'" + std::string(node["name"].Scalar()) + "'";
  const std::string where = Where(node, label);
  AlertRule rule;
  rule.name = node["name"].IsScalar() ? std::string(node["name"].Scalar()) : label;
  for (dsl::YamlPair item : node.pairs()) {
    const std::string key(item.key.Scalar());
    const dsl::YamlNode value = item.value;
    if (key == "name") {
      auto name = Scalar(value, where, key);
      if (!name.ok()) return name.status();
    } else if (key == "events") {
      std::vector<std::string> names;
      if (value.IsScalar()) {
        names.emplace_back(value.Scalar());
      } else if (value.IsSequence()) {
        for (dsl::YamlNode v : value.items()) {
          auto name = Scalar(v, where, "events");
          if (!name.ok()) return name.status();
          names.push_back(*name);
        }
      } else {
        return Status::InvalidInput(where + ": 'events' must be a list of event types");
      }
      std::set<AlertType> seen;
      for (const std::string& n : names) {
        auto type = ParseAlertType(n);
        if (!type) {
          std::string known;
          for (int t = 0; t < kAlertTypeCount; ++t) {
            known += std::string(t ? ", " : "") + ToString(static_cast<AlertType>(t));
          }
          return Status::InvalidInput(where + ": unknown event '" + n + "' (known: " + known + ")");
        }
        if (seen.insert(*type).second) rule.events.push_back(*type);
      }
    } else if (key == "pipelines") {
      auto glob = Scalar(value, where, key);
      if (!glob.ok()) return glob.status();
      rule.pipelines = *glob;
    } else if (key == "webhook") {
      auto target = ParseWebhook(value, where);
      if (!target.ok()) return target.status();
      rule.webhook = std::move(*target);
    } else if (key == "command") {
      auto command = Scalar(value, where, key);
      if (!command.ok()) return command.status();
      if (command->empty()) return Status::InvalidInput(where + ": 'command' is empty");
      rule.command = *command;
    } else if (key == "command_timeout") {
      auto d = Duration(value, where, key);
      if (!d.ok()) return d.status();
      rule.command_timeout = *d;
    } else {
      return Status::InvalidInput(where + ": unknown key '" + key +
                                  "' (known: name, events, pipelines, webhook, command, "
                                  "command_timeout)");
    }
  }
  if (!rule.webhook && rule.command.empty()) {
    return Status::InvalidInput(where + ": needs a 'webhook', a 'command', or both");
  }
  return rule;
}

}  // namespace

Result<std::vector<AlertRule>> ParseAlertRules(const dsl::YamlNode& list) {
  if (!list.IsSequence()) {
    return Status::InvalidInput("alerts: expected a list of rules (line " +
                                std::to_string(list.Mark().line + 1) + ")");
  }
  std::vector<AlertRule> rules;
  std::set<std::string> names;
  size_t i = 0;
  for (dsl::YamlNode item : list.items()) {
    auto rule = ParseRule(item, i++);
    if (!rule.ok()) return rule.status();
    if (!names.insert(rule->name).second) {
      return Status::InvalidInput(Where(item, "'" + rule->name + "'") +
                                  ": a rule with this name exists already");
    }
    rules.push_back(std::move(*rule));
  }
  return rules;
}

Result<std::vector<AlertRule>> LoadAlertRules(const std::string& path) {
  auto loaded = dsl::LoadYamlFile(path);
  if (!loaded.ok()) return Status::InvalidInput("config " + loaded.status().message());
  const dsl::YamlNode root = (*loaded)->root();
  if (!root["alerts"].IsDefined()) return std::vector<AlertRule>{};
  auto rules = ParseAlertRules(root["alerts"]);
  if (!rules.ok()) return Status::InvalidInput("config " + path + ": " + rules.status().message());
  return rules;
}

}  // namespace apollo11::alerts
