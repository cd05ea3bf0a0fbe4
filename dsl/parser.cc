#include "dsl/parser.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include "common/time_zone.h"
#include "dsl/checker.h"
#include "dsl/cron.h"
#include "dsl/field_reader.h"
#include "dsl/library.h"
#include "dsl/suggest.h"
#include "dsl/task_parser.h"
#include "dsl/yaml_guard.h"
#include "dsl/yaml_tree.h"

namespace apollo11::dsl {
namespace {

namespace fs = std::filesystem;
using internal::Field;
using internal::FieldReader;
using internal::KindName;
using internal::Quote;
using internal::StartsWith;

const std::vector<std::string> kPipelineKeys = {
    "version",     "name",     "imports",        "pipeline",     "params",
    "concurrency", "schedule", "alerts",         "retry_policy", "templates",
    "timezone",    "catchup",  "catchup_window", "overlap",      "max_active_runs"};
const std::vector<std::string> kAlertKeys = {"events", "webhook", "command"};
const std::vector<std::string> kAlertEvents = {
    "task_failed", "task_timeout", "retries_exhausted", "slow_task",
    "run_failed",  "run_canceled", "run_succeeded",     "run_failures_handled"};

// Reads one pipeline file: its top level here, imports, policies and
// templates through the Library, each task through a TaskParser.
class Parser {
 public:
  explicit Parser(const ParseOptions& options)
      : options_(options), guard_(options, &report_), library_(options, &report_, &guard_) {}

  ParseResult Run(std::string_view text, const std::string& path) {
    ParseResult result;
    try {
      RunUnguarded(text, path, &result);
    } catch (const std::exception& e) {
      // yaml-cpp throws from surprising places; an input must never crash us.
      report_.Error(SourceLocation{path, 0, 0},
                    std::string("could not read the pipeline: ") + e.what());
      result.pipeline.reset();
    }
    std::vector<Diagnostic>& diagnostics = report_.diagnostics();
    std::stable_sort(
        diagnostics.begin(), diagnostics.end(), [&](const Diagnostic& a, const Diagnostic& b) {
          return std::make_tuple(a.where.file != path, a.where.file, a.where.line, a.where.column) <
                 std::make_tuple(b.where.file != path, b.where.file, b.where.line, b.where.column);
        });
    if (HasErrors(diagnostics)) result.pipeline.reset();
    result.diagnostics = std::move(diagnostics);
    return result;
  }

 private:
  void RunUnguarded(std::string_view text, const std::string& path, ParseResult* result) {
    std::error_code ec;
    fs::path absolute = fs::absolute(fs::path(path), ec);
    if (ec) absolute = fs::path(path);
    absolute = absolute.lexically_normal();
    base_dir_ = absolute.parent_path();
    std::shared_ptr<const YamlTree> tree = guard_.Parse(text, path);
    if (!tree) return;
    const YamlNode root = tree->root();
    if (!root.IsMap()) {
      report_.Error(
          path, root,
          std::string("the top level must be a mapping (version:, pipeline:, ...), found ") +
              KindName(root));
      return;
    }
    library_.ConfineImportsTo(base_dir_);
    library_.OpenFile(internal::Library::CanonicalKey(absolute), path);
    PipelineSpec spec;
    spec.source_file = absolute.string();
    ParsePipelineRoot(root, path, &spec);
    library_.CloseFile();
    // The documents are read: let them go before the checks build their
    // graph (`validate` of a 1M-task DAG peaked at 1,309 MB before, 1,108 after).
    library_.ReleaseDocuments();
    tree.reset();

    CheckOptions check;
    check.chain_warning_threshold = options_.chain_warning_threshold;
    std::vector<Diagnostic> found;
    CheckPipeline(spec, check, &found);
    for (Diagnostic& d : found) report_.Add(d.severity, d.where, std::move(d.message));
    result->pipeline = std::move(spec);
  }

  void ParsePipelineRoot(const YamlNode& root, const std::string& file, PipelineSpec* spec) {
    std::vector<Field> fields = report_.Fields(root, file, kPipelineKeys, "the top level");
    std::map<std::string, const Field*> by_key;
    for (const Field& f : fields) by_key[f.key] = &f;
    auto find = [&](const char* key) -> const Field* {
      auto it = by_key.find(key);
      return it == by_key.end() ? nullptr : it->second;
    };
    SourceLocation top{file, 1, 1};

    if (const Field* f = find("version")) {
      if (report_.GetString(*f, &spec->version) && spec->version != "1.0") {
        report_.Error(FieldReader::At(*f), "unsupported version " + Quote(spec->version) +
                                               " (this build reads \"1.0\")");
      }
    } else {
      report_.Error(top, "missing required key 'version' (write version: \"1.0\")");
    }

    bool name_given = false;
    if (const Field* f = find("name")) {
      name_given = report_.GetString(*f, &spec->name);
      if (name_given && !IsPipelineName(spec->name)) {
        report_.Error(FieldReader::At(*f),
                      "pipeline name " + Quote(spec->name) +
                          " must be dot-separated words of a-z, 0-9, _ and - (e.g. order.sync)");
        name_given = false;
      } else if (name_given && spec->name.find('.') == std::string::npos) {
        NameWithoutDomain(FieldReader::At(*f), "pipeline name " + Quote(spec->name));
      }
    }
    if (!name_given && !find("name")) {
      spec->name = fs::path(file).stem().string();
      if (spec->name.find('.') == std::string::npos) {
        NameWithoutDomain(top, "pipeline name " + Quote(spec->name) + " (from the file name)");
      }
    }

    if (const Field* f = find("imports")) library_.LoadImports(*f);
    if (const Field* f = find("retry_policy")) library_.LoadPolicies(*f);
    if (const Field* f = find("templates")) library_.LoadTemplates(*f);

    if (const Field* f = find("params")) {
      report_.GetStringMap(*f, /*env_names=*/true, &spec->params);
    }
    params_ = spec->params;
    if (const Field* f = find("concurrency")) report_.GetInt(*f, 0, 1'000'000, &spec->concurrency);
    ParseSchedule(find, spec);
    if (const Field* f = find("alerts")) ParseAlerts(*f, spec);

    const Field* pipeline = find("pipeline");
    if (pipeline == nullptr) {
      report_.Error(top, "missing required key 'pipeline' (the list of tasks)");
      return;
    }
    if (!pipeline->value.IsSequence()) {
      report_.Error(
          pipeline->value.IsNull() ? FieldReader::KeyAt(*pipeline) : FieldReader::At(*pipeline),
          std::string("'pipeline' must be a list of tasks, found ") + KindName(pipeline->value));
      return;
    }
    if (pipeline->value.size() == 0) {
      report_.Error(FieldReader::At(*pipeline), "'pipeline' has no tasks");
      return;
    }
    internal::TaskParser tasks(&report_, &library_, base_dir_, &params_);
    // One buffer for every task: growing by doubling moved each TaskSpec
    // (904 bytes) about twice and faulted in both buffers (a 5,000-task file
    // spent 17 % of `validate` there).
    spec->tasks.reserve(spec->tasks.size() + pipeline->value.size());
    for (YamlNode task : pipeline->value.items()) tasks.Parse(task, file, spec);
  }

  // schedule: and the keys that say how it fires (sched).
  template <typename Find>
  void ParseSchedule(const Find& find, PipelineSpec* spec) {
    if (const Field* f = find("schedule")) {
      if (report_.GetString(*f, &spec->schedule)) {
        Status s = ValidateCron(spec->schedule);
        if (!s.ok()) report_.Error(FieldReader::At(*f), s.message());
      }
    }
    for (const char* key :
         {"timezone", "catchup", "catchup_window", "overlap", "max_active_runs"}) {
      const Field* f = find(key);
      if (f != nullptr && spec->schedule.empty()) {
        report_.Error(FieldReader::KeyAt(*f),
                      std::string("'") + key + "' is only meaningful with a 'schedule'");
      }
    }
    if (const Field* f = find("timezone")) {
      if (report_.GetString(*f, &spec->timezone)) {
        auto zone = TimeZone::Load(spec->timezone);
        if (!zone.ok()) report_.Error(FieldReader::At(*f), zone.status().message());
      }
    }
    if (const Field* f = find("catchup")) {
      report_.GetChoice(*f, {"none", "latest", "all"}, &spec->catchup);
    }
    if (const Field* f = find("catchup_window")) {
      if (report_.GetDuration(*f, &spec->catchup_window) && spec->catchup_window.count() <= 0) {
        report_.Error(FieldReader::At(*f), "'catchup_window' must be longer than 0s");
      }
    }
    if (const Field* f = find("overlap")) {
      report_.GetChoice(*f, {"skip", "queue", "allow"}, &spec->overlap);
    }
    if (const Field* f = find("max_active_runs")) {
      report_.GetInt(*f, 1, 10000, &spec->max_active_runs);
      if (spec->overlap == "allow") {
        report_.Error(FieldReader::KeyAt(*f),
                      "'max_active_runs' does not apply with overlap: allow (every fire starts a "
                      "run); use overlap: queue or skip");
      }
    }
  }

  void NameWithoutDomain(const SourceLocation& where, const std::string& what) {
    std::string message = what + " has no domain prefix (write e.g. name: order.sync)";
    if (options_.strict) {
      report_.Error(where, message);
    } else {
      report_.Warning(where, message);
    }
  }
  void ParseAlerts(const Field& f, PipelineSpec* spec) {
    if (!f.value.IsSequence()) {
      report_.Error(FieldReader::At(f),
                    std::string("'alerts' must be a list, found ") + KindName(f.value));
      return;
    }
    for (YamlNode item : f.value.items()) {
      if (!item.IsMap()) {
        report_.Error(f.file, item,
                      std::string("each alert must be a mapping, found ") + KindName(item));
        continue;
      }
      AlertRule rule;
      for (const Field& a : report_.Fields(item, f.file, kAlertKeys, "an alert")) {
        if (a.key == "events") {
          std::vector<YamlNode> events;
          if (a.value.IsSequence()) {
            for (YamlNode e : a.value.items()) events.push_back(e);
          } else {
            events.push_back(a.value);
          }
          for (YamlNode e : events) {
            if (!e.IsScalar()) {
              report_.Error(f.file, e, "alert events must be text");
              continue;
            }
            std::string event(e.Scalar());
            if (std::find(kAlertEvents.begin(), kAlertEvents.end(), event) == kAlertEvents.end()) {
              report_.Error(
                  f.file, e,
                  "unknown alert event " + Quote(event) + DidYouMean(event, kAlertEvents));
              continue;
            }
            rule.events.push_back(std::move(event));
          }
        } else if (a.key == "webhook") {
          if (report_.GetString(a, &rule.webhook) && !StartsWith(rule.webhook, "http://") &&
              !StartsWith(rule.webhook, "https://")) {
            report_.Error(FieldReader::At(a), "alert webhook must be an http:// or https:// URL");
          }
        } else if (a.key == "command") {
          report_.GetString(a, &rule.command);
        }
      }
      if (rule.events.empty())
        report_.Error(f.file, item, "alert needs 'events' (e.g. [run_failed])");
      if (rule.webhook.empty() && rule.command.empty()) {
        report_.Error(f.file, item, "alert needs a 'webhook' or a 'command'");
      }
      spec->alerts.push_back(std::move(rule));
    }
  }

  ParseOptions options_;
  FieldReader report_;
  internal::YamlGuard guard_;
  internal::Library library_;
  fs::path base_dir_;
  std::map<std::string, std::string> params_;
};

}  // namespace

ParseResult ParsePipelineText(std::string_view yaml, const std::string& path,
                              const ParseOptions& options) {
  Parser parser(options);
  return parser.Run(yaml, path);
}

ParseResult LoadPipelineFile(const std::string& path, const ParseOptions& options) {
  std::string text;
  std::string why = internal::ReadFileText(path, options.max_file_bytes, &text);
  if (!why.empty()) {
    ParseResult result;
    result.diagnostics.push_back(
        Diagnostic{Diagnostic::Severity::kError, SourceLocation{path, 0, 0}, why});
    return result;
  }
  return ParsePipelineText(text, path, options);
}

}  // namespace apollo11::dsl
