// Bindings of the message adapters: taskledger.openai_chat,
// taskledger.openai_responses, taskledger.anthropic and taskledger.mcp, each
// turning the dict an official SDK produces (resp.model_dump()) into
// ToolCall objects and CallErrors, and tool results back into the vendor's
// message shape. Pure functions over values; any thread (GIL held, they are
// short).
#include <utility>

#include <pybind11/stl.h>

#include "convert.h"
#include "objects.h"
#include "taskledger/adapters/anthropic.h"
#include "taskledger/adapters/mcp_messages.h"
#include "taskledger/adapters/openai_chat.h"
#include "taskledger/adapters/openai_responses.h"

namespace taskledger::py {
namespace {

namespace py = pybind11;
using namespace py::literals;

// Messages from the SDKs nest modestly; this bounds a hostile one.
constexpr int kMaxMessageDepth = kMaxArgumentDepth + 16;

nlohmann::json Message(py::handle m) { return ToJson(m, "message", kMaxMessageDepth); }

// A ToolResult from a ToolResult, or anything with call_id and message /
// content and is_error (a taskledger.CallResult).
ToolResult ResultOf(py::handle item) {
  if (py::isinstance<ToolResult>(item)) return item.cast<ToolResult>();
  if (!py::hasattr(item, "call_id")) {
    RaiseInvalid("each result must be a ToolResult or a CallResult, not " +
                 std::string(Py_TYPE(item.ptr())->tp_name));
  }
  ToolResult r;
  r.call_id = Text(item.attr("call_id"), "call_id");
  r.content =
      Text(py::hasattr(item, "content") ? item.attr("content") : item.attr("message"), "content");
  r.is_error = py::hasattr(item, "is_error") && item.attr("is_error").cast<bool>();
  return r;
}

std::vector<ToolResult> ResultsOf(py::iterable items) {
  std::vector<ToolResult> out;
  for (py::handle item : items) out.push_back(ResultOf(item));
  return out;
}

std::vector<ToolCall> CallsOf(py::iterable items) {
  std::vector<ToolCall> out;
  for (py::handle item : items) out.push_back(item.cast<ToolCall>());
  return out;
}

template <class ParseCalls, class ProduceCalls, class ParseResults, class ProduceResults>
void AddVendor(py::module_& parent, const char* name, const char* doc, ParseCalls parse_calls,
               ProduceCalls produce_calls, ParseResults parse_results,
               ProduceResults produce_results) {
  py::module_ sub = parent.def_submodule(name, doc);
  sub.def(
      "parse_calls",
      [parse_calls](py::handle message) { return Unwrap(parse_calls(Message(message))); },
      "message"_a,
      "The tool calls of a model message or response (a dict, e.g. resp.model_dump()). "
      "Calls whose arguments cannot be used come back in .errors, never in .calls.");
  sub.def(
      "produce_calls",
      [produce_calls](py::iterable calls) { return FromJson(produce_calls(CallsOf(calls))); },
      "calls"_a);
  sub.def(
      "parse_results",
      [parse_results](py::handle messages) { return Unwrap(parse_results(Message(messages))); },
      "messages"_a);
  sub.def(
      "produce_results",
      [produce_results](py::iterable results) {
        return FromJson(produce_results(ResultsOf(results)));
      },
      "results"_a,
      "The vendor's tool-result message(s) for ToolResults or CallResults (their .message).");
}

}  // namespace

void RegisterAdapters(py::module_& m) {
  py::class_<ToolResult>(m, "ToolResult", "A tool result to send back to the model.")
      .def(py::init([](py::handle call_id, py::handle content, bool is_error) {
             return ToolResult{Text(call_id, "call_id"), Text(content, "content"), is_error};
           }),
           "call_id"_a, "content"_a, "is_error"_a = false)
      .def_readonly("call_id", &ToolResult::call_id)
      .def_readonly("content", &ToolResult::content)
      .def_readonly("is_error", &ToolResult::is_error);

  py::class_<CallError>(m, "CallError", "A call that must not run: its arguments are unusable.")
      .def_readonly("call_id", &CallError::call_id)
      .def_readonly("name", &CallError::name)
      .def_readonly("raw_arguments", &CallError::raw_arguments)
      .def_readonly("message", &CallError::message)
      .def("to_result", &CallError::ToResult,
           "The is_error ToolResult to send back in the call's place.");

  py::class_<ParsedCalls>(m, "ParsedCalls",
                          "Calls to gate and run, and calls refused as malformed.")
      .def_readonly("calls", &ParsedCalls::calls)
      .def_readonly("errors", &ParsedCalls::errors)
      .def("__bool__", [](const ParsedCalls& p) { return !p.empty(); })
      .def("__len__", [](const ParsedCalls& p) { return p.calls.size() + p.errors.size(); });

  AddVendor(m, "openai_chat", "OpenAI Chat Completions tool calling.", openai_chat::ParseCalls,
            openai_chat::ProduceCalls, openai_chat::ParseResults, openai_chat::ProduceResults);
  AddVendor(m, "openai_responses", "OpenAI Responses API tool calling.",
            openai_responses::ParseCalls, openai_responses::ProduceCalls,
            openai_responses::ParseResults, openai_responses::ProduceResults);
  AddVendor(m, "anthropic", "Anthropic Messages API tool use.", anthropic::ParseCalls,
            anthropic::ProduceCalls, anthropic::ParseResults, anthropic::ProduceResults);

  py::module_ mcp = m.def_submodule("mcp", "Model Context Protocol tools/call (JSON-RPC 2.0).");
  mcp.def(
      "parse_tools_call",
      [](py::handle request, py::handle request_id) {
        nlohmann::json r = Message(request);
        // Bare params ({"name", "arguments"}) get the JSON-RPC envelope.
        if (r.is_object() && !r.contains("method")) {
          r = {{"jsonrpc", "2.0"},
               {"id", request_id.is_none() ? nlohmann::json(0) : ToJson(request_id, "request_id")},
               {"method", "tools/call"},
               {"params", r}};
        }
        mcp::ParsedRequest p = Unwrap(mcp::ParseToolsCall(r));
        return py::make_tuple(FromJson(p.request_id), py::cast(p.calls));
      },
      "request"_a, "request_id"_a = py::none(),
      "(request_id, ParsedCalls) of a tools/call request, or of its params alone.");
  mcp.def(
      "produce_tools_call_result",
      [](py::handle request_id, py::handle result) {
        return FromJson(
            mcp::ProduceToolsCallResult(ToJson(request_id, "request_id"), ResultOf(result)));
      },
      "request_id"_a, "result"_a);
  mcp.def(
      "parse_tools_call_result",
      [](py::handle response) {
        mcp::ParsedResponse p = Unwrap(mcp::ParseToolsCallResult(Message(response)));
        return py::make_tuple(FromJson(p.request_id), p.result);
      },
      "response"_a);
}

}  // namespace taskledger::py
