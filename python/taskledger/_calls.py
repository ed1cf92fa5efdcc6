"""Running a tool callable under a timeout, for Session.handle_tool_call
(timeout=...). Python cannot stop a thread, so a tool that overruns keeps
running in a daemon thread while the session records the call as timed out
and raises taskledger.Timeout; its late result is discarded. Thread-safe:
each call has its own thread and result slot.
"""

import inspect
import threading

from taskledger._core import Timeout


def run_with_timeout(execute, call, timeout):
    """Calls execute(call) in a daemon thread; returns its value, re-raises
    its exception, or raises taskledger.Timeout after `timeout` seconds."""
    outcome = {}

    def target():
        try:
            outcome["value"] = execute(call)
        except BaseException as e:  # handed to the caller below
            outcome["error"] = e

    worker = threading.Thread(target=target, name=f"taskledger-tool-{call.tool}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise Timeout(f"the tool {call.tool} did not return within {timeout:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def accepts_idempotency_key(execute):
    """True if execute(call, idempotency_key=...) is a valid call: a session
    writing through the command ledger then hands a write its key."""
    try:
        params = inspect.signature(execute).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return any(p.name == "idempotency_key" and p.kind != p.POSITIONAL_ONLY
               or p.kind == p.VAR_KEYWORD for p in params)
