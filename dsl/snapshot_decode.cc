// PipelineFromJsonText: a snapshot's text to the model, through the
// DOM-free readers of snapshot_text.h where the text has their shape, and
// through nlohmann (one task's DOM at a time) where it does not.

#include <algorithm>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dsl/pipeline_json.h"
#include "dsl/pipeline_json_internal.h"
#include "dsl/snapshot_text.h"

namespace apollo11::dsl {
namespace {

using nlohmann::json;

// The shortest task a snapshot can hold, `{"id":"","type":"db"}` and its
// comma: no valid text of N bytes has more than N / kSmallestTaskJson tasks.
constexpr size_t kSmallestTaskJson = 23;

// An estimate far above the count (ids in env maps) is not kept.
void TrimCapacity(std::vector<TaskSpec>* tasks) {
  if (tasks->capacity() > tasks->size() + tasks->size() / 8 + 16) tasks->shrink_to_fit();
}

// The old way, for any text: nlohmann parses the whole document, and each
// element of the root's "tasks" array becomes a TaskSpec as soon as it is
// parsed and is then dropped from the DOM, so only one task's JSON is in
// memory at a time (the parser's callback may discard values). Its errors
// are the ones every malformed snapshot gets.
Result<PipelineSpec> DecodeThroughDom(std::string_view text, Locations locations) {
  std::vector<TaskSpec> tasks;
  std::string root_key;
  SharedText source_file;  // keys are sorted: it comes before "tasks"
  try {
    tasks.reserve(EstimateTaskCount(text));  // bad_alloc: an error, below
    json rest = json::parse(
        text,
        [&](int depth, json::parse_event_t event, json& parsed) {
          if (depth == 1 && event == json::parse_event_t::key) {
            root_key = parsed.get<std::string>();
          } else if (depth == 1 && event == json::parse_event_t::value &&
                     root_key == "source_file" && parsed.is_string()) {
            source_file = parsed.get<std::string>();
          } else if (depth == 2 && event == json::parse_event_t::object_end &&
                     root_key == "tasks") {
            tasks.push_back(json_internal::TaskFrom(parsed, source_file, locations));
            return false;
          }
          return true;
        },
        /*allow_exceptions=*/false);
    if (rest.is_discarded()) return Status::InvalidInput("pipeline snapshot is not valid JSON");
    auto spec = PipelineFromJson(rest);
    if (!spec.ok()) return spec.status();
    if (!spec->tasks.empty()) {
      // Elements that were not objects stayed in the array; PipelineFromJson
      // refused them above. Anything else would be a bug here.
      return Status::Corrupt("pipeline JSON does not decode: a task is not an object");
    }
    TrimCapacity(&tasks);
    spec->tasks = std::move(tasks);
    return spec;
  } catch (const std::exception& e) {
    return Status::Corrupt(std::string("pipeline JSON does not decode: ") + e.what());
  }
}

// The tasks array `text` ([...]): plain tasks through ReadPlainTask, any
// other element through its own DOM. nullopt when the array does not frame
// or an element is not an object, text no decoder accepts: the caller then
// decodes the whole text through the DOM, for its error. Throws as TaskFrom
// does.
std::optional<std::vector<TaskSpec>> ReadTasks(std::string_view text, const SharedText& source_file,
                                               Locations locations) {
  const bool keep = locations == Locations::kKeep;
  snapshot_text::Cursor c{text};
  std::vector<TaskSpec> tasks;
  tasks.reserve(EstimateTaskCount(text));
  if (!c.Eat('[')) return std::nullopt;
  c.SkipSpace();
  if (!c.Eat(']')) {
    do {
      c.SkipSpace();
      TaskSpec& t = tasks.emplace_back();
      if (!snapshot_text::ReadPlainTask(&c, source_file, keep, &t)) {
        const size_t from = c.at;
        if (!snapshot_text::SkipValue(&c)) return std::nullopt;
        json j = json::parse(text.substr(from, c.at - from), nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded() || !j.is_object()) return std::nullopt;
        t = json_internal::TaskFrom(j, source_file, locations);
      }
      c.SkipSpace();
    } while (c.Eat(','));
    if (!c.Eat(']')) return std::nullopt;
  }
  TrimCapacity(&tasks);
  return tasks;
}

}  // namespace

// Every task object has an "id" key, and a JSON string cannot hold that
// quote-id-quote-colon sequence unescaped. Without the estimate, a 100k-task
// vector grown by doubling has room for 131,072 TaskSpecs, 28 MB more than it
// needs. Text made of nothing but "id": keys (a hostile client) gets no more
// room than a valid snapshot of its size could need.
size_t EstimateTaskCount(std::string_view text) {
  constexpr std::string_view kIdKey = "\"id\":";
  size_t n = 0;
  for (size_t at = text.find(kIdKey); at != std::string_view::npos;
       at = text.find(kIdKey, at + kIdKey.size())) {
    ++n;
  }
  return std::min(n, text.size() / kSmallestTaskJson);
}

// The root without its tasks goes through the DOM (a few fields); the tasks
// array through ReadTasks. Text the split cannot take (no single "tasks"
// member, an array that does not frame) goes whole through the DOM, which
// gives malformed text the same error as before the split existed.
Result<PipelineSpec> PipelineFromJsonText(std::string_view text, Locations locations) {
  size_t begin = 0;
  size_t end = 0;
  if (!snapshot_text::FindRootTasks(text, &begin, &end)) return DecodeThroughDom(text, locations);
  try {
    std::string root;
    root.reserve(text.size() - (end - begin) + 2);
    root.append(text.substr(0, begin)).append("[]").append(text.substr(end));
    json rest = json::parse(root, nullptr, /*allow_exceptions=*/false);
    if (rest.is_discarded()) return DecodeThroughDom(text, locations);
    auto spec = PipelineFromJson(rest);
    if (!spec.ok()) return spec.status();
    auto tasks =
        ReadTasks(text.substr(begin, end - begin), SharedText(spec->source_file), locations);
    if (!tasks) return DecodeThroughDom(text, locations);
    spec->tasks = std::move(*tasks);
    return spec;
  } catch (const std::exception& e) {
    return Status::Corrupt(std::string("pipeline JSON does not decode: ") + e.what());
  }
}

}  // namespace apollo11::dsl
