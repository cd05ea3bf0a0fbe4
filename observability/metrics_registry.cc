#include "observability/metrics_registry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace apollo11::observability {
namespace {

bool ValidName(const std::string& name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

[[noreturn]] void Misuse(const std::string& what) {
  std::fprintf(stderr, "metrics registry misuse: %s\n", what.c_str());
  std::abort();
}

// Label values and help text escaping, as the text format defines it.
void AppendEscaped(std::string* out, const std::string& s, bool quote) {
  for (char c : s) {
    if (c == '\\') {
      *out += "\\\\";
    } else if (c == '\n') {
      *out += "\\n";
    } else if (quote && c == '"') {
      *out += "\\\"";
    } else {
      *out += c;
    }
  }
}

void AppendNumber(std::string* out, double v) {
  if (std::isinf(v)) {
    *out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  if (std::isnan(v)) {
    *out += "NaN";
    return;
  }
  char buf[32];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    // The shortest form that reads back as the same double: 0.05, not
    // 0.050000000000000003.
    for (int precision = 15; precision <= 17; ++precision) {
      std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
      if (std::strtod(buf, nullptr) == v) break;
    }
  }
  *out += buf;
}

// name{a="x",le="0.5"} value
void AppendSample(std::string* out, const std::string& name, const char* suffix,
                  const Labels& labels, const char* extra_label, double extra_value, double value) {
  *out += name;
  *out += suffix;
  if (!labels.empty() || extra_label != nullptr) {
    *out += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!first) *out += ',';
      first = false;
      *out += k;
      *out += "=\"";
      AppendEscaped(out, v, true);
      *out += '"';
    }
    if (extra_label != nullptr) {
      if (!first) *out += ',';
      *out += extra_label;
      *out += "=\"";
      AppendNumber(out, extra_value);
      *out += '"';
    }
    *out += '}';
  }
  *out += ' ';
  AppendNumber(out, value);
  *out += '\n';
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      buckets_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {
  if (!std::is_sorted(bounds_.begin(), bounds_.end()) ||
      std::adjacent_find(bounds_.begin(), bounds_.end()) != bounds_.end()) {
    Misuse("histogram bounds must be strictly ascending");
  }
}

void Histogram::Observe(double v) {
  // Buckets are few (under 20): a linear scan beats a binary search here.
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

std::vector<double> FastLatencyBuckets() {
  return {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,    0.1,    0.25,    0.5,    1.0,   2.5,    5.0,   10.0};
}

std::vector<double> SlowLatencyBuckets() {
  return {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0};
}

Registry::Family& Registry::FamilyFor(const std::string& name, const std::string& help, Type type,
                                      const Labels& labels) {
  if (!ValidName(name, true)) Misuse("bad metric name '" + name + "'");
  for (const auto& [k, v] : labels) {
    if (!ValidName(k, false) || k.rfind("__", 0) == 0 || k == "le") {
      Misuse("bad label name '" + k + "' on " + name);
    }
  }
  for (Family& f : families_) {
    if (f.name != name) continue;
    if (f.type != type || f.help != help) Misuse("family " + name + " registered twice");
    for (const Series& s : f.series) {
      if (s.labels == labels) Misuse("series of " + name + " registered twice");
    }
    return f;
  }
  families_.push_back(Family{name, help, type, {}});
  return families_.back();
}

Counter& Registry::AddCounter(const std::string& name, const std::string& help, Labels labels) {
  MutexLock lock(&mu_);
  Family& f = FamilyFor(name, help, Type::kCounter, labels);
  Counter& c = counters_.emplace_back();
  f.series.push_back(Series{std::move(labels), &c, nullptr, nullptr, {}});
  return c;
}

Gauge& Registry::AddGauge(const std::string& name, const std::string& help, Labels labels) {
  MutexLock lock(&mu_);
  Family& f = FamilyFor(name, help, Type::kGauge, labels);
  Gauge& g = gauges_.emplace_back();
  f.series.push_back(Series{std::move(labels), nullptr, &g, nullptr, {}});
  return g;
}

Histogram& Registry::AddHistogram(const std::string& name, const std::string& help,
                                  std::vector<double> bounds, Labels labels) {
  MutexLock lock(&mu_);
  Family& f = FamilyFor(name, help, Type::kHistogram, labels);
  Histogram& h = histograms_.emplace_back(std::move(bounds));
  f.series.push_back(Series{std::move(labels), nullptr, nullptr, &h, {}});
  return h;
}

void Registry::AddComputedGauge(const std::string& name, const std::string& help,
                                std::function<double()> read, Labels labels) {
  MutexLock lock(&mu_);
  Family& f = FamilyFor(name, help, Type::kGauge, labels);
  f.series.push_back(Series{std::move(labels), nullptr, nullptr, nullptr, std::move(read)});
}

void Registry::AddComputedCounter(const std::string& name, const std::string& help,
                                  std::function<double()> read, Labels labels) {
  MutexLock lock(&mu_);
  Family& f = FamilyFor(name, help, Type::kCounter, labels);
  f.series.push_back(Series{std::move(labels), nullptr, nullptr, nullptr, std::move(read)});
}

std::string Registry::WriteText() const {
  MutexLock lock(&mu_);
  std::string out;
  out.reserve(families_.size() * 256);
  for (const Family& f : families_) {
    out += "# HELP ";
    out += f.name;
    out += ' ';
    AppendEscaped(&out, f.help, false);
    out += "\n# TYPE ";
    out += f.name;
    out += f.type == Type::kCounter ? " counter\n"
           : f.type == Type::kGauge ? " gauge\n"
                                    : " histogram\n";
    for (const Series& s : f.series) {
      if (s.counter != nullptr) {
        AppendSample(&out, f.name, "", s.labels, nullptr, 0,
                     static_cast<double>(s.counter->value()));
      } else if (s.gauge != nullptr) {
        AppendSample(&out, f.name, "", s.labels, nullptr, 0, static_cast<double>(s.gauge->value()));
      } else if (s.computed) {
        AppendSample(&out, f.name, "", s.labels, nullptr, 0, s.computed());
      } else {
        const Histogram& h = *s.histogram;
        uint64_t cumulative = 0;
        for (size_t i = 0; i <= h.bounds().size(); ++i) {
          cumulative += h.bucket(i);
          const double le = i < h.bounds().size() ? h.bounds()[i] : INFINITY;
          AppendSample(&out, f.name, "_bucket", s.labels, "le", le,
                       static_cast<double>(cumulative));
        }
        AppendSample(&out, f.name, "_sum", s.labels, nullptr, 0, h.sum());
        AppendSample(&out, f.name, "_count", s.labels, nullptr, 0, static_cast<double>(cumulative));
      }
    }
  }
  return out;
}

double Registry::Sum(const std::string& name) const {
  MutexLock lock(&mu_);
  double sum = 0;
  for (const Family& f : families_) {
    if (f.name != name) continue;
    for (const Series& s : f.series) {
      if (s.counter != nullptr) sum += static_cast<double>(s.counter->value());
      if (s.gauge != nullptr) sum += static_cast<double>(s.gauge->value());
      if (s.computed) sum += s.computed();
    }
  }
  return sum;
}

}  // namespace apollo11::observability
