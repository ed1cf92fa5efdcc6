// CompiledPointer: an RFC 6901 JSON Pointer split into segments once, when a
// rule pack loads, so evaluating a mapping never re-parses its path. A segment
// "*" is a wildcard matching every element of an array or member of an object
// (extract.json's extension of RFC 6901; a member literally named "*" cannot be
// addressed). ForEachMatch walks an output along a pointer and reports every
// match with the chain of nodes from the root and what each wildcard matched.
// Recursion depth is bounded by the pointer's own length, never by the input.
// Immutable after Parse; thread-safe to share.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/status.h"

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
  std::string name;                // unescaped member name
  size_t index = std::string::npos;  // array index if the name is a valid one
  bool wildcard = false;
};

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
  // order (arrays by index, objects by member name). `chain` holds the root
  // first and the matched node last; `captures[0]` is unused and
  // `captures[i]` is what the i-th wildcard matched. `chain` and `captures`
  // are the caller's scratch space (reused across calls to save allocations).
  template <class F>
  void ForEachMatch(const nlohmann::json& root, std::vector<const nlohmann::json*>& chain,
                    std::vector<Capture>& captures, F&& f) const {
    chain.assign(1, &root);
    captures.assign(1, Capture{});
    captures[0].present = false;
    Walk(root, 0, chain, captures, f);
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
    auto descend = [&](const nlohmann::json& child, Capture cap) {
      chain.push_back(&child);
      if (s.wildcard) captures.push_back(cap);
      Walk(child, seg + 1, chain, captures, f);
      if (s.wildcard) captures.pop_back();
      chain.pop_back();
    };
    if (node.is_object()) {
      const auto& obj = node.get_ref<const nlohmann::json::object_t&>();
      if (s.wildcard) {
        for (const auto& [name, child] : obj) descend(child, Capture{name, 0, false, true});
      } else if (auto it = obj.find(s.name); it != obj.end()) {
        descend(it->second, Capture{});
      }
    } else if (node.is_array()) {
      const auto& arr = node.get_ref<const nlohmann::json::array_t&>();
      if (s.wildcard) {
        for (size_t i = 0; i < arr.size(); ++i) descend(arr[i], Capture{{}, i, true, true});
      } else if (s.index < arr.size()) {
        descend(arr[s.index], Capture{});
      }
    }
  }

  std::string text_;
  std::vector<PointerSegment> segments_;
  size_t wildcards_ = 0;
};

}  // namespace taskledger::extract_internal
