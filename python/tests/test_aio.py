"""asyncio: the taskledger.aio helpers run calls in worker threads, so the
event loop keeps running while a tool or the store is busy, and sessions of
different conversations proceed concurrently."""

import asyncio
import time

import taskledger
from taskledger import aio
from conftest import subscription_tools


def test_the_loop_keeps_running_while_a_tool_works(store, tenant, subscription_pack):
    async def main():
        s = await aio.open_session(store, tenant=tenant, conversation="a", pack=subscription_pack)
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        def slow(call):
            time.sleep(0.3)
            return {"verified": True}

        t = asyncio.create_task(ticker())
        r = await aio.handle_tool_call(s, "c1", "verify_identity", {}, slow)
        t.cancel()
        assert r.executed and ticks >= 10
        blocked = await aio.authorize(s, "c2", "delete_account", {})
        assert not blocked.decision.allowed
        return await aio.end_turn(s)

    assert asyncio.run(main()) == 1


def test_sessions_run_concurrently(store, tenant, subscription_pack):
    async def conversation(name):
        s = await aio.open_session(store, tenant=tenant, conversation=name, pack=subscription_pack)
        await aio.record_user_message(s, "hi, I am ada@example.com")
        await aio.handle_tool_call(s, "c1", "get_subscription", {}, subscription_tools)
        return await aio.end_turn(s)

    async def main():
        return await asyncio.gather(*(conversation(f"k{i}") for i in range(8)))

    assert asyncio.run(main()) == [1] * 8
    assert store.list_conversations(tenant) == [f"k{i}" for i in range(8)]


def test_store_down_reads_option(tenant, subscription_pack):
    opts = taskledger.SessionOptions(commit_before_write=False, store_down_reads="deny")
    assert not opts.commit_before_write
    s = taskledger.Session.open(taskledger.MemoryStore(), tenant=tenant, conversation="o",
                                pack=subscription_pack, options=opts)
    s.handle_tool_call("c1", "verify_identity", {}, subscription_tools)
    r = s.handle_tool_call("c2", "downgrade_subscription", {}, subscription_tools)
    # Without write-ahead nothing is committed before the write runs.
    assert r.executed and s.ledger.version == 0
    try:
        taskledger.SessionOptions(store_down_reads="maybe")
    except taskledger.InvalidArgument as e:
        assert "store_down_reads" in str(e)
    else:
        raise AssertionError("a bad store_down_reads was accepted")
