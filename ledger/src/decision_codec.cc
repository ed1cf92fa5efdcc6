// JSON encoding and validating decoding of decision records (see
// decision_record.h and codec.h). The record's members are those the 0.1 and
// 0.2 decision logs wrote, plus "reads" in each rule; members it does not
// know are kept in DecisionRecord::extra and written back as read. A member
// of a known name with the wrong type is Corruption naming it. Also the
// reader of a record's CBOR bytes (decision_bytes.h), through the same decoder.
#include <set>
#include <string>

#include "internal/json_field.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/ledger/decision_bytes.h"

namespace taskledger {
namespace {

using nlohmann::json;

// Reads members of one object, remembering the first wrong one.
struct Fields {
  const json& j;
  const char* where;
  std::string err;

  template <class T>
  void Get(const char* name, T& out) {
    auto it = j.find(name);
    if (it == j.end() || it->is_null() || !err.empty()) return;
    if (!internal::JsonHolds<T>(*it)) {
      err = std::string(where) + ": '" + name + "' has the wrong type";
      return;
    }
    out = it->template get<T>();
  }
  // An array member, each item decoded by `decode` (false + err on a bad one).
  template <class T, class F>
  void Items(const char* name, std::vector<T>& out, F decode) {
    auto it = j.find(name);
    if (it == j.end() || it->is_null() || !err.empty()) return;
    if (!it->is_array()) {
      err = std::string(where) + ": '" + name + "' is not an array";
      return;
    }
    out.reserve(it->size());
    for (const json& item : *it) {
      T v{};
      if (!decode(item, v, err)) return;
      out.push_back(std::move(v));
    }
  }
};

json EncodeRead(const EntryRead& r) {
  json j = {{"category", CategoryName(r.category)}, {"key", r.key}, {"present", r.present}};
  if (!r.present) return j;
  j["digest"] = r.digest;
  j["turn"] = r.turn;
  j["source"] = SourceKindName(r.source);
  if (!r.source_id.empty()) j["source_id"] = r.source_id;
  if (!r.rule.empty()) j["rule"] = r.rule;
  j["verified"] = r.verified;
  return j;
}

bool DecodeRead(const json& j, EntryRead& r, std::string& err) {
  if (!j.is_object()) {
    err = "decision: a rule's read is not an object";
    return false;
  }
  Fields f{j, "decision read", {}};
  std::string category, source = "agent";
  f.Get("category", category);
  f.Get("key", r.key);
  f.Get("present", r.present);
  f.Get("digest", r.digest);
  f.Get("turn", r.turn);
  f.Get("source", source);
  f.Get("source_id", r.source_id);
  f.Get("rule", r.rule);
  f.Get("verified", r.verified);
  auto c = ParseCategory(category);
  auto k = ParseSourceKind(source);
  if (f.err.empty() && !c) f.err = "decision read: unknown category '" + category + "'";
  if (f.err.empty() && !k) f.err = "decision read: unknown source '" + source + "'";
  if (!f.err.empty()) {
    err = f.err;
    return false;
  }
  r.category = *c;
  r.source = *k;
  return true;
}

json EncodeRule(const RuleResult& r) {
  json j = {{"id", r.id}, {"outcome", r.outcome}, {"reason", r.reason}};
  if (r.error) j["error"] = true;
  if (!r.log.empty()) j["log"] = r.log;
  if (!r.reads.empty()) {
    json reads = json::array();
    for (const EntryRead& x : r.reads) reads.push_back(EncodeRead(x));
    j["reads"] = std::move(reads);
  }
  return j;
}

bool DecodeRule(const json& j, RuleResult& r, std::string& err) {
  if (!j.is_object()) {
    err = "decision: a rule result is not an object";
    return false;
  }
  Fields f{j, "decision rule", {}};
  f.Get("id", r.id);
  f.Get("outcome", r.outcome);
  f.Get("reason", r.reason);
  f.Get("error", r.error);
  f.Items("log", r.log, [](const json& x, std::string& line, std::string& e) {
    if (!x.is_string()) {
      e = "decision rule: a 'log' line is not a string";
      return false;
    }
    line = x.get<std::string>();
    return true;
  });
  f.Items("reads", r.reads, DecodeRead);
  err = f.err;
  return err.empty();
}

const std::set<std::string, std::less<>>& KnownMembers() {
  static const std::set<std::string, std::less<>> known = {
      "conversation", "turn",         "version_seen", "staged_seen", "tool",
      "call_id",      "args_hash",    "rules",        "decision",    "rule",
      "reason",       "pack_version", "read_only",    "latency_us"};
  return known;
}

}  // namespace

json EncodeDecision(const DecisionRecord& d) {
  json rules = json::array();
  for (const RuleResult& r : d.rules) rules.push_back(EncodeRule(r));
  json j = {
      {"conversation", d.conversation},
      {"turn", d.turn},
      {"version_seen", d.version_seen},
      {"staged_seen", d.staged_seen},
      {"tool", d.tool},
      {"call_id", d.call_id},
      {"args_hash", d.args_hash},
      {"rules", std::move(rules)},
      {"decision", d.decision},
      {"rule", d.rule},
      {"reason", d.reason},
      {"pack_version", d.pack_version},
      {"read_only", d.read_only},
      {"latency_us", d.latency_us},
  };
  if (d.extra.is_object()) {
    for (const auto& [k, v] : d.extra.items()) {
      if (KnownMembers().count(k) == 0) j[k] = v;
    }
  }
  return j;
}

Result<DecisionRecord> DecodeDecision(const json& j) {
  if (!j.is_object()) return Status::Corruption("decision: expected an object");
  DecisionRecord d;
  Fields f{j, "decision", {}};
  f.Get("conversation", d.conversation);
  f.Get("turn", d.turn);
  f.Get("version_seen", d.version_seen);
  f.Get("staged_seen", d.staged_seen);
  f.Get("tool", d.tool);
  f.Get("call_id", d.call_id);
  f.Get("args_hash", d.args_hash);
  f.Items("rules", d.rules, DecodeRule);
  f.Get("decision", d.decision);
  f.Get("rule", d.rule);
  f.Get("reason", d.reason);
  f.Get("pack_version", d.pack_version);
  f.Get("read_only", d.read_only);
  f.Get("latency_us", d.latency_us);
  if (!f.err.empty()) return Status::Corruption(f.err);
  for (const auto& [k, v] : j.items()) {
    if (KnownMembers().count(k) == 0) d.extra[k] = v;
  }
  return d;
}

Result<DecisionRecord> DecodeDecisionBytes(std::string_view bytes) {
  auto j = json::from_cbor(bytes.begin(), bytes.end(), /*strict=*/true,
                           /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Corruption("decision: not one CBOR data item");
  return DecodeDecision(j);
}

}  // namespace taskledger
