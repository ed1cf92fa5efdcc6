// WriteCommandSpec (internal/command_spec_text.h): the members of
// EncodeCommand's object in the order nlohmann's std::map keeps them (byte
// order of the keys), strings escaped as nlohmann's serializer escapes them
// with ensure_ascii off, nested JSON values (arguments, decision, evidence)
// dumped by DumpLossless itself; one member list for both spellings (the
// compact one skips a member holding its default). And WriteDecisionApart: a
// typed record's CBOR bytes for the hash's own "decision" field, when every
// string in it is valid UTF-8; the one encoding of a decision the store
// writes (its turn keeps the same bytes). Pure.
#include "internal/command_spec_text.h"

#include <cstdint>
#include <string_view>

#include "internal/command_redis_decode.h"
#include "taskledger/ledger/decision_bytes.h"

namespace taskledger::internal {
namespace {

// Length of the well-formed UTF-8 sequence starting at s[i] (Unicode 15,
// table 3-7: no overlongs, no surrogates, nothing past U+10FFFF), or 0.
size_t Utf8Length(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b = at(i);
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
  }
  return n;
}

// `s` as a JSON string; false when it is not valid UTF-8.
bool String(std::string_view s, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  size_t plain = 0;  // start of the bytes not yet copied
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<uint8_t>(s[i]);
    if (b >= 0x80) {
      const size_t n = Utf8Length(s, i);
      if (n == 0) return false;
      i += n;
      continue;
    }
    if (b >= 0x20 && b != '"' && b != '\\') {
      ++i;
      continue;
    }
    out.append(s.data() + plain, i - plain);
    switch (b) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += "\\u00";
        out += kHex[b >> 4];
        out += kHex[b & 0xF];
    }
    plain = ++i;
  }
  out.append(s.data() + plain, s.size() - plain);
  out += '"';
  return true;
}

// Writes `"key":` (keys are plain ASCII) and, after the first member, the comma.
void Key(const char* key, std::string& out) {
  if (out.back() != '{') out += ',';
  out += '"';
  out += key;
  out += "\":";
}

// The members of one JSON object, written in the order they are given (the
// callers give them in key order), in the spelling asked for: a compact text
// leaves out a member equal to its default (the value a default-constructed
// Command holds, which DecodeCommand keeps for an absent member).
class SpecWriter {
 public:
  SpecWriter(SpecSpelling spelling, std::string& out)
      : compact_(spelling == SpecSpelling::kCompact), out_(out) {}

  void Text(const char* key, std::string_view value, std::string_view fallback) {
    if (compact_ && value == fallback) return;
    Always(key, value);
  }
  template <class N>
  void Number(const char* key, N value) {
    if (compact_ && value == 0) return;
    Key(key, out_);
    out_ += std::to_string(value);
  }
  void Bool(const char* key, bool value) {
    if (compact_ && !value) return;
    Key(key, out_);
    out_ += value ? "true" : "false";
  }
  void Json(const char* key, const nlohmann::json& value, const nlohmann::json& fallback) {
    if (compact_ && value == fallback) return;
    Key(key, out_);
    std::string text;
    ok_ = DumpLossless(value, text) && ok_;
    out_ += text;
  }
  // A text member every spelling writes (DecodeCommand needs it).
  void Always(const char* key, std::string_view value) {
    Key(key, out_);
    ok_ = String(value, out_) && ok_;
  }
  bool ok() const { return ok_; }

 private:
  const bool compact_;
  std::string& out_;
  bool ok_ = true;
};

// True when every string of the record is valid UTF-8 (what DumpLossless
// would accept of its JSON: its other members are numbers and booleans).
bool DecisionUtf8(const DecisionRecord& d) {
  auto valid = [](std::string_view s) {
    for (size_t i = 0; i < s.size();) {
      if (static_cast<uint8_t>(s[i]) < 0x80) {
        ++i;
        continue;
      }
      const size_t n = Utf8Length(s, i);
      if (n == 0) return false;
      i += n;
    }
    return true;
  };
  for (std::string_view s : {std::string_view(d.args_hash), std::string_view(d.call_id),
                             std::string_view(d.conversation), std::string_view(d.decision),
                             std::string_view(d.pack_version), std::string_view(d.reason),
                             std::string_view(d.rule), std::string_view(d.tool)}) {
    if (!valid(s)) return false;
  }
  for (const RuleResult& r : d.rules) {
    if (!valid(r.id) || !valid(r.outcome) || !valid(r.reason)) return false;
    for (const std::string& line : r.log) {
      if (!valid(line)) return false;
    }
    for (const EntryRead& x : r.reads) {
      if (!valid(x.key) || !valid(x.digest) || !valid(x.rule) || !valid(x.source_id)) return false;
    }
  }
  return true;
}

}  // namespace

bool WriteDecisionApart(const CommandDecision& d, std::string& out) {
  const DecisionRecord* typed = d.typed();
  if (typed == nullptr || (typed->extra.is_object() && !typed->extra.empty()) ||
      !DecisionUtf8(*typed)) {
    return false;
  }
  AppendDecisionBytes(*typed, out);
  return true;
}

bool WriteCommandSpec(const Command& c, SpecSpelling spelling, std::string& out,
                      bool decision_apart) {
  static const Command kDefault;
  static const CompensationSpec kNoCompensation;
  const Command& d = kDefault;
  const size_t start = out.size();
  out += '{';
  SpecWriter w(spelling, out);
  bool compensation_ok = true;
  // Members in EncodeCommand's object order (its keys sorted bytewise).
  w.Text("approval_reason", c.approval_reason, d.approval_reason);
  w.Text("approver", c.approver, d.approver);
  w.Json("arguments", c.call.arguments, d.call.arguments);
  w.Number("attempts", c.attempts);
  // Written only when there is one, in either spelling (as EncodeCommand).
  if (!c.call.id.empty()) w.Always("call_id", c.call.id);
  w.Text("cancel_reason", c.cancel_reason, d.cancel_reason);
  w.Text("command_key", c.command_key, d.command_key);
  w.Text("compensates", c.compensates, d.compensates);
  if (c.compensation) {
    // Every member of a compensation that is there, in either spelling.
    Key("compensation", out);
    out += '{';
    SpecWriter inner(SpecSpelling::kFull, out);
    inner.Json("arguments", c.compensation->arguments, kNoCompensation.arguments);
    inner.Text("target", c.compensation->target, kNoCompensation.target);
    inner.Text("tool", c.compensation->tool, kNoCompensation.tool);
    out += '}';
    compensation_ok = inner.ok();
  }
  w.Number("completed_seq", c.completed_seq);
  w.Number("created_ms", c.created_ms);
  // A decision kept in the spec (untyped, or one WriteDecisionApart
  // declined) is its JSON's lossless text; the write path keeps a typed
  // record apart, so this tree is built only for those that cannot be.
  if (!decision_apart) w.Json("decision", c.decision.Json(), d.decision.Json());
  w.Bool("escalated", c.escalated);
  w.Text("escalation_reason", c.escalation_reason, d.escalation_reason);
  w.Json("evidence", c.evidence, d.evidence);
  w.Text("external_id", c.external_id, d.external_id);
  w.Number("fencing_token", c.fencing_token);
  w.Text("idempotency_key", c.idempotency_key, d.idempotency_key);
  w.Text("last_error", c.last_error, d.last_error);
  w.Number("lease_expires_ms", c.lease_expires_ms);
  w.Text("lease_owner", c.lease_owner, d.lease_owner);
  w.Text("pack_version", c.pack_version, d.pack_version);
  w.Text("replay_reason", c.replay_reason, d.replay_reason);
  w.Number("replays", c.replays);
  w.Text("run", c.run.run, d.run.run);
  w.Number("seq", c.seq);
  w.Always("state", CommandStateName(c.state));
  w.Text("step", c.step, d.step);
  w.Text("target", c.target, d.target);
  w.Text("tenant", c.run.tenant, d.run.tenant);
  w.Text("tool", c.call.tool, d.call.tool);
  w.Number("updated_ms", c.updated_ms);
  out += '}';
  const bool ok = w.ok() && compensation_ok;
  if (!ok) out.resize(start);
  return ok;
}

}  // namespace taskledger::internal
