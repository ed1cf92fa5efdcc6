// MCP tools/call over JSON-RPC 2.0, round-tripped through the neutral types,
// with the request and responses of the specification's Tools page.
#include "taskledger/adapters/mcp_messages.h"

#include <catch2/catch.hpp>

namespace taskledger {
namespace {

using nlohmann::json;

TEST_CASE("mcp: tools/call request and result round-trip", "[adapters][mcp]") {
  const json request = json::parse(R"json({
    "jsonrpc": "2.0", "id": 2, "method": "tools/call",
    "params": {"name": "get_weather", "arguments": {"location": "New York"}}
  })json");
  Result<mcp::ParsedRequest> parsed = mcp::ParseToolsCall(request);
  REQUIRE(parsed.has_value());
  CHECK(parsed->request_id == 2);
  REQUIRE(parsed->calls.calls.size() == 1);
  const ToolCall& call = parsed->calls.calls[0];
  CHECK(call == ToolCall{"2", "get_weather", {{"location", "New York"}}});
  CHECK(mcp::ProduceToolsCall(parsed->request_id, call) == request);

  const json response = json::parse(R"json({
    "jsonrpc": "2.0", "id": 2,
    "result": {
      "content": [{"type": "text",
                   "text": "Current weather in New York:\nTemperature: 72°F\nConditions: Partly cloudy"}],
      "isError": false
    }
  })json");
  Result<mcp::ParsedResponse> result = mcp::ParseToolsCallResult(response);
  REQUIRE(result.has_value());
  CHECK(result->result.call_id == "2");
  CHECK_FALSE(result->result.is_error);
  CHECK(mcp::ProduceToolsCallResult(result->request_id, result->result) == response);
}

TEST_CASE("mcp: string ids are echoed as strings", "[adapters][mcp]") {
  const json request = {{"jsonrpc", "2.0"},
                        {"id", "req-7"},
                        {"method", "tools/call"},
                        {"params", {{"name", "get_current_time"}}}};
  Result<mcp::ParsedRequest> parsed = mcp::ParseToolsCall(request);
  REQUIRE(parsed.has_value());
  REQUIRE(parsed->calls.calls.size() == 1);
  CHECK(parsed->calls.calls[0].id == "req-7");
  CHECK(parsed->calls.calls[0].arguments == json::object());  // absent arguments
  const json reply = mcp::ProduceToolsCallResult(parsed->request_id, {"req-7", "12:00", false});
  CHECK(reply["id"] == "req-7");
  CHECK(mcp::CallIdOf(json(17)) == "17");
}

TEST_CASE("mcp: tool execution errors and protocol errors read as error results",
          "[adapters][mcp]") {
  const json tool_error = json::parse(R"json({
    "jsonrpc": "2.0", "id": 4,
    "result": {
      "content": [{"type": "text",
                   "text": "Invalid departure date: must be in the future. Current date is 08/08/2025."}],
      "isError": true
    }
  })json");
  Result<mcp::ParsedResponse> r = mcp::ParseToolsCallResult(tool_error);
  REQUIRE(r.has_value());
  CHECK(r->result.is_error);
  CHECK(mcp::ProduceToolsCallResult(r->request_id, r->result) == tool_error);

  const json protocol_error = json::parse(R"json({
    "jsonrpc": "2.0", "id": 3,
    "error": {"code": -32602, "message": "Unknown tool: invalid_tool_name"}
  })json");
  Result<mcp::ParsedResponse> p = mcp::ParseToolsCallResult(protocol_error);
  REQUIRE(p.has_value());
  CHECK(p->result ==
        ToolResult{"3", "JSON-RPC error -32602: Unknown tool: invalid_tool_name", true});

  // Several content blocks, one of them not text.
  const json mixed = {
      {"jsonrpc", "2.0"},
      {"id", 5},
      {"result",
       {{"content",
         {{{"type", "text"}, {"text", "chart:"}},
          {{"type", "image"}, {"data", "iVBORw0KGgo="}, {"mimeType", "image/png"}}}}}}};
  Result<mcp::ParsedResponse> m = mcp::ParseToolsCallResult(mixed);
  REQUIRE(m.has_value());
  CHECK(m->result.content == "chart:\n[image content]");
  CHECK_FALSE(m->result.is_error);  // isError absent means success
}

TEST_CASE("mcp: non-object arguments become an isError result, not a call", "[adapters][mcp]") {
  for (const json& arguments : {json::array({"New York"}), json("New York"), json(nullptr)}) {
    const json request = {{"jsonrpc", "2.0"},
                          {"id", 9},
                          {"method", "tools/call"},
                          {"params", {{"name", "get_weather"}, {"arguments", arguments}}}};
    Result<mcp::ParsedRequest> parsed = mcp::ParseToolsCall(request);
    REQUIRE(parsed.has_value());
    CHECK(parsed->calls.calls.empty());
    REQUIRE(parsed->calls.errors.size() == 1);
    const CallError& e = parsed->calls.errors[0];
    CHECK(e.call_id == "9");
    CHECK_THAT(e.message, Catch::Contains("must be a JSON object"));
    const json reply = mcp::ProduceToolsCallResult(parsed->request_id, e.ToResult());
    CHECK(reply["id"] == 9);
    CHECK(reply["result"]["isError"] == true);
    CHECK_THAT(reply["result"]["content"][0]["text"].get<std::string>(),
               Catch::StartsWith("error: the call to get_weather was not executed"));
  }
}

TEST_CASE("mcp: malformed envelopes are rejected without throwing", "[adapters][mcp]") {
  const json ok_params = {{"name", "f"}, {"arguments", json::object()}};
  for (const json& bad : {
           json(nullptr),
           json{{"jsonrpc", "1.0"}, {"id", 1}, {"method", "tools/call"}, {"params", ok_params}},
           json{{"jsonrpc", "2.0"},
                {"id", nullptr},
                {"method", "tools/call"},
                {"params", ok_params}},
           json{{"jsonrpc", "2.0"}, {"id", 1.5}, {"method", "tools/call"}, {"params", ok_params}},
           json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}, {"params", ok_params}},
           json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"}, {"params", "f"}},
       }) {
    CHECK_FALSE(mcp::ParseToolsCall(bad).has_value());
  }
  CHECK_FALSE(mcp::ParseToolsCallResult({{"jsonrpc", "2.0"}, {"id", 1}}).has_value());
  CHECK_FALSE(
      mcp::ParseToolsCallResult({{"jsonrpc", "2.0"}, {"id", 1}, {"result", {{"content", "x"}}}})
          .has_value());
}

}  // namespace
}  // namespace taskledger
