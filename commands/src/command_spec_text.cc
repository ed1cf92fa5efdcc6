// WriteCommandSpec (internal/command_spec_text.h): the members of
// EncodeCommand's object in the order nlohmann's std::map keeps them (byte
// order of the keys), strings escaped as nlohmann's serializer escapes them
// with ensure_ascii off, nested JSON values (arguments, decision, evidence)
// dumped by DumpLossless itself. Pure.
#include "internal/command_spec_text.h"

#include <cstdint>
#include <string_view>

#include "internal/command_redis_decode.h"

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

bool Text(const char* key, std::string_view value, std::string& out) {
  Key(key, out);
  return String(value, out);
}

template <class N>
void Number(const char* key, N value, std::string& out) {
  Key(key, out);
  out += std::to_string(value);
}

bool Json(const char* key, const nlohmann::json& value, std::string& out) {
  Key(key, out);
  std::string text;
  if (!DumpLossless(value, text)) return false;
  out += text;
  return true;
}

}  // namespace

bool WriteCommandSpec(const Command& c, std::string& out) {
  const size_t start = out.size();
  out += '{';
  // Members in EncodeCommand's object order (its keys sorted bytewise).
  bool ok = Text("approval_reason", c.approval_reason, out);
  ok = ok && Text("approver", c.approver, out);
  ok = ok && Json("arguments", c.arguments, out);
  Number("attempts", c.attempts, out);
  ok = ok && Text("cancel_reason", c.cancel_reason, out);
  ok = ok && Text("command_key", c.command_key, out);
  ok = ok && Text("compensates", c.compensates, out);
  if (c.compensation) {
    Key("compensation", out);
    out += '{';
    ok = ok && Json("arguments", c.compensation->arguments, out);
    ok = ok && Text("target", c.compensation->target, out);
    ok = ok && Text("tool", c.compensation->tool, out);
    out += '}';
  }
  Number("completed_seq", c.completed_seq, out);
  Number("created_ms", c.created_ms, out);
  ok = ok && Json("decision", c.decision, out);
  Key("escalated", out);
  out += c.escalated ? "true" : "false";
  ok = ok && Text("escalation_reason", c.escalation_reason, out);
  ok = ok && Json("evidence", c.evidence, out);
  ok = ok && Text("external_id", c.external_id, out);
  Number("fencing_token", c.fencing_token, out);
  ok = ok && Text("idempotency_key", c.idempotency_key, out);
  ok = ok && Text("last_error", c.last_error, out);
  Number("lease_expires_ms", c.lease_expires_ms, out);
  ok = ok && Text("lease_owner", c.lease_owner, out);
  ok = ok && Text("pack_version", c.pack_version, out);
  ok = ok && Text("replay_reason", c.replay_reason, out);
  Number("replays", c.replays, out);
  ok = ok && Text("run", c.run.run, out);
  Number("seq", c.seq, out);
  ok = ok && Text("state", CommandStateName(c.state), out);
  ok = ok && Text("step", c.step, out);
  ok = ok && Text("target", c.target, out);
  ok = ok && Text("tenant", c.run.tenant, out);
  ok = ok && Text("tool", c.tool, out);
  Number("updated_ms", c.updated_ms, out);
  out += '}';
  if (!ok) out.resize(start);
  return ok;
}

}  // namespace taskledger::internal
