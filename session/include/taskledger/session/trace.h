// The trace format (docs/trace-format.md): one recorded conversation per JSON
// line, a sequence of user messages, proposed tool calls and tool results.
//
// ParseTraceLine is the one entry point from untrusted bytes to these types and
// is a fuzz target: it bounds the line size, the JSON nesting depth and the
// number of events before building anything, reports every problem as
// InvalidArgument / LimitExceeded with the offending field, and never throws.
// Plain value types and pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/base/json_depth.h"
#include "taskledger/base/status.h"

namespace taskledger {

enum class TraceEventType { kUser, kCall, kResult };
std::string_view TraceEventTypeName(TraceEventType t);  // "user", "call", "result"

// The decision a correct gate makes for a call, when the trace labels it.
struct TraceExpectation {
  std::string decision;  // "allow", "deny", "require_approval" or "confirm"
  std::string rule;      // the deciding rule for a deny; may be empty
};

struct TraceEvent {
  TraceEventType type = TraceEventType::kUser;
  std::string text;                                     // user
  std::string id;                                       // call, result
  std::string tool;                                     // call
  nlohmann::json arguments = nlohmann::json::object();  // call
  bool writes = false;                                  // call
  std::optional<TraceExpectation> expect;               // call
  nlohmann::json output;                                // result: JSON or the raw string
  bool error = false;                                   // result: the tool refused
};

struct TraceConversation {
  std::string conversation;
  std::string domain;
  nlohmann::json origin;  // never shown to the gate
  std::vector<TraceEvent> events;
};

struct TraceLimits {
  size_t max_line_bytes = 16u << 20;
  int max_depth = kDefaultMaxJsonDepth;
  size_t max_events = 100'000;
};

// Parses one trace line. A blank line is InvalidArgument ("empty line"); the
// caller decides whether to skip it.
Result<TraceConversation> ParseTraceLine(std::string_view line, const TraceLimits& limits = {});

// Serialises a conversation back to one trace line (no trailing newline);
// ParseTraceLine(EncodeTraceLine(c)) reproduces c.
std::string EncodeTraceLine(const TraceConversation& c);

}  // namespace taskledger
