"""A Session's journal from Python (Session.open(..., journal=True)), on the
memory and the Redis command store: a loop that crashed is resumed by opening
a session on the same run and running it from its start; the model is not
asked again for steps already recorded, the clock and the random draw come
back as recorded, the write is not repeated, and a loop that asks something
else at a recorded position gets Divergence."""

import uuid

import pytest

import taskledger


class Model:
    """A scripted model that counts how often it was asked."""

    def __init__(self):
        self.asked = []

    def __call__(self, prompt):
        self.asked.append(prompt)
        return {"tool": "downgrade_subscription", "plan": "basic", "n": len(self.asked)}


def run_loop(session, model, shipped, crash_after_write=False):
    """One pass of an agent loop: ask the model, note the time and an id,
    make the write, ask the model again. Returns what the loop saw."""
    seen = {}
    first = session.journaled("model", {"prompt": "what next?"},
                              lambda: model("what next?"))
    seen["first"] = first
    seen["now"] = session.journaled_now_ms()
    seen["id"] = session.journaled_random()

    def downgrade(call, idempotency_key):
        shipped.append(idempotency_key)
        return {"plan": call.arguments["plan"]}

    session.handle_tool_call("c1", first["tool"], {"plan": first["plan"]}, downgrade)
    if crash_after_write:
        return seen
    seen["second"] = session.journaled("model", {"prompt": "done?"}, lambda: model("done?"))
    return seen


def open_session(store, command_store, pack, conversation):
    s = taskledger.Session.open(store, tenant="py-journal", conversation=conversation,
                                pack=pack, command_store=command_store, journal=True)
    s.handle_tool_call("c0", "verify_identity", {}, lambda call: {"verified": True})
    return s


def test_a_resumed_loop_replays_the_record_and_does_not_repeat_the_write(
        command_store, subscription_pack):
    store = taskledger.MemoryStore()
    conversation = "j-" + uuid.uuid4().hex[:12]
    model, shipped = Model(), []
    first_run = open_session(store, command_store, subscription_pack, conversation)
    assert first_run.journal_replayed_steps == 0
    before = run_loop(first_run, model, shipped, crash_after_write=True)
    assert model.asked == ["what next?"] and len(shipped) == 1
    del first_run  # the process "dies" here, before asking the model again

    resumed = open_session(store, command_store, subscription_pack, conversation)
    after = run_loop(resumed, model, shipped)
    assert after["first"] == before["first"]
    assert after["now"] == before["now"] and after["id"] == before["id"]
    assert model.asked == ["what next?", "done?"]  # only the unreached step asked
    assert len(shipped) == 1  # the write ran once
    assert resumed.journal_replayed_steps == 3


def test_a_different_request_at_a_recorded_position_is_divergence(command_store,
                                                                   subscription_pack):
    store = taskledger.MemoryStore()
    conversation = "j-" + uuid.uuid4().hex[:12]
    s = open_session(store, command_store, subscription_pack, conversation)
    s.journaled("model", {"prompt": "a"}, lambda: "answer a")
    again = open_session(store, command_store, subscription_pack, conversation)
    with pytest.raises(taskledger.Divergence, match="position 1"):
        again.journaled("model", {"prompt": "b"}, lambda: "answer b")


def test_a_raising_producer_records_nothing(command_store, subscription_pack):
    store = taskledger.MemoryStore()
    conversation = "j-" + uuid.uuid4().hex[:12]
    s = open_session(store, command_store, subscription_pack, conversation)

    def broken():
        raise ConnectionError("model API down")

    with pytest.raises(ConnectionError, match="model API down"):
        s.journaled("model", {"prompt": "a"}, broken)
    # The same position is still free: the retry records its answer there.
    assert s.journaled("model", {"prompt": "a"}, lambda: {"ok": 1}) == {"ok": 1}
    resumed = open_session(store, command_store, subscription_pack, conversation)
    assert resumed.journaled("model", {"prompt": "a"}, lambda: {"ok": 2}) == {"ok": 1}
    with pytest.raises(taskledger.InvalidArgument, match="rng must return an int"):
        s.journaled_random(lambda: "not a number")
    assert isinstance(s.journaled_random(lambda: 2**64 - 1), int)


def test_journal_needs_a_command_store_and_is_off_by_default(command_store, subscription_pack):
    with pytest.raises(taskledger.InvalidArgument, match="command_store"):
        taskledger.Session.open(taskledger.MemoryStore(), conversation="x",
                                pack=subscription_pack, journal=True)
    plain = taskledger.Session.open(taskledger.MemoryStore(), conversation="y",
                                    pack=subscription_pack, command_store=command_store)
    assert plain.journal_replayed_steps is None
    with pytest.raises(taskledger.FailedPrecondition, match="no journal"):
        plain.journaled("model", {}, lambda: 1)
