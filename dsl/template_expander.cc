#include "dsl/template_expander.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "common/json_dump.h"
#include "dsl/json_path.h"

namespace apollo11::dsl {

namespace {

constexpr std::string_view kPrefixes[] = {"params.", "tasks.", "task."};
constexpr std::string_view kNames[] = {"run_id", "task_id", "item"};

bool IsOurs(std::string_view rest) {
  for (std::string_view p : kPrefixes) {
    if (rest.substr(0, p.size()) == p) return true;
  }
  for (std::string_view n : kNames) {
    if (rest.substr(0, n.size()) == n &&
        (rest.size() == n.size() || rest[n.size()] == '}' || rest[n.size()] == '.')) {
      return true;
    }
  }
  return false;
}

Status Malformed(std::string_view name, std::string_view why) {
  return Status::InvalidInput("placeholder ${" + std::string(name) + "}: " + std::string(why));
}

// Parses NAME (the text between `${` and `}`) into *ref.
Status ParseName(std::string_view name, TemplateRef* ref) {
  using Kind = TemplateRef::Kind;
  if (name == "run_id") return ref->kind = Kind::kRunId, Status::Ok();
  if (name == "task_id") return ref->kind = Kind::kTaskId, Status::Ok();
  if (name == "item") return ref->kind = Kind::kItem, Status::Ok();
  if (name == "task.idempotency_key") return ref->kind = Kind::kIdempotencyKey, Status::Ok();
  if (name.substr(0, 7) == "params.") {
    ref->kind = Kind::kParam;
    ref->name = std::string(name.substr(7));
    if (ref->name.empty()) return Malformed(name, "names no param");
    return Status::Ok();
  }
  if (name.substr(0, 6) != "tasks.") {
    return Malformed(name,
                     "unknown; use ${run_id}, ${task_id}, ${task.idempotency_key}, "
                     "${params.NAME}, ${tasks.ID.output[.PATH]} or ${item}");
  }
  std::string_view rest = name.substr(6);
  const size_t dot = rest.find('.');
  const std::string_view field = dot == std::string_view::npos ? "" : rest.substr(dot + 1);
  if (dot == 0 || dot == std::string_view::npos ||
      (field != "output" && field.substr(0, 7) != "output.")) {
    return Malformed(name, "write ${tasks.ID.output} or ${tasks.ID.output.PATH}");
  }
  ref->kind = Kind::kOutput;
  ref->name = std::string(rest.substr(0, dot));
  ref->path = field.size() > 7 ? std::string(field.substr(7)) : "";
  if (field.size() > 6 && ("." + ref->path + ".").find("..") != std::string::npos) {
    return Malformed(name, "the output path has an empty segment");
  }
  return Status::Ok();
}

// A placeholder's value: its text, and for an output its JSON value.
struct Value {
  std::string text;
  std::optional<nlohmann::json> json;
};

Result<Value> Resolve(const TemplateRef& ref, std::string_view name, const TemplateValues& v,
                      TemplateBudget* budget) {
  using Kind = TemplateRef::Kind;
  switch (ref.kind) {
    case Kind::kRunId:
      return Value{v.run_id, std::nullopt};
    case Kind::kTaskId:
      return Value{v.task_id, std::nullopt};
    case Kind::kIdempotencyKey:
      return Value{v.idempotency_key, std::nullopt};
    case Kind::kItem:
      if (v.item == nullptr) return Malformed(name, "only a foreach instance has an item");
      return Value{*v.item, std::nullopt};
    case Kind::kParam: {
      auto it = v.params ? v.params->find(ref.name) : decltype(v.params->end()){};
      if (v.params == nullptr || it == v.params->end()) return Malformed(name, "no such param");
      return Value{it->second, std::nullopt};
    }
    case Kind::kOutput:
      break;
  }
  const std::string* text = v.output ? v.output(ref.name) : nullptr;
  if (text == nullptr || text->empty()) {
    return Malformed(name, "task '" + ref.name + "' gave no output ($APOLLO11_OUTPUT)");
  }
  Result<const nlohmann::json*> doc = budget->Parsed(ref.name, *text);
  if (!doc.ok()) return Malformed(name, doc.status().message());
  const nlohmann::json* at = JsonAtPath(**doc, ref.path);
  if (at == nullptr) {
    return Malformed(name, "task '" + ref.name + "' output has no '" + ref.path + "'");
  }
  Value out;
  out.text = at->is_string() ? at->get<std::string>()
                             : at->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out.json = *at;
  return out;
}

// Tracks whether the literal text of a JSON body so far ends inside a string.
void TrackJsonString(std::string_view literal, bool* in_string, bool* escaped) {
  for (char c : literal) {
    if (*escaped) {
      *escaped = false;
    } else if (*in_string && c == '\\') {
      *escaped = true;
    } else if (c == '"') {
      *in_string = !*in_string;
    }
  }
}

Result<std::string> Escape(const Value& value, std::string_view name, TemplateContext ctx,
                           bool in_json_string) {
  switch (ctx) {
    case TemplateContext::kShell:
      if (value.text.find('\0') != std::string::npos) return Malformed(name, "holds a NUL byte");
      return TemplateExpander::ShellQuote(value.text);
    case TemplateContext::kUrl:
      return TemplateExpander::UrlEncode(value.text);
    case TemplateContext::kJsonBody:
      if (in_json_string) return TemplateExpander::JsonEscape(value.text);
      if (value.json.has_value()) {
        return value.json->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      }
      {
        // Appended, not `"\"" + ...`: GCC 12 at -O3 warns (-Wrestrict)
        // inside std::string for that, a known false positive.
        std::string quoted(1, '"');
        quoted += TemplateExpander::JsonEscape(value.text);
        quoted += '"';
        return quoted;
      }
    case TemplateContext::kHeader:
      if (value.text.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
        return Malformed(name, "holds a line break or NUL, which a header cannot carry");
      }
      return value.text;
    case TemplateContext::kRaw:
      break;
  }
  if (value.text.find('\0') != std::string::npos) return Malformed(name, "holds a NUL byte");
  return value.text;
}

// The text of the parsed upstream outputs kept for a task's later
// placeholders (one wire string's worth).
constexpr size_t kMaxCachedParseBytes = kWireMaxStringBytes;

Status TooLong(std::string_view name, size_t bytes, size_t limit) {
  return Malformed(name, "would make the field " + std::to_string(bytes) + " bytes, over the " +
                             std::to_string(limit) + "-byte limit of an expanded field");
}

}  // namespace

TemplateBudget::TemplateBudget(size_t field_bytes, size_t task_bytes, size_t parse_bytes)
    : field_bytes_(field_bytes), task_bytes_(task_bytes), parse_bytes_(parse_bytes) {}

TemplateBudget::~TemplateBudget() = default;

Result<const nlohmann::json*> TemplateBudget::Parsed(const std::string& id,
                                                     const std::string& text) {
  if (auto it = docs_.find(id); it != docs_.end()) return it->second.get();
  if (text.size() > parse_bytes_ - parsed_) {
    return Status::InvalidInput("reading task '" + id + "' output (" + std::to_string(text.size()) +
                                " bytes) would pass the " + std::to_string(parse_bytes_) +
                                " bytes of upstream output a task's placeholders may parse");
  }
  parsed_ += text.size();
  auto doc = std::make_unique<nlohmann::json>(ParseJsonBounded(text));
  if (doc->is_discarded()) return Status::InvalidInput("task '" + id + "' output is not JSON");
  // Keep it for the task's next placeholders while the kept texts are small:
  // a parsed document takes many times its text, and before the cache only
  // one was alive at a time.
  if (cached_ + text.size() > kMaxCachedParseBytes) {
    docs_.clear();
    cached_ = 0;
  }
  cached_ += text.size();
  return docs_.emplace(id, std::move(doc)).first->second.get();
}

Status TemplateBudget::ChargeField(size_t bytes) {
  if (bytes > task_bytes_ - task_used_) {
    return Status::InvalidInput("its expanded fields together would pass the " +
                                std::to_string(task_bytes_) + "-byte limit of a task");
  }
  task_used_ += bytes;
  return Status::Ok();
}

bool TemplateExpander::HasPlaceholder(std::string_view text) {
  size_t pos = 0;
  while ((pos = text.find("${", pos)) != std::string_view::npos) {
    if (IsOurs(text.substr(pos + 2))) return true;
    pos += 2;
  }
  return false;
}

Status TemplateExpander::Scan(std::string_view text, std::vector<TemplateRef>* out) {
  size_t pos = 0;
  while ((pos = text.find("${", pos)) != std::string_view::npos) {
    if (!IsOurs(text.substr(pos + 2))) {
      pos += 2;
      continue;
    }
    const size_t close = text.find('}', pos);
    if (close == std::string_view::npos) {
      return Malformed(text.substr(pos + 2, 40), "unterminated (no closing })");
    }
    TemplateRef ref;
    ref.begin = pos;
    ref.end = close + 1;
    APOLLO11_RETURN_IF_ERROR(ParseName(text.substr(pos + 2, close - pos - 2), &ref));
    out->push_back(std::move(ref));
    pos = close + 1;
  }
  return Status::Ok();
}

Result<std::string> TemplateExpander::Expand(std::string_view text, TemplateContext ctx,
                                             const TemplateValues& values, TemplateBudget* budget) {
  std::vector<TemplateRef> refs;
  APOLLO11_RETURN_IF_ERROR(Scan(text, &refs));
  if (refs.empty()) return std::string(text);
  TemplateBudget fresh;
  if (budget == nullptr) budget = &fresh;
  const size_t limit = budget->field_bytes();
  std::string out;
  size_t pos = 0;
  bool in_string = false, escaped = false;
  for (const TemplateRef& ref : refs) {
    const std::string_view literal = text.substr(pos, ref.begin - pos);
    const std::string_view name = text.substr(ref.begin + 2, ref.end - ref.begin - 3);
    if (literal.size() > limit - out.size())
      return TooLong(name, out.size() + literal.size(), limit);
    out.append(literal);
    TrackJsonString(literal, &in_string, &escaped);
    Result<Value> value = Resolve(ref, name, values, budget);
    if (!value.ok()) return value.status();
    Result<std::string> escaped_value = Escape(*value, name, ctx, in_string);
    if (!escaped_value.ok()) return escaped_value.status();
    if (escaped_value->size() > limit - out.size()) {
      return TooLong(name, out.size() + escaped_value->size(), limit);
    }
    out += *escaped_value;
    pos = ref.end;
  }
  const std::string_view rest = text.substr(pos);
  if (rest.size() > limit - out.size()) {
    return TooLong(text.substr(refs.back().begin + 2, refs.back().end - refs.back().begin - 3),
                   out.size() + rest.size(), limit);
  }
  out.append(rest);
  APOLLO11_RETURN_IF_ERROR(budget->ChargeField(out.size()));
  return out;
}

TemplateContext TemplateExpander::BodyContext(std::string_view body) {
  const size_t first = body.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (body[first] == '{' || body[first] == '[')) {
    return TemplateContext::kJsonBody;
  }
  return TemplateContext::kRaw;
}

std::string TemplateExpander::ShellQuote(std::string_view value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string TemplateExpander::UrlEncode(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string TemplateExpander::JsonEscape(std::string_view value) {
  const std::string quoted = nlohmann::json(std::string(value))
                                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return quoted.substr(1, quoted.size() - 2);
}

}  // namespace apollo11::dsl
