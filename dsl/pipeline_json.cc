#include "dsl/pipeline_json.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/json_dump.h"
#include "dsl/pipeline_json_internal.h"
#include "dsl/task_fields.h"

namespace apollo11::dsl {
namespace {

using nlohmann::json;

// A number from `j` as T. nlohmann's get<int>() casts whatever number it
// holds: a double beyond int's range is undefined behaviour and a too large
// integer silently wraps. Pipeline JSON comes from clients, so every number
// is type- and range-checked here instead (both found by fuzz/).
template <typename T>
T NumberFrom(const json& j, const char* key) {
  if constexpr (std::is_floating_point_v<T>) {
    if (!j.is_number()) {
      throw std::invalid_argument(std::string("'") + key + "' must be a number, found " +
                                  j.type_name());
    }
    return j.get<T>();
  } else {
    if (!j.is_number_integer()) {
      throw std::invalid_argument(
          std::string("'") + key + "' must be an integer, found " +
          (j.is_number() ? std::string("a floating-point number") : j.type_name()));
    }
    bool fits = j.is_number_unsigned()
                    ? j.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                    : j.get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                          j.get<int64_t>() <= static_cast<int64_t>(std::numeric_limits<T>::max());
    if (!fits) {
      throw std::out_of_range(std::string("'") + key + "' = " + j.dump() + " is out of range");
    }
    return j.is_number_unsigned() ? static_cast<T>(j.get<uint64_t>())
                                  : static_cast<T>(j.get<int64_t>());
  }
}

// `j` as T: numbers and lists of numbers through NumberFrom, the rest (text,
// lists and maps of text) through nlohmann, which checks their types.
template <typename T>
T ValueFrom(const json& j, const char* key) {
  if constexpr (std::is_arithmetic_v<T>) {
    return NumberFrom<T>(j, key);
  } else if constexpr (std::is_same_v<T, std::vector<int>>) {
    if (!j.is_array()) {
      throw std::invalid_argument(std::string("'") + key + "' must be a list, found " +
                                  j.type_name());
    }
    std::vector<int> out;
    for (const json& item : j) out.push_back(NumberFrom<int>(item, key));
    return out;
  } else {
    return j.get<T>();
  }
}

// A location names its file only when it is not the pipeline's own file:
// most locations are in it, and a 100k-task snapshot would otherwise repeat
// the path some 300,000 times.
json LocationJson(const SourceLocation& l, const std::string& source_file) {
  json j{{"line", l.line}, {"column", l.column}};
  if (l.file != source_file) j["file"] = l.file.str();
  return j;
}

// Locations in the pipeline's own file share `source_file`'s allocation.
SourceLocation LocationFrom(const json& j, const SharedText& source_file) {
  SourceLocation l;
  if (j.is_null()) return l;
  l.file = j.contains("file") ? SharedText(j.at("file").get<std::string>()) : source_file;
  l.line = NumberFrom<int>(j.at("line"), "line");
  l.column = NumberFrom<int>(j.at("column"), "column");
  return l;
}

json RetryJson(const RetryPolicy& r) {
  return json{{"max_retries", r.max_retries},
              {"delay_ms", r.delay.count()},
              {"backoff", ToString(r.backoff)},
              {"max_delay_ms", r.max_delay.count()},
              {"jitter", r.jitter},
              {"on_exit_codes", r.on_exit_codes}};
}

template <typename E, size_t N>
E EnumFrom(const json& j, const E (&values)[N]) {
  const std::string text = j.get<std::string>();
  for (E v : values) {
    if (text == ToString(v)) return v;
  }
  throw std::invalid_argument("unknown value '" + text + "'");
}

using json_internal::kBackoffs;
using json_internal::kConditions;
using json_internal::kTaskTypeValues;
using json_internal::kTriggers;

// Reads `key` into `out` when present; absent keys keep the model default.
template <typename T>
void Read(const json& j, const char* key, T* out) {
  auto it = j.find(key);
  if (it != j.end()) *out = ValueFrom<T>(*it, key);
}
template <typename T, typename P>
void Read(const json& j, const char* key, Rare<T, P>* out) {
  auto it = j.find(key);
  if (it != j.end()) *out = ValueFrom<T>(*it, key);
}

RetryPolicy RetryFrom(const json& j) {
  RetryPolicy r;
  Read(j, "max_retries", &r.max_retries);
  int64_t ms = r.delay.count();
  Read(j, "delay_ms", &ms);
  r.delay = Millis(ms);
  ms = r.max_delay.count();
  Read(j, "max_delay_ms", &ms);
  r.max_delay = Millis(ms);
  if (j.contains("backoff")) r.backoff = EnumFrom(j.at("backoff"), kBackoffs);
  Read(j, "jitter", &r.jitter);
  Read(j, "on_exit_codes", &r.on_exit_codes);
  return r;
}

// Only what differs from a default TaskSpec is written (TaskFrom keeps the
// defaults for absent keys): a noop task is its id, type, location and
// dependencies, not two dozen empty fields. The kValue fields of
// APOLLO11_TASK_FIELDS are written and read as their members; the kCustom
// ones by hand here.
json TaskJson(const TaskSpec& t, const std::string& source_file) {
  static const TaskSpec kDefault;
  json j{{"id", t.id}, {"type", ToString(t.type)}};
  auto put = [&](const char* key, const auto& value, const auto& fallback) {
    if (value != fallback) j[key] = Unboxed(value);
  };
  if (t.where != SourceLocation{}) j["where"] = LocationJson(t.where, source_file);
#define APOLLO11_TASK_FIELD_PUT(key, member, reader, owner, snapshot, wire) \
  APOLLO11_TASK_FIELD_IF_##snapshot(put(key, t.member, kDefault.member);)
  APOLLO11_TASK_FIELDS(APOLLO11_TASK_FIELD_PUT)
#undef APOLLO11_TASK_FIELD_PUT
  if (!t.depends_on.empty()) {
    json deps = json::array();
    for (const Dependency& d : t.depends_on) {
      json dep{{"task", d.task}};
      if (d.on != DependencyCondition::kSuccess) dep["on"] = ToString(d.on);
      if (d.where != SourceLocation{}) dep["where"] = LocationJson(d.where, source_file);
      deps.push_back(std::move(dep));
    }
    j["depends_on"] = std::move(deps);
  }
  if (t.trigger != kDefault.trigger) j["trigger"] = ToString(t.trigger);
  if (t.retry) j["retry"] = RetryJson(*t.retry);
  if (t.timeout) j["timeout_ms"] = t.timeout->count();
  if (!t.foreach_items.empty()) j["foreach_items"] = t.foreach_items;
  return j;
}

// Appends `"s"` to `out`; false (out unusable) when `s` is not plain.
bool AppendPlain(std::string* out, std::string_view s) {
  if (!IsPlainJsonText(s)) return false;
  out->push_back('"');
  out->append(s);
  out->push_back('"');
  return true;
}

// LocationJson(l, source_file).dump(), keys in order; false as above.
bool AppendLocation(std::string* out, const SourceLocation& l, const std::string& source_file) {
  out->append("{\"column\":").append(std::to_string(l.column));
  if (l.file != source_file) {
    out->append(",\"file\":");
    if (!AppendPlain(out, l.file.str())) return false;
  }
  out->append(",\"line\":").append(std::to_string(l.line)).push_back('}');
  return true;
}

// TaskJson(t, source_file).dump() for the tasks most pipelines are made of,
// written directly (the DOM of each task cost about 3 µs; a 5,000-task
// snapshot took some 15 ms): a task whose only fields besides id, type,
// location, dependencies, trigger and timeout may be a command, every text
// plain ASCII. Anything else is nullopt, and TaskJson writes it. The keys
// go in std::map order, as nlohmann's objects keep them; the DSL tests
// compare the two writers byte for byte. snapshot_text.h's ReadPlainTask
// reads exactly this shape back: change the two together.
std::optional<std::string> PlainTaskJson(const TaskSpec& t, const std::string& source_file) {
  static const TaskSpec kDefault;
  if (t.retry || !t.foreach_items.empty()) return std::nullopt;
  bool other = false;
#define APOLLO11_TASK_FIELD_OTHER(key, member, reader, owner, snapshot, wire) \
  APOLLO11_TASK_FIELD_IF_##snapshot(                                          \
      other = other || (std::string_view(key) != "command" && t.member != kDefault.member);)
  APOLLO11_TASK_FIELDS(APOLLO11_TASK_FIELD_OTHER)
#undef APOLLO11_TASK_FIELD_OTHER
  if (other) return std::nullopt;
  std::string out = "{";
  if (!t.command.empty()) {
    out.append("\"command\":");
    if (!AppendPlain(&out, t.command.get())) return std::nullopt;
    out.push_back(',');
  }
  if (!t.depends_on.empty()) {
    out.append("\"depends_on\":[");
    for (size_t i = 0; i < t.depends_on.size(); ++i) {
      const Dependency& d = t.depends_on[i];
      out.append(i == 0 ? "{" : ",{");
      if (d.on != DependencyCondition::kSuccess) {
        out.append("\"on\":\"").append(ToString(d.on)).append("\",");
      }
      out.append("\"task\":");
      if (!AppendPlain(&out, d.task)) return std::nullopt;
      if (d.where != SourceLocation{}) {
        out.append(",\"where\":");
        if (!AppendLocation(&out, d.where, source_file)) return std::nullopt;
      }
      out.push_back('}');
    }
    out.append("],");
  }
  out.append("\"id\":");
  if (!AppendPlain(&out, t.id)) return std::nullopt;
  if (t.timeout) out.append(",\"timeout_ms\":").append(std::to_string(t.timeout->count()));
  if (t.trigger != kDefault.trigger)
    out.append(",\"trigger\":\"").append(ToString(t.trigger)).push_back('"');
  out.append(",\"type\":\"").append(ToString(t.type)).push_back('"');
  if (t.where != SourceLocation{}) {
    out.append(",\"where\":");
    if (!AppendLocation(&out, t.where, source_file)) return std::nullopt;
  }
  out.push_back('}');
  return out;
}

// Every field of `spec` but its tasks, with `tasks` in their place: the one
// list of the root's fields, for ToJson and CanonicalJson alike.
json RootJson(const PipelineSpec& spec, json tasks) {
  json alerts = json::array();
  for (const AlertRule& a : spec.alerts) {
    alerts.push_back(json{{"events", a.events}, {"webhook", a.webhook}, {"command", a.command}});
  }
  json root{{"version", spec.version},   {"name", spec.name},     {"source_file", spec.source_file},
            {"tasks", std::move(tasks)}, {"params", spec.params}, {"concurrency", spec.concurrency},
            {"schedule", spec.schedule}, {"alerts", alerts}};
  if (!spec.schedule.empty()) {  // sched: absent otherwise, so older hashes hold
    root["timezone"] = spec.timezone;
    root["catchup"] = spec.catchup;
    root["catchup_window_ms"] = spec.catchup_window.count();
    root["overlap"] = spec.overlap;
    root["max_active_runs"] = spec.max_active_runs;
  }
  return root;
}

}  // namespace

namespace json_internal {

TaskSpec TaskFrom(const json& j, const SharedText& source_file, Locations locations) {
  auto read_location = [&](const json& at, Rare<SourceLocation>* where) {
    if (!at.contains("where")) return;
    SourceLocation read = LocationFrom(at.at("where"), source_file);
    if (locations == Locations::kKeep) *where = std::move(read);
  };
  TaskSpec t;
  t.id = j.at("id").get<std::string>();
  t.type = EnumFrom(j.at("type"), kTaskTypeValues);
  read_location(j, &t.where);
#define APOLLO11_TASK_FIELD_READ(key, member, reader, owner, snapshot, wire) \
  APOLLO11_TASK_FIELD_IF_##snapshot(Read(j, key, &t.member);)
  APOLLO11_TASK_FIELDS(APOLLO11_TASK_FIELD_READ)
#undef APOLLO11_TASK_FIELD_READ
  if (j.contains("depends_on")) {
    t.depends_on.reserve(j.at("depends_on").size());
    for (const json& d : j.at("depends_on")) {
      Dependency dep;
      dep.task = d.at("task").get<std::string>();
      if (d.contains("on")) dep.on = EnumFrom(d.at("on"), kConditions);
      read_location(d, &dep.where);
      t.depends_on.push_back(std::move(dep));
    }
  }
  if (j.contains("trigger")) t.trigger = EnumFrom(j.at("trigger"), kTriggers);
  if (j.contains("retry") && !j.at("retry").is_null()) t.retry = RetryFrom(j.at("retry"));
  if (j.contains("timeout_ms") && !j.at("timeout_ms").is_null()) {
    t.timeout = Millis(NumberFrom<int64_t>(j.at("timeout_ms"), "timeout_ms"));
  }
  if (j.contains("foreach_items")) Read(j, "foreach_items", &t.foreach_items);
  return t;
}

}  // namespace json_internal

nlohmann::json ToJson(const PipelineSpec& spec) {
  json tasks = json::array();
  for (const TaskSpec& t : spec.tasks) tasks.push_back(TaskJson(t, spec.source_file));
  return RootJson(spec, std::move(tasks));
}

Result<PipelineSpec> PipelineFromJson(const nlohmann::json& j) {
  try {
    PipelineSpec spec;
    spec.version = j.at("version").get<std::string>();
    spec.name = j.at("name").get<std::string>();
    Read(j, "source_file", &spec.source_file);
    const SharedText source_file(spec.source_file);
    for (const json& t : j.at("tasks"))
      spec.tasks.push_back(json_internal::TaskFrom(t, source_file, Locations::kKeep));
    Read(j, "params", &spec.params);
    Read(j, "concurrency", &spec.concurrency);
    Read(j, "schedule", &spec.schedule);
    Read(j, "timezone", &spec.timezone);
    Read(j, "catchup", &spec.catchup);
    int64_t window_ms = spec.catchup_window.count();
    Read(j, "catchup_window_ms", &window_ms);
    spec.catchup_window = Millis(window_ms);
    Read(j, "overlap", &spec.overlap);
    Read(j, "max_active_runs", &spec.max_active_runs);
    if (j.contains("alerts")) {
      for (const json& a : j.at("alerts")) {
        AlertRule rule;
        Read(a, "events", &rule.events);
        Read(a, "webhook", &rule.webhook);
        Read(a, "command", &rule.command);
        spec.alerts.push_back(std::move(rule));
      }
    }
    return spec;
  } catch (const std::exception& e) {
    return Status::Corrupt(std::string("pipeline JSON does not decode: ") + e.what());
  }
}

namespace {

// Text written in pieces and joined once its size is known. A std::string
// grown by doubling holds its old and new buffers at once: a 180 MB
// snapshot peaked at 384 MB. Joined pieces peak at twice the text, and fall
// as each piece is copied and freed.
class PieceWriter {
 public:
  void Append(std::string_view text) {
    if (pieces_.empty() || pieces_.back().capacity() - pieces_.back().size() < text.size()) {
      pieces_.emplace_back();
      pieces_.back().reserve(std::max(text.size(), std::clamp(size_, kSmallest, kLargest)));
    }
    pieces_.back().append(text);
    size_ += text.size();
  }

  std::string Join() && {
    std::string out;
    out.reserve(size_);
    for (std::string& piece : pieces_) {
      out += piece;
      std::string().swap(piece);
    }
    pieces_.clear();
    return out;
  }

 private:
  static constexpr size_t kSmallest = 4096;
  static constexpr size_t kLargest = size_t{1} << 20;

  std::vector<std::string> pieces_;
  size_t size_ = 0;
};

// CanonicalJson of `spec`. When `release` is &spec.tasks, each task is
// emptied once written and the list freed before the pieces are joined, so
// the text never sits beside the whole model.
std::string WriteCanonicalJson(const PipelineSpec& spec, std::vector<TaskSpec>* release) {
  // The same bytes as ToJson(spec).dump() (nlohmann's objects are
  // std::map-backed, so dump() emits keys sorted), written one task at a time:
  // the DOM of a whole 100k-task pipeline is hundreds of MB, one task's is
  // a few KB. root.items() walks the keys in that sorted order.
  const json root = RootJson(spec, json::array());
  PieceWriter out;
  out.Append("{");
  bool first = true;
  for (const auto& [key, value] : root.items()) {
    if (!first) out.Append(",");
    first = false;
    out.Append(json(key).dump());
    out.Append(":");
    if (key != "tasks") {
      out.Append(value.dump());
      continue;
    }
    out.Append("[");
    for (size_t i = 0; i < spec.tasks.size(); ++i) {
      if (i > 0) out.Append(",");
      std::optional<std::string> plain = PlainTaskJson(spec.tasks[i], spec.source_file);
      out.Append(plain ? *plain : TaskJson(spec.tasks[i], spec.source_file).dump());
      if (release != nullptr) (*release)[i] = TaskSpec{};
    }
    out.Append("]");
  }
  out.Append("}");
  if (release != nullptr) std::vector<TaskSpec>().swap(*release);
  return std::move(out).Join();
}

}  // namespace

std::string CanonicalJson(const PipelineSpec& spec) { return WriteCanonicalJson(spec, nullptr); }

std::string TakeCanonicalJson(PipelineSpec&& spec) { return WriteCanonicalJson(spec, &spec.tasks); }

void DropLocations(PipelineSpec* spec) {
  for (TaskSpec& t : spec->tasks) {
    t.where.Free();
    for (Dependency& d : t.depends_on) d.where.Free();
  }
}

void ForgetSource(PipelineSpec* spec) {
  DropLocations(spec);
  spec->source_file.clear();
}

std::string ContentHash(const PipelineSpec& spec) { return HashCanonicalJson(CanonicalJson(spec)); }

std::string HashCanonicalJson(std::string_view canonical) {
  uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a 64-bit offset basis
  for (unsigned char c : canonical) {
    hash ^= c;
    hash *= 0x100000001b3ULL;  // FNV prime
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

void HideEnvValues(nlohmann::json* snapshot) {
  if (!snapshot->is_object() || !snapshot->contains("tasks")) return;
  nlohmann::json& tasks = (*snapshot)["tasks"];
  if (!tasks.is_array()) return;
  for (nlohmann::json& task : tasks) {
    if (!task.is_object() || !task.contains("env") || !task["env"].is_object()) continue;
    nlohmann::json names = nlohmann::json::array();
    for (const auto& [name, value] : task["env"].items()) names.push_back(name);
    task["env"] = std::move(names);
  }
}

}  // namespace apollo11::dsl
