#include "dsl/field_reader.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>

#include "dsl/suggest.h"

namespace apollo11::dsl::internal {

SharedText SharedFileName(const std::string& file) {
  // Locations come in long runs from one file: the last name is shared
  // until another file's location is asked for.
  thread_local SharedText last;
  if (last.str() != file) last = SharedText(file);
  return last;
}

SourceLocation Loc(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return SourceLocation{SharedFileName(file), 0, 0};
  return SourceLocation{SharedFileName(file), mark.line + 1, mark.column + 1};
}

std::string LocText(const SourceLocation& l) {
  return l.file + ":" + std::to_string(l.line) + ":" + std::to_string(l.column);
}

const char* KindName(const YamlNode& n) {
  switch (n.kind()) {
    case YamlNode::Kind::kScalar:
      return "text";
    case YamlNode::Kind::kSequence:
      return "a list";
    case YamlNode::Kind::kMap:
      return "a mapping";
    default:
      return "nothing";
  }
}

bool MatchesIdChars(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

bool IsEnvName(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

bool StartsWith(const std::string& s, std::string_view prefix) {
  return s.size() >= prefix.size() && std::string_view(s).substr(0, prefix.size()) == prefix;
}

std::string Quote(std::string_view s) {
  std::string q;
  q.reserve(s.size() + 2);
  q += '\'';
  q += s;
  q += '\'';
  return q;
}

bool HasKey(const std::vector<Field>& fields, const std::string& key) {
  for (const Field& f : fields) {
    if (f.key == key) return true;
  }
  return false;
}

void FieldReader::Error(const SourceLocation& where, std::string message) {
  Add(Diagnostic::Severity::kError, where, std::move(message));
}

void FieldReader::Error(const std::string& file, const YamlNode& at, std::string message) {
  Error(Loc(file, at.Mark()), std::move(message));
}

void FieldReader::Warning(const SourceLocation& where, std::string message) {
  Add(Diagnostic::Severity::kWarning, where, std::move(message));
}

void FieldReader::Add(Diagnostic::Severity s, const SourceLocation& where, std::string message) {
  Diagnostic d{s, where, std::move(message)};
  if (reported_.insert(FormatDiagnostic(d)).second) diagnostics_.push_back(std::move(d));
}

size_t FieldReader::ErrorCount() const {
  size_t n = 0;
  for (const Diagnostic& d : diagnostics_) n += d.severity == Diagnostic::Severity::kError;
  return n;
}

std::vector<Field> FieldReader::Fields(const YamlNode& map, const std::string& file,
                                       const std::vector<std::string>& allowed,
                                       const std::string& what) {
  std::vector<Field> out;
  std::unordered_map<std::string, YAML::Mark> seen;
  for (YamlPair it : map.pairs()) {
    const YamlNode key_node = it.key;
    if (!key_node.IsScalar()) {
      Error(file, key_node, "keys of " + what + " must be plain words");
      continue;
    }
    const std::string key(key_node.Scalar());
    auto [prev, inserted] = seen.emplace(key, key_node.Mark());
    if (!inserted) {
      Error(file, key_node,
            "duplicate key " + Quote(key) + " in " + what + " (first at " +
                LocText(Loc(file, prev->second)) + ")");
      continue;
    }
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string hint = DidYouMean(key, allowed);
      if (hint.empty() && what == "the top level" && key == "on_failure") {
        hint =
            " (pipeline-level on_failure is not supported: add a task with depends_on: "
            "{task: X, on: failure}, or use alerts:)";
      }
      Error(file, key_node, "unknown key " + Quote(key) + " in " + what + hint);
      continue;
    }
    out.push_back(Field{key, key_node, it.value, file});
  }
  return out;
}
bool FieldReader::GetString(const Field& f, std::string* out, bool allow_empty) {
  if (f.value.IsScalar()) {
    *out = f.value.Scalar();
    if (out->empty() && !allow_empty) {
      Error(At(f), Quote(f.key) + " must not be empty");
      return false;
    }
    return true;
  }
  if (f.value.IsNull()) {
    Error(KeyAt(f), Quote(f.key) + " needs a value");
  } else {
    Error(At(f), Quote(f.key) + " must be text, found " + KindName(f.value));
  }
  return false;
}

bool FieldReader::ScalarToInt(const YamlNode& n, const std::string& file, const std::string& what,
                              long min, long max, long* out) {
  if (!n.IsScalar()) {
    Error(file, n, what + " must be a whole number, found " + KindName(n));
    return false;
  }
  const std::string s(n.Scalar());
  long value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) {
    Error(file, n, what + " must be a whole number, found " + Quote(s));
    return false;
  }
  if (value < min || value > max) {
    Error(file, n,
          what + " must be between " + std::to_string(min) + " and " + std::to_string(max) +
              ", found " + s);
    return false;
  }
  *out = value;
  return true;
}

bool FieldReader::GetInt(const Field& f, long min, long max, int* out) {
  long value = 0;
  if (f.value.IsNull()) {
    Error(KeyAt(f), Quote(f.key) + " needs a value");
    return false;
  }
  if (!ScalarToInt(f.value, f.file, Quote(f.key), min, max, &value)) return false;
  *out = static_cast<int>(value);
  return true;
}

bool FieldReader::GetIntList(const Field& f, long min, long max, std::vector<int>* out) {
  std::vector<YamlNode> items;
  if (f.value.IsSequence()) {
    for (YamlNode n : f.value.items()) items.push_back(n);
  } else {
    items.push_back(f.value);
  }
  bool ok = true;
  out->clear();
  for (YamlNode n : items) {
    long value = 0;
    if (ScalarToInt(n, f.file, "each value of " + Quote(f.key), min, max, &value)) {
      out->push_back(static_cast<int>(value));
    } else {
      ok = false;
    }
  }
  return ok;
}

bool FieldReader::GetDuration(const Field& f, Millis* out) {
  std::string text;
  if (!GetString(f, &text)) return false;
  Result<Millis> d = ParseDuration(text);
  if (!d.ok()) {
    Error(At(f), Quote(f.key) + ": " + d.status().message());
    return false;
  }
  *out = *d;
  return true;
}

bool FieldReader::GetChoice(const Field& f, const std::vector<std::string>& choices,
                            std::string* out) {
  if (!GetString(f, out)) return false;
  if (std::find(choices.begin(), choices.end(), *out) != choices.end()) return true;
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
  Error(At(f), Quote(f.key) + " must be one of " + list + ", found " + Quote(*out) +
                   DidYouMean(*out, choices));
  return false;
}

bool FieldReader::GetStringList(const Field& f, std::vector<std::string>* out) {
  if (!f.value.IsSequence()) {
    Error(At(f), Quote(f.key) + " must be a list of text, found " + KindName(f.value));
    return false;
  }
  bool ok = true;
  for (YamlNode n : f.value.items()) {
    if (!n.IsScalar()) {
      Error(f.file, n, "each item of " + Quote(f.key) + " must be text, found " + KindName(n));
      ok = false;
      continue;
    }
    out->emplace_back(n.Scalar());
  }
  return ok;
}

bool FieldReader::GetStringMap(const Field& f, bool env_names,
                               std::map<std::string, std::string>* out) {
  if (!f.value.IsMap()) {
    Error(At(f), Quote(f.key) + " must be a mapping of names to text, found " + KindName(f.value));
    return false;
  }
  bool ok = true;
  for (YamlPair it : f.value.pairs()) {
    const YamlNode k = it.key;
    const YamlNode v = it.value;
    if (!k.IsScalar() || (env_names && !IsEnvName(k.Scalar()))) {
      Error(f.file, k,
            Quote(f.key) + " keys must be " +
                (env_names ? "variable names ([A-Za-z_][A-Za-z0-9_]*)" : "text"));
      ok = false;
      continue;
    }
    if (!v.IsScalar() && !v.IsNull()) {
      Error(f.file, v,
            "value of " + Quote(k.Scalar()) + " in " + Quote(f.key) + " must be text, found " +
                KindName(v));
      ok = false;
      continue;
    }
    if (!out->emplace(k.Scalar(), v.IsNull() ? "" : v.Scalar()).second) {
      Error(f.file, k, "duplicate key " + Quote(k.Scalar()) + " in " + Quote(f.key));
      ok = false;
    }
  }
  return ok;
}
}  // namespace apollo11::dsl::internal
