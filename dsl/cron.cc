#include "dsl/cron.h"

#include <array>
#include <cctype>
#include <charconv>
#include <string>
#include <vector>

namespace apollo11::dsl {
namespace {

struct Field {
  const char* name;
  int min;
  int max;
  const char* const* names;  // names[i] means value min+i (nullptr: no names)
};

constexpr const char* kMonthNames[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                       "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr const char* kDayNames[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

constexpr std::array<Field, 5> kFields = {{{"minute", 0, 59, nullptr},
                                           {"hour", 0, 23, nullptr},
                                           {"day of month", 1, 31, nullptr},
                                           {"month", 1, 12, kMonthNames},
                                           {"day of week", 0, 7, kDayNames}}};

// Parses a value (number or name) of `field`; false when it is not one.
bool ParseValue(std::string_view text, const Field& field, int* out) {
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

Status CheckElement(std::string_view element, const Field& field) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidInput("bad cron " + std::string(field.name) + " field '" +
                                std::string(element) + "': " + why);
  };
  std::string_view range = element;
  size_t slash = element.find('/');
  if (slash != std::string_view::npos) {
    range = element.substr(0, slash);
    std::string_view step_text = element.substr(slash + 1);
    int step = 0;
    auto [end, ec] = std::from_chars(step_text.data(), step_text.data() + step_text.size(), step);
    if (ec != std::errc() || end != step_text.data() + step_text.size() || step <= 0 ||
        step > field.max) {
      return bad("step must be a number from 1 to " + std::to_string(field.max));
    }
  }
  if (range == "*") return Status::Ok();
  size_t dash = range.find('-');
  int low = 0;
  int high = 0;
  std::string allowed = std::to_string(field.min) + "-" + std::to_string(field.max);
  if (dash == std::string_view::npos) {
    if (!ParseValue(range, field, &low)) return bad("expected a value in " + allowed);
    return Status::Ok();
  }
  if (!ParseValue(range.substr(0, dash), field, &low) ||
      !ParseValue(range.substr(dash + 1), field, &high)) {
    return bad("expected a range of values in " + allowed);
  }
  if (low > high) return bad("range goes backwards");
  return Status::Ok();
}

}  // namespace

Status ValidateCron(std::string_view text) {
  static const char* const kMacros[] = {"@yearly", "@annually", "@monthly", "@weekly",
                                        "@daily",  "@midnight", "@hourly"};
  if (!text.empty() && text[0] == '@') {
    for (const char* macro : kMacros) {
      if (text == macro) return Status::Ok();
    }
    return Status::InvalidInput("unknown cron macro '" + std::string(text) +
                                "' (use @hourly, @daily, @weekly, @monthly or @yearly)");
  }
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
    size_t start = pos;
    while (pos < text.size() && text[pos] != ' ' && text[pos] != '\t') ++pos;
    if (pos > start) parts.push_back(text.substr(start, pos - start));
  }
  if (parts.size() != kFields.size()) {
    return Status::InvalidInput("cron schedule '" + std::string(text) + "' has " +
                                std::to_string(parts.size()) +
                                " fields; expected 5: minute hour day-of-month month day-of-week");
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string_view rest = parts[i];
    while (true) {
      size_t comma = rest.find(',');
      APOLLO11_RETURN_IF_ERROR(CheckElement(rest.substr(0, comma), kFields[i]));
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  return Status::Ok();
}

}  // namespace apollo11::dsl
