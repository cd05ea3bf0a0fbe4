#include "dsl/cron_schedule.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <string>
#include <vector>

namespace apollo11::dsl {
namespace {

struct CronField {
  const char* name;
  int min;
  int max;
  const char* const* names;  // names[i] means value min+i (nullptr: no names)
};

constexpr const char* kMonthNames[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                       "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr const char* kDayNames[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

constexpr CronField kSecondField = {"second", 0, 59, nullptr};
constexpr std::array<CronField, 5> kFields = {{{"minute", 0, 59, nullptr},
                                               {"hour", 0, 23, nullptr},
                                               {"day of month", 1, 31, nullptr},
                                               {"month", 1, 12, kMonthNames},
                                               {"day of week", 0, 7, kDayNames}}};

constexpr int64_t kDay = 86400;
constexpr int64_t kSearchYears = 8;

// Parses a value (number or name) of `field`; false when it is not one.
bool ParseValue(std::string_view text, const CronField& field, int* out) {
  if (text.empty()) return false;
  if (field.names != nullptr && text.size() == 3) {
    std::string lower(text);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    int count = field.max - field.min + 1 - (field.names == kDayNames ? 1 : 0);
    for (int i = 0; i < count; ++i) {
      if (lower == field.names[i]) {
        *out = field.min + i;
        return true;
      }
    }
  }
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return false;
  if (value < field.min || value > field.max) return false;
  *out = value;
  return true;
}

// Sets in `bits` (indexed by value) what one comma-separated element allows.
Status ParseElement(std::string_view element, const CronField& field, std::bitset<64>* bits) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidInput("bad cron " + std::string(field.name) + " field '" +
                                std::string(element) + "': " + why);
  };
  std::string_view range = element;
  int step = 1;
  size_t slash = element.find('/');
  if (slash != std::string_view::npos) {
    range = element.substr(0, slash);
    std::string_view step_text = element.substr(slash + 1);
    auto [end, ec] = std::from_chars(step_text.data(), step_text.data() + step_text.size(), step);
    if (ec != std::errc() || end != step_text.data() + step_text.size() || step <= 0 ||
        step > field.max) {
      return bad("step must be a number from 1 to " + std::to_string(field.max));
    }
  }
  int low = field.min;
  int high = field.max;
  std::string allowed = std::to_string(field.min) + "-" + std::to_string(field.max);
  size_t dash = range.find('-');
  if (range == "*") {
  } else if (dash == std::string_view::npos) {
    if (!ParseValue(range, field, &low)) return bad("expected a value in " + allowed);
    if (slash == std::string_view::npos) high = low;
  } else if (!ParseValue(range.substr(0, dash), field, &low) ||
             !ParseValue(range.substr(dash + 1), field, &high)) {
    return bad("expected a range of values in " + allowed);
  } else if (low > high) {
    return bad("range goes backwards");
  }
  for (int v = low; v <= high; v += step) bits->set(static_cast<size_t>(v));
  return Status::Ok();
}

Status ParseField(std::string_view text, const CronField& field, std::bitset<64>* bits) {
  std::string_view rest = text;
  while (true) {
    size_t comma = rest.find(',');
    APOLLO11_RETURN_IF_ERROR(ParseElement(rest.substr(0, comma), field, bits));
    if (comma == std::string_view::npos) return Status::Ok();
    rest = rest.substr(comma + 1);
  }
}

std::string_view ExpandMacro(std::string_view text) {
  static constexpr std::pair<const char*, const char*> kMacros[] = {
      {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
      {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
      {"@hourly", "0 * * * *"}};
  for (const auto& [macro, form] : kMacros) {
    if (text == macro) return form;
  }
  return {};
}

template <size_t N>
std::bitset<N> Narrow(const std::bitset<64>& bits) {
  std::bitset<N> out;
  for (size_t i = 0; i < N; ++i) out[i] = bits[i];
  return out;
}

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace

Result<CronSchedule> CronSchedule::Parse(std::string_view text) {
  if (!text.empty() && text[0] == '@') {
    std::string_view form = ExpandMacro(text);
    if (form.empty()) {
      return Status::InvalidInput("unknown cron macro '" + std::string(text) +
                                  "' (use @hourly, @daily, @weekly, @monthly or @yearly)");
    }
    text = form;
  }
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
    size_t start = pos;
    while (pos < text.size() && text[pos] != ' ' && text[pos] != '\t') ++pos;
    if (pos > start) parts.push_back(text.substr(start, pos - start));
  }
  if (parts.size() != 5 && parts.size() != 6) {
    return Status::InvalidInput(
        "cron schedule '" + std::string(text) + "' has " + std::to_string(parts.size()) +
        " fields; expected 5: minute hour day-of-month month day-of-week (or 6 with a leading "
        "seconds field, for tests)");
  }
  CronSchedule s;
  std::bitset<64> bits;
  size_t first = 0;
  if (parts.size() == 6) {
    s.has_seconds_ = true;
    APOLLO11_RETURN_IF_ERROR(ParseField(parts[0], kSecondField, &bits));
    s.seconds_ = Narrow<60>(bits);
    first = 1;
  } else {
    s.seconds_.set(0);
  }
  std::bitset<64> f[5];
  for (size_t i = 0; i < 5; ++i) {
    APOLLO11_RETURN_IF_ERROR(ParseField(parts[first + i], kFields[i], &f[i]));
  }
  s.minutes_ = Narrow<60>(f[0]);
  s.hours_ = Narrow<24>(f[1]);
  s.days_ = Narrow<32>(f[2]);
  s.months_ = Narrow<13>(f[3]);
  if (f[4][7]) f[4].set(0);
  s.weekdays_ = Narrow<7>(f[4]);
  s.wildcard_ = parts[first][0] == '*' || parts[first + 1][0] == '*';
  s.dom_star_ = parts[first + 2][0] == '*';
  s.dow_star_ = parts[first + 4][0] == '*';
  if (!s.NextAfter(0, TimeZone()).has_value() &&
      !s.NextAfter(4 * 365 * kDay, TimeZone()).has_value()) {
    return Status::InvalidInput("cron schedule '" + std::string(text) +
                                "' never fires (no such day)");
  }
  return s;
}

bool CronSchedule::DayMatches(unsigned mday, unsigned month, unsigned weekday) const {
  if (!months_[month]) return false;
  bool dom = days_[mday];
  bool dow = weekdays_[weekday];
  return (dom_star_ || dow_star_) ? (dom && dow) : (dom || dow);
}

std::optional<int64_t> CronSchedule::NextCivil(int64_t civil, int64_t limit) const {
  using namespace std::chrono;
  while (civil <= limit) {
    int64_t day_number = FloorDiv(civil, kDay);
    int64_t sod = civil - day_number * kDay;
    sys_days day{days{day_number}};
    year_month_day ymd{day};
    auto month = static_cast<unsigned>(ymd.month());
    if (!months_[month]) {
      sys_days next{(ymd.year() / ymd.month() / 1) + months{1}};
      civil = next.time_since_epoch().count() * kDay;
      continue;
    }
    if (!DayMatches(static_cast<unsigned>(ymd.day()), month, weekday{day}.c_encoding())) {
      civil = (day_number + 1) * kDay;
      continue;
    }
    int64_t hour = sod / 3600;
    int64_t minute = sod % 3600 / 60;
    int64_t second = sod % 60;
    if (!hours_[static_cast<size_t>(hour)]) {
      civil = day_number * kDay + (hour + 1) * 3600;
    } else if (!minutes_[static_cast<size_t>(minute)]) {
      civil = day_number * kDay + hour * 3600 + (minute + 1) * 60;
    } else if (!seconds_[static_cast<size_t>(second)]) {
      ++civil;
    } else {
      return civil;
    }
  }
  return std::nullopt;
}

std::optional<int64_t> CronSchedule::NextAfter(int64_t utc, const TimeZone& zone) const {
  int32_t now_offset = zone.OffsetAt(utc);
  int64_t transition = zone.NextTransition(utc);
  int64_t fall_back = 0;
  if (transition != INT64_MAX) {
    fall_back = std::max<int64_t>(0, now_offset - zone.OffsetAt(transition));
  }
  int64_t civil = utc + now_offset - fall_back;
  int64_t limit = utc + now_offset + kSearchYears * 366 * kDay;
  std::optional<int64_t> best;
  while (true) {
    std::optional<int64_t> m = NextCivil(civil, limit);
    if (!m) return best;
    if (best && *m - std::max(now_offset, zone.OffsetAt(*best)) > *best) return best;
    int32_t o1 = zone.OffsetAt(*m - kDay);
    int32_t o2 = zone.OffsetAt(*m + kDay);
    int64_t u1 = *m - o1;
    int64_t u2 = *m - o2;
    bool valid1 = zone.OffsetAt(u1) == o1;
    bool valid2 = o1 != o2 && zone.OffsetAt(u2) == o2;
    std::optional<int64_t> candidate;
    if (valid1 && valid2) {  // repeated local time: u1 is the first occurrence
      candidate = u1 > utc ? u1 : (wildcard_ ? std::optional<int64_t>(u2) : std::nullopt);
    } else if (valid1 || valid2) {
      candidate = valid1 ? u1 : u2;
    } else if (o1 == o2) {
      candidate = u1;
    } else if (!wildcard_) {  // a local time in a gap: the first instant after it
      candidate = zone.NextTransition(std::min(u1, u2));
    }
    if (candidate && *candidate > utc && (!best || *candidate < *best)) best = candidate;
    civil = *m + 1;
  }
}

}  // namespace apollo11::dsl
