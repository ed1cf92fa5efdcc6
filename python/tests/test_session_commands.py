"""A Session that writes through the command ledger (Session.open(...,
command_store=...)), on the memory and the Redis command store: a write's
tool receives its idempotency key when it takes an idempotency_key keyword,
the model retrying the same call gets the recorded outcome, a write whose
tool raises is uncertain (it may have taken effect) and is reconciled
through the lookup, also when a restarted session opens."""

import asyncio
import os
import uuid

import pytest

import taskledger
from taskledger import LookupResult, aio


def verified_session(store, command_store, pack, conversation, **kwargs):
    s = taskledger.Session.open(store, tenant="py-cmd", conversation=conversation, pack=pack,
                                command_store=command_store, **kwargs)
    s.handle_tool_call("c0", "verify_identity", {}, lambda call: {"verified": True})
    return s


def test_a_write_gets_its_key_and_runs_once(command_store, subscription_pack):
    store = taskledger.MemoryStore()
    conversation = "c-" + uuid.uuid4().hex[:12]
    s = verified_session(store, command_store, subscription_pack, conversation)
    keys = []

    def downgrade(call, idempotency_key):
        keys.append(idempotency_key)
        return {"plan": call.arguments["plan"]}

    r = s.handle_tool_call("c1", "downgrade_subscription", {"plan": "basic"}, downgrade)
    assert r.executed and r.command_state == "succeeded"
    assert keys == [r.idempotency_key] and r.idempotency_key.startswith("py-cmd:")
    again = s.handle_tool_call("c2", "downgrade_subscription", {"plan": "basic"}, downgrade)
    assert not again.executed and not again.is_error
    assert "Already done" in again.message and again.output == {"plan": "basic"}
    assert keys == [r.idempotency_key]
    assert s.ledger.pending.calls[-1]["outcome"] == "deduplicated"
    # A tool that takes no key still runs; a read has no command.
    other = s.handle_tool_call("c3", "downgrade_subscription", {"plan": "mini"},
                               lambda call: {"plan": "mini"})
    assert other.executed and other.idempotency_key is not None
    read = s.handle_tool_call("c4", "get_subscription", {}, lambda call: {"status": "active"})
    assert read.idempotency_key is None and read.command_state is None


def test_a_raising_write_is_uncertain_and_reconciled_on_restart(command_store,
                                                                 subscription_pack):
    store = taskledger.MemoryStore()
    conversation = "c-" + uuid.uuid4().hex[:12]
    applied = set()
    lookup_up = {"value": False}

    def lookup(command):
        if not lookup_up["value"]:
            return LookupResult.unknown("billing lookup is down")
        if command.idempotency_key in applied:
            return LookupResult.found("re_1", {"applied": True})
        return LookupResult.not_found()

    s = verified_session(store, command_store, subscription_pack, conversation, lookup=lookup)

    def downgrade(call, idempotency_key):
        applied.add(idempotency_key)
        raise ConnectionResetError("reset after the request was sent")

    r = s.handle_tool_call("c1", "downgrade_subscription", {"plan": "basic"}, downgrade,
                           on_error="return")
    assert isinstance(r.error, ConnectionResetError)
    assert r.executed and r.is_error and r.command_state == "uncertain"
    assert "unknown" in r.message and "ConnectionResetError" in r.message
    assert s.ledger.pending.calls[-1]["outcome"] == "uncertain"
    s.end_turn()
    # The process restarts; the lookup answers again. Opening reconciles it.
    lookup_up["value"] = True
    restarted = taskledger.Session.open(store, tenant="py-cmd", conversation=conversation,
                                        pack=subscription_pack, command_store=command_store,
                                        lookup=lookup)
    again = restarted.handle_tool_call("c2", "downgrade_subscription", {"plan": "basic"},
                                       downgrade)
    assert not again.executed and again.command_state == "succeeded"
    assert len(applied) == 1


def test_lookup_needs_a_command_store(subscription_pack):
    with pytest.raises(taskledger.InvalidArgument, match="command_store"):
        taskledger.Session.open(taskledger.MemoryStore(), conversation="x",
                                pack=subscription_pack, lookup=lambda c: None)


def test_an_approved_refund_runs_once_through_resume_approved(command_store, subscription_pack):
    store = taskledger.MemoryStore()
    conversation = "c-" + uuid.uuid4().hex[:12]
    s = verified_session(store, command_store, subscription_pack, conversation)
    refunds = []

    def refund(call, idempotency_key):
        refunds.append(idempotency_key)
        if len(refunds) > 1:
            raise RuntimeError("the second refund raised")
        return {"refund_id": "re_1"}

    waiting = s.handle_tool_call("c1", "refund_subscription", {"amount": 9.99}, refund)
    assert not waiting.executed and waiting.command_state == "blocked"
    assert "waiting for approval" in waiting.message
    assert s.resume_approved(refund) == []
    other = s.handle_tool_call("c2", "refund_subscription", {"amount": 5}, refund)
    s.end_turn()
    operator = taskledger.CommandLedger(command_store, worker_id="cli")
    for c in command_store.list_commands(conversation, tenant="py-cmd"):
        if c.state == "blocked":
            operator.approve(conversation, c.command_key, actor="bob", reason="duplicate charge",
                             tenant="py-cmd")
    results = s.resume_approved(refund)
    assert [r.call_id for r in results] == ["c1", "c2"]
    assert results[0].executed and results[0].command_state == "succeeded"
    assert results[0].decision.rule == "taskledger.operator_approval"
    assert results[0].idempotency_key == waiting.idempotency_key
    # The second tool raised: recorded as uncertain, the exception handed back.
    assert isinstance(results[1].error, RuntimeError)
    assert results[1].command_state in ("uncertain", "blocked")
    assert results[1].idempotency_key == other.idempotency_key
    assert s.resume_approved(refund) == []
    assert refunds == [waiting.idempotency_key, other.idempotency_key]


def test_flush_reads_a_writes_settle_and_another_handle_sees_it(request, command_store,
                                                                subscription_pack):
    """On Redis a write returns once its tool has run and its settle is sent;
    flush() reads the settle's answer, after which any other handle on the
    store reads the command as settled. On the memory store it is a no-op."""
    store = taskledger.MemoryStore()
    conversation = "c-" + uuid.uuid4().hex[:12]
    s = verified_session(store, command_store, subscription_pack, conversation)
    r = s.handle_tool_call("c1", "downgrade_subscription", {"plan": "basic"},
                           lambda call: {"plan": "basic"})
    assert r.executed and r.command_state == "succeeded"
    assert s.flush() is None
    # Nothing outstanding any more; the awaitable form (taskledger.aio) too.
    assert asyncio.run(aio.flush(s)) is None
    other = command_store
    if request.node.callspec.params["command_store"] == "redis":
        other = taskledger.open_command_store(os.environ["TASKLEDGER_TEST_REDIS_URL"])
    [stored] = other.list_commands(conversation, tenant="py-cmd")
    assert stored.state == "succeeded"
    assert stored.idempotency_key == r.idempotency_key
    assert s.end_turn() > 0
