"""The command ledger (idempotency keys, outcomes, reconciliation, recovery,
approval) and the policy checker on its own, against the memory command
store and a real redis-server."""

import uuid

import pytest

import taskledger
from taskledger import LookupResult, ToolOutcome


@pytest.fixture
def run():
    return "run-" + uuid.uuid4().hex[:12]


def test_write_before_execute_and_idempotency(command_store, run):
    ledger = taskledger.CommandLedger(command_store, worker_id="w1")
    calls = []

    def refund(command):
        calls.append(command.idempotency_key)
        # The record exists before the side effect happens.
        assert command_store.get(run, command.command_key).state == "leased"
        return ToolOutcome.succeeded("rf_1", {"refunded": command.arguments["amount"]})

    ledger.bind("issue_refund", refund, lambda command: LookupResult.not_found())
    spec = dict(run=run, step="refund-1", tool="issue_refund", target="order:A17",
                arguments={"amount": 30})
    c = ledger.reserve(**spec, execute=True)
    assert c.state == "succeeded" and c.external_id == "rf_1"
    assert c.evidence == {"refunded": 30}
    assert calls == [c.idempotency_key] and run in c.idempotency_key
    again = ledger.reserve(**spec, execute=True)
    assert again.command_key == c.command_key and again.state == "succeeded"
    assert len(calls) == 1  # the same logical command never runs twice
    assert [x.command_key for x in command_store.list_commands(run)] == [c.command_key]


def test_an_exception_is_ambiguous_and_reconciled(command_store, run):
    ledger = taskledger.CommandLedger(command_store)
    found = {"yes": False}

    def flaky(command):
        found["yes"] = True  # it did take effect, then the connection dropped
        raise ConnectionError("reset by peer")

    ledger.bind("send_email", flaky,
                lambda command: LookupResult.found("msg_1", {"sent": True}) if found["yes"]
                else LookupResult.not_found())
    c = ledger.reserve(run=run, step="mail", tool="send_email", target="user:1", execute=True)
    assert c.state == "succeeded" and c.external_id == "msg_1"
    assert c.evidence["lookup"] == {"sent": True} and c.evidence["reconciled"] is True


def test_failed_approval_cancel_and_recover(command_store, run):
    ledger = taskledger.CommandLedger(command_store)
    ledger.bind("wire", lambda command: ToolOutcome.failed("insufficient funds"),
                lambda command: LookupResult.not_found())
    c = ledger.reserve(run=run, step="w", tool="wire", target="acct:9", execute=True)
    assert c.state == "failed" and c.last_error == "insufficient funds"
    b = ledger.reserve(run=run, step="big", tool="wire", target="acct:9",
                       arguments={"amount": 10**6}, requires_approval=True)
    assert b.state == "blocked"
    with pytest.raises(taskledger.Error):
        ledger.approve(run, "no-such-key", actor="ops", reason="x")
    b = ledger.approve(run, b.command_key, actor="ops", reason="checked by phone")
    assert b.state == "approved"
    b = ledger.cancel(run, b.command_key, actor="ops", reason="customer withdrew")
    assert b.state == "cancelled"
    d = ledger.reserve(run=run, step="bigger", tool="wire", target="acct:9",
                       arguments={"amount": 10**7}, requires_approval=True)
    d = ledger.deny(run, d.command_key, actor="ops", reason="over the limit")
    assert d.state == "cancelled"
    assert d.to_dict()["approver"] == "ops"
    assert d.to_dict()["approval_reason"] == "over the limit"
    report = ledger.recover(run)
    assert report["done"] == 3 and report["ready"] == 0
    with pytest.raises(taskledger.NotFound):
        ledger.execute(run, "missing")


def test_policy_checker_alone(subscription_pack):
    checker = taskledger.PolicyChecker(subscription_pack)
    call = taskledger.Call("c1", "cancel_subscription", {"user_id": "u1"})
    d = checker.check(call)
    assert not d.allowed and d.rule == "subscription.identity_verified"
    assert "cancel_subscription" in d.denial_message(call)
    assert checker.check(taskledger.Call("c2", "get_subscription")).read_only
    # Against a session's state: once identity is verified, the grace period decides.
    s = taskledger.Session.open(taskledger.MemoryStore(), conversation="x", pack=subscription_pack)
    s.handle_tool_call("v", "verify_identity", {}, lambda c: {"verified": True})
    s.handle_tool_call("g", "get_subscription", {}, lambda c: {"status": "grace_period",
                                                               "days_remaining": 3})
    d = checker.check(call, s.ledger.working)
    assert d.rule == "subscription.no_cancel_in_grace_period" and "3 days" in d.reason
    # Each rule's reads carry the evidence the session's own decision record holds.
    s.check("c1", "cancel_subscription", {"user_id": "u1"})
    recorded = {r["id"]: r.get("reads", []) for r in s.ledger.pending.decisions[-1]["rules"]}
    assert {r.rule: r.reads for r in d.rules} == recorded
    grace = next(r for r in d.rules if r.rule == d.rule)
    assert any(x["present"] and x["verified"] and x["source_id"].startswith("get_subscription#")
               for x in grace.reads)
    assert checker.check(taskledger.Call("c3", "downgrade_subscription"), s.ledger.working)
