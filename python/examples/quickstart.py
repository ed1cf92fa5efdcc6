"""The README's 30-second Python example, run by the tests so it cannot rot:
a subscription agent's cancellation is blocked (identity not verified) and
the model gets the reason; then the task state is rendered. Single-threaded.

    python quickstart.py [RULES_DIR]
"""

import pathlib
import sys

import taskledger

rules = sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2] / "rules/subscription"
pack = taskledger.RulePack.load(str(rules))       # Lua rules + extraction
store = taskledger.MemoryStore()                  # or taskledger.open_store("redis://...")
session = taskledger.Session.open(store, conversation="conv-1", pack=pack)


def tools(call):  # your tools; taskledger runs one only if the policy allows the call
    if call.tool == "get_subscription":
        return {"status": "grace_period", "days_remaining": 5}
    return {"ok": True}


session.handle_tool_call("c1", "get_subscription", {"user_id": "u1"}, tools)
r = session.handle_tool_call("c2", "cancel_subscription", {"user_id": "u1"}, tools)
print("executed" if r.executed else "blocked", r.decision.rule, "-", r.message)
session.end_turn()                                # version 1, durable
print(session.render())
