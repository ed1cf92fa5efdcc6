// The state model of one conversation: entries in four categories, each with
// provenance, and the updates that change them.
//
// An entry is a JSON value under a key within a category. Its provenance says
// which turn produced it, from what kind of source (tool output, user message,
// agent, operator), which source exactly ("get_order_details#c1"), whether a
// tool verified it or someone only claimed it, and which extraction rule of
// which pack version wrote it. Entries may expire after a number of turns or at
// a wall-clock time; expired entries leave the live state but stay in history.
// The three provenance strings are SharedStrings: one extraction's updates
// all carry the same source id and pack version, and one rule's the same rule
// id, so they share the text instead of each holding a copy.
// Plain value types; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "taskledger/base/shared_string.h"

namespace taskledger {

enum class Category { kFact = 0, kIdentifier = 1, kConstraint = 2, kCondition = 3 };
inline constexpr int kCategoryCount = 4;
inline constexpr Category kAllCategories[] = {Category::kFact, Category::kIdentifier,
                                              Category::kConstraint, Category::kCondition};

// "fact", "identifier", "constraint", "condition" (singular, as rules write them).
std::string_view CategoryName(Category c);
// Accepts the singular and the plural ("facts") forms.
std::optional<Category> ParseCategory(std::string_view name);

enum class SourceKind { kToolOutput = 0, kUserMessage = 1, kAgent = 2, kOperator = 3 };
std::string_view SourceKindName(SourceKind k);  // "tool", "user", "agent", "operator"
std::optional<SourceKind> ParseSourceKind(std::string_view name);

struct Provenance {
  uint64_t turn = 0;  // the turn (== version) that wrote the entry
  SourceKind source = SourceKind::kAgent;
  SharedString source_id;     // "get_order_details#c1", "user", "operator:alice"
  bool verified = false;      // true: a tool output showed it; false: only claimed
  SharedString rule_id;       // extraction rule that produced it, if any
  SharedString pack_version;  // hash of the rule pack, if any
  bool operator==(const Provenance&) const = default;
};

struct Entry {
  nlohmann::json value;
  Provenance provenance;
  std::optional<uint64_t> expires_at_turn;  // not live in versions >= this
  std::optional<int64_t> expires_at_ms;     // not live at or after this Unix time (ms)
  bool operator==(const Entry&) const = default;

  // Live in `version` at wall-clock `now_ms`.
  bool LiveAt(uint64_t version, int64_t now_ms) const {
    if (expires_at_turn && version >= *expires_at_turn) return false;
    if (expires_at_ms && now_ms >= *expires_at_ms) return false;
    return true;
  }
};

enum class UpdateOp { kSet = 0, kRemove = 1, kExpire = 2 };
// "set", "remove", "expire": the one spelling of update ops, for the turn
// codec, the Redis records and the updates Lua extractors return.
std::string_view UpdateOpName(UpdateOp op);
std::optional<UpdateOp> ParseUpdateOp(std::string_view name);

// One change to the ledger, staged in a turn and applied when the turn commits.
struct Update {
  UpdateOp op = UpdateOp::kSet;
  Category category = Category::kFact;
  std::string key;
  nlohmann::json value;                        // kSet only
  Provenance provenance;                       // turn is filled in at staging time
  std::optional<uint64_t> expire_after_turns;  // kSet: live for this many turns (>= 1)
  std::optional<int64_t> expire_at_ms;         // kSet: live until this Unix time (ms)
  bool operator==(const Update&) const = default;
};

}  // namespace taskledger
