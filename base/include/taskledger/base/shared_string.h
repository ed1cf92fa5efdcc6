// SharedString: an immutable string whose copies share one reference-counted
// heap block. It is the type of the strings that every update or decision
// repeats (provenance source id, rule id and pack version; the rule ids of a
// decision): extraction builds each once and copying it into the twentieth
// update costs an atomic increment, not an allocation and a copy.
//
// It reads like a std::string field: it is built implicitly from std::string,
// std::string_view and string literals, converts implicitly to
// std::string_view, compares equal to and orders like the text it holds (also
// against std::string, std::string_view and const char*), hashes like its
// text, prints with <<, and converts to and from a JSON string. The empty
// string holds no block. str() makes a std::string copy.
//
// Thread safety: as std::shared_ptr<const std::string>. Copies of one
// SharedString may be read, copied and destroyed on any threads at once; one
// object must not be assigned while another thread reads it.
#pragma once

#include <atomic>
#include <compare>
#include <cstddef>
#include <cstring>
#include <functional>
#include <new>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace taskledger {

class SharedString {
 public:
  SharedString() noexcept = default;
  // Implicit by design: a SharedString stands in for a std::string field.
  SharedString(std::string_view s) : rep_(Make(s)) {}    // NOLINT(google-explicit-constructor)
  SharedString(const std::string& s) : rep_(Make(s)) {}  // NOLINT(google-explicit-constructor)
  SharedString(const char* s) : rep_(Make(s)) {}         // NOLINT(google-explicit-constructor)
  SharedString(const SharedString& o) noexcept : rep_(o.rep_) {
    if (rep_ != nullptr) rep_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  SharedString(SharedString&& o) noexcept : rep_(std::exchange(o.rep_, nullptr)) {}
  SharedString& operator=(const SharedString& o) noexcept {
    SharedString(o).swap(*this);
    return *this;
  }
  SharedString& operator=(SharedString&& o) noexcept {
    SharedString(std::move(o)).swap(*this);
    return *this;
  }
  SharedString& operator=(std::string_view s) { return *this = SharedString(s); }
  SharedString& operator=(const std::string& s) { return *this = SharedString(s); }
  SharedString& operator=(const char* s) { return *this = SharedString(s); }
  ~SharedString() { Release(); }

  void swap(SharedString& o) noexcept { std::swap(rep_, o.rep_); }

  std::string_view view() const noexcept {
    return rep_ == nullptr ? std::string_view() : std::string_view(Text(rep_), rep_->size);
  }
  // Implicit by design: reads wherever a std::string_view is taken.
  // NOLINTNEXTLINE(google-explicit-constructor)
  operator std::string_view() const noexcept { return view(); }
  std::string str() const { return std::string(view()); }
  // NUL-terminated.
  const char* c_str() const noexcept { return rep_ == nullptr ? "" : Text(rep_); }
  const char* data() const noexcept { return c_str(); }
  size_t size() const noexcept { return rep_ == nullptr ? 0 : rep_->size; }
  bool empty() const noexcept { return rep_ == nullptr; }

  friend bool operator==(const SharedString& a, const SharedString& b) noexcept {
    return a.rep_ == b.rep_ || a.view() == b.view();
  }
  friend bool operator==(const SharedString& a, std::string_view b) noexcept {
    return a.view() == b;
  }
  friend bool operator==(const SharedString& a, const std::string& b) noexcept {
    return a.view() == std::string_view(b);
  }
  friend bool operator==(const SharedString& a, const char* b) noexcept {
    return a.view() == std::string_view(b);
  }
  friend std::strong_ordering operator<=>(const SharedString& a, const SharedString& b) noexcept {
    return a.view() <=> b.view();
  }
  friend std::strong_ordering operator<=>(const SharedString& a, std::string_view b) noexcept {
    return a.view() <=> b;
  }
  friend std::strong_ordering operator<=>(const SharedString& a, const std::string& b) noexcept {
    return a.view() <=> std::string_view(b);
  }
  friend std::strong_ordering operator<=>(const SharedString& a, const char* b) noexcept {
    return a.view() <=> std::string_view(b);
  }
  friend std::ostream& operator<<(std::ostream& os, const SharedString& s) {
    return os << s.view();
  }

 private:
  struct Rep {
    std::atomic<size_t> refs;
    size_t size;
  };
  static const char* Text(const Rep* r) noexcept { return reinterpret_cast<const char*>(r + 1); }

  static Rep* Make(std::string_view s) {
    if (s.empty()) return nullptr;
    void* block = ::operator new(sizeof(Rep) + s.size() + 1);
    Rep* r = new (block) Rep{{1}, s.size()};
    char* text = reinterpret_cast<char*>(r + 1);
    std::memcpy(text, s.data(), s.size());
    text[s.size()] = '\0';
    return r;
  }
  void Release() noexcept {
    if (rep_ != nullptr && rep_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      rep_->~Rep();
      ::operator delete(rep_);
    }
  }

  Rep* rep_ = nullptr;
};

inline void to_json(nlohmann::json& j, const SharedString& s) { j = s.str(); }
inline void from_json(const nlohmann::json& j, SharedString& s) {
  s = j.get_ref<const std::string&>();
}

}  // namespace taskledger

template <>
struct std::hash<taskledger::SharedString> {
  size_t operator()(const taskledger::SharedString& s) const noexcept {
    return std::hash<std::string_view>()(s.view());
  }
};
