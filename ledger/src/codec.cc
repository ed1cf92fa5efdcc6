// JSON encoding and validating decoding of entries, updates, calls, turns
// (with their provenance sources), states and diffs. Provenance is flattened into its entry or
// update to keep stored records small: {"value","turn","source","source_id","verified",
// "rule","pack","expires_at_turn","expires_at_ms"}.
#include "taskledger/ledger/codec.h"

#include <string>

#include "internal/json_field.h"
#include "taskledger/ledger/extraction_error.h"

namespace taskledger {
namespace {

using nlohmann::json;

// Decoding helpers: each returns false and fills `err` on a wrong shape, so
// decoding never throws on stored data that was tampered with or truncated.
struct Reader {
  const json& j;
  std::string where;
  std::string err;

  bool Object() {
    if (!j.is_object()) err = where + ": expected an object";
    return err.empty();
  }
  template <class T>
  bool Get(const char* name, T& out, bool required) {
    auto it = j.find(name);
    if (it == j.end() || it->is_null()) {
      if (required && err.empty()) err = where + ": missing '" + name + "'";
      return !required;
    }
    if (!internal::JsonHolds<T>(*it)) {
      if (err.empty()) err = where + ": '" + name + "' has the wrong type";
      return false;
    }
    out = it->template get<T>();
    return true;
  }
  template <class T>
  bool GetOpt(const char* name, std::optional<T>& out) {
    if (!j.contains(name) || j[name].is_null()) return true;
    T v{};
    if (!Get(name, v, true)) return false;
    out = v;
    return true;
  }
  Status status() const { return Status::Corruption(err); }
};

void EncodeProvenance(const Provenance& p, json& j) {
  j["turn"] = p.turn;
  j["source"] = SourceKindName(p.source);
  if (!p.source_id.empty()) j["source_id"] = p.source_id;
  j["verified"] = p.verified;
  if (!p.rule_id.empty()) j["rule"] = p.rule_id;
  if (!p.pack_version.empty()) j["pack"] = p.pack_version;
}

bool DecodeProvenance(Reader& r, Provenance& p) {
  std::string source = "agent";
  if (!r.Get("turn", p.turn, false) || !r.Get("source", source, false) ||
      !r.Get("source_id", p.source_id, false) || !r.Get("verified", p.verified, false) ||
      !r.Get("rule", p.rule_id, false) || !r.Get("pack", p.pack_version, false)) {
    return false;
  }
  auto kind = ParseSourceKind(source);
  if (!kind) {
    r.err = r.where + ": unknown source '" + source + "'";
    return false;
  }
  p.source = *kind;
  return true;
}

template <class T, class F>
Status DecodeArray(const json& j, const char* name, std::vector<T>& out, F decode) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_array()) return Status::Corruption(std::string("'") + name + "' is not an array");
  out.reserve(it->size());
  for (const json& item : *it) {
    auto v = decode(item);
    if (!v.has_value()) return v.error();
    out.push_back(std::move(v.value()));
  }
  return Status::Ok();
}

}  // namespace

json EncodeEntry(const Entry& e) {
  json j = json::object();
  j["value"] = e.value;
  EncodeProvenance(e.provenance, j);
  if (e.expires_at_turn) j["expires_at_turn"] = *e.expires_at_turn;
  if (e.expires_at_ms) j["expires_at_ms"] = *e.expires_at_ms;
  return j;
}

Result<Entry> DecodeEntry(const json& j) {
  Reader r{j, "entry", {}};
  if (!r.Object()) return r.status();
  Entry e;
  if (!j.contains("value")) return Status::Corruption("entry: missing 'value'");
  e.value = j["value"];
  if (!DecodeProvenance(r, e.provenance) || !r.GetOpt("expires_at_turn", e.expires_at_turn) ||
      !r.GetOpt("expires_at_ms", e.expires_at_ms)) {
    return r.status();
  }
  return e;
}

json EncodeUpdate(const Update& u) {
  json j = json::object();
  j["op"] = UpdateOpName(u.op);
  j["category"] = CategoryName(u.category);
  j["key"] = u.key;
  if (u.op == UpdateOp::kSet) j["value"] = u.value;
  EncodeProvenance(u.provenance, j);
  if (u.expire_after_turns) j["expire_after_turns"] = *u.expire_after_turns;
  if (u.expire_at_ms) j["expire_at_ms"] = *u.expire_at_ms;
  return j;
}

Result<Update> DecodeUpdate(const json& j) {
  Reader r{j, "update", {}};
  if (!r.Object()) return r.status();
  Update u;
  std::string op = "set", category;
  if (!r.Get("op", op, false) || !r.Get("category", category, true) || !r.Get("key", u.key, true) ||
      !DecodeProvenance(r, u.provenance) || !r.GetOpt("expire_after_turns", u.expire_after_turns) ||
      !r.GetOpt("expire_at_ms", u.expire_at_ms)) {
    return r.status();
  }
  auto c = ParseCategory(category);
  if (!c) return Status::Corruption("update: unknown category '" + category + "'");
  u.category = *c;
  std::optional<UpdateOp> parsed = ParseUpdateOp(op);
  if (!parsed) return Status::Corruption("update: unknown op '" + op + "'");
  u.op = *parsed;
  if (u.op == UpdateOp::kSet) {
    if (!j.contains("value")) return Status::Corruption("update: 'set' without 'value'");
    u.value = j["value"];
  }
  return u;
}

json EncodeCall(const CallRecord& c) {
  return {{"turn", c.turn},           {"id", c.call.id},    {"tool", c.call.tool},
          {"args", c.call.arguments}, {"writes", c.writes}, {"outcome", c.outcome}};
}

Result<CallRecord> DecodeCall(const json& j) {
  Reader r{j, "call", {}};
  if (!r.Object()) return r.status();
  CallRecord c;
  if (!r.Get("turn", c.turn, false) || !r.Get("id", c.call.id, false) ||
      !r.Get("tool", c.call.tool, true) || !r.Get("writes", c.writes, false) ||
      !r.Get("outcome", c.outcome, false)) {
    return r.status();
  }
  if (auto it = j.find("args"); it != j.end()) c.call.arguments = *it;
  return c;
}

json EncodeSource(const SourceRecord& s) {
  json j = json::object();
  j["turn"] = s.turn;
  if (s.kind == SourceRecord::Kind::kUserMessage) {
    j["kind"] = "user";
    if (s.refused.empty()) j["text"] = s.content.Decode();
  } else {
    j["kind"] = "tool";
    j["tool"] = s.tool;
    j["id"] = s.call_id;
    if (s.refused.empty()) j["output"] = s.content.Decode();
  }
  if (!s.refused.empty()) j["refused"] = s.refused;
  return j;
}

Result<SourceRecord> DecodeSource(const json& j) {
  Reader r{j, "source", {}};
  if (!r.Object()) return r.status();
  SourceRecord s;
  std::string kind;
  if (!r.Get("kind", kind, true) || !r.Get("turn", s.turn, true) ||
      !r.Get("refused", s.refused, false)) {
    return r.status();
  }
  const bool refused = !s.refused.empty();
  if (kind == "user") {
    s.kind = SourceRecord::Kind::kUserMessage;
    std::string text;
    if (!r.Get("text", text, !refused)) return r.status();
    if (!refused) s.content = CborValue::Encode(json(std::move(text)));
  } else if (kind == "tool") {
    s.kind = SourceRecord::Kind::kToolOutput;
    if (!r.Get("tool", s.tool, true) || !r.Get("id", s.call_id, true)) return r.status();
    if (!refused) {
      auto it = j.find("output");
      if (it == j.end()) return Status::Corruption("source: missing 'output'");
      s.content = CborValue::Encode(*it);
    }
  } else {
    return Status::Corruption("source: unknown kind '" + kind + "'");
  }
  return s;
}

json EncodeTurn(const TurnRecord& t) {
  json j = json::object();
  j["turn"] = t.turn;
  j["at"] = t.committed_at_ms;
  json updates = json::array();
  for (const Update& u : t.updates) updates.push_back(EncodeUpdate(u));
  j["updates"] = std::move(updates);
  if (!t.calls.empty()) {
    json calls = json::array();
    for (const CallRecord& c : t.calls) calls.push_back(EncodeCall(c));
    j["calls"] = std::move(calls);
  }
  if (!t.decisions.empty()) {
    json decisions = json::array();
    for (const DecisionRecord& d : t.decisions) decisions.push_back(EncodeDecision(d));
    j["decisions"] = std::move(decisions);
  }
  if (!t.errors.empty()) j["errors"] = EncodeExtractionErrors(t.errors);
  if (!t.sources.empty()) {
    json sources = json::array();
    for (const SourceRecord& s : t.sources) sources.push_back(EncodeSource(s));
    j["sources"] = std::move(sources);
  }
  return j;
}

Result<TurnRecord> DecodeTurn(const json& j) {
  Reader r{j, "turn", {}};
  if (!r.Object()) return r.status();
  TurnRecord t;
  if (!r.Get("turn", t.turn, true) || !r.Get("at", t.committed_at_ms, false)) return r.status();
  if (Status s = DecodeArray(j, "updates", t.updates, DecodeUpdate); !s.ok()) return s;
  if (Status s = DecodeArray(j, "calls", t.calls, DecodeCall); !s.ok()) return s;
  if (Status s = DecodeArray(j, "decisions", t.decisions, DecodeDecision); !s.ok()) return s;
  auto error = [](const json& x) -> Result<ExtractionError> { return DecodeExtractionError(x); };
  if (Status s = DecodeArray(j, "errors", t.errors, error); !s.ok()) return s;
  if (Status s = DecodeArray(j, "sources", t.sources, DecodeSource); !s.ok()) return s;
  return t;
}

json EncodeState(const LedgerState& s) {
  json j = json::object();
  j["version"] = s.version;
  for (Category c : kAllCategories) {
    json m = json::object();
    for (const auto& [key, e] : s.of(c)) m[key] = EncodeEntry(e);
    j[std::string(CategoryName(c)) + "s"] = std::move(m);
  }
  json calls = json::array();
  for (const CallRecord& c : s.calls) calls.push_back(EncodeCall(c));
  j["calls"] = std::move(calls);
  return j;
}

Result<LedgerState> DecodeState(const json& j) {
  Reader r{j, "state", {}};
  if (!r.Object()) return r.status();
  LedgerState s;
  if (!r.Get("version", s.version, true)) return r.status();
  for (Category c : kAllCategories) {
    std::string name = std::string(CategoryName(c)) + "s";
    auto it = j.find(name);
    if (it == j.end()) continue;
    if (!it->is_object()) return Status::Corruption("state: '" + name + "' is not an object");
    for (const auto& [key, ej] : it->items()) {
      auto e = DecodeEntry(ej);
      if (!e.has_value()) return e.error();
      s.of(c).emplace(key, std::move(e.value()));
    }
  }
  std::vector<CallRecord> calls;
  if (Status st = DecodeArray(j, "calls", calls, DecodeCall); !st.ok()) return st;
  s.calls = CallList(calls);
  return s;
}

json EncodeDiff(const StateDiff& d) {
  auto side = [](const std::vector<EntryChange>& changes) {
    json a = json::array();
    for (const EntryChange& c : changes) {
      json x = {{"category", CategoryName(c.category)}, {"key", c.key}};
      if (c.before) x["before"] = EncodeEntry(*c.before);
      if (c.after) x["after"] = EncodeEntry(*c.after);
      a.push_back(std::move(x));
    }
    return a;
  };
  return {{"added", side(d.added)}, {"changed", side(d.changed)}, {"removed", side(d.removed)}};
}

}  // namespace taskledger
