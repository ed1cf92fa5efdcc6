// Shared checks of the message adapters: field access that never throws,
// argument validation, and the per-call error bookkeeping. Stateless
// functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "taskledger/adapters/tool_call.h"
#include "taskledger/base/status.h"

namespace taskledger::adapters_internal {

// The member `name` of `obj` if `obj` is an object holding a string there.
const std::string* StringField(const nlohmann::json& obj, std::string_view name);

// The member `name` of `obj` if `obj` is an object that has it.
const nlohmann::json* Field(const nlohmann::json& obj, std::string_view name);

// Compact JSON text that never throws (invalid UTF-8 becomes U+FFFD).
std::string Dump(const nlohmann::json& v);

// Arguments received as a JSON string (OpenAI). An empty string means no
// arguments ({}), as OpenAI sends for parameterless functions.
Result<nlohmann::json> ArgumentsFromText(std::string_view text);

// Arguments received as a JSON value (Anthropic, MCP): must be an object no
// deeper than kMaxArgumentDepth.
Status CheckArguments(const nlohmann::json& arguments);

// Appends a call, or a CallError when `arguments` failed or `name` is empty.
void AddCall(ParsedCalls& out, std::string id, std::string name, Result<nlohmann::json> arguments,
             std::string raw_arguments);

// InvalidArgument if two calls or errors share an id: results could not be
// told apart.
Status CheckUniqueIds(const ParsedCalls& parsed);

// Text of a result given as a string or as an array of content blocks: the
// text blocks ("text", "input_text", "output_text") joined by newlines, other
// blocks shown as "[<type> content]". InvalidArgument for anything else.
Result<std::string> ContentText(const nlohmann::json& content, std::string_view where);

// Runs `fn`, turning any exception into an Internal status: adapters must not
// let one cross the public API.
template <class T, class Fn>
Result<T> Guarded(std::string_view what, Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return Status::Internal(std::string(what) + ": " + e.what());
  }
}

}  // namespace taskledger::adapters_internal
