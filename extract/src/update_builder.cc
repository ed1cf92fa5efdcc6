// Building one Update from one rule match: value, coercion, expiry and
// provenance. Pure functions; thread-safe.
#include "internal/update_builder.h"

#include <cmath>
#include <limits>

#include "taskledger/base/key_segment.h"
#include "taskledger/extract/extractor.h"

namespace taskledger::extract_internal {
namespace {

using nlohmann::json;

// Longest expiry accepted: far beyond any real deadline, far below int64 ms.
constexpr double kMaxExpiryMs = 1e15;

// Parses a string holding a JSON number ("5", "2.5", " 7 "); nullopt otherwise.
std::optional<json> NumberFromString(const std::string& s) {
  if (s.empty() || s.size() > 64) return std::nullopt;
  json v = json::parse(s, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded() || !v.is_number()) return std::nullopt;
  return v;
}

bool ToInteger(json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e15) return false;
  v = static_cast<int64_t>(d);
  return true;
}

// The value of `spec` for this match: a node of the output (`node`) or a
// value made for the match (`out`); false to skip the match.
bool MakeValue(const ValueSpec& spec, const MatchContext& ctx, const json*& node, json& out,
               std::string* unresolved) {
  switch (spec.kind) {
    case ValueSpec::Kind::kMatched:
      node = &ctx.matched();
      return true;
    case ValueSpec::Kind::kLiteral:
      out = spec.literal;
      return true;
    case ValueSpec::Kind::kTemplate:
      if (spec.tmpl.is_single_pointer()) {
        node = spec.tmpl.ResolveSingle(ctx);
        if (node == nullptr) {
          *unresolved = "{" + spec.tmpl.text() + "}";
          return false;
        }
        return true;
      }
      std::string s;
      if (!spec.tmpl.Render(ctx, s, unresolved)) return false;
      out = std::move(s);
      return true;
  }
  return false;
}

// Seconds-from: the number of units the field holds; nullopt if it is not a
// non-negative number (or numeric string).
std::optional<double> ExpiryUnits(const ExpirySpec& e, const MatchContext& ctx) {
  json v;
  if (e.from.is_single_pointer()) {
    const json* node = e.from.ResolveSingle(ctx);
    if (node == nullptr) return std::nullopt;
    v = *node;
  } else {
    std::string s;
    if (!e.from.Render(ctx, s, nullptr)) return std::nullopt;
    v = s;
  }
  if (v.is_string()) {
    auto n = NumberFromString(v.get<std::string>());
    if (!n) return std::nullopt;
    v = *n;
  }
  if (!v.is_number()) return std::nullopt;
  double d = v.get<double>();
  if (!std::isfinite(d) || d < 0) return std::nullopt;
  return d;
}

// Appends the leaves of `v` below `key` (see SplitFields); false past the cap.
bool AppendLeaves(json& v, std::string& key, const Update& proto, std::vector<Update>& out,
                  size_t first) {
  if (!v.is_structured() || v.empty()) {
    if (out.size() - first >= kMaxFields) return false;
    Update& u = out.emplace_back(proto);
    u.key = key;
    u.value = std::move(v);
    return true;
  }
  const size_t n = key.size();
  if (v.is_object()) {
    for (auto& [name, child] : v.items()) {
      key += '.';
      AppendKeySegment(name, key);
      if (!AppendLeaves(child, key, proto, out, first)) return false;
      key.resize(n);
    }
  } else {
    for (size_t i = 0; i < v.size(); ++i) {
      key += '.';
      key += std::to_string(i);
      if (!AppendLeaves(v[i], key, proto, out, first)) return false;
      key.resize(n);
    }
  }
  return true;
}

}  // namespace

bool SplitFields(Update whole, std::vector<Update>& out, BuildProblem& problem) {
  if (!whole.value.is_structured() || whole.value.empty()) {
    out.push_back(std::move(whole));
    return true;
  }
  json value = std::move(whole.value);
  whole.value = nullptr;
  std::string key = std::move(whole.key);
  whole.key.clear();
  const size_t first = out.size();
  if (!AppendLeaves(value, key, whole, out, first)) {
    out.resize(first);
    problem.code = std::string(extraction_error::kTooManyFields);
    problem.message = "the value has more than " + std::to_string(kMaxFields) +
                      " fields; store it whole or map a smaller part of it";
    return false;
  }
  return true;
}

void CapturesFromMatch(std::string_view text, const RegexMatch& match,
                       std::vector<Capture>& captures) {
  captures.assign(match.groups.size(), Capture{});
  for (size_t i = 0; i < match.groups.size(); ++i) {
    const RegexMatch::Group& g = match.groups[i];
    if (g.begin == std::string::npos) {
      captures[i].present = false;
    } else {
      captures[i].text = text.substr(g.begin, g.end - g.begin);
    }
  }
}

bool Coerce(Coercion c, json& v) {
  switch (c) {
    case Coercion::kNone:
      return true;
    case Coercion::kString: {
      if (v.is_string()) return true;
      std::string s;
      if (!AppendScalar(v, s)) return false;
      v = std::move(s);
      return true;
    }
    case Coercion::kNumber:
      if (v.is_string()) {
        auto n = NumberFromString(v.get<std::string>());
        if (!n) return false;
        v = std::move(*n);
      }
      return v.is_number();
    case Coercion::kInteger:
      if (v.is_string()) {
        auto n = NumberFromString(v.get<std::string>());
        if (!n) return false;
        v = std::move(*n);
      }
      return ToInteger(v);
    case Coercion::kBoolean:
      if (v.is_boolean()) return true;
      if (v.is_string()) {
        const auto& s = v.get_ref<const std::string&>();
        if (s != "true" && s != "false") return false;
        v = s == "true";
        return true;
      }
      if (v.is_number() && (v == 0 || v == 1)) {
        v = v == 1;
        return true;
      }
      return false;
  }
  return false;
}

BuildOutcome BuildUpdate(const UpdateSpec& spec, const MatchContext& ctx,
                         const UpdateOrigin& origin, Update& out, BuildProblem& problem,
                         const json** deferred) {
  std::string unresolved;
  auto skip = [&](std::string what) {
    if (!spec.required) return BuildOutcome::kSkipped;
    problem.code = std::string(extraction_error::kUnresolved);
    problem.message = std::move(what);
    return BuildOutcome::kFailed;
  };
  // Rendered into a buffer kept per thread, then copied at its exact size:
  // the key lives on in the turn record, and a generous reserve in place
  // would be kept with it (about 40 bytes of every key in a replay).
  thread_local std::string rendered;
  rendered.clear();
  if (!spec.key.Render(ctx, rendered, &unresolved, /*escape_ids=*/true)) {
    return skip("key placeholder " + unresolved + " did not resolve to a scalar");
  }
  if (rendered.empty()) return skip("key rendered empty");
  out.key.assign(rendered);
  const json* node = nullptr;
  json& value = out.value;
  if (!MakeValue(spec.value, ctx, node, value, &unresolved)) {
    return skip("value placeholder " + unresolved + " did not resolve");
  }
  // A string, object or array that is taken as it is can be filled in by the
  // caller, who may move it out of an output it owns instead of copying it.
  const bool defer =
      deferred != nullptr && node != nullptr &&
      ((spec.coerce == Coercion::kNone && (node->is_string() || node->is_structured())) ||
       (spec.coerce == Coercion::kString && node->is_string()));
  if (deferred != nullptr) *deferred = defer ? node : nullptr;
  if (!defer) {
    if (node != nullptr) value = *node;
    // A null with a coercion is an absent value ("tracking": null), not a
    // failure: there is nothing to convert.
    if (spec.coerce != Coercion::kNone && value.is_null()) return skip("value is null");
    if (!Coerce(spec.coerce, value)) {
      problem.code = std::string(extraction_error::kCoercionFailed);
      std::string shown = value.dump(-1, ' ', false, json::error_handler_t::replace);
      if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
      static constexpr const char* kNames[] = {"", "string", "number", "integer", "boolean"};
      problem.message = "cannot coerce " + shown + " to " + kNames[static_cast<int>(spec.coerce)];
      return BuildOutcome::kFailed;
    }
  }

  out.op = UpdateOp::kSet;
  out.category = spec.category;
  out.provenance.source = origin.source;
  out.provenance.source_id = *origin.source_id;
  out.provenance.verified = spec.verified;
  out.provenance.rule_id = spec.id;
  out.provenance.pack_version = *origin.pack_version;

  switch (spec.expire.kind) {
    case ExpirySpec::Kind::kNone:
      break;
    case ExpirySpec::Kind::kTurns:
      out.expire_after_turns = spec.expire.turns;
      break;
    case ExpirySpec::Kind::kSeconds:
      out.expire_at_ms =
          origin.now_ms + static_cast<int64_t>(std::llround(spec.expire.seconds * 1000));
      break;
    case ExpirySpec::Kind::kSecondsFrom: {
      auto units = ExpiryUnits(spec.expire, ctx);
      double ms = units ? *units * spec.expire.unit_seconds * 1000 : 0;
      if (!units || ms > kMaxExpiryMs) {
        problem.code = std::string(extraction_error::kInvalidExpiry);
        problem.message = "expiry field " + spec.expire.from.text() +
                          " is not a non-negative number of a sensible size";
        return BuildOutcome::kFailed;
      }
      out.expire_at_ms = origin.now_ms + static_cast<int64_t>(std::llround(ms));
      break;
    }
  }
  return BuildOutcome::kBuilt;
}

}  // namespace taskledger::extract_internal
