// DecisionRecord: the typed decision-log record a turn keeps for every policy
// check (TurnRecord::decisions), with the evidence each rule read.
//
// The policy component fills it (MakeDecisionRecord in policy/decision.h); the
// ledger only keeps, encodes and decodes it (codec.h, and the Redis store's
// direct CBOR writer), so outcomes are kept as their names ("allow", "deny",
// ...) rather than as policy's enum. An EntryRead is one ledger entry a rule
// looked up during the check: which one, whether it was live, a digest of the
// value it had and where that value came from (the version and the source, a
// tool call "get_order_details#c1" for tool output, and whether it was verified
// or only claimed). Members a newer writer added that this version does not
// know are kept in `extra` and written back unchanged, so reading and
// rewriting a record loses nothing.
// Plain value types; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/ledger/entry.h"

namespace taskledger {

struct EntryRead {
  Category category = Category::kFact;
  std::string key;
  bool present = false;  // false: the rule looked the key up and no live entry was there
  // The rest describe a present entry (empty / zero when absent).
  std::string digest;  // first 16 hex digits of the SHA-256 of the value's canonical JSON
  uint64_t turn = 0;   // the version whose turn wrote the entry
  SourceKind source = SourceKind::kAgent;
  std::string source_id;  // "get_order_details#c1": the tool call it came from
  std::string rule;       // the extraction rule that wrote it, if any
  bool verified = false;  // true: a tool output showed it; false: only claimed
  bool operator==(const EntryRead&) const = default;
};

// What one rule said, and what it read to say it.
struct RuleResult {
  std::string id;
  std::string outcome;  // "allow", "confirm", "require_approval", "deny"
  std::string reason;
  bool error = false;
  std::vector<std::string> log;
  std::vector<EntryRead> reads;  // in first-read order, each (category, key) once
  bool operator==(const RuleResult&) const = default;
};

struct DecisionRecord {
  std::string conversation;
  uint64_t turn = 0;
  uint64_t version_seen = 0;
  uint64_t staged_seen = 0;
  std::string tool;
  std::string call_id;
  std::string args_hash;
  std::vector<RuleResult> rules;  // in evaluation order
  std::string decision;           // the outcome name
  std::string rule;               // the deciding rule; empty when none decided
  std::string reason;
  std::string pack_version;
  bool read_only = false;
  int64_t latency_us = 0;
  // Members this version does not know, as read (an object; empty when none).
  nlohmann::json extra = nlohmann::json::object();
  bool operator==(const DecisionRecord&) const = default;

  // The deciding rule's result, or nullptr (no rule decided, or it is not in `rules`).
  const RuleResult* deciding() const {
    if (rule.empty()) return nullptr;
    for (const RuleResult& r : rules) {
      if (r.id == rule) return &r;
    }
    return nullptr;
  }
};

}  // namespace taskledger
