// ParseWithSimdjson (see internal/trace_parse.h): a trace line read by
// simdjson's DOM parser and converted into the trace types, with nlohmann
// values for arguments, outputs and origin. Parsing the 519 lines of the
// retail gold trace (3.5 MB) this way takes about half the time of
// nlohmann's parse (37 -> 21 ms on a quiet machine, 92 -> 45 ms at load 7);
// simdjson's own parse is under 2 ms of it, the rest is building the
// nlohmann values, which every reader of a trace needs.
//
// It gives up (nullopt, and ParseTraceLine uses the nlohmann reader) on any
// line it does not take whole, so it never words an error and never accepts
// a line the reference refuses:
// - any simdjson error: invalid JSON, invalid UTF-8, a lone surrogate
//   escape, an integer outside 64 bits, a number that overflows a double
//   (nlohmann refuses some of these and reads others as floats);
// - any check of the trace format that fails;
// - a line holding what may be the literal -0 outside a string: simdjson
//   reads it as the integer 0 like nlohmann, but a non-negative integer is
//   unsigned here and nlohmann keeps "-0" signed.
// Otherwise the values are nlohmann's: objects keep the last of duplicate
// keys, non-negative integers are unsigned and negative ones signed, other
// numbers the same correctly rounded doubles nlohmann's strtod gives.
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "internal/trace_parse.h"

namespace taskledger::trace_internal {
namespace {

using nlohmann::json;
namespace dom = simdjson::dom;

// Lines longer than this get a parser of their own, freed afterwards, so a
// thread does not keep a large line's buffers.
constexpr size_t kKeptParserBytes = size_t{1} << 20;

// Whether `line` may hold the number -0 (with no fraction or exponent)
// outside a string. A "-0" inside a string (a date, an id) also answers
// true when it looks like a value; that only costs the faster path.
bool MayHoldMinusZero(std::string_view line) {
  for (size_t at = line.find("-0"); at != std::string_view::npos; at = line.find("-0", at + 1)) {
    const size_t next = at + 2;
    if (next < line.size()) {
      const char c = line[next];
      if ((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E') continue;
    }
    size_t before = at;
    while (before > 0 && (line[before - 1] == ' ' || line[before - 1] == '\t' ||
                          line[before - 1] == '\n' || line[before - 1] == '\r')) {
      --before;
    }
    if (before == 0) return true;
    const char p = line[before - 1];
    if (p == ':' || p == '[' || p == ',') return true;
  }
  return false;
}

json ToJson(dom::element e) {
  switch (e.type()) {
    case dom::element_type::OBJECT: {
      json out = json::object();
      auto& members = out.get_ref<json::object_t&>();
      for (dom::key_value_pair kv : dom::object(e)) {
        // Later duplicates replace earlier ones, as nlohmann's parser does.
        members.insert_or_assign(std::string(kv.key), ToJson(kv.value));
      }
      return out;
    }
    case dom::element_type::ARRAY: {
      const dom::array items(e);
      json out = json::array();
      auto& values = out.get_ref<json::array_t&>();
      values.reserve(items.size());
      for (dom::element x : items) values.push_back(ToJson(x));
      return out;
    }
    case dom::element_type::STRING:
      return json(std::string_view(e));
    case dom::element_type::INT64: {
      const int64_t i = int64_t(e);
      if (i >= 0) return json(static_cast<uint64_t>(i));
      return json(i);
    }
    case dom::element_type::UINT64:
      return json(uint64_t(e));
    case dom::element_type::DOUBLE:
      return json(double(e));
    case dom::element_type::BOOL:
      return json(bool(e));
    case dom::element_type::NULL_VALUE:
      return json(nullptr);
  }
  return json();
}

// The members of `obj` named in `names`, each as the last of its duplicates
// (as nlohmann's parser keeps them); a member not present is nullopt.
template <size_t N>
std::array<std::optional<dom::element>, N> Members(dom::object obj,
                                                   const std::array<std::string_view, N>& names) {
  std::array<std::optional<dom::element>, N> found;
  for (dom::key_value_pair kv : obj) {
    for (size_t i = 0; i < N; ++i) {
      if (kv.key == names[i]) {
        found[i] = kv.value;
        break;
      }
    }
  }
  return found;
}

// A non-empty string, as the format requires of ids, tools and the conversation.
bool NonEmptyString(dom::element e, std::string& out) {
  std::string_view v;
  if (e.get(v) != simdjson::SUCCESS || v.empty()) return false;
  out.assign(v);
  return true;
}

// An optional boolean: absent or null is false.
bool OptionalBool(const std::optional<dom::element>& e, bool& out) {
  out = false;
  if (!e || e->is_null()) return true;
  return e->get(out) == simdjson::SUCCESS;
}

bool Expectation(const std::optional<dom::element>& e, std::optional<TraceExpectation>& out) {
  if (!e || e->is_null()) return true;
  dom::object obj;
  if (e->get(obj) != simdjson::SUCCESS) return false;
  const auto [decision, rule] = Members<2>(obj, {"decision", "rule"});
  std::string_view name;
  if (!decision || decision->get(name) != simdjson::SUCCESS) return false;
  if (name != "allow" && name != "deny" && name != "require_approval" && name != "confirm") {
    return false;
  }
  TraceExpectation x;
  x.decision.assign(name);
  if (rule && !rule->is_null()) {
    std::string_view text;
    if (rule->get(text) != simdjson::SUCCESS) return false;
    x.rule.assign(text);
  }
  out = std::move(x);
  return true;
}

// The members an event may have, in the order of kEventMembers.
enum EventMember : size_t {
  kType,
  kText,
  kId,
  kTool,
  kArguments,
  kWrites,
  kExpect,
  kOutput,
  kError
};
constexpr std::array<std::string_view, 9> kEventMembers = {
    "type", "text", "id", "tool", "arguments", "writes", "expect", "output", "error"};

bool Event(dom::element e, TraceEvent& out) {
  dom::object obj;
  if (e.get(obj) != simdjson::SUCCESS) return false;
  const auto f = Members(obj, kEventMembers);
  std::string_view type;
  if (!f[kType] || f[kType]->get(type) != simdjson::SUCCESS) return false;
  if (type == "user") {
    out.type = TraceEventType::kUser;
    std::string_view text;
    if (!f[kText] || f[kText]->get(text) != simdjson::SUCCESS) return false;
    out.text.assign(text);
    return true;
  }
  if (type == "call") {
    out.type = TraceEventType::kCall;
    if (!f[kId] || !NonEmptyString(*f[kId], out.id)) return false;
    if (!f[kTool] || !NonEmptyString(*f[kTool], out.tool)) return false;
    if (f[kArguments] && !f[kArguments]->is_null()) {
      if (!f[kArguments]->is_object()) return false;
      out.arguments = ToJson(*f[kArguments]);
    }
    if (!OptionalBool(f[kWrites], out.writes)) return false;
    return Expectation(f[kExpect], out.expect);
  }
  if (type == "result") {
    out.type = TraceEventType::kResult;
    if (!f[kId] || !NonEmptyString(*f[kId], out.id)) return false;
    if (f[kOutput]) out.output = ToJson(*f[kOutput]);
    return OptionalBool(f[kError], out.error);
  }
  return false;
}

std::optional<TraceConversation> Convert(dom::element doc, const TraceLimits& limits) {
  dom::object top;
  if (doc.get(top) != simdjson::SUCCESS) return std::nullopt;
  const auto [conversation, domain, origin, events] =
      Members<4>(top, {"conversation", "domain", "origin", "events"});
  TraceConversation c;
  if (!conversation || !NonEmptyString(*conversation, c.conversation)) return std::nullopt;
  if (domain && !domain->is_null()) {
    std::string_view d;
    if (domain->get(d) != simdjson::SUCCESS) return std::nullopt;
    c.domain.assign(d);
  }
  if (origin) c.origin = ToJson(*origin);
  dom::array list;
  if (!events || events->get(list) != simdjson::SUCCESS) return std::nullopt;
  if (list.size() > limits.max_events) return std::nullopt;
  c.events.resize(list.size());
  size_t i = 0;
  for (dom::element e : list) {
    if (!Event(e, c.events[i++])) return std::nullopt;
  }
  return c;
}

}  // namespace

std::optional<TraceConversation> ParseWithSimdjson(std::string_view line,
                                                   const TraceLimits& limits) {
  if (MayHoldMinusZero(line)) return std::nullopt;
  if (limits.max_depth < 1) return std::nullopt;
  // simdjson refuses (DEPTH_ERROR) anything nested deeper than its max_depth,
  // so with max_depth = limits.max_depth no line it takes nests deeper than
  // the limit, whether or not ParseTraceLine checked the depth first.
  const auto depth = static_cast<size_t>(limits.max_depth);
  dom::element doc;
  if (line.size() > kKeptParserBytes) {
    auto parser = std::make_unique<dom::parser>();
    if (parser->allocate(line.size(), depth) != simdjson::SUCCESS ||
        parser->parse(line.data(), line.size()).get(doc) != simdjson::SUCCESS) {
      return std::nullopt;
    }
    return Convert(doc, limits);
  }
  thread_local dom::parser parser;
  if (parser.max_depth() != depth &&
      parser.allocate(std::max(parser.capacity(), line.size()), depth) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  if (parser.parse(line.data(), line.size()).get(doc) != simdjson::SUCCESS) return std::nullopt;
  return Convert(doc, limits);
}

}  // namespace taskledger::trace_internal
