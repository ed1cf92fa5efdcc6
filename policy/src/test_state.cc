// The "state" form of policy test cases and expectation matching (see
// test_state.h). Pure functions; every malformed member is reported by name.
#include "taskledger/policy/test_state.h"

#include <cmath>

namespace taskledger {
namespace {

// JSON integers written in C++ or parsed from "3" may be signed or unsigned.
bool NonNegative(const nlohmann::json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

Result<Entry> EntryFromJson(const nlohmann::json& v, uint64_t version, int64_t now_ms,
                            const std::string& where) {
  Entry e;
  e.provenance.turn = version;
  e.provenance.source = SourceKind::kToolOutput;
  e.provenance.source_id = "test";
  e.provenance.verified = true;
  if (!v.is_object() || !v.contains("$entry")) {
    e.value = v;
    return e;
  }
  const nlohmann::json& d = v["$entry"];
  if (!d.is_object() || !d.contains("value")) {
    return Status::InvalidArgument(where + ": $entry must be an object with a value");
  }
  for (const auto& [k, x] : d.items()) {
    static const char* kKnown[] = {
        "value", "verified",           "source",        "source_id",      "turn",
        "rule",  "expires_in_seconds", "expires_at_ms", "expires_at_turn"};
    bool known = false;
    for (const char* n : kKnown) known = known || k == n;
    if (!known) return Status::InvalidArgument(where + ": unknown $entry member '" + k + "'");
  }
  e.value = d["value"];
  if (d.contains("verified")) {
    if (!d["verified"].is_boolean())
      return Status::InvalidArgument(where + ": verified must be a boolean");
    e.provenance.verified = d["verified"].get<bool>();
    if (!e.provenance.verified) e.provenance.source = SourceKind::kUserMessage;
  }
  if (d.contains("source")) {
    auto s =
        d["source"].is_string() ? ParseSourceKind(d["source"].get<std::string>()) : std::nullopt;
    if (!s)
      return Status::InvalidArgument(where + ": source must be tool, user, agent or operator");
    e.provenance.source = *s;
  }
  if (d.contains("source_id")) {
    if (!d["source_id"].is_string())
      return Status::InvalidArgument(where + ": source_id must be a string");
    e.provenance.source_id = d["source_id"].get<std::string>();
  } else if (e.provenance.source == SourceKind::kUserMessage) {
    e.provenance.source_id = "user";
  }
  if (d.contains("turn")) {
    if (!NonNegative(d["turn"])) return Status::InvalidArgument(where + ": turn must be >= 0");
    e.provenance.turn = d["turn"].get<uint64_t>();
  }
  if (d.contains("rule")) {
    if (!d["rule"].is_string()) return Status::InvalidArgument(where + ": rule must be a string");
    e.provenance.rule_id = d["rule"].get<std::string>();
  }
  if (d.contains("expires_in_seconds")) {
    if (!d["expires_in_seconds"].is_number()) {
      return Status::InvalidArgument(where + ": expires_in_seconds must be a number");
    }
    e.expires_at_ms = now_ms + std::llround(d["expires_in_seconds"].get<double>() * 1000.0);
  }
  if (d.contains("expires_at_ms")) {
    if (!d["expires_at_ms"].is_number_integer()) {
      return Status::InvalidArgument(where + ": expires_at_ms must be an integer");
    }
    e.expires_at_ms = d["expires_at_ms"].get<int64_t>();
  }
  if (d.contains("expires_at_turn")) {
    if (!NonNegative(d["expires_at_turn"])) {
      return Status::InvalidArgument(where + ": expires_at_turn must be >= 0");
    }
    e.expires_at_turn = d["expires_at_turn"].get<uint64_t>();
  }
  return e;
}

}  // namespace

Result<LedgerState> LoadTestState(const nlohmann::json& state, int64_t now_ms) {
  if (!state.is_object()) return Status::InvalidArgument("state must be an object");
  LedgerState out;
  if (state.contains("version")) {
    if (!NonNegative(state["version"])) {
      return Status::InvalidArgument("state.version must be an integer >= 0");
    }
    out.version = state["version"].get<uint64_t>();
  }
  for (const auto& [member, v] : state.items()) {
    if (member == "version" || member == "calls") continue;
    std::optional<Category> c = ParseCategory(member);
    if (!c) {
      return Status::InvalidArgument(
          "state: unknown member '" + member +
          "' (facts, identifiers, constraints, conditions, calls, version)");
    }
    if (!v.is_object()) return Status::InvalidArgument("state." + member + " must be an object");
    for (const auto& [key, value] : v.items()) {
      if (key.empty()) return Status::InvalidArgument("state." + member + ": empty key");
      auto e = EntryFromJson(value, out.version, now_ms, "state." + member + "." + key);
      if (!e) return e.error();
      out.of(*c).emplace(key, std::move(e.value()));
    }
  }
  if (state.contains("calls")) {
    const nlohmann::json& calls = state["calls"];
    if (!calls.is_array()) return Status::InvalidArgument("state.calls must be an array");
    for (size_t i = 0; i < calls.size(); ++i) {
      const nlohmann::json& c = calls[i];
      std::string where = "state.calls[" + std::to_string(i) + "]";
      if (!c.is_object() || !c.contains("tool") || !c["tool"].is_string()) {
        return Status::InvalidArgument(where + " must be an object with a tool");
      }
      CallRecord r;
      r.call.tool = c["tool"].get<std::string>();
      r.call.id = c.value("call_id", "test" + std::to_string(i));
      r.turn = c.value("turn", out.version);
      r.call.arguments = c.value("arguments", nlohmann::json::object());
      r.outcome = c.value("outcome", std::string("ok"));
      r.writes = c.value("writes", true);
      out.calls.push_back(std::move(r));
    }
  }
  return out;
}

bool HasTestProvenance(const nlohmann::json& test_case) {
  return test_case.is_object() &&
         (test_case.contains("user_messages") || test_case.contains("outputs"));
}

namespace {

// `turn` of `item` if it has one (a non-negative integer), else `fallback`.
Result<int64_t> TurnOf(const nlohmann::json& item, int64_t fallback, const std::string& where) {
  auto t = item.find("turn");
  if (t == item.end()) return fallback;
  if (!NonNegative(*t)) return Status::InvalidArgument(where + ".turn must be an integer >= 0");
  return t->get<int64_t>();
}

Status CheckMembers(const nlohmann::json& item, std::initializer_list<const char*> known,
                    const std::string& where) {
  for (const auto& [k, v] : item.items()) {
    bool ok = false;
    for (const char* n : known) ok = ok || k == n;
    if (!ok) return Status::InvalidArgument(where + ": unknown member '" + k + "'");
  }
  return Status::Ok();
}

}  // namespace

Status LoadTestProvenance(const nlohmann::json& test_case, provenance::ProvenanceIndex& index) {
  if (auto m = test_case.find("user_messages"); m != test_case.end()) {
    if (!m->is_array()) return Status::InvalidArgument("user_messages must be an array");
    for (size_t i = 0; i < m->size(); ++i) {
      const nlohmann::json& item = (*m)[i];
      const std::string where = "user_messages[" + std::to_string(i) + "]";
      const auto position = static_cast<int64_t>(i + 1);
      if (item.is_string()) {
        if (Status s = index.AddUserMessage(position, item.get_ref<const std::string&>()); !s.ok())
          return s;
        continue;
      }
      if (!item.is_object() || !item.contains("text") || !item["text"].is_string()) {
        return Status::InvalidArgument(where + " must be a string or an object with a text");
      }
      if (Status s = CheckMembers(item, {"text", "turn"}, where); !s.ok()) return s;
      Result<int64_t> turn = TurnOf(item, position, where);
      if (!turn) return turn.error();
      if (Status s = index.AddUserMessage(*turn, item["text"].get_ref<const std::string&>());
          !s.ok())
        return s;
    }
  }
  if (auto o = test_case.find("outputs"); o != test_case.end()) {
    if (!o->is_array()) return Status::InvalidArgument("outputs must be an array");
    for (size_t i = 0; i < o->size(); ++i) {
      const nlohmann::json& item = (*o)[i];
      const std::string where = "outputs[" + std::to_string(i) + "]";
      if (!item.is_object() || !item.contains("tool") || !item["tool"].is_string() ||
          !item.contains("output")) {
        return Status::InvalidArgument(where + " must be an object with a tool and an output");
      }
      if (Status s = CheckMembers(item, {"tool", "output", "id", "turn"}, where); !s.ok()) return s;
      std::string id = "out" + std::to_string(i);
      if (auto x = item.find("id"); x != item.end()) {
        if (!x->is_string()) return Status::InvalidArgument(where + ".id must be a string");
        id = x->get<std::string>();
      }
      Result<int64_t> turn = TurnOf(item, 1, where);
      if (!turn) return turn.error();
      if (Status s = index.AddToolOutput(*turn, item["tool"].get_ref<const std::string&>(), id,
                                         item["output"]);
          !s.ok())
        return s;
    }
  }
  return Status::Ok();
}

Status MatchExpectation(const PolicyDecision& d, const nlohmann::json& expect) {
  if (!expect.is_object() || !expect.contains("decision") || !expect["decision"].is_string()) {
    return Status::InvalidArgument("expect must be an object with a decision");
  }
  std::optional<Outcome> want = ParseOutcome(expect["decision"].get<std::string>());
  if (!want)
    return Status::InvalidArgument(
        "expect.decision must be allow, deny, require_approval or confirm");
  std::string got =
      std::string(OutcomeName(d.outcome)) + " by '" + d.rule_id + "' (" + d.reason + ")";
  if (d.outcome != *want) {
    return Status::FailedPrecondition("expected " + std::string(OutcomeName(*want)) + ", got " +
                                      got);
  }
  if (expect.contains("rule")) {
    if (!expect["rule"].is_string()) return Status::InvalidArgument("expect.rule must be a string");
    if (expect["rule"] != d.rule_id) {
      return Status::FailedPrecondition("expected rule '" + expect["rule"].get<std::string>() +
                                        "', got " + got);
    }
  }
  if (expect.contains("reason_contains")) {
    if (!expect["reason_contains"].is_string()) {
      return Status::InvalidArgument("expect.reason_contains must be a string");
    }
    const std::string& part = expect["reason_contains"].get_ref<const std::string&>();
    if (d.reason.find(part) == std::string::npos) {
      return Status::FailedPrecondition("expected the reason to contain '" + part + "', got " +
                                        got);
    }
  }
  return Status::Ok();
}

}  // namespace taskledger
