#include "dsl/task_parser.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "dsl/credentials.h"
#include "dsl/suggest.h"
#include "dsl/task_fields.h"
#include "dsl/task_types.h"

namespace apollo11::dsl::internal {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kDependencyKeys = {"task", "on"};
const std::vector<std::string> kHttpMethods = {"GET",    "POST", "PUT",    "PATCH",
                                               "DELETE", "HEAD", "OPTIONS"};

}  // namespace

// What a reader of the list is given: the member it fills, or the whole task
// for a key that fills none.
#define APOLLO11_TASK_TARGET_kValue(task, member) Writable(&(task)->member)
#define APOLLO11_TASK_TARGET_kCustom(task, member) &(task)->member
#define APOLLO11_TASK_TARGET_kNone(task, member) (task)
#define APOLLO11_TASK_READER(key, member, reader, owner, snapshot, wire)   \
  {key, [](TaskParser& p, const Field& f, TaskSpec* t) {                   \
     return p.Read##reader(f, APOLLO11_TASK_TARGET_##snapshot(t, member)); \
   }},

const std::unordered_map<std::string_view, TaskParser::Reader>& TaskParser::Readers() {
  static const auto* readers =
      new std::unordered_map<std::string_view, Reader>{APOLLO11_TASK_FIELDS(APOLLO11_TASK_READER)};
  return *readers;
}

#undef APOLLO11_TASK_READER

void TaskParser::Parse(const YamlNode& node, const std::string& file, PipelineSpec* spec) {
  if (!node.IsMap()) {
    report_->Error(
        file, node,
        std::string("each pipeline entry must be a task mapping (id:, type:, ...), found ") +
            KindName(node));
    return;
  }
  const std::vector<Field> own = report_->Fields(node, file, TaskKeys(), "a task");
  const std::vector<Field> fields = WithTemplates(own);

  TaskSpec task;
  task.where = Loc(file, node.Mark());
  std::map<std::string, const Field*> by_key;
  for (const Field& f : fields) by_key[f.key] = &f;

  bool has_id = false;
  if (auto it = by_key.find("id"); it != by_key.end()) {
    has_id = ReadId(*it->second, &task.id);
  } else {
    report_->Error(task.where, "task has no 'id'");
  }
  const std::string label = has_id ? "task " + Quote(task.id) : std::string("task");

  bool has_type = false;
  if (auto it = by_key.find("type"); it != by_key.end()) {
    has_type = ReadType(*it->second, &task.type);
  } else if (!HasKey(own, "extends")) {  // an unknown template was reported already
    report_->Error(task.where, label + " has no 'type' (one of " + TaskTypeNameList() + ")");
  }

  for (const Field& f : fields) {
    if (f.key == "id" || f.key == "type") continue;  // read first
    const TaskFieldInfo* info = FindTaskField(f.key);
    // A db task's `script:` is a .sql file (python owns the key in the list).
    const bool db_script = f.key == "script" && task.type == TaskType::kDb;
    if (has_type && info != nullptr && info->owner && *info->owner != task.type && !db_script) {
      report_->Error(FieldReader::KeyAt(f), Quote(f.key) + " is not a field of " +
                                                ToString(task.type) + " tasks (" +
                                                ToString(*info->owner) + " tasks use it)");
      continue;
    }
    if (has_type) {
      const std::string_view refused = RefusedKeyReason(task.type, f.key);
      if (!refused.empty()) {
        const std::string type = ToString(task.type);
        const char* article = type == "http" ? "an " : "a ";
        report_->Error(FieldReader::KeyAt(f), Quote(f.key) + " does nothing on " + article + type +
                                                  " task: " + std::string(refused) + "; remove it");
        continue;
      }
    }
    auto reader = Readers().find(f.key);
    if (reader == Readers().end()) {
      report_->Error(FieldReader::KeyAt(f),
                     "internal: unhandled task key " + Quote(f.key) + " in " + label);
      continue;
    }
    reader->second(*this, f, &task);
    if (f.key == "foreach" && f.value.IsMap()) ReadForeachItems(f, Writable(&task.foreach_items));
  }
  if (has_type && task.type == TaskType::kDb) LoadDbScript(&task, by_key);
  if (has_type && task.type == TaskType::kPython) LoadPythonScript(&task, by_key);
  if (has_type) RequireTypeFields(task, label, by_key);
  if (has_id) spec->tasks.push_back(std::move(task));
}

std::vector<Field> TaskParser::WithTemplates(const std::vector<Field>& own) {
  std::vector<Field> fields;
  const std::map<std::string, Template>& templates = library_->templates();
  for (const Field& f : own) {
    if (f.key != "extends") continue;
    std::string name;
    if (!report_->GetString(f, &name)) continue;
    auto t = templates.find(name);
    if (t == templates.end()) {
      std::vector<std::string> names;
      for (const auto& [n, unused] : templates) names.push_back(n);
      report_->Error(FieldReader::At(f),
                     "unknown template " + Quote(name) + DidYouMean(name, names) +
                         (templates.empty() ? " (no templates are defined or imported)" : ""));
      continue;
    }
    if (!library_->ChargeTemplateUse(t->second)) {
      report_->Error(FieldReader::At(f),
                     "templates extended by the tasks so far copy more than " +
                         std::to_string(library_->max_expanded_bytes()) +
                         " bytes into them (the limit on a pipeline's expanded size); template " +
                         Quote(name) + " is " + std::to_string(t->second.bytes) + " bytes");
      continue;
    }
    for (const Field& tf : t->second.fields) {
      if (!HasKey(own, tf.key)) fields.push_back(tf);
    }
  }
  for (const Field& f : own) {
    if (f.key != "extends") fields.push_back(f);
  }
  return fields;
}

void TaskParser::RequireTypeFields(const TaskSpec& task, const std::string& label,
                                   const std::map<std::string, const Field*>& by_key) {
  // A member is filled only from a key of by_key (templates' included), so
  // the key alone tells whether the task has it.
  const std::string_view required = InfoOf(task.type).required;
  if (required.empty()) return;
  std::string wanted;
  for (std::string_view rest = required; !rest.empty();) {
    const size_t bar = std::min(rest.find('|'), rest.size());
    const std::string key(rest.substr(0, bar));
    if (by_key.count(key) > 0) return;
    wanted += (wanted.empty() ? "'" : "' or '") + key;
    rest.remove_prefix(std::min(bar + 1, rest.size()));
  }
  report_->Error(task.where,
                 std::string(ToString(task.type)) + " " + label + " needs " + wanted + "'");
}

bool TaskParser::ReadId(const Field& f, std::string* id) {
  if (!report_->GetString(f, id)) return false;
  if (!MatchesIdChars(*id)) {
    report_->Error(FieldReader::At(f),
                   "task id " + Quote(*id) + " must be lowercase letters, digits and _");
  }
  return true;  // a badly spelt id still names the task in messages
}

bool TaskParser::ReadType(const Field& f, TaskType* type) {
  std::string word;
  if (!report_->GetChoice(f, TaskTypeNames(), &word)) return false;
  *type = *ParseTaskType(word);  // one of the names
  return true;
}

bool TaskParser::ReadText(const Field& f, std::string* out) { return report_->GetString(f, out); }

bool TaskParser::ReadTextOrEmpty(const Field& f, std::string* out) {
  return report_->GetString(f, out, /*allow_empty=*/true);
}

bool TaskParser::ReadScriptPath(const Field& f, std::string* out) {
  std::string script;
  if (!report_->GetString(f, &script)) return false;
  if (!library_->reads_files()) {
    // Nothing is looked up on this disk, which is not the author's: a db
    // script is refused (LoadDbScript), a python one checked by the type.
    *out = script;
    return true;
  }
  fs::path p = fs::path(script).is_absolute() ? fs::path(script) : base_dir_ / script;
  p = p.lexically_normal();
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) {
    report_->Error(FieldReader::At(f),
                   "script " + Quote(script) + " not found (looked for " + p.string() + ")");
    return false;
  }
  *out = p.string();
  return true;
}

bool TaskParser::ReadTextList(const Field& f, std::vector<std::string>* out) {
  return report_->GetStringList(f, out);
}

bool TaskParser::ReadHttpUrl(const Field& f, std::string* out) {
  if (!report_->GetString(f, out)) return false;
  if (!StartsWith(*out, "http://") && !StartsWith(*out, "https://")) {
    report_->Error(FieldReader::At(f), "'url' must start with http:// or https://");
    return false;
  }
  const std::string found = CredentialInUrl(*out, UrlField::kHttpUrl);
  if (!found.empty()) {
    report_->Error(FieldReader::At(f),
                   "'url' must not hold credentials (it has " + found +
                       "; credentials never sit in the pipeline): send them in a header");
    return false;
  }
  return true;
}

bool TaskParser::ReadHttpMethod(const Field& f, std::string* out) {
  std::string method;
  if (!report_->GetString(f, &method)) return false;
  for (char& c : method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (std::find(kHttpMethods.begin(), kHttpMethods.end(), method) == kHttpMethods.end()) {
    report_->Error(FieldReader::At(f), "unknown HTTP method " + Quote(f.value.Scalar()) +
                                           DidYouMean(method, kHttpMethods));
    return false;
  }
  *out = method;
  return true;
}

bool TaskParser::ReadTextMap(const Field& f, std::map<std::string, std::string>* out) {
  return report_->GetStringMap(f, /*env_names=*/false, out);
}

bool TaskParser::ReadEnvMap(const Field& f, std::map<std::string, std::string>* out) {
  return report_->GetStringMap(f, /*env_names=*/true, out);
}

bool TaskParser::ReadHttpStatuses(const Field& f, std::vector<int>* out) {
  return report_->GetIntList(f, 100, 599, out);
}

bool TaskParser::ReadDependsOn(const Field& f, std::vector<Dependency>* out) {
  auto add_name = [&](const YamlNode& n) {
    if (n.Scalar().empty()) {
      report_->Error(f.file, n, "a dependency must name a task");
      return;
    }
    out->push_back(
        Dependency{std::string(n.Scalar()), DependencyCondition::kSuccess, Loc(f.file, n.Mark())});
  };
  if (f.value.IsScalar()) {
    add_name(f.value);
  } else if (f.value.IsMap()) {
    ReadDependencyEntry(f, f.value, out);
  } else if (f.value.IsSequence()) {
    for (YamlNode item : f.value.items()) {
      if (item.IsScalar()) {
        add_name(item);
      } else if (item.IsMap()) {
        ReadDependencyEntry(f, item, out);
      } else {
        report_->Error(
            f.file, item,
            std::string("each dependency must be a task name or {task: NAME, on: CONDITION}, "
                        "found ") +
                KindName(item));
      }
    }
  } else {
    report_->Error(FieldReader::KeyAt(f), "'depends_on' needs a value");
    return false;
  }
  DropRepeatedDependencies(out);
  return true;
}

void TaskParser::DropRepeatedDependencies(std::vector<Dependency>* deps) {
  if (deps->size() < 2) return;
  struct Seen {
    size_t first_repeat;  // index in `deps` of its second listing
    size_t times;
  };
  std::unordered_map<std::string_view, Seen>
      seen[static_cast<size_t>(DependencyCondition::kDone) + 1];
  std::vector<Dependency> kept;
  for (size_t i = 0; i < deps->size(); ++i) {
    const Dependency& d = (*deps)[i];
    auto [it, first] = seen[static_cast<size_t>(d.on)].emplace(d.task, Seen{i, 0});
    if (++it->second.times == 2) it->second.first_repeat = i;
    if (first) kept.push_back(d);
  }
  if (kept.size() == deps->size()) return;
  for (const auto& by_condition : seen) {
    for (const auto& [task, s] : by_condition) {
      if (s.times < 2) continue;
      const Dependency& d = (*deps)[s.first_repeat];
      report_->Warning(d.where, "dependency " + Quote(d.task) + " (on " + ToString(d.on) +
                                    ") is listed " + std::to_string(s.times) +
                                    " times; it counts once");
    }
  }
  *deps = std::move(kept);
}

void TaskParser::ReadDependencyEntry(const Field& f, const YamlNode& n,
                                     std::vector<Dependency>* out) {
  Dependency d;
  d.where = Loc(f.file, n.Mark());
  bool has_task = false;
  for (const Field& e :
       report_->Fields(n, f.file, kDependencyKeys, "a dependency entry (task, on)")) {
    if (e.key == "task") {
      has_task = report_->GetString(e, &d.task);
      if (has_task) d.where = FieldReader::At(e);
    } else {
      std::string on;
      if (report_->GetChoice(e, {"success", "failure", "timeout", "done"}, &on)) {
        d.on = on == "success"   ? DependencyCondition::kSuccess
               : on == "failure" ? DependencyCondition::kFailure
               : on == "timeout" ? DependencyCondition::kTimeout
                                 : DependencyCondition::kDone;
      }
    }
  }
  if (!has_task) {
    if (!n["task"].IsDefined()) report_->Error(f.file, n, "dependency entry needs 'task'");
    return;
  }
  out->push_back(std::move(d));
}

bool TaskParser::ReadTrigger(const Field& f, Trigger* out) {
  std::string t;
  if (!report_->GetChoice(f, {"all", "any"}, &t)) return false;
  *out = t == "all" ? Trigger::kAll : Trigger::kAny;
  return true;
}

bool TaskParser::ReadRetry(const Field& f, RareOptional<RetryPolicy>* out) {
  if (f.value.IsMap()) {
    *out = library_->ParseRetryMap(f.value, f.file);
    return out->has_value();
  }
  std::string ref;
  if (!report_->GetString(f, &ref)) return false;
  std::string name = StartsWith(ref, "retry_policy.") ? ref.substr(13) : ref;
  const std::map<std::string, NamedPolicy>& policies = library_->policies();
  auto it = policies.find(name);
  if (it == policies.end()) {
    std::vector<std::string> names;
    for (const auto& [n, unused] : policies) names.push_back("retry_policy." + n);
    report_->Error(FieldReader::At(f),
                   "unknown retry policy " + Quote(ref) +
                       DidYouMean("retry_policy." + name, names) +
                       (policies.empty() ? " (no retry_policy is defined or imported)" : ""));
    return false;
  }
  *out = it->second.policy;  // nullopt if the policy itself had errors (already reported)
  return out->has_value();
}

bool TaskParser::ReadTimeout(const Field& f, RareOptional<Millis>* out) {
  Millis t{0};
  if (!report_->GetDuration(f, &t)) return false;
  if (t.count() <= 0) {
    report_->Error(FieldReader::At(f), "'timeout' must be longer than 0s");
    return false;
  }
  *out = t;
  return true;
}

bool TaskParser::ReadGroup(const Field& f, std::string* out) {
  if (!report_->GetString(f, out)) return false;
  for (char c : *out) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) {
      report_->Error(FieldReader::At(f), "'group' must be a word of letters, digits, _, - and .");
      return false;
    }
  }
  return true;
}

// `labels: [gpu, ssd]`: words a worker must all announce (--labels).
bool TaskParser::ReadLabels(const Field& f, std::vector<std::string>* out) {
  std::vector<std::string> labels;
  if (!report_->GetStringList(f, &labels)) return false;
  for (const std::string& label : labels) {
    bool word = !label.empty();
    for (char c : label) {
      word =
          word && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
    }
    if (!word) {
      report_->Error(
          FieldReader::At(f),
          "each label must be a word of letters, digits, _, - and ., found " + Quote(label));
      return false;
    }
    if (std::find(out->begin(), out->end(), label) != out->end()) {
      report_->Error(FieldReader::At(f), "label " + Quote(label) + " is listed twice");
      return false;
    }
    out->push_back(label);
  }
  return true;
}

bool TaskParser::ReadPriority(const Field& f, int* out) {
  return report_->GetInt(f, -1'000'000, 1'000'000, out);
}

bool TaskParser::ReadKeyTemplate(const Field& f, std::string* out) {
  if (!report_->GetString(f, out)) return false;
  const std::string& text = *out;
  size_t pos = 0;
  while ((pos = text.find("${", pos)) != std::string::npos) {
    size_t end = text.find('}', pos);
    if (end == std::string::npos) {
      report_->Error(FieldReader::At(f), "'idempotency_key' has an unterminated ${...}");
      return false;
    }
    std::string name = text.substr(pos + 2, end - pos - 2);
    bool ok = name == "run_id" || name == "task_id" ||
              (StartsWith(name, "params.") && params_->count(name.substr(7)));
    if (!ok) {
      std::string why = StartsWith(name, "params.") ? " (no such param)" : "";
      report_->Error(FieldReader::At(f), "unknown placeholder ${" + name +
                                             "} in 'idempotency_key'" + why +
                                             "; use ${run_id}, ${task_id} or ${params.NAME}");
    }
    pos = end + 1;
  }
  return true;
}

bool TaskParser::ReadExtends(const Field&, TaskSpec*) {
  return true;  // templates are merged before the fields are read (WithTemplates)
}

}  // namespace apollo11::dsl::internal
