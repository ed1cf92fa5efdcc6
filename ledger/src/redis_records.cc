// Direct CBOR writers for the Redis store's turn and state records (see
// internal/redis_records.h): the record layouts. They mirror codec.cc's
// EncodeTurn / EncodeState field for field; the encoding rules that make the
// bytes equal nlohmann's (heads, doubles, key order) are in
// internal/cbor_writer.h. Any change to the codec's field set must be made
// here too; redis_records_test.cc fails if the two differ. A decision
// record's bytes are also public (AppendDecisionBytes, decision_bytes.h): the
// command ledger keeps them. Pure functions; thread-safe.
#include "internal/redis_records.h"

#include "internal/cbor_writer.h"

#include "taskledger/ledger/codec.h"
#include "taskledger/ledger/decision_bytes.h"
#include "taskledger/ledger/extraction_error.h"

#include <string_view>

namespace taskledger::internal {
namespace {

using nlohmann::json;

// Members are written in the byte-wise order of their names, which is the
// order nlohmann's std::map-backed objects serialise in; each comment lists
// the full member set of the record in that order.

// Provenance members a record carries, beyond its own fields.
size_t ProvenanceMembers(const Provenance& p) {
  return 3 + !p.source_id.empty() + !p.rule_id.empty() + !p.pack_version.empty();
}

// pack, rule, source, source_id, turn (the caller writes "value" before "verified").
void ProvenanceUpToTurn(CborWriter& w, const Provenance& p) {
  if (!p.pack_version.empty()) {
    w.Key<"pack">();
    w.Text(p.pack_version);
  }
  if (!p.rule_id.empty()) {
    w.Key<"rule">();
    w.Text(p.rule_id);
  }
  w.Key<"source">();
  w.Text(SourceKindName(p.source));
  if (!p.source_id.empty()) {
    w.Key<"source_id">();
    w.Text(p.source_id);
  }
  w.Key<"turn">();
  w.Unsigned(p.turn);
}

// category, expire_after_turns, expire_at_ms, key, op, pack, rule, source,
// source_id, turn, value, verified.
void WriteUpdate(CborWriter& w, const Update& u) {
  const bool set = u.op == UpdateOp::kSet;
  w.Map(3 + set + ProvenanceMembers(u.provenance) + u.expire_after_turns.has_value() +
        u.expire_at_ms.has_value());
  w.Key<"category">();
  w.Text(CategoryName(u.category));
  if (u.expire_after_turns) {
    w.Key<"expire_after_turns">();
    w.Unsigned(*u.expire_after_turns);
  }
  if (u.expire_at_ms) {
    w.Key<"expire_at_ms">();
    w.Signed(*u.expire_at_ms);
  }
  w.Key<"key">();
  w.Text(u.key);
  w.Key<"op">();
  w.Text(UpdateOpName(u.op));
  ProvenanceUpToTurn(w, u.provenance);
  if (set) {
    w.Key<"value">();
    w.Json(u.value);
  }
  w.Key<"verified">();
  w.Bool(u.provenance.verified);
}

// expires_at_ms, expires_at_turn, pack, rule, source, source_id, turn, value, verified.
void WriteEntry(CborWriter& w, const Entry& e) {
  w.Map(1 + ProvenanceMembers(e.provenance) + e.expires_at_turn.has_value() +
        e.expires_at_ms.has_value());
  if (e.expires_at_ms) {
    w.Key<"expires_at_ms">();
    w.Signed(*e.expires_at_ms);
  }
  if (e.expires_at_turn) {
    w.Key<"expires_at_turn">();
    w.Unsigned(*e.expires_at_turn);
  }
  ProvenanceUpToTurn(w, e.provenance);
  w.Key<"value">();
  w.Json(e.value);
  w.Key<"verified">();
  w.Bool(e.provenance.verified);
}

// args, id, outcome, tool, turn, writes.
void WriteCall(CborWriter& w, const CallRecord& c) {
  w.Map(6);
  w.Key<"args">();
  w.Json(c.call.arguments);
  w.Key<"id">();
  w.Text(c.call.id);
  w.Key<"outcome">();
  w.Text(c.outcome);
  w.Key<"tool">();
  w.Text(c.call.tool);
  w.Key<"turn">();
  w.Unsigned(c.turn);
  w.Key<"writes">();
  w.Bool(c.writes);
}

template <typename Calls>  // std::vector<CallRecord> or CallList
void WriteCalls(CborWriter& w, const Calls& calls) {
  w.Array(calls.size());
  for (const CallRecord& c : calls) WriteCall(w, c);
}

// Through the one encoder, so the bytes are to_cbor(EncodeTurn)'s; errors are
// rare enough that building the JSON object costs nothing that matters.
void WriteErrors(CborWriter& w, const std::vector<ExtractionError>& errors) {
  w.Array(errors.size());
  for (const ExtractionError& e : errors) w.Json(EncodeExtractionError(e));
}

// id, kind, output, refused, text, tool, turn: a user message has kind,
// refused or text, turn; a tool output id, kind, output or refused, tool, turn.
void WriteSource(CborWriter& w, const SourceRecord& s) {
  const bool refused = !s.refused.empty();
  if (s.kind == SourceRecord::Kind::kUserMessage) {
    w.Map(3);
    w.Key<"kind">();
    w.Text("user");
    if (refused) {
      w.Key<"refused">();
      w.Text(s.refused);
    } else {
      w.Key<"text">();
      w.Encoded(s.content.bytes());
    }
    w.Key<"turn">();
    w.Unsigned(s.turn);
    return;
  }
  w.Map(5);
  w.Key<"id">();
  w.Text(s.call_id);
  w.Key<"kind">();
  w.Text("tool");
  if (refused) {
    w.Key<"refused">();
    w.Text(s.refused);
  } else {
    w.Key<"output">();
    w.Encoded(s.content.bytes());
  }
  w.Key<"tool">();
  w.Text(s.tool);
  w.Key<"turn">();
  w.Unsigned(s.turn);
}

// category, digest, key, present, rule, source, source_id, turn, verified
// (an absent entry has only category, key and present).
void WriteRead(CborWriter& w, const EntryRead& r) {
  if (!r.present) {
    w.Map(3);
    w.Key<"category">();
    w.Text(CategoryName(r.category));
    w.Key<"key">();
    w.Text(r.key);
    w.Key<"present">();
    w.Bool(false);
    return;
  }
  w.Map(7 + !r.source_id.empty() + !r.rule.empty());
  w.Key<"category">();
  w.Text(CategoryName(r.category));
  w.Key<"digest">();
  w.Text(r.digest);
  w.Key<"key">();
  w.Text(r.key);
  w.Key<"present">();
  w.Bool(true);
  if (!r.rule.empty()) {
    w.Key<"rule">();
    w.Text(r.rule);
  }
  w.Key<"source">();
  w.Text(SourceKindName(r.source));
  if (!r.source_id.empty()) {
    w.Key<"source_id">();
    w.Text(r.source_id);
  }
  w.Key<"turn">();
  w.Unsigned(r.turn);
  w.Key<"verified">();
  w.Bool(r.verified);
}

// error, id, log, outcome, reads, reason.
void WriteRule(CborWriter& w, const RuleResult& r) {
  w.Map(3 + r.error + !r.log.empty() + !r.reads.empty());
  if (r.error) {
    w.Key<"error">();
    w.Bool(true);
  }
  w.Key<"id">();
  w.Text(r.id);
  if (!r.log.empty()) {
    w.Key<"log">();
    w.Array(r.log.size());
    for (const std::string& line : r.log) w.Text(line);
  }
  w.Key<"outcome">();
  w.Text(r.outcome);
  if (!r.reads.empty()) {
    w.Key<"reads">();
    w.Array(r.reads.size());
    for (const EntryRead& x : r.reads) WriteRead(w, x);
  }
  w.Key<"reason">();
  w.Text(r.reason);
}

// args_hash, call_id, conversation, decision, latency_us, pack_version,
// read_only, reason, rule, rules, staged_seen, tool, turn, version_seen. A
// record with members this version does not know goes through the codec
// (those members interleave with these in name order).
void WriteDecision(CborWriter& w, const DecisionRecord& d) {
  if (d.extra.is_object() && !d.extra.empty()) {
    w.Json(EncodeDecision(d));
    return;
  }
  w.Map(14);
  w.Key<"args_hash">();
  w.Text(d.args_hash);
  w.Key<"call_id">();
  w.Text(d.call_id);
  w.Key<"conversation">();
  w.Text(d.conversation);
  w.Key<"decision">();
  w.Text(d.decision);
  w.Key<"latency_us">();
  w.Signed(d.latency_us);
  w.Key<"pack_version">();
  w.Text(d.pack_version);
  w.Key<"read_only">();
  w.Bool(d.read_only);
  w.Key<"reason">();
  w.Text(d.reason);
  w.Key<"rule">();
  w.Text(d.rule);
  w.Key<"rules">();
  w.Array(d.rules.size());
  for (const RuleResult& r : d.rules) WriteRule(w, r);
  w.Key<"staged_seen">();
  w.Unsigned(d.staged_seen);
  w.Key<"tool">();
  w.Text(d.tool);
  w.Key<"turn">();
  w.Unsigned(d.turn);
  w.Key<"version_seen">();
  w.Unsigned(d.version_seen);
}

}  // namespace

void AppendCallBytes(const CallRecord& call, std::string& out) {
  CborWriter w(out);
  WriteCall(w, call);
}

void AppendArrayHead(size_t n, std::string& out) { CborWriter(out).Array(n); }

}  // namespace taskledger::internal

namespace taskledger {

void AppendDecisionBytes(const DecisionRecord& d, std::string& out) {
  internal::CborWriter w(out);
  internal::WriteDecision(w, d);
}

}  // namespace taskledger

namespace taskledger::internal {

// at, calls, decisions, errors, sources, turn, updates.
void AppendTurnRecordBytes(const TurnRecord& t, std::string& out) {
  out.reserve(out.size() + 64 + 160 * t.updates.size());
  CborWriter w(out);
  w.Map(3 + !t.calls.empty() + !t.decisions.empty() + !t.errors.empty() + !t.sources.empty());
  w.Key<"at">();
  w.Signed(t.committed_at_ms);
  if (!t.calls.empty()) {
    w.Key<"calls">();
    WriteCalls(w, t.calls);
  }
  if (!t.decisions.empty()) {
    w.Key<"decisions">();
    w.Array(t.decisions.size());
    for (const DecisionRecord& d : t.decisions) WriteDecision(w, d);
  }
  if (!t.errors.empty()) {
    w.Key<"errors">();
    WriteErrors(w, t.errors);
  }
  if (!t.sources.empty()) {
    w.Key<"sources">();
    w.Array(t.sources.size());
    for (const SourceRecord& src : t.sources) WriteSource(w, src);
  }
  w.Key<"turn">();
  w.Unsigned(t.turn);
  w.Key<"updates">();
  w.Array(t.updates.size());
  for (const Update& u : t.updates) WriteUpdate(w, u);
}

// calls, conditions, constraints, facts, identifiers, version: the category
// maps are "<CategoryName>s", whose byte order is that fixed sequence.
void AppendStateRecordBytes(const LedgerState& s, std::string& out, CallBytesCache* calls) {
  out.reserve(out.size() + 64 + 160 * s.size() + 128 * s.calls.size());
  CborWriter w(out);
  w.Map(2 + kCategoryCount);
  w.Key<"calls">();
  if (calls != nullptr) {
    calls->Append(s.calls, out);
  } else {
    WriteCalls(w, s.calls);
  }
  for (Category c :
       {Category::kCondition, Category::kConstraint, Category::kFact, Category::kIdentifier}) {
    std::string name(CategoryName(c));
    name += 's';
    w.Text(name);
    const auto& entries = s.of(c);
    w.Map(entries.size());
    for (const auto& [key, entry] : entries) {
      w.Text(key);
      WriteEntry(w, entry);
    }
  }
  w.Key<"version">();
  w.Unsigned(s.version);
}

}  // namespace taskledger::internal
