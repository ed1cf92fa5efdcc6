"""taskledger: task state for tool-calling AI agents, a sandboxed Lua policy
gate in front of every environment-changing tool call, and a crash-safe
command ledger -- the C++ core, in process, with a Python API.

Everything here is the compiled module ``taskledger._core`` re-exported;
see docs/python.md. Thread-safety: a Session, CommandLedger or PolicyChecker
is for one thread at a time (a concurrent second call raises
FailedPrecondition); stores and rule packs are shared freely. Blocking
methods release the GIL. For asyncio, run them with ``asyncio.to_thread``
or use the ``a``-prefixed helpers in ``taskledger.aio``.
"""

from taskledger._core import (  # noqa: F401
    Call,
    CallError,
    CallResult,
    Command,
    CommandLedger,
    CommandStore,
    Conflict,
    Corruption,
    Decision,
    Divergence,
    Entry,
    Error,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    Ledger,
    LimitExceeded,
    LookupResult,
    MemoryCommandStore,
    MemoryStore,
    NotFound,
    ParsedCalls,
    PolicyChecker,
    PolicyError,
    RuleEvaluation,
    RulePack,
    Session,
    SessionOptions,
    State,
    Store,
    Timeout,
    ToolCall,
    ToolOutcome,
    ToolResult,
    Turn,
    Unavailable,
    anthropic,
    mcp,
    open_command_store,
    open_store,
    openai_chat,
    openai_responses,
    render,
    replay,
)

__version__ = "0.1.0"
