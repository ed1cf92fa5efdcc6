"""Session, RulePack, stores, decisions, rendering and the ledger view,
each test against the memory store and a real redis-server (conftest.py)."""

import threading

import pytest

import taskledger
from conftest import subscription_tools


def open_session(store, tenant, pack, conversation="conv-1", **kw):
    return taskledger.Session.open(store, tenant=tenant, conversation=conversation, pack=pack, **kw)


def test_quickstart_blocks_then_renders(store, tenant, subscription_pack):
    s = open_session(store, tenant, subscription_pack)
    r1 = s.handle_tool_call("c1", "get_subscription", {"user_id": "u1"}, subscription_tools)
    assert r1.executed and r1.decision.allowed and r1.decision.read_only
    assert r1.output == {"status": "grace_period", "days_remaining": 5}
    r2 = s.handle_tool_call("c2", "cancel_subscription", {"user_id": "u1"}, subscription_tools)
    assert not r2.executed and r2.output is None
    assert not r2.decision.allowed and not r2.decision
    assert r2.decision.outcome == "deny"
    assert r2.decision.rule == "subscription.identity_verified"
    assert "verify_identity" in r2.decision.reason
    assert r2.is_error
    assert "cancel_subscription" in r2.message and "verify_identity" in r2.message
    assert r2.message == r2.decision.denial_message(r2.call, subscription_pack.denial_hint)
    assert r2.message == r2.decision.denial_message(r2.call)  # the pack keeps the default hint
    assert r2.message.endswith("do not repeat the same call unchanged.")
    # The first deny decides; the rules after it do not run.
    assert [e.rule for e in r2.decision.rules] == ["subscription.identity_verified"]
    assert all(e.outcome == "deny" and not e.error for e in r2.decision.rules)
    assert r2.record["decision"] == "deny" and r2.record["call_id"] == "c2"
    assert s.end_turn() == 1
    text = s.render()
    assert text.startswith("Current Task State:")
    assert "- subscription_status: grace_period" in text
    assert "- grace_period_days: 5" in text


def test_verified_identity_lets_the_downgrade_through(store, tenant, subscription_pack):
    s = open_session(store, tenant, subscription_pack)
    s.handle_tool_call("c1", "get_subscription", {}, subscription_tools)
    s.handle_tool_call("c2", "verify_identity", {"user_id": "u1"}, subscription_tools)
    ran = []
    r = s.handle_tool_call("c3", "downgrade_subscription", {"plan": "basic"},
                           lambda call: ran.append(call.arguments) or "downgraded")
    assert r.executed and r.decision.allowed and r.message == "downgraded"
    assert ran == [{"plan": "basic"}]
    # The grace period still blocks the cancellation, by the second rule.
    r = s.handle_tool_call("c4", "cancel_subscription", {}, subscription_tools)
    assert not r.executed and r.decision.rule == "subscription.no_cancel_in_grace_period"
    v = s.end_turn()
    assert v >= 2  # the write-ahead commit before the downgrade, then the end of the turn
    assert s.ledger.version == v


def test_render_formats_and_budget(store, tenant, subscription_pack):
    s = open_session(store, tenant, subscription_pack)
    s.handle_tool_call("c1", "get_subscription", {}, subscription_tools)
    assert s.render(format="markdown").startswith("## Current Task State")
    assert s.render(format="xml").startswith("<task_state version=\"0\">")
    import json
    block = json.loads(s.render(format="json"))
    assert block["task_state"]["facts"]["subscription_status"] == "grace_period"
    assert len(s.render()) == 98
    small = s.render(max_chars=93)  # facts go first
    assert len(small) <= 93
    assert "(1 older fact omitted)" in small and "- grace_period_days: 5" in small
    with pytest.raises(taskledger.InvalidArgument, match="unknown format"):
        s.render(format="yaml")
    with pytest.raises(taskledger.LimitExceeded):
        s.render(max_chars=3)
    # The head has nothing until the turn is committed.
    assert "subscription_status" not in s.render(state="head")


def test_ledger_versions_entries_diff_and_turns(store, tenant, subscription_pack):
    s = open_session(store, tenant, subscription_pack)
    s.handle_tool_call("c1", "get_subscription", {}, subscription_tools)
    assert s.ledger.version == 0 and s.ledger.turn == 1
    assert s.ledger.working.facts == {"subscription_status": "grace_period"}
    assert s.ledger.head.facts == {}
    assert s.end_turn() == 1
    s.handle_tool_call("c2", "verify_identity", {}, subscription_tools)
    assert s.end_turn() == 2
    head = s.ledger.head
    assert head.version == 2
    e = head.get("condition", "identity_verified")
    assert e.value is True and e.verified and e.source == "tool"
    assert e.source_id == "verify_identity#c2" and e.turn == 2
    assert e.rule_id == "identity.verified"
    assert e.pack_version == subscription_pack.version
    assert {x.key for x in head.entries("fact")} == {"subscription_status"}
    assert [c["call_id"] for c in head.calls] == ["c1", "c2"]
    assert s.ledger.at(1).conditions == {}
    diff = s.ledger.diff(1, 2)
    assert [c["key"] for c in diff["added"]] == ["identity_verified"]
    turns = s.ledger.turns()
    assert [t.turn for t in turns] == [1, 2]
    assert turns[0].decisions[0]["tool"] == "get_subscription"
    with pytest.raises(taskledger.NotFound):
        s.ledger.at(3)
    # The same history through the store alone (what an auditor reads).
    assert store.head(tenant, "conv-1") == 2
    assert [t.turn for t in store.read_turns(tenant, "conv-1")] == [1, 2]
    assert store.read_version(tenant, "conv-1", 2).conditions == {"identity_verified": True}
    assert store.list_conversations(tenant) == ["conv-1"]


def test_reopened_session_continues_and_conflict_rebases(store, tenant, subscription_pack):
    a = open_session(store, tenant, subscription_pack)
    b = open_session(store, tenant, subscription_pack)
    a.handle_tool_call("c1", "get_subscription", {}, subscription_tools)
    assert a.end_turn() == 1
    b.handle_tool_call("c2", "verify_identity", {}, subscription_tools)
    with pytest.raises(taskledger.Conflict) as err:
        b.end_turn()
    assert err.value.code == "conflict" and isinstance(err.value, taskledger.Error)
    b.rebase()
    assert b.end_turn() == 2
    c = open_session(store, tenant, subscription_pack)
    assert c.ledger.version == 2
    assert c.ledger.head.facts == {"subscription_status": "grace_period"}
    assert c.ledger.head.conditions == {"identity_verified": True}


def test_authorize_then_record_for_loops_that_run_tools(store, tenant, subscription_pack):
    s = open_session(store, tenant, subscription_pack)
    r = s.authorize("c1", "cancel_subscription", {})
    assert not r.decision.allowed and not r.executed and "verify_identity" in r.message
    r = s.authorize("c2", "verify_identity", {})
    assert r.decision.allowed and not r.executed
    s.record_tool_output("c2", "verify_identity", {}, {"verified": True})
    assert s.ledger.working.conditions == {"identity_verified": True}
    assert [c["outcome"] for c in s.ledger.pending.calls] == ["denied", "ok"]
    # check() is pure policy: nothing runs, nothing is committed.
    r = s.check("c3", "downgrade_subscription", {})
    assert r.decision.allowed and not r.executed
    assert s.ledger.version == 0


def test_user_confirmation_and_claims(store, tenant, subscription_pack):
    s = open_session(store, tenant, subscription_pack)
    s.record_user_message("my email is ada@example.com")
    e = s.ledger.working.get("identifier", "claimed.email")
    assert e.value == "ada@example.com" and not e.verified and e.source == "user"
    s.propose_action("c1", "downgrade_subscription", {"plan": "basic"})
    s.record_user_message("yes, go ahead")
    assert "confirmation" in s.ledger.working.conditions


def test_rule_pack_and_store_errors(tmp_path, subscription_pack):
    assert len(subscription_pack.version) == 64
    assert subscription_pack.name == "subscription"
    assert subscription_pack.classify("get_subscription") == "read_only"
    assert subscription_pack.classify("cancel_subscription") == "writes"
    assert subscription_pack.classify("rm_rf") == "unknown"
    with pytest.raises(taskledger.NotFound):
        taskledger.RulePack.load(str(tmp_path / "nope"))
    (tmp_path / "pack.json").write_text('{"name": "broken", "tools": {}}')
    (tmp_path / "policy.lua").write_text("rule { id = ")
    with pytest.raises(taskledger.InvalidArgument, match="policy.lua"):
        taskledger.RulePack.load(str(tmp_path))
    with pytest.raises(taskledger.InvalidArgument):
        taskledger.open_store("ftp://nowhere")
    with pytest.raises((taskledger.Unavailable, taskledger.Timeout)):
        taskledger.open_store("redis://127.0.0.1:1", connect_timeout=0.2)
    assert taskledger.Timeout.code == "timeout" and issubclass(taskledger.Timeout, TimeoutError)
    for name in ["InvalidArgument", "NotFound", "Conflict", "Unavailable", "Timeout",
                 "Corruption", "LimitExceeded", "PolicyError", "Divergence",
                 "FailedPrecondition", "Internal"]:
        assert issubclass(getattr(taskledger, name), taskledger.Error)


def test_unknown_tool_is_denied(store, tenant, subscription_pack):
    s = open_session(store, tenant, subscription_pack)
    r = s.handle_tool_call("c1", "delete_account", {}, subscription_tools)
    assert not r.executed and r.decision.rule == "taskledger.unknown_tool"


def test_one_store_many_threads(store, tenant, subscription_pack):
    errors = []

    def worker(i):
        try:
            s = open_session(store, tenant, subscription_pack, conversation=f"t{i}")
            for turn in range(5):
                s.handle_tool_call(f"c{turn}", "get_subscription", {}, subscription_tools)
                s.handle_tool_call(f"d{turn}", "cancel_subscription", {}, subscription_tools)
                s.end_turn()
            assert s.ledger.version == 5
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.list_conversations(tenant) == ["t0", "t1", "t2", "t3"]


def test_a_session_refuses_a_second_concurrent_call(store, tenant, subscription_pack):
    s = open_session(store, tenant, subscription_pack)
    inner = {}

    def tool(call):
        try:
            s.end_turn()
        except taskledger.FailedPrecondition as e:
            inner["error"] = e
        return {"status": "active"}

    r = s.handle_tool_call("c1", "get_subscription", {}, tool)
    assert r.executed and "one Session per thread" in str(inner["error"])
    assert s.end_turn() == 1


def test_the_gil_is_released_while_the_core_works(root, retail_pack):
    # A replay is all C++ (Lua checks, extraction, store); Python threads
    # keep running meanwhile.
    done = threading.Event()
    out = {}

    def replay():
        out["r"] = taskledger.replay(
            str(root / "tests/data/tau-bench-retail/retail_gold.jsonl"), retail_pack)
        done.set()

    t = threading.Thread(target=replay)
    spins = 0
    t.start()
    while not done.is_set():
        spins += 1
    t.join()
    assert len(out["r"]) == 519
    # With the GIL held for the whole replay the loop would spin only between
    # the interpreter's 5 ms switch points (~50,000 spins here); it does ~7 million.
    assert spins > 300_000


def test_rule_log_lines_reach_the_decision_not_the_message(store, tenant, tmp_path):
    (tmp_path / "pack.json").write_text('{"name": "logs", "tools": {"writes": ["cancel"]}}')
    (tmp_path / "rules.lua").write_text(
        'rule { id = "logs.r", tools = {"cancel"}, check = function(call, ledger)\n'
        '  log("asked for", call.args.id, ledger.record("order", call.args.id))\n'
        '  return deny("not now")\n'
        "end }\n")
    s = open_session(store, tenant, taskledger.RulePack.load(str(tmp_path)))
    r = s.handle_tool_call("c1", "cancel", {"id": "#W.1"}, lambda call: {"ok": True})
    assert not r.executed
    assert [e.log for e in r.decision.rules] == [["asked for #W.1 nil"]]
    assert "asked for" not in r.message and r.decision.reason == "not now"
    assert r.record["rules"][0]["log"] == ["asked for #W.1 nil"]
