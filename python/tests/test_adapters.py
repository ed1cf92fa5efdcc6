"""The message adapters on the dicts the official SDKs produce
(resp.model_dump(), with their None fields), and their round trip through a
Session: parse the calls, gate them, hand back the vendor's result shape."""

import pytest

import taskledger
from taskledger import anthropic, mcp, openai_chat, openai_responses
from conftest import subscription_tools

# The shape of openai.types.chat.ChatCompletion.model_dump().
CHAT_COMPLETION = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
    "choices": [{
        "index": 0, "finish_reason": "tool_calls", "logprobs": None,
        "message": {
            "role": "assistant", "content": None, "refusal": None, "audio": None,
            "function_call": None, "annotations": None,
            "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_subscription", "arguments": '{"user_id": "u1"}'}},
                {"id": "call_2", "type": "function",
                 "function": {"name": "cancel_subscription", "arguments": '{"user_id": '}},
            ]}}],
    "usage": None, "system_fingerprint": None, "service_tier": None,
}

# The shape of anthropic.types.Message.model_dump().
ANTHROPIC_MESSAGE = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
    "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 1,
                                                                 "output_tokens": 1},
    "content": [
        {"type": "text", "text": "Let me look.", "citations": None},
        {"type": "tool_use", "id": "toolu_1", "name": "get_subscription",
         "input": {"user_id": "u1"}},
    ],
}


def test_openai_chat_parse_gate_and_answer(subscription_pack):
    parsed = openai_chat.parse_calls(CHAT_COMPLETION)
    assert [(c.id, c.name, c.arguments) for c in parsed.calls] == [
        ("call_1", "get_subscription", {"user_id": "u1"})]
    assert [e.call_id for e in parsed.errors] == ["call_2"]
    assert "not valid JSON" in parsed.errors[0].message
    s = taskledger.Session.open(taskledger.MemoryStore(), conversation="c", pack=subscription_pack)
    results = [s.handle_tool_call(c.id, c.tool, c.arguments, subscription_tools)
               for c in parsed.calls]
    results += [e.to_result() for e in parsed.errors]
    messages = openai_chat.produce_results(results)
    assert [m["role"] for m in messages] == ["tool", "tool"]
    assert messages[0]["tool_call_id"] == "call_1"
    assert "grace_period" in messages[0]["content"]
    assert messages[1]["tool_call_id"] == "call_2" and "JSON" in messages[1]["content"]
    assert openai_chat.parse_results(messages)[0].call_id == "call_1"


def test_openai_chat_without_tool_calls():
    msg = {"role": "assistant", "content": "Hello", "tool_calls": None}
    assert not openai_chat.parse_calls(msg)


def test_openai_responses():
    response = {"id": "resp_1", "object": "response", "output": [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "verify_identity",
         "arguments": '{"user_id": "u1"}', "status": "completed"}]}
    parsed = openai_responses.parse_calls(response)
    assert [(c.id, c.tool) for c in parsed.calls] == [("call_9", "verify_identity")]
    items = openai_responses.produce_results([taskledger.ToolResult("call_9", "ok")])
    assert items == [{"type": "function_call_output", "call_id": "call_9", "output": "ok"}]


def test_anthropic_parse_gate_and_answer(subscription_pack):
    parsed = anthropic.parse_calls(ANTHROPIC_MESSAGE)
    assert [(c.id, c.name) for c in parsed.calls] == [("toolu_1", "get_subscription")]
    # One call type: what an adapter parses is what the gate checks.
    assert all(isinstance(c, taskledger.Call) and c.tool == c.name for c in parsed.calls)
    assert taskledger.Call is taskledger.ToolCall
    s = taskledger.Session.open(taskledger.MemoryStore(), conversation="c", pack=subscription_pack)
    blocked = s.handle_tool_call("toolu_2", "cancel_subscription", {}, subscription_tools)
    msg = anthropic.produce_results([blocked])
    assert msg["role"] == "user"
    block = msg["content"][0]
    assert block["type"] == "tool_result" and block["tool_use_id"] == "toolu_2"
    assert block["is_error"] is True and "verify_identity" in block["content"]
    calls = anthropic.produce_calls(parsed.calls)
    assert calls["content"][0]["input"] == {"user_id": "u1"}


def test_mcp_tools_call():
    request = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "get_subscription", "arguments": {"user_id": "u1"}}}
    rid, parsed = mcp.parse_tools_call(request)
    assert rid == 7 and parsed.calls[0].id == "7" and parsed.calls[0].name == "get_subscription"
    rid, parsed = mcp.parse_tools_call({"name": "verify_identity"}, request_id="r1")
    assert rid == "r1" and parsed.calls[0].arguments == {}
    response = mcp.produce_tools_call_result(7, taskledger.ToolResult("7", "done", True))
    assert response["id"] == 7 and response["result"]["isError"] is True
    rid, result = mcp.parse_tools_call_result(response)
    assert rid == 7 and result.content == "done" and result.is_error


def test_malformed_messages():
    with pytest.raises(taskledger.InvalidArgument):
        openai_chat.parse_calls({"role": "assistant", "tool_calls": [{"type": "function"}]})
    with pytest.raises(taskledger.InvalidArgument):
        mcp.parse_tools_call({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    with pytest.raises(taskledger.InvalidArgument, match="not JSON"):
        anthropic.parse_calls({"content": [{"type": "tool_use", "input": {1, 2}}]})
    with pytest.raises(taskledger.InvalidArgument, match="ToolResult or a CallResult"):
        openai_chat.produce_results(["text"])
