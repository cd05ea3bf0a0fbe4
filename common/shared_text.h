#pragma once
// SharedText: an immutable string whose copies share one allocation.
//
// Every source location in a pipeline names the file it is in, and nearly
// all of them name the same one: a 100k-task pipeline held some 280,000
// copies of its path, one heap block each (7.6 MB for a 26-character path).
// Copying a SharedText adds a reference instead.
//
// Contract: a SharedText reads as a const std::string (implicitly or through
// str()) and compares by content, so two equal texts are equal whether or
// not they share. The text never changes after construction (assignment
// replaces which text is held, never the text), so copies can be read from
// many threads at once. An empty SharedText allocates nothing.

#include <compare>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace apollo11 {

class SharedText {
 public:
  SharedText() = default;
  SharedText(std::string text)  // NOLINT(google-explicit-constructor)
      : text_(text.empty() ? nullptr : std::make_shared<const std::string>(std::move(text))) {}
  SharedText(const char* text) : SharedText(std::string(text)) {}  // NOLINT

  const std::string& str() const { return text_ ? *text_ : Empty(); }
  operator const std::string&() const { return str(); }  // NOLINT(google-explicit-constructor)
  const char* c_str() const { return str().c_str(); }
  size_t size() const { return str().size(); }
  bool empty() const { return text_ == nullptr; }

  // Whether this and `other` hold the same allocation (both empty counts).
  bool SharesWith(const SharedText& other) const { return text_ == other.text_; }

  friend bool operator==(const SharedText& a, const SharedText& b) {
    return a.text_ == b.text_ || a.str() == b.str();
  }
  friend bool operator==(const SharedText& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const SharedText& a, const char* b) { return a.str() == b; }
  friend std::strong_ordering operator<=>(const SharedText& a, const SharedText& b) {
    return a.str().compare(b.str()) <=> 0;
  }
  friend std::string operator+(const SharedText& a, std::string_view b) {
    std::string out = a.str();
    out.append(b);
    return out;
  }
  friend std::string operator+(const SharedText& a, const char* b) {
    return a + std::string_view(b);
  }
  friend std::string operator+(const SharedText& a, const std::string& b) {
    return a + std::string_view(b);
  }

 private:
  static const std::string& Empty() {
    static const std::string kEmpty;
    return kEmpty;
  }

  std::shared_ptr<const std::string> text_;
};

}  // namespace apollo11
