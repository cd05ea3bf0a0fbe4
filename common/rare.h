#pragma once
// Rare<T>: a field most values leave at its default, stored as one pointer.
//
// A TaskSpec has some twenty fields that belong to one task type or to a
// feature few tasks use (an http task's headers, a db task's sql, foreach).
// Held inline they cost sizeof(T) each in every task (32 bytes a string, 48
// a map) whether set or not; a 100k-task run paid about 50 MB for fields it
// never set. A Rare<T> costs 8 bytes while it holds T{} and allocates only
// when it holds something else.
//
// Contract: a Rare<T> reads as a const T (implicitly, through get(), or
// through -> for member calls) and compares by value, so an empty box and a
// box holding T{} are equal. mut() gives a writable T, allocating it. Copies
// are deep. Once allocated, the box lives as long as the Rare and is assigned
// in place, so a reference to a set value stays valid as it would to a plain
// member; a reference taken while the box was empty is to the shared T{} and
// does not see a later assignment. Not thread-safe for writes; const reads
// from many threads are fine (the empty value is a function-local static).
//
// A field whose default is not T{} (an http task's method "GET", a task's
// group "default") names it with a policy, Rare<T, Policy>, where
// Policy::Value() returns a const T& that lives as long as the program; the
// contract above then holds with Policy::Value() in place of T{}.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace apollo11 {

// The default default: T{}.
template <class T>
struct ValueInitialized {
  static const T& Value() {
    static const T kDefault{};
    return kDefault;
  }
};

template <class T, class Policy = ValueInitialized<T>>
class Rare {
 public:
  Rare() = default;
  Rare(T value) { Assign(std::move(value)); }  // NOLINT(google-explicit-constructor)
  Rare(const Rare& other) : box_(other.box_ ? std::make_unique<T>(*other.box_) : nullptr) {}
  Rare(Rare&&) noexcept = default;
  Rare& operator=(const Rare& other) {
    if (this != &other) Assign(other.get());
    return *this;
  }
  Rare& operator=(Rare&& other) noexcept {
    if (this == &other) return *this;
    if (!box_) {
      box_ = std::move(other.box_);
    } else if (other.box_) {
      *box_ = std::move(*other.box_);
    } else {
      *box_ = Default();
    }
    return *this;
  }
  Rare& operator=(T value) {
    Assign(std::move(value));
    return *this;
  }
  ~Rare() = default;

  const T& get() const { return box_ ? *box_ : Default(); }
  operator const T&() const { return get(); }  // NOLINT(google-explicit-constructor)
  const T* operator->() const { return &get(); }
  const T& operator*() const { return get(); }

  // The value for writing; allocates it when the box is empty.
  T& mut() {
    if (!box_) box_ = std::make_unique<T>(Default());
    return *box_;
  }

  // Back to the default (an allocated box is kept, as a std::string keeps its
  // buffer).
  void clear() {
    if (box_) *box_ = Default();
  }
  // Back to the default, freeing the box: unlike clear(), a reference taken
  // to the set value no longer refers to anything.
  void Free() { box_.reset(); }
  bool empty() const { return get().empty(); }
  size_t size() const { return get().size(); }
  // Templates, so a Rare of a type without begin() is no range (Catch and
  // std::begin probe for one) rather than an error.
  template <class U = T>
  auto begin() const -> decltype(std::declval<const U&>().begin()) {
    return get().begin();
  }
  template <class U = T>
  auto end() const -> decltype(std::declval<const U&>().end()) {
    return get().end();
  }

  friend bool operator==(const Rare& a, const Rare& b) { return a.get() == b.get(); }
  friend bool operator==(const Rare& a, const T& b) { return a.get() == b; }

 private:
  static const T& Default() { return Policy::Value(); }
  // An allocated box is assigned in place, so a reference taken to a set
  // value stays valid, as it would to a plain member; an empty box is
  // allocated only for a value other than the default.
  void Assign(T value) {
    if (box_) {
      *box_ = std::move(value);
    } else if (!(value == Default())) {
      box_ = std::make_unique<T>(std::move(value));
    }
  }
  std::unique_ptr<T> box_;
};

// RareOptional<T>: a std::optional<T> that most values leave empty, stored as
// one pointer. A TaskSpec's retry policy is 72 bytes as a std::optional and
// most tasks have none; this costs 8 until a policy is set.
//
// Contract: reads and writes as std::optional<T> does (has_value, bool, *,
// ->, reset, assignment from T, std::nullopt or a std::optional<T>); copies
// are deep; compares by value (two empty ones are equal). Assigning a value
// to a set one assigns in place.
template <class T>
class RareOptional {
 public:
  RareOptional() = default;
  RareOptional(std::nullopt_t) {}  // NOLINT(google-explicit-constructor)
  RareOptional(T value)
      : box_(std::make_unique<T>(std::move(value))) {}  // NOLINT(google-explicit-constructor)
  RareOptional(const std::optional<T>& value)           // NOLINT(google-explicit-constructor)
      : box_(value ? std::make_unique<T>(*value) : nullptr) {}
  RareOptional(const RareOptional& other)
      : box_(other.box_ ? std::make_unique<T>(*other.box_) : nullptr) {}
  RareOptional(RareOptional&&) noexcept = default;
  RareOptional& operator=(const RareOptional& other) {
    if (this == &other) return *this;
    if (other.box_) {
      *this = *other.box_;
    } else {
      box_.reset();
    }
    return *this;
  }
  RareOptional& operator=(RareOptional&&) noexcept = default;
  RareOptional& operator=(std::nullopt_t) {
    box_.reset();
    return *this;
  }
  RareOptional& operator=(T value) {
    if (box_) {
      *box_ = std::move(value);
    } else {
      box_ = std::make_unique<T>(std::move(value));
    }
    return *this;
  }
  RareOptional& operator=(const std::optional<T>& value) {
    if (value) return *this = *value;
    box_.reset();
    return *this;
  }
  ~RareOptional() = default;

  bool has_value() const { return box_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  // Undefined when empty, as std::optional's.
  const T& operator*() const { return *box_; }
  T& operator*() { return *box_; }
  const T* operator->() const { return box_.get(); }
  T* operator->() { return box_.get(); }
  void reset() { box_.reset(); }

  friend bool operator==(const RareOptional& a, const RareOptional& b) {
    if (a.has_value() != b.has_value()) return false;
    return !a.has_value() || *a.box_ == *b.box_;
  }
  friend bool operator==(const RareOptional& a, std::nullopt_t) { return !a.has_value(); }

 private:
  std::unique_ptr<T> box_;
};

// Text joins with a boxed string as with a plain one (messages name fields).
template <class P>
std::string operator+(const std::string& a, const Rare<std::string, P>& b) {
  return a + b.get();
}
template <class P>
std::string operator+(const Rare<std::string, P>& a, const std::string& b) {
  return a.get() + b;
}
template <class P>
std::string operator+(const char* a, const Rare<std::string, P>& b) {
  return a + b.get();
}
template <class P>
std::string operator+(const Rare<std::string, P>& a, const char* b) {
  return a.get() + b;
}

// The plain value behind a field, boxed or not: for code written once for
// every member of APOLLO11_TASK_FIELDS (dsl/task_fields.h) or for a TaskSpec
// and a wire struct alike. A plain field stays writable; a boxed one is read.
template <class T>
T& Unboxed(T& value) {
  return value;
}
template <class T, class P>
const T& Unboxed(const Rare<T, P>& value) {
  return value.get();
}
template <class T, class P>
const T& Unboxed(Rare<T, P>& value) {
  return value.get();
}
// The plain value to write a field into; allocates a boxed one.
template <class T>
T* Writable(T* field) {
  return field;
}
template <class T, class P>
T* Writable(Rare<T, P>* field) {
  return &field->mut();
}

}  // namespace apollo11
