#include "dsl/snapshot_text.h"

#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "dsl/pipeline_json_internal.h"

namespace apollo11::dsl::snapshot_text {

void Cursor::SkipSpace() {
  while (at < text.size() &&
         (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) {
    ++at;
  }
}

bool Cursor::Eat(char c) {
  if (at >= text.size() || text[at] != c) return false;
  ++at;
  return true;
}

bool Cursor::Eat(std::string_view s) {
  if (text.substr(at, s.size()) != s) return false;
  at += s.size();
  return true;
}

namespace {

using json_internal::kConditions;
using json_internal::kTaskTypeValues;
using json_internal::kTriggers;

// `"text"` of printable ASCII without a quote or backslash: the strings
// PlainTaskJson writes unescaped, which read back as themselves.
bool ReadPlainString(Cursor* c, std::string_view* out) {
  Cursor s = *c;
  if (!s.Eat('"')) return false;
  const size_t from = s.at;
  while (s.at < s.text.size()) {
    const auto ch = static_cast<unsigned char>(s.text[s.at]);
    if (ch == '"') {
      *out = s.text.substr(from, s.at - from);
      c->at = s.at + 1;
      return true;
    }
    if (ch < 0x20 || ch > 0x7e || ch == '\\') return false;
    ++s.at;
  }
  return false;
}

// A JSON integer (-?(0|[1-9][0-9]*), at most 18 digits) within T's range,
// not followed by a fraction or exponent: what NumberFrom<T> accepts of the
// numbers PlainTaskJson writes.
template <typename T>
bool ReadInteger(Cursor* c, T* out) {
  Cursor s = *c;
  const bool negative = s.Eat('-');
  const size_t first = s.at;
  int64_t value = 0;
  while (s.at < s.text.size() && s.text[s.at] >= '0' && s.text[s.at] <= '9') {
    if (s.at - first == 18) return false;
    value = value * 10 + (s.text[s.at] - '0');
    ++s.at;
  }
  const size_t digits = s.at - first;
  if (digits == 0 || (digits > 1 && s.text[first] == '0')) return false;
  if (s.at < s.text.size() && (s.text[s.at] == '.' || s.text[s.at] == 'e' || s.text[s.at] == 'E')) {
    return false;
  }
  if (negative) value = -value;
  if (value < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
      value > static_cast<int64_t>(std::numeric_limits<T>::max())) {
    return false;
  }
  *out = static_cast<T>(value);
  c->at = s.at;
  return true;
}

// A quoted enum word among `values` (their DSL words, ToString).
template <typename E, size_t N>
bool ReadEnum(Cursor* c, const E (&values)[N], E* out) {
  Cursor s = *c;
  std::string_view word;
  if (!ReadPlainString(&s, &word)) return false;
  for (E v : values) {
    if (word == ToString(v)) {
      *out = v;
      *c = s;
      return true;
    }
  }
  return false;
}

// {"column":N[,"file":"F"],"line":N}, as AppendLocation writes it; a
// location without "file" is in the pipeline's own file.
bool ReadLocation(Cursor* c, const SharedText& source_file, SourceLocation* out) {
  Cursor s = *c;
  SourceLocation l;
  if (!s.Eat("{\"column\":") || !ReadInteger(&s, &l.column)) return false;
  std::string_view file;
  if (s.Eat(",\"file\":")) {
    if (!ReadPlainString(&s, &file)) return false;
    l.file = SharedText(std::string(file));
  } else {
    l.file = source_file;
  }
  if (!s.Eat(",\"line\":") || !ReadInteger(&s, &l.line) || !s.Eat('}')) return false;
  *out = std::move(l);
  *c = s;
  return true;
}

// `,"where":LOC` if present; the location is kept only when asked.
bool ReadOptionalWhere(Cursor* c, const SharedText& source_file, bool keep,
                       Rare<SourceLocation>* where) {
  if (!c->Eat(",\"where\":")) return true;
  SourceLocation l;
  if (!ReadLocation(c, source_file, &l)) return false;
  if (keep) *where = std::move(l);
  return true;
}

// "depends_on":[{["on":"C",]"task":"T"[,"where":LOC]},...], (with its comma).
// *out gets exactly the room it needs, as the DOM decoder's reserve() gave
// it: a 100k-task run holds some 180k dependencies for its whole length.
bool ReadDependencies(Cursor* c, const SharedText& source_file, bool keep,
                      std::vector<Dependency>* out) {
  if (!c->Eat("\"depends_on\":[")) return true;
  // Scratch kept between tasks; one a giant list grew (kept at most until
  // the next task's) is let go.
  thread_local std::vector<Dependency> read;
  if (read.capacity() > 4096) std::vector<Dependency>().swap(read);
  read.clear();
  do {
    Dependency d;
    std::string_view task;
    if (!c->Eat('{')) return false;
    if (c->Eat("\"on\":") && !(ReadEnum(c, kConditions, &d.on) && c->Eat(','))) return false;
    if (!c->Eat("\"task\":") || !ReadPlainString(c, &task)) return false;
    d.task = std::string(task);
    if (!ReadOptionalWhere(c, source_file, keep, &d.where) || !c->Eat('}')) return false;
    read.push_back(std::move(d));
  } while (c->Eat(','));
  if (!c->Eat("],")) return false;
  out->reserve(read.size());
  std::move(read.begin(), read.end(), std::back_inserter(*out));
  if (read.capacity() > 4096) std::vector<Dependency>().swap(read);
  return true;
}

}  // namespace

bool ReadPlainTask(Cursor* c, const SharedText& source_file, bool keep_locations, TaskSpec* out) {
  Cursor s = *c;  // committed to *c only when the whole task reads
  TaskSpec t;
  std::string_view text;
  if (!s.Eat('{')) return false;
  if (s.Eat("\"command\":")) {
    if (!ReadPlainString(&s, &text) || !s.Eat(',')) return false;
    t.command = std::string(text);
  }
  if (!ReadDependencies(&s, source_file, keep_locations, &t.depends_on)) return false;
  if (!s.Eat("\"id\":") || !ReadPlainString(&s, &text)) return false;
  t.id = std::string(text);
  if (s.Eat(",\"timeout_ms\":")) {
    int64_t ms = 0;
    if (!ReadInteger(&s, &ms)) return false;
    t.timeout = Millis(ms);
  }
  if (s.Eat(",\"trigger\":") && !ReadEnum(&s, kTriggers, &t.trigger)) return false;
  if (!s.Eat(",\"type\":") || !ReadEnum(&s, kTaskTypeValues, &t.type)) return false;
  if (!ReadOptionalWhere(&s, source_file, keep_locations, &t.where) || !s.Eat('}')) return false;
  *out = std::move(t);
  *c = s;
  return true;
}

bool SkipValue(Cursor* c) {
  Cursor s = *c;
  size_t depth = 0;
  do {
    s.SkipSpace();
    if (s.Done()) return false;
    const char ch = s.text[s.at];
    if (ch == '"') {
      for (++s.at; s.at < s.text.size() && s.text[s.at] != '"'; ++s.at) {
        if (s.text[s.at] == '\\') ++s.at;  // the escaped character, a quote too
      }
      if (s.at >= s.text.size()) return false;
      ++s.at;
    } else if (ch == '{' || ch == '[') {
      ++depth;
      ++s.at;
    } else if (ch == '}' || ch == ']') {
      if (depth == 0) return false;
      --depth;
      ++s.at;
    } else if (ch == ',' || ch == ':') {
      if (depth == 0) return false;
      ++s.at;
    } else {  // a number or a literal: up to the next delimiter
      const size_t from = s.at;
      while (!s.Done() &&
             std::string_view(",:]}[{\" \t\n\r").find(s.text[s.at]) == std::string_view::npos) {
        ++s.at;
      }
      if (s.at == from) return false;
    }
  } while (depth > 0);
  *c = s;
  return true;
}

bool FindRootTasks(std::string_view text, size_t* begin, size_t* end) {
  Cursor c{text};
  c.SkipSpace();
  if (!c.Eat('{')) return false;
  bool found = false;
  do {
    c.SkipSpace();
    if (!c.Eat('"')) return false;
    const size_t key_from = c.at;
    while (!c.Done() && c.text[c.at] != '"') {
      if (c.text[c.at] == '\\') return false;
      ++c.at;
    }
    const std::string_view key = text.substr(key_from, c.at - key_from);
    if (!c.Eat('"')) return false;
    c.SkipSpace();
    if (!c.Eat(':')) return false;
    c.SkipSpace();
    const size_t value_from = c.at;
    if (!SkipValue(&c)) return false;
    if (key == "tasks") {
      if (found) return false;
      found = true;
      *begin = value_from;
      *end = c.at;
    }
    c.SkipSpace();
  } while (c.Eat(','));
  if (!c.Eat('}')) return false;
  c.SkipSpace();
  return found && c.Done();
}

}  // namespace apollo11::dsl::snapshot_text
