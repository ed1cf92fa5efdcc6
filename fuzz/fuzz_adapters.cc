// Fuzz target: provider message parsing. The input is parsed as JSON (bytes
// that are not JSON are rejected by nlohmann before any adapter sees them,
// as in a real client) and handed to every parser of every adapter: OpenAI
// Chat Completions, OpenAI Responses, Anthropic Messages and MCP tools/call.
// Properties: nothing throws or crashes; every accepted call has object
// arguments no deeper than kMaxArgumentDepth; what an adapter parsed, it
// produces again in a form that parses back to the same calls and results.
#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "taskledger/adapters/anthropic.h"
#include "taskledger/adapters/mcp_messages.h"
#include "taskledger/adapters/openai_chat.h"
#include "taskledger/adapters/openai_responses.h"

namespace taskledger::fuzz {
namespace {

int Depth(const nlohmann::json& j) {
  int deepest = 0;
  if (j.is_structured()) {
    for (const auto& child : j) deepest = std::max(deepest, Depth(child));
    return deepest + 1;
  }
  return 0;
}

std::string Show(const nlohmann::json& j) {
  return j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace).substr(0, 400);
}

void CheckCalls(const ParsedCalls& parsed) {
  for (const ToolCall& c : parsed.calls) {
    TL_FUZZ_CHECK(c.arguments.is_object(),
                  "call arguments are not an object: " + Show(c.arguments));
    TL_FUZZ_CHECK(Depth(c.arguments) <= kMaxArgumentDepth,
                  "arguments deeper than kMaxArgumentDepth");
    TL_FUZZ_CHECK(!c.tool.empty(), "an accepted call without a tool name");
  }
  for (const CallError& e : parsed.errors) {
    const ToolResult r = e.ToResult();
    TL_FUZZ_CHECK(r.is_error && r.call_id == e.call_id, "CallError::ToResult lost the call");
  }
}

// Parse(Produce(calls)) == calls, for adapters whose Parse/Produce are inverse.
template <class Parse, class Produce>
void CheckCallRoundTrip(const ParsedCalls& parsed, Parse parse, Produce produce, const char* who) {
  if (parsed.calls.empty()) return;
  const nlohmann::json produced = produce(parsed.calls);
  auto again = parse(produced);
  TL_FUZZ_CHECK(again.has_value(), std::string(who) + ": produced calls do not parse: " +
                                       again.status().ToString() + " " + Show(produced));
  TL_FUZZ_CHECK(again.value().errors.empty(),
                std::string(who) + ": produced calls parse with errors");
  TL_FUZZ_CHECK(again.value().calls == parsed.calls,
                std::string(who) + ": calls changed: " + Show(produced));
}

// Results compared on what the wire format carries (`with_error_flag`).
template <class Parse, class Produce>
void CheckResultRoundTrip(const std::vector<ToolResult>& results, Parse parse, Produce produce,
                          bool with_error_flag, const char* who) {
  if (results.empty()) return;
  const nlohmann::json produced = produce(results);
  auto again = parse(produced);
  TL_FUZZ_CHECK(again.has_value(),
                std::string(who) + ": produced results do not parse: " + again.status().ToString());
  TL_FUZZ_CHECK(again.value().size() == results.size(),
                std::string(who) + ": result count changed");
  for (size_t i = 0; i < results.size(); ++i) {
    const ToolResult& a = results[i];
    const ToolResult& b = again.value()[i];
    TL_FUZZ_CHECK(a.call_id == b.call_id && a.content == b.content &&
                      (!with_error_flag || a.is_error == b.is_error),
                  std::string(who) + ": result changed: " + Show(produced));
  }
}

void FuzzJson(const nlohmann::json& j) {
  if (auto p = openai_chat::ParseCalls(j); p.has_value()) {
    CheckCalls(p.value());
    CheckCallRoundTrip(p.value(), openai_chat::ParseCalls, openai_chat::ProduceCalls,
                       "openai_chat");
  }
  if (auto p = openai_responses::ParseCalls(j); p.has_value()) {
    CheckCalls(p.value());
    CheckCallRoundTrip(p.value(), openai_responses::ParseCalls, openai_responses::ProduceCalls,
                       "openai_responses");
  }
  if (auto p = anthropic::ParseCalls(j); p.has_value()) {
    CheckCalls(p.value());
    CheckCallRoundTrip(p.value(), anthropic::ParseCalls, anthropic::ProduceCalls, "anthropic");
  }
  if (auto r = openai_chat::ParseResults(j); r.has_value()) {
    CheckResultRoundTrip(r.value(), openai_chat::ParseResults, openai_chat::ProduceResults, false,
                         "openai_chat results");
  }
  if (auto r = openai_responses::ParseResults(j); r.has_value()) {
    CheckResultRoundTrip(r.value(), openai_responses::ParseResults,
                         openai_responses::ProduceResults, false, "openai_responses results");
  }
  if (auto r = anthropic::ParseResults(j); r.has_value()) {
    CheckResultRoundTrip(r.value(), anthropic::ParseResults, anthropic::ProduceResults, true,
                         "anthropic results");
  }
  if (auto req = mcp::ParseToolsCall(j); req.has_value()) {
    const mcp::ParsedRequest& p = req.value();
    CheckCalls(p.calls);
    TL_FUZZ_CHECK(p.calls.calls.size() + p.calls.errors.size() == 1, "mcp: not exactly one call");
    for (const ToolCall& c : p.calls.calls) {
      TL_FUZZ_CHECK(c.id == mcp::CallIdOf(p.request_id), "mcp: call id is not the request id");
      auto again = mcp::ParseToolsCall(mcp::ProduceToolsCall(p.request_id, c));
      TL_FUZZ_CHECK(again.has_value() && again.value().request_id == p.request_id &&
                        again.value().calls.calls.size() == 1 && again.value().calls.calls[0] == c,
                    "mcp: tools/call changed through a round trip");
    }
  }
  if (auto resp = mcp::ParseToolsCallResult(j); resp.has_value()) {
    const mcp::ParsedResponse& p = resp.value();
    auto again = mcp::ParseToolsCallResult(mcp::ProduceToolsCallResult(p.request_id, p.result));
    TL_FUZZ_CHECK(again.has_value() && again.value().request_id == p.request_id &&
                      again.value().result.content == p.result.content &&
                      again.value().result.is_error == p.result.is_error,
                  "mcp: result changed through a round trip");
  }
}

}  // namespace
}  // namespace taskledger::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace taskledger::fuzz;
  const nlohmann::json j = nlohmann::json::parse(AsView(data, size), nullptr, false);
  if (j.is_discarded()) return 0;
  FuzzJson(j);
  // The same document as one message of a conversation array, and wrapped
  // as a chat completion's first choice, which the parsers also accept.
  FuzzJson(nlohmann::json::array({j}));
  FuzzJson({{"choices", nlohmann::json::array({{{"message", j}}})}});
  return 0;
}
