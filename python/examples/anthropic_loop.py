"""The same agent loop in the shape of the Anthropic Messages API
tool-use loop, driven by recorded responses (no network, no anthropic
package): each is the dict `client.messages.create(...).model_dump()`
returns. The gate blocks the cancellation during the grace period, the
model reads the reason in the tool_result block, and offers and makes the
downgrade instead.

    python anthropic_loop.py [--store URL] [--conversation ID] [--rules DIR]

Prints each call's fate and the final task state; exits 1 if the loop did
not go as described. Single-threaded.
"""

import argparse
import pathlib
import sys

import taskledger
from taskledger import anthropic

RULES = pathlib.Path(__file__).resolve().parents[2] / "rules" / "subscription"


def message(*calls, text=None):
    """A recorded Message.model_dump(): text and tool_use blocks."""
    content = [{"type": "text", "text": text, "citations": None}] if text else []
    content += [{"type": "tool_use", "id": cid, "name": name, "input": args}
                for cid, name, args in calls]
    return {"id": "msg_rec", "type": "message", "role": "assistant", "model": "claude",
            "content": content, "stop_reason": "tool_use" if calls else "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}}


RECORDED = [
    message(("toolu_1", "verify_identity", {"user_id": "u1"}),
            ("toolu_2", "get_subscription", {"user_id": "u1"}), text="Let me check."),
    message(("toolu_3", "cancel_subscription", {"user_id": "u1"})),
    message(("toolu_4", "downgrade_subscription", {"user_id": "u1", "plan": "basic"}),
            text="It is in its grace period, so I will downgrade it instead."),
    message(text="Done: you are on the basic plan."),
]


def run_tool(call):
    if call.tool == "get_subscription":
        return {"status": "grace_period", "days_remaining": 5}
    if call.tool == "verify_identity":
        return "verified"
    if call.tool in ("cancel_subscription", "downgrade_subscription"):
        return {"ok": True}
    raise ValueError(f"no tool {call.tool}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", default="memory")
    ap.add_argument("--conversation", default="anthropic-1")
    ap.add_argument("--rules", default=str(RULES))
    args = ap.parse_args()

    pack = taskledger.RulePack.load(args.rules)
    session = taskledger.Session.open(taskledger.open_store(args.store), tenant="examples",
                                      conversation=args.conversation, pack=pack)
    recorded = list(RECORDED)
    messages = [{"role": "user", "content": "Cancel my subscription, please."}]
    session.record_user_message(messages[0]["content"])
    fates = []
    while True:
        system = session.render(format="xml")  # the `system` parameter of messages.create
        assert system.startswith("<task_state")
        response = recorded.pop(0)
        messages.append({"role": "assistant", "content": response["content"]})
        parsed = anthropic.parse_calls(response)
        if not parsed:
            break
        results = [session.handle_tool_call(c.id, c.tool, c.arguments, run_tool)
                   for c in parsed.calls]
        for r in results:
            fates.append((r.tool, r.executed))
            print(f"{r.call_id} {r.tool}: " +
                  ("executed" if r.executed else f"blocked by {r.decision.rule}"))
            if not r.executed:
                print(f"  the model is told: {r.message}")
        messages.append(anthropic.produce_results(results + [e.to_result() for e in parsed.errors]))
    print(f"committed version {session.end_turn()}")
    print(session.render(state="head"))

    told = messages[4]["content"][0]
    ok = (fates == [("verify_identity", True), ("get_subscription", True),
                    ("cancel_subscription", False), ("downgrade_subscription", True)]
          and told["is_error"] and "grace period" in told["content"])
    print("loop complete: blocked once, then allowed" if ok else "UNEXPECTED loop")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
