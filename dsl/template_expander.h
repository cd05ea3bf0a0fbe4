#pragma once
// The `${...}` placeholders of a task's fields (docs/dsl.md, "Templating"):
// `${run_id}`, `${task_id}`, `${task.idempotency_key}`, `${params.NAME}`,
// `${tasks.ID.output}`, `${tasks.ID.output.PATH}` and `${item}`. Any other
// `${NAME}` (a shell variable) is not a placeholder and is left as written.
// Each value is escaped for the field it lands in (TemplateContext). Pure:
// the checker scans templates, the coordinator expands them when it builds a
// DISPATCH, where the values exist.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/wire_limits.h"

namespace apollo11::dsl {

// Where an expanded value goes, which decides its escaping.
enum class TemplateContext : uint8_t {
  kShell,     // `command`: each value single-quoted for /bin/sh, inert whatever it holds
  kUrl,       // `url`: each value percent-encoded (RFC 3986 unreserved bytes kept)
  kJsonBody,  // a `body` that is JSON: JSON-escaped inside a string, a JSON value outside
  kRaw,       // `args`, `env`, a non-JSON `body`, sql params (bound, never pasted): as is
  kHeader,    // header values: as is, but a value with CR, LF or NUL is refused
};

// One placeholder of a template, [begin, end) in its text.
struct TemplateRef {
  enum class Kind : uint8_t { kRunId, kTaskId, kIdempotencyKey, kParam, kOutput, kItem };
  Kind kind = Kind::kRunId;
  std::string name;  // the param's name or the upstream task's id
  std::string path;  // kOutput: the dotted path into its JSON; empty = the whole output
  size_t begin = 0, end = 0;
};

// What placeholders expand to when a task is dispatched.
struct TemplateValues {
  std::string run_id, task_id, idempotency_key;
  const std::map<std::string, std::string>* params = nullptr;
  // The compact JSON output of task `id`; nullptr when it gave none.
  std::function<const std::string*(const std::string& id)> output;
  const std::string* item = nullptr;  // a foreach instance's item; nullptr elsewhere
};

// What expanding one task's fields may cost, shared by all its fields:
// each field may grow to `field_bytes`, the expanded fields together to
// `task_bytes`; an upstream output is parsed once (kept while the text of the
// kept ones stays under 1 MiB) and all parses together read at most
// `parse_bytes`. Every size is checked before the text is built, so a
// pipeline whose placeholders would pass a limit costs no more than the
// limit. One per task; not thread-safe.
class TemplateBudget {
 public:
  explicit TemplateBudget(size_t field_bytes = kMaxExpandedFieldBytes,
                          size_t task_bytes = kMaxExpandedTaskBytes,
                          size_t parse_bytes = kMaxExpandedParseBytes);
  ~TemplateBudget();
  TemplateBudget(const TemplateBudget&) = delete;
  TemplateBudget& operator=(const TemplateBudget&) = delete;

  size_t field_bytes() const { return field_bytes_; }
  size_t task_bytes() const { return task_bytes_; }
  size_t parse_bytes() const { return parse_bytes_; }
  // The output of upstream `id` (its text `text`) parsed: from the cache, or
  // parsed now and charged. InvalidInput naming the limit when the parses
  // would pass it, or when the text is not JSON.
  Result<const nlohmann::json*> Parsed(const std::string& id, const std::string& text);
  // Charges a field that expanded to `bytes`; InvalidInput naming the limit
  // when the task's fields together pass it.
  Status ChargeField(size_t bytes);

 private:
  size_t field_bytes_, task_bytes_, parse_bytes_;
  size_t task_used_ = 0, parsed_ = 0, cached_ = 0;
  std::map<std::string, std::unique_ptr<nlohmann::json>> docs_;
};

class TemplateExpander {
 public:
  // The placeholders of `text` in order. A `${` starting one of ours that is
  // malformed (unterminated, `${tasks.a}`, `${task.x}`, an empty path
  // segment) is InvalidInput naming it.
  static Status Scan(std::string_view text, std::vector<TemplateRef>* out);

  // `text` with every placeholder replaced by its value escaped for `ctx`.
  // A missing param, output, output path or item, or a value the context
  // cannot carry, is InvalidInput with a sentence naming the placeholder;
  // so is a result that would pass `budget` (nullptr: a fresh default one).
  static Result<std::string> Expand(std::string_view text, TemplateContext ctx,
                                    const TemplateValues& values, TemplateBudget* budget = nullptr);

  // kJsonBody when `body` (after leading white space) starts with `{` or `[`,
  // else kRaw.
  static TemplateContext BodyContext(std::string_view body);

  // True when `text` holds at least one of our placeholders (malformed ones
  // included), so a field without any is never copied or scanned twice.
  static bool HasPlaceholder(std::string_view text);

  static std::string ShellQuote(std::string_view value);
  static std::string UrlEncode(std::string_view value);
  // The content of a JSON string holding `value`, without the quotes.
  static std::string JsonEscape(std::string_view value);
};

}  // namespace apollo11::dsl
