// CompiledPointer: an RFC 6901 JSON Pointer split into segments once, when a
// rule pack loads, so evaluating a mapping never re-parses its path. A segment
// "*" is a wildcard matching every element of an array or member of an object
// (extract.json's extension of RFC 6901; a member literally named "*" cannot be
// addressed). ForEachMatchFrom walks an output along a pointer and reports
// every match with the chain of nodes from the root and what each wildcard
// matched.
// Recursion depth is bounded by the pointer's own length, never by the input.
// Immutable after Parse; thread-safe to share.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"

namespace taskledger::extract_internal {

// What a wildcard (or, for text rules, a regex group) matched. Exactly one of
// `text` (member name, group text) or `index` (array index) is meaningful.
struct Capture {
  std::string_view text;
  size_t index = 0;
  bool is_index = false;
  bool present = true;  // false for a regex group that did not participate
};

struct PointerSegment {
  std::string name;                  // unescaped member name
  size_t index = std::string::npos;  // array index if the name is a valid one
  bool wildcard = false;
};

// A member name to look up in a JSON object. It orders exactly like the
// object's std::string keys (bytes as unsigned char, then length), but most
// comparisons with a key end at the first byte without a call to memcmp,
// which makes a lookup about a third cheaper; evaluating mappings is largely
// member lookups.
struct MemberName {
  std::string_view text;

  static int Compare(std::string_view a, std::string_view b) {
    const size_t n = a.size() < b.size() ? a.size() : b.size();
    if (n != 0 && a[0] != b[0]) {
      return static_cast<unsigned char>(a[0]) < static_cast<unsigned char>(b[0]) ? -1 : 1;
    }
    if (const int c = n == 0 ? 0 : std::memcmp(a.data(), b.data(), n); c != 0) return c;
    return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
  }
  friend bool operator<(const MemberName& a, const std::string& b) {
    return Compare(a.text, b) < 0;
  }
  friend bool operator<(const std::string& a, const MemberName& b) {
    return Compare(a, b.text) < 0;
  }
};

// The member `name` of `obj`, or nullptr.
inline const nlohmann::json* FindMember(const nlohmann::json::object_t& obj,
                                        const std::string& name) {
  auto it = obj.find(MemberName{name});
  return it == obj.end() ? nullptr : &it->second;
}

// One step of a wildcard-free segment: the member `s.name` of an object or the
// element `s.index` of an array; nullptr if `node` has none (or is a scalar).
inline const nlohmann::json* Step(const nlohmann::json& node, const PointerSegment& s) {
  if (node.is_object()) return FindMember(node.get_ref<const nlohmann::json::object_t&>(), s.name);
  if (node.is_array()) {
    const auto& arr = node.get_ref<const nlohmann::json::array_t&>();
    return s.index < arr.size() ? &arr[s.index] : nullptr;
  }
  return nullptr;
}

class CompiledPointer {
 public:
  CompiledPointer() = default;
  // Parses "" or "/a/b~1c/*". Wildcards are rejected unless allowed.
  static Result<CompiledPointer> Parse(std::string_view text, bool allow_wildcards);

  const std::vector<PointerSegment>& segments() const { return segments_; }
  const std::string& text() const { return text_; }
  size_t wildcard_count() const { return wildcards_; }

  // The concrete pointer of one match ("/items/2/price"), for error messages.
  std::string Describe(const std::vector<Capture>& captures) const;

  // The node at this (wildcard-free) pointer below `from`, or nullptr.
  const nlohmann::json* Resolve(const nlohmann::json& from) const;

  // Calls f(const json& node, chain, captures) for each match, in document
  // order (arrays by index, objects by member name), walking from `start`, the
  // node the first `from` segments lead to. `chain` must hold the nodes from
  // the root to `start`; during a call it holds the root first and the matched
  // node last. `captures[0]` is unused and `captures[i]` is what the i-th
  // wildcard matched. `chain` and `captures` are the caller's scratch space
  // (reused across calls to save allocations).
  // REQUIRES: none of the first `from` segments is a wildcard.
  template <class F>
  void ForEachMatchFrom(const nlohmann::json& start, size_t from,
                        std::vector<const nlohmann::json*>& chain, std::vector<Capture>& captures,
                        F&& f) const {
    captures.assign(1, Capture{});
    captures[0].present = false;
    Walk(start, from, chain, captures, f);
  }

 private:
  template <class F>
  void Walk(const nlohmann::json& node, size_t seg, std::vector<const nlohmann::json*>& chain,
            std::vector<Capture>& captures, F& f) const {
    if (seg == segments_.size()) {
      f(node, chain, captures);
      return;
    }
    const PointerSegment& s = segments_[seg];
    auto descend = [&](const nlohmann::json& child) {
      chain.push_back(&child);
      Walk(child, seg + 1, chain, captures, f);
      chain.pop_back();
    };
    if (!s.wildcard) {
      if (const nlohmann::json* child = Step(node, s)) descend(*child);
      return;
    }
    // Each capture is written in place, not built elsewhere and copied.
    if (node.is_object()) {
      for (const auto& [name, child] : node.get_ref<const nlohmann::json::object_t&>()) {
        captures.emplace_back().text = name;
        descend(child);
        captures.pop_back();
      }
    } else if (node.is_array()) {
      const auto& arr = node.get_ref<const nlohmann::json::array_t&>();
      for (size_t i = 0; i < arr.size(); ++i) {
        Capture& c = captures.emplace_back();
        c.index = i;
        c.is_index = true;
        descend(arr[i]);
        captures.pop_back();
      }
    }
  }

  std::string text_;
  std::vector<PointerSegment> segments_;
  size_t wildcards_ = 0;
};

}  // namespace taskledger::extract_internal
