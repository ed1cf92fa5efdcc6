"""taskledger: task state for tool-calling AI agents, a sandboxed Lua policy
gate in front of every environment-changing tool call, and a crash-safe
command ledger -- the C++ core, in process, with a Python API.

Everything here is the compiled module ``taskledger._core`` re-exported;
see docs/python.md. Thread-safety: a Session, CommandLedger or PolicyChecker
is for one thread at a time (a concurrent second call raises
FailedPrecondition); stores and rule packs are shared freely. Blocking
methods release the GIL. For asyncio, run them with ``asyncio.to_thread``
or use the ``a``-prefixed helpers in ``taskledger.aio``.

A service (``taskledger serve``) stands in for the store: ``open_store`` and
``Session.open`` take its ``http://`` or ``https://`` URL (or several, for
failover) and return a ServiceStore and a ServiceSession (taskledger.service)
with the same calls; everything else is in process.
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
    openai_chat,
    openai_responses,
    render,
    replay,
)

from taskledger import _core
from taskledger._http import (  # noqa: F401
    Forbidden,
    PayloadTooLarge,
    ServiceError,
    TooManyRequests,
    Unauthorized,
)
from taskledger.service import ServiceLedger, ServiceSession, ServiceStore  # noqa: F401

__version__ = "0.1.0"


def _is_service_url(url):
    if isinstance(url, str):
        return url.startswith(("http://", "https://"))
    return isinstance(url, (list, tuple)) and bool(url) and all(map(_is_service_url, url))


def open_store(url, *args, token=None, ca_file=None, cert_file=None, key_file=None,
               timeout=10.0, **kwargs):
    """Opens a store by URL: memory://, redis://, rediss://, redis+cluster://
    (in process; see docs/python.md), or a ``taskledger serve`` service:
    http:// or https:// (a list of them fails over in order), with the
    tenant's bearer token, an https CA file and a client certificate."""
    if _is_service_url(url):
        if args or kwargs:
            raise InvalidArgument("a service URL takes token, ca_file, cert_file, key_file and "
                                  "timeout only (the service owns its store's settings)")
        return ServiceStore(url, token=token, ca_file=ca_file, cert_file=cert_file,
                            key_file=key_file, timeout=timeout)
    if token is not None or ca_file is not None or cert_file is not None or key_file is not None:
        raise InvalidArgument("token, ca_file, cert_file and key_file are for a service URL")
    return _core.open_store(url, *args, **kwargs)


_open_in_process = _core.Session.open


def _open_session(store, *, tenant=None, conversation=None, pack=None, token=None, ca_file=None,
                  cert_file=None, key_file=None, timeout=10.0, **kwargs):
    if _is_service_url(store):
        store = ServiceStore(store, token=token, ca_file=ca_file, cert_file=cert_file,
                             key_file=key_file, timeout=timeout)
    if isinstance(store, ServiceStore):
        if kwargs:
            raise InvalidArgument(f"{', '.join(sorted(kwargs))}: not for a service session (the "
                                  "service owns its command store and options)")
        return ServiceSession(store, conversation, pack, tenant)
    if token is not None or ca_file is not None or cert_file is not None or key_file is not None:
        raise InvalidArgument("token, ca_file, cert_file and key_file are for a service URL")
    if conversation is None or pack is None:
        raise InvalidArgument("Session.open needs conversation= and pack= (in process)")
    return _open_in_process(store, tenant="default" if tenant is None else tenant,
                            conversation=conversation, pack=pack, **kwargs)


_open_session.__doc__ = _open_in_process.__doc__ + """

With a service URL (or several, or a ServiceStore) as `store`: a
ServiceSession on that service, authenticated by `token` (without
`conversation`, the service names a new one); `pack`, if given, must be the
version the service decides with."""
_core.Session.open = staticmethod(_open_session)
