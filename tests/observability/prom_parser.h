#pragma once
// A small, strict parser of the Prometheus text format (0.0.4) for tests: it
// checks what a scraper relies on (HELP/TYPE before a family's samples, one
// TYPE per family, well-formed names, labels and values, histogram buckets
// cumulative and ending in +Inf equal to _count) and returns the samples.

#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace apollo11::testing {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct PromScrape {
  std::vector<PromSample> samples;
  std::map<std::string, std::string> types;  // family -> counter|gauge|histogram
  std::map<std::string, std::string> help;
  std::string error;  // empty when the text is well-formed

  // The value of the series `name{labels}`; NaN when absent.
  double Value(const std::string& name,
               const std::map<std::string, std::string>& labels = {}) const {
    for (const PromSample& s : samples) {
      if (s.name == name && s.labels == labels) return s.value;
    }
    return std::nan("");
  }
  // Sum over every series of `name`.
  double Sum(const std::string& name) const {
    double total = 0;
    for (const PromSample& s : samples) total += s.name == name ? s.value : 0;
    return total;
  }
};

namespace prom_detail {

inline bool NameChar(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}

inline bool ParseValue(const std::string& text, double* out) {
  if (text == "+Inf") {
    *out = INFINITY;
    return true;
  }
  if (text == "-Inf") {
    *out = -INFINITY;
    return true;
  }
  if (text == "NaN") {
    *out = NAN;
    return true;
  }
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size();
}

// The family a sample belongs to: histogram suffixes stripped when the base is
// a declared histogram.
inline std::string FamilyOf(const std::string& name,
                            const std::map<std::string, std::string>& types) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      std::string base = name.substr(0, name.size() - s.size());
      auto it = types.find(base);
      if (it != types.end() && it->second == "histogram") return base;
    }
  }
  return name;
}

}  // namespace prom_detail

inline PromScrape ParsePrometheusText(const std::string& text) {
  using namespace prom_detail;  // NOLINT: test helper
  PromScrape out;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  std::set<std::string> families_done;  // families whose samples ended
  std::string current;
  auto fail = [&](const std::string& why) {
    out.error = "line " + std::to_string(number) + ": " + why + ": " + line;
    return out;
  };
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream words(line);
      std::string hash, kind, name;
      words >> hash >> kind >> name;
      if (kind != "HELP" && kind != "TYPE") continue;  // a plain comment
      if (name.empty()) return fail("HELP/TYPE without a name");
      if (kind == "TYPE") {
        std::string type;
        words >> type;
        if (type != "counter" && type != "gauge" && type != "histogram" && type != "summary" &&
            type != "untyped") {
          return fail("unknown type");
        }
        if (out.types.count(name)) return fail("second TYPE for a family");
        if (families_done.count(name)) return fail("TYPE after the family's samples");
        out.types[name] = type;
      } else {
        std::string rest;
        std::getline(words, rest);
        out.help[name] = rest.empty() ? "" : rest.substr(1);
      }
      continue;
    }
    PromSample s;
    size_t i = 0;
    while (i < line.size() && NameChar(line[i], i == 0)) ++i;
    if (i == 0) return fail("bad metric name");
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        size_t start = i;
        while (i < line.size() && NameChar(line[i], i == start) && line[i] != ':') ++i;
        if (i == start || i >= line.size() || line[i] != '=') return fail("bad label name");
        std::string key = line.substr(start, i - start);
        if (++i >= line.size() || line[i] != '"') return fail("label value not quoted");
        ++i;
        std::string value;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\') {
            if (++i >= line.size()) return fail("dangling escape");
            const char c = line[i];
            if (c == 'n') {
              value += '\n';
            } else if (c == '\\' || c == '"') {
              value += c;
            } else {
              return fail("bad escape");
            }
          } else {
            value += line[i];
          }
          ++i;
        }
        if (i >= line.size()) return fail("unterminated label value");
        ++i;  // closing quote
        if (s.labels.count(key)) return fail("duplicate label");
        s.labels[key] = value;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) return fail("unterminated label set");
      ++i;  // '}'
    }
    if (i >= line.size() || line[i] != ' ') return fail("no space before the value");
    std::string value_text = line.substr(i + 1);
    const size_t space = value_text.find(' ');  // an optional timestamp follows
    if (space != std::string::npos) value_text = value_text.substr(0, space);
    if (!ParseValue(value_text, &s.value)) return fail("bad value");
    const std::string family = FamilyOf(s.name, out.types);
    if (!out.types.count(family)) return fail("sample before its TYPE");
    if (family != current) {
      if (families_done.count(family)) return fail("family's samples are not contiguous");
      if (!current.empty()) families_done.insert(current);
      current = family;
    }
    const std::string& type = out.types[family];
    if (type == "counter" && s.value < 0) return fail("negative counter");
    out.samples.push_back(std::move(s));
  }
  // Histograms: per series, buckets ascend in le and count, +Inf == _count.
  for (const auto& [family, type] : out.types) {
    if (type != "histogram") continue;
    std::map<std::map<std::string, std::string>, std::vector<std::pair<double, double>>> buckets;
    for (const PromSample& s : out.samples) {
      if (s.name != family + "_bucket") continue;
      auto labels = s.labels;
      auto le = labels.find("le");
      if (le == labels.end()) return fail(family + " bucket without le");
      double bound = 0;
      if (!ParseValue(le->second, &bound)) return fail(family + " bad le");
      labels.erase(le);
      buckets[labels].push_back({bound, s.value});
    }
    for (const auto& [labels, series] : buckets) {
      for (size_t k = 1; k < series.size(); ++k) {
        if (!(series[k].first > series[k - 1].first)) return fail(family + ": le not ascending");
        if (series[k].second < series[k - 1].second)
          return fail(family + ": buckets not cumulative");
      }
      if (series.empty() || !std::isinf(series.back().first))
        return fail(family + ": no +Inf bucket");
      if (out.Value(family + "_count", labels) != series.back().second) {
        return fail(family + ": _count differs from the +Inf bucket");
      }
      if (std::isnan(out.Value(family + "_sum", labels))) return fail(family + ": no _sum");
    }
  }
  return out;
}

}  // namespace apollo11::testing
