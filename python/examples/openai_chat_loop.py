"""An agent loop in the shape of the OpenAI Chat Completions tool-calling
loop, driven by recorded model responses (no network, no openai package):
each response is the dict `client.chat.completions.create(...).model_dump()`
returns. The gate blocks the model's first downgrade (identity not
verified), the model reads the reason in the tool message, verifies the
identity, and the retried downgrade goes through.

    python openai_chat_loop.py [--store URL] [--conversation ID] [--rules DIR]

Prints each call's fate and the final task state; exits 1 if the loop did
not go as described. Single-threaded.
"""

import argparse
import json
import pathlib
import sys

import taskledger
from taskledger import openai_chat

RULES = pathlib.Path(__file__).resolve().parents[2] / "rules" / "subscription"


def completion(*calls, content=None):
    """A recorded ChatCompletion.model_dump(): tool calls or a final answer."""
    tool_calls = [{"id": cid, "type": "function",
                   "function": {"name": name, "arguments": json.dumps(args)}}
                  for cid, name, args in calls] or None
    return {"id": "chatcmpl-rec", "object": "chat.completion", "model": "gpt-4o",
            "choices": [{"index": 0, "finish_reason": "tool_calls" if calls else "stop",
                         "message": {"role": "assistant", "content": content, "refusal": None,
                                     "function_call": None, "tool_calls": tool_calls}}]}


RECORDED = [
    completion(("call_1", "get_subscription", {"user_id": "u1"})),
    completion(("call_2", "downgrade_subscription", {"user_id": "u1", "plan": "basic"})),
    completion(("call_3", "verify_identity", {"user_id": "u1", "last_four": "4242"})),
    completion(("call_4", "downgrade_subscription", {"user_id": "u1", "plan": "basic"})),
    completion(content="You are on the basic plan now."),
]


class RecordedModel:
    """Stands in for client.chat.completions: returns the next recorded response."""

    def __init__(self, responses):
        self.responses = list(responses)

    def create(self, *, model, messages, tools=None):
        return self.responses.pop(0)


def run_tool(call):
    """The real tools of this agent; taskledger runs one only if the gate allows it."""
    if call.tool == "get_subscription":
        return {"status": "active", "plan": "pro"}
    if call.tool == "verify_identity":
        return {"verified": True}
    if call.tool == "downgrade_subscription":
        return {"plan": call.arguments["plan"]}
    raise ValueError(f"no tool {call.tool}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", default="memory")
    ap.add_argument("--conversation", default="openai-chat-1")
    ap.add_argument("--rules", default=str(RULES))
    args = ap.parse_args()

    pack = taskledger.RulePack.load(args.rules)
    store = taskledger.open_store(args.store)
    session = taskledger.Session.open(store, tenant="examples", conversation=args.conversation,
                                      pack=pack)
    model = RecordedModel(RECORDED)
    user = "Please move me to the basic plan."
    session.record_user_message(user)
    messages = [{"role": "user", "content": user}]
    fates = []
    while True:
        # The task state goes into the system prompt on every model call.
        system = {"role": "system", "content": session.render(format="markdown")}
        response = model.create(model="gpt-4o", messages=[system] + messages)
        message = response["choices"][0]["message"]
        messages.append(message)
        parsed = openai_chat.parse_calls(response)
        if not parsed:
            break
        results = [session.handle_tool_call(c.id, c.tool, c.arguments, run_tool)
                   for c in parsed.calls]
        for r in results:
            fate = "executed" if r.executed else f"blocked by {r.decision.rule}"
            fates.append((r.tool, r.executed))
            print(f"{r.call_id} {r.tool}: {fate}")
            if not r.executed:
                print(f"  the model is told: {r.message}")
        messages += openai_chat.produce_results(results + [e.to_result() for e in parsed.errors])
    version = session.end_turn()
    print(f"final answer: {messages[-1]['content']}")
    print(f"committed version {version}")
    print(session.render(state="head"))

    blocked_msg = next(m for m in messages if m.get("tool_call_id") == "call_2")
    ok = (fates == [("get_subscription", True), ("downgrade_subscription", False),
                    ("verify_identity", True), ("downgrade_subscription", True)]
          and "verify_identity" in blocked_msg["content"])
    print("loop complete: blocked once, then allowed" if ok else "UNEXPECTED loop")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
