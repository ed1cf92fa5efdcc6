// ParseTraceLine / EncodeTraceLine (see trace.h). The nesting depth is checked
// by a linear scan before the JSON parser sees the bytes, so a hostile line
// cannot make the parser or the destructor recurse deeply. A line is read by
// simdjson first (trace_simd.cc); any line that path does not take whole, an
// invalid one above all, is read here with nlohmann's parser, which is the
// reference for what a line means and words every error.
#include "taskledger/session/trace.h"

#include "internal/trace_parse.h"
#include "taskledger/base/json_depth.h"

namespace taskledger {
namespace {

using nlohmann::json;

Status Bad(size_t index, const std::string& what) {
  return Status::InvalidArgument("event " + std::to_string(index) + ": " + what);
}

// A required string member; empty is not allowed.
Result<std::string> TakeString(json& obj, const char* field, size_t index) {
  auto it = obj.find(field);
  if (it == obj.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return Bad(index, std::string("\"") + field + "\" must be a non-empty string");
  }
  return std::move(it->get_ref<std::string&>());
}

Result<bool> OptionalBool(const json& obj, const char* field, size_t index) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return false;
  if (!it->is_boolean()) return Bad(index, std::string("\"") + field + "\" must be a boolean");
  return it->get<bool>();
}

Result<std::optional<TraceExpectation>> ParseExpect(const json& obj, size_t index) {
  auto it = obj.find("expect");
  if (it == obj.end() || it->is_null()) return std::optional<TraceExpectation>{};
  if (!it->is_object()) return Bad(index, "\"expect\" must be an object");
  auto d = it->find("decision");
  if (d == it->end() || !d->is_string()) return Bad(index, "\"expect.decision\" must be a string");
  TraceExpectation e;
  e.decision = d->get<std::string>();
  if (e.decision != "allow" && e.decision != "deny" && e.decision != "require_approval" &&
      e.decision != "confirm") {
    return Bad(index, "unknown expected decision \"" + e.decision + "\"");
  }
  auto r = it->find("rule");
  if (r != it->end() && !r->is_null()) {
    if (!r->is_string()) return Bad(index, "\"expect.rule\" must be a string");
    e.rule = r->get<std::string>();
  }
  return std::optional<TraceExpectation>(std::move(e));
}

Result<TraceEvent> ParseEvent(json& ev, size_t index) {
  if (!ev.is_object()) return Bad(index, "must be an object");
  auto type = ev.find("type");
  if (type == ev.end() || !type->is_string()) return Bad(index, "\"type\" must be a string");
  const std::string& t = type->get_ref<const std::string&>();
  TraceEvent out;
  if (t == "user") {
    out.type = TraceEventType::kUser;
    auto text = ev.find("text");
    if (text == ev.end() || !text->is_string()) return Bad(index, "\"text\" must be a string");
    out.text = std::move(text->get_ref<std::string&>());
    return out;
  }
  if (t == "call") {
    out.type = TraceEventType::kCall;
    auto id = TakeString(ev, "id", index);
    if (!id) return id.error();
    out.id = std::move(*id);
    auto tool = TakeString(ev, "tool", index);
    if (!tool) return tool.error();
    out.tool = std::move(*tool);
    auto args = ev.find("arguments");
    if (args != ev.end() && !args->is_null()) {
      if (!args->is_object()) return Bad(index, "\"arguments\" must be an object");
      out.arguments = std::move(*args);
    }
    auto writes = OptionalBool(ev, "writes", index);
    if (!writes) return writes.error();
    out.writes = *writes;
    auto expect = ParseExpect(ev, index);
    if (!expect) return expect.error();
    out.expect = std::move(*expect);
    return out;
  }
  if (t == "result") {
    out.type = TraceEventType::kResult;
    auto id = TakeString(ev, "id", index);
    if (!id) return id.error();
    out.id = std::move(*id);
    auto output = ev.find("output");
    if (output != ev.end()) out.output = std::move(*output);
    auto error = OptionalBool(ev, "error", index);
    if (!error) return error.error();
    out.error = *error;
    return out;
  }
  return Bad(index, "unknown type \"" + t + "\"");
}

}  // namespace

std::string_view TraceEventTypeName(TraceEventType t) {
  switch (t) {
    case TraceEventType::kUser:
      return "user";
    case TraceEventType::kCall:
      return "call";
    case TraceEventType::kResult:
      return "result";
  }
  return "unknown";
}

Result<TraceConversation> ParseTraceLine(std::string_view line, const TraceLimits& limits) {
  if (line.size() > limits.max_line_bytes) {
    return Status::LimitExceeded("line of " + std::to_string(line.size()) + " bytes exceeds " +
                                 std::to_string(limits.max_line_bytes));
  }
  if (line.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return Status::InvalidArgument("empty line");
  }
  // The fast reader takes no line nested deeper than the limit (simdjson's
  // own depth limit), so the depth pass is only needed for the lines it
  // declines: their first error is the depth, as before.
  if (auto fast = trace_internal::ParseWithSimdjson(line, limits)) return std::move(*fast);
  if (JsonNestsDeeperThan(line, limits.max_depth)) {
    return Status::LimitExceeded("JSON nested deeper than " + std::to_string(limits.max_depth));
  }
  return trace_internal::ParseWithNlohmann(line, limits);
}

namespace trace_internal {

Result<TraceConversation> ParseWithNlohmann(std::string_view line, const TraceLimits& limits) {
  json doc;
  try {
    doc = json::parse(line.begin(), line.end());
  } catch (const json::exception& e) {
    // nlohmann's messages carry the byte offset: "syntax error while parsing ... at line 1, column
    // 17".
    return Status::InvalidArgument(std::string("invalid JSON: ") + e.what());
  }
  if (!doc.is_object()) return Status::InvalidArgument("a trace line must be a JSON object");
  TraceConversation c;
  auto conv = doc.find("conversation");
  if (conv == doc.end() || !conv->is_string() || conv->get_ref<const std::string&>().empty()) {
    return Status::InvalidArgument("\"conversation\" must be a non-empty string");
  }
  c.conversation = std::move(conv->get_ref<std::string&>());
  auto domain = doc.find("domain");
  if (domain != doc.end() && !domain->is_null()) {
    if (!domain->is_string()) return Status::InvalidArgument("\"domain\" must be a string");
    c.domain = std::move(domain->get_ref<std::string&>());
  }
  auto origin = doc.find("origin");
  if (origin != doc.end()) c.origin = std::move(*origin);
  auto events = doc.find("events");
  if (events == doc.end() || !events->is_array()) {
    return Status::InvalidArgument("\"events\" must be an array");
  }
  if (events->size() > limits.max_events) {
    return Status::LimitExceeded(std::to_string(events->size()) + " events exceed " +
                                 std::to_string(limits.max_events));
  }
  c.events.reserve(events->size());
  for (size_t i = 0; i < events->size(); ++i) {
    auto ev = ParseEvent((*events)[i], i);
    if (!ev) return ev.error();
    c.events.push_back(std::move(*ev));
  }
  return c;
}

}  // namespace trace_internal

std::string EncodeTraceLine(const TraceConversation& c) {
  json events = json::array();
  for (const TraceEvent& e : c.events) {
    json j = {{"type", TraceEventTypeName(e.type)}};
    switch (e.type) {
      case TraceEventType::kUser:
        j["text"] = e.text;
        break;
      case TraceEventType::kCall:
        j["id"] = e.id;
        j["tool"] = e.tool;
        j["arguments"] = e.arguments;
        j["writes"] = e.writes;
        if (e.expect) {
          j["expect"] = {{"decision", e.expect->decision}};
          if (!e.expect->rule.empty()) j["expect"]["rule"] = e.expect->rule;
        }
        break;
      case TraceEventType::kResult:
        j["id"] = e.id;
        j["output"] = e.output;
        j["error"] = e.error;
        break;
    }
    events.push_back(std::move(j));
  }
  json doc = {{"conversation", c.conversation}, {"events", std::move(events)}};
  if (!c.domain.empty()) doc["domain"] = c.domain;
  if (!c.origin.is_null()) doc["origin"] = c.origin;
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace taskledger
