"""Hostile input: values that are not JSON, nesting past the limits, huge
values, invalid text, tools that raise, return garbage or never return.
Each yields a clear exception, and nothing already staged or committed is
lost (the turn still commits and says what happened)."""

import time

import pytest

import taskledger
from conftest import subscription_tools


@pytest.fixture
def session(store, tenant, subscription_pack):
    s = taskledger.Session.open(store, tenant=tenant, conversation="hostile",
                                pack=subscription_pack)
    s.handle_tool_call("c0", "get_subscription", {}, subscription_tools)
    return s


def deep(n):
    v = {}
    for _ in range(n):
        v = {"a": v}
    return v


@pytest.mark.parametrize("arguments, message", [
    ({"x": {1, 2}}, "set, which is not JSON"),
    ({"x": b"raw"}, "bytes, which is not JSON"),
    ({"x": float("nan")}, "not JSON"),
    ({"x": 2 ** 70}, "64-bit"),
    ({1: "int key"}, "key of type int"),
    ({"x": "\udcff"}, "not valid Unicode"),
    ({"x": deep(100)}, "nests deeper than 64"),
    (["not", "a", "dict"], "must be a dict"),
])
def test_arguments_that_are_not_json(session, arguments, message):
    with pytest.raises(taskledger.InvalidArgument, match=message):
        session.handle_tool_call("c1", "verify_identity", arguments, subscription_tools)
    # Nothing was staged for the refused call; the earlier one is intact.
    assert [c["call_id"] for c in session.ledger.pending.calls] == ["c0"]
    assert session.end_turn() == 1
    assert session.ledger.head.facts == {"subscription_status": "grace_period"}


def test_a_cycle_is_refused_not_a_crash(session):
    a = []
    a.append(a)
    with pytest.raises(taskledger.InvalidArgument, match="contains itself"):
        session.handle_tool_call("c1", "verify_identity", {"a": a}, subscription_tools)


def test_text_arguments_must_be_str(session):
    with pytest.raises(taskledger.InvalidArgument, match="decode bytes first"):
        session.record_user_message(b"\xff\xfe yes")
    with pytest.raises(taskledger.InvalidArgument, match="lone surrogates"):
        session.record_user_message("yes \udc80")
    with pytest.raises(taskledger.InvalidArgument, match="tool must be a str"):
        session.handle_tool_call("c1", None, {}, subscription_tools)


def test_huge_values_pass_through_intact(session):
    big = "x" * 2_000_000
    r = session.handle_tool_call("c1", "verify_identity", {"note": big},
                                 lambda call: {"verified": True, "echo": len(call.arguments["note"])})
    assert r.executed and r.output["echo"] == 2_000_000
    assert session.end_turn() >= 1
    assert session.ledger.head.calls[-1]["arguments"]["note"] == big


def test_a_raising_tool_is_recorded_then_reraised(session):
    def broken(call):
        raise ValueError("the backend said no")

    with pytest.raises(ValueError, match="the backend said no") as err:
        session.handle_tool_call("c1", "verify_identity", {}, broken)
    result = err.value.call_result
    assert result.executed and result.is_error
    assert "ValueError: the backend said no" in result.message
    pending = session.ledger.pending
    assert [(c["call_id"], c["outcome"]) for c in pending.calls] == [("c0", "ok"), ("c1", "error")]
    assert pending.errors[-1]["code"] == "execution_failed"
    assert session.end_turn() == 1
    assert session.ledger.head.calls[-1]["outcome"] == "error"


def test_a_raising_tool_can_be_returned_instead(session):
    r = session.handle_tool_call("c1", "verify_identity", {},
                                 lambda call: 1 / 0, on_error="return")
    assert isinstance(r.error, ZeroDivisionError)
    assert r.is_error and "ZeroDivisionError" in r.message
    with pytest.raises(taskledger.InvalidArgument, match="on_error"):
        session.handle_tool_call("c2", "verify_identity", {}, subscription_tools,
                                 on_error="ignore")


def test_a_taskledger_error_from_a_tool_keeps_its_code(session):
    def down(call):
        raise taskledger.Unavailable("crm is down")

    r = session.handle_tool_call("c1", "verify_identity", {}, down, on_error="return")
    assert isinstance(r.error, taskledger.Unavailable)
    assert "unavailable:" in r.message


def test_a_tool_returning_garbage(session):
    with pytest.raises(taskledger.InvalidArgument, match="return value of tool verify_identity"):
        session.handle_tool_call("c1", "verify_identity", {}, lambda call: object())
    assert session.ledger.pending.calls[-1]["outcome"] == "error"


def test_a_tool_that_never_returns_times_out(session):
    start = time.monotonic()
    with pytest.raises(taskledger.Timeout, match="did not return within 0.2 s") as err:
        session.handle_tool_call("c1", "verify_identity", {}, lambda call: time.sleep(30),
                                 timeout=0.2)
    assert time.monotonic() - start < 5
    assert isinstance(err.value, TimeoutError)
    assert err.value.call_result.is_error and "timeout" in err.value.call_result.message
    assert session.ledger.pending.calls[-1]["outcome"] == "error"
    assert session.end_turn() == 1
    # A tool that finishes in time is unaffected by the timeout.
    r = session.handle_tool_call("c2", "verify_identity", {}, subscription_tools, timeout=5)
    assert r.executed and r.output == {"verified": True}


def test_non_callable_execute(session):
    with pytest.raises(taskledger.InvalidArgument, match="callable"):
        session.handle_tool_call("c1", "verify_identity", {}, "not a function")


def test_keyboard_interrupt_in_a_tool_still_records(session):
    def interrupted(call):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        session.handle_tool_call("c1", "verify_identity", {}, interrupted)
    assert session.ledger.pending.calls[-1]["outcome"] == "error"


@pytest.mark.parametrize("returned, message", [
    (b"\xff\xfe", "bytes, which is not JSON"),
    ("bad \udcff text", "not valid Unicode"),
    (deep(300), "nests deeper than 256"),
    ({"n": float("inf")}, "not JSON"),
])
def test_tool_outputs_that_are_not_json(session, returned, message):
    with pytest.raises(taskledger.InvalidArgument, match=message) as err:
        session.handle_tool_call("c1", "verify_identity", {}, lambda call: returned)
    assert err.value.call_result.executed and err.value.call_result.is_error
    assert session.ledger.pending.calls[-1]["outcome"] == "error"
    assert session.end_turn() == 1
    assert [c["outcome"] for c in session.ledger.head.calls] == ["ok", "error"]


def test_deep_but_legal_output_is_kept_and_its_extraction_refused(session):
    r = session.handle_tool_call("c1", "verify_identity", {}, lambda call: deep(100))
    assert r.executed and not r.is_error
    assert any("deeper" in e["message"] for e in session.ledger.pending.errors)
    assert session.end_turn() == 1
