#pragma once
// Reading a pipeline snapshot's text without a DOM, for the shape almost all
// of it has: tasks as PlainTaskJson (pipeline_json.cc) writes them. nlohmann
// builds a tree of dozens of allocations per task, and that was most of the
// 25 ms a coordinator spent decoding a 5,000-task submission. These readers
// make the model directly and leave anything else to nlohmann: they accept
// a strict subset of JSON, and what they accept decodes exactly as the DOM
// decoder would decode it (tests/dsl/snapshot_text_test.cc compares them).

#include <cstddef>
#include <string_view>

#include "common/shared_text.h"
#include "dsl/pipeline.h"

namespace apollo11::dsl::snapshot_text {

// A position in JSON text. Each reader either consumes what it accepts and
// returns true, or leaves `at` where it was and returns false.
struct Cursor {
  std::string_view text;
  size_t at = 0;

  bool Done() const { return at == text.size(); }
  void SkipSpace();
  bool Eat(char c);
  bool Eat(std::string_view s);
};

// One task object written exactly as PlainTaskJson writes it: its keys in
// that order, no whitespace, every string printable ASCII without escapes,
// every integer in its field's range, every enum word known. On true, *out
// is what the DOM decoder makes of the same text; a location is kept only
// when `keep_locations` (but read and checked either way). False for any
// other text, which the caller then decodes through the DOM.
bool ReadPlainTask(Cursor* c, const SharedText& source_file, bool keep_locations, TaskSpec* out);

// Advances past one JSON value of any kind, checking only its framing:
// strings are closed, brackets balance by count. Whoever parses the span
// checks the rest. False when the text there does not frame as a value.
bool SkipValue(Cursor* c);

// The span [*begin, *end) of the root object's "tasks" value. False when
// the root does not frame as an object, or has no "tasks" member or more
// than one, or a key written with escapes (which could spell "tasks").
bool FindRootTasks(std::string_view text, size_t* begin, size_t* end);

}  // namespace apollo11::dsl::snapshot_text
