"""asyncio helpers: awaitable forms of the blocking Session calls, each
running the call in a worker thread with asyncio.to_thread (the C++ core
releases the GIL, so the event loop keeps running while Redis answers or a
rule runs). The tool callable given to handle_tool_call runs in that worker
thread too; it must be a plain (sync) callable. A Session is still for one
call at a time: await one call before starting the next on the same session.
"""

import asyncio


async def record_user_message(session, text):
    return await asyncio.to_thread(session.record_user_message, text)


async def handle_tool_call(session, call_id, tool, arguments, execute, **kwargs):
    return await asyncio.to_thread(
        session.handle_tool_call, call_id, tool, arguments, execute, **kwargs
    )


async def authorize(session, call_id, tool, arguments=None):
    return await asyncio.to_thread(session.authorize, call_id, tool, arguments)


async def end_turn(session):
    return await asyncio.to_thread(session.end_turn)


async def flush(session):
    return await asyncio.to_thread(session.flush)


async def open_session(store, **kwargs):
    from taskledger import Session

    return await asyncio.to_thread(Session.open, store, **kwargs)
