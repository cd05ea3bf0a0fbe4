#include "common/time_zone.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <limits>
#include <optional>

#include "common/small_file.h"

namespace apollo11 {
namespace {

constexpr size_t kMaxTzifBytes = 1 << 20;
constexpr int kLastExpandedYear = 2200;

uint32_t Be32(std::string_view b, size_t at) {
  return (uint32_t{static_cast<unsigned char>(b[at])} << 24) |
         (uint32_t{static_cast<unsigned char>(b[at + 1])} << 16) |
         (uint32_t{static_cast<unsigned char>(b[at + 2])} << 8) |
         uint32_t{static_cast<unsigned char>(b[at + 3])};
}
int64_t Be64(std::string_view b, size_t at) {
  return static_cast<int64_t>((uint64_t{Be32(b, at)} << 32) | Be32(b, at + 4));
}

bool IsZoneName(const std::string& name) {
  if (name.empty() || name.size() > 255 || name.front() == '/') return false;
  if (name.find("..") != std::string::npos) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '-' ||
           c == '+';
  });
}

// One rule date of a POSIX TZ string: month, week (5 = last) and weekday,
// plus the local time of day in seconds.
struct RuleDate {
  int month = 0;
  int week = 0;
  int weekday = 0;
  int64_t time = 2 * 3600;
};

struct PosixRule {
  int32_t std_offset = 0;  // seconds east of UTC
  int32_t dst_offset = 0;
  bool has_dst = false;
  RuleDate start;
  RuleDate end;
};

// A small cursor over the footer text.
class TzCursor {
 public:
  explicit TzCursor(std::string_view s) : s_(s) {}
  bool done() const { return i_ >= s_.size(); }
  char peek() const { return done() ? '\0' : s_[i_]; }
  bool Eat(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  bool Name() {
    if (Eat('<')) {
      while (!done() && peek() != '>') ++i_;
      return Eat('>');
    }
    size_t start = i_;
    while (std::isalpha(static_cast<unsigned char>(peek()))) ++i_;
    return i_ - start >= 3;
  }
  std::optional<int64_t> Number() {
    if (!std::isdigit(static_cast<unsigned char>(peek()))) return std::nullopt;
    int64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek())) && v < 1000)
      v = v * 10 + (s_[i_++] - '0');
    return v;
  }
  // [+-]hh[:mm[:ss]] in seconds.
  std::optional<int64_t> Hms() {
    int64_t sign = Eat('-') ? -1 : (Eat('+'), 1);
    std::optional<int64_t> h = Number();
    if (!h) return std::nullopt;
    int64_t total = *h * 3600;
    if (Eat(':')) {
      std::optional<int64_t> m = Number();
      if (!m) return std::nullopt;
      total += *m * 60;
      if (Eat(':')) {
        std::optional<int64_t> sec = Number();
        if (!sec) return std::nullopt;
        total += *sec;
      }
    }
    return sign * total;
  }
  // Mm.w.d[/time]; false for the Jn and n forms, which we do not expand.
  bool Date(RuleDate* d) {
    if (!Eat('M')) return false;
    std::optional<int64_t> m = Number();
    if (!m || !Eat('.')) return false;
    std::optional<int64_t> w = Number();
    if (!w || !Eat('.')) return false;
    std::optional<int64_t> wd = Number();
    if (!wd || *m < 1 || *m > 12 || *w < 1 || *w > 5 || *wd > 6) return false;
    d->month = static_cast<int>(*m);
    d->week = static_cast<int>(*w);
    d->weekday = static_cast<int>(*wd);
    if (Eat('/')) {
      std::optional<int64_t> t = Hms();
      if (!t) return false;
      d->time = *t;
    }
    return true;
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

std::optional<PosixRule> ParsePosixRule(std::string_view text) {
  TzCursor c(text);
  PosixRule rule;
  if (!c.Name()) return std::nullopt;
  std::optional<int64_t> std_west = c.Hms();
  if (!std_west) return std::nullopt;
  rule.std_offset = static_cast<int32_t>(-*std_west);
  if (c.done()) return rule;
  if (!c.Name()) return std::nullopt;
  rule.dst_offset = rule.std_offset + 3600;
  if (c.peek() != ',') {
    std::optional<int64_t> dst_west = c.Hms();
    if (!dst_west) return std::nullopt;
    rule.dst_offset = static_cast<int32_t>(-*dst_west);
  }
  if (!c.Eat(',') || !c.Date(&rule.start) || !c.Eat(',') || !c.Date(&rule.end) || !c.done()) {
    return std::nullopt;
  }
  rule.has_dst = true;
  return rule;
}

// The UTC instant of `d` in `year`, its local time read with `offset`.
int64_t RuleInstant(int year, const RuleDate& d, int32_t offset) {
  using namespace std::chrono;
  year_month_day first{std::chrono::year{year}, month{static_cast<unsigned>(d.month)}, day{1}};
  sys_days day0{first};
  int first_wd = static_cast<int>(weekday{day0}.c_encoding());
  int mday = 1 + (d.weekday - first_wd + 7) % 7 + (d.week - 1) * 7;
  unsigned last = static_cast<unsigned>(year_month_day_last{
      std::chrono::year{year}, month_day_last{month{static_cast<unsigned>(d.month)}}}
                                            .day());
  while (mday > static_cast<int>(last)) mday -= 7;
  int64_t days = day0.time_since_epoch().count() + mday - 1;
  return days * 86400 + d.time - offset;
}

int YearOf(int64_t utc) {
  using namespace std::chrono;
  sys_days day{days{utc >= 0 ? utc / 86400 : (utc - 86399) / 86400}};
  return static_cast<int>(year_month_day{day}.year());
}

}  // namespace

TimeZone::TimeZone() = default;

Result<TimeZone> TimeZone::Load(const std::string& name, const std::string& dir) {
  if (name == "UTC" || name == "Etc/UTC") return TimeZone();
  if (!IsZoneName(name)) {
    return Status::InvalidInput("time zone '" + name +
                                "' is not an IANA zone name (e.g. Europe/Berlin)");
  }
  std::optional<std::string> bytes = ReadSmallFile(dir + "/" + name, kMaxTzifBytes);
  if (!bytes) {
    return Status::InvalidInput("unknown time zone '" + name + "' (no zone file " + dir + "/" +
                                name + ")");
  }
  return FromTzif(*bytes, name);
}

Result<TimeZone> TimeZone::FromTzif(std::string_view b, const std::string& name) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidInput("time zone '" + name + "': not a TZif file (" + why + ")");
  };
  if (b.size() < 44 || b.substr(0, 4) != "TZif") return bad("no TZif header");
  auto counts = [&](size_t at, uint32_t c[6]) {
    for (int i = 0; i < 6; ++i) c[i] = Be32(b, at + 20 + 4 * i);
  };
  uint32_t c[6];  // isutcnt isstdcnt leapcnt timecnt typecnt charcnt
  counts(0, c);
  size_t time_size = 4;
  size_t at = 44;
  auto block_size = [&](size_t ts) {
    return c[3] * ts + c[3] + c[4] * 6 + c[5] + c[2] * (ts + 4) + c[1] + c[0];
  };
  if (b[4] >= '2') {
    at += block_size(4);
    if (b.size() < at + 44 || b.substr(at, 4) != "TZif") return bad("no second header");
    counts(at, c);
    at += 44;
    time_size = 8;
  }
  if (c[4] == 0 || c[3] > 100000 || c[4] > 256 || b.size() < at + block_size(time_size)) {
    return bad("counts do not fit the file");
  }
  TimeZone zone;
  zone.name_ = name;
  size_t idx_at = at + c[3] * time_size;
  size_t type_at = idx_at + c[3];
  auto type_offset = [&](size_t t) { return static_cast<int32_t>(Be32(b, type_at + 6 * t)); };
  zone.initial_offset_ = type_offset(0);
  for (uint32_t i = 0; i < c[3]; ++i) {
    int64_t t = time_size == 8 ? Be64(b, at + i * 8) : static_cast<int32_t>(Be32(b, at + i * 4));
    auto type = static_cast<unsigned char>(b[idx_at + i]);
    if (type >= c[4]) return bad("transition names an unknown type");
    if (!zone.times_.empty() && t <= zone.times_.back()) return bad("transitions out of order");
    zone.times_.push_back(t);
    zone.offsets_.push_back(type_offset(type));
  }
  size_t footer = at + block_size(time_size);
  if (time_size == 8 && footer < b.size() && b[footer] == '\n') {
    size_t end = b.find('\n', footer + 1);
    if (end == std::string_view::npos) return bad("unterminated footer");
    std::optional<PosixRule> rule = ParsePosixRule(b.substr(footer + 1, end - footer - 1));
    if (rule && rule->has_dst) {
      int64_t last = zone.times_.empty() ? std::numeric_limits<int64_t>::min() : zone.times_.back();
      int from = zone.times_.empty() ? 1970 : YearOf(last);
      for (int y = from; y <= kLastExpandedYear; ++y) {
        int64_t on = RuleInstant(y, rule->start, rule->std_offset);
        int64_t off = RuleInstant(y, rule->end, rule->dst_offset);
        std::pair<int64_t, int32_t> pair[2] = {{on, rule->dst_offset}, {off, rule->std_offset}};
        if (off < on) std::swap(pair[0], pair[1]);
        for (const auto& [t, offset] : pair) {
          if (zone.times_.empty() || t > zone.times_.back()) {
            zone.times_.push_back(t);
            zone.offsets_.push_back(offset);
          }
        }
      }
    }
  }
  return zone;
}

int32_t TimeZone::OffsetAt(int64_t utc) const {
  auto it = std::upper_bound(times_.begin(), times_.end(), utc);
  if (it == times_.begin()) return initial_offset_;
  return offsets_[static_cast<size_t>(it - times_.begin()) - 1];
}

int64_t TimeZone::NextTransition(int64_t utc) const {
  auto it = std::upper_bound(times_.begin(), times_.end(), utc);
  while (it != times_.end()) {
    size_t i = static_cast<size_t>(it - times_.begin());
    int32_t before = i == 0 ? initial_offset_ : offsets_[i - 1];
    if (offsets_[i] != before) return *it;
    ++it;
  }
  return std::numeric_limits<int64_t>::max();
}

}  // namespace apollo11
