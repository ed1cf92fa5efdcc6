"""A Session on a `taskledger serve` service (docs/python.md, "Calling a
service"): the same calls as the in-process Session, over HTTP, so a fleet of
Python agents can share one ledger and one policy. Opened by
taskledger.Session.open(store=...) when the store is a service URL (or a
ServiceStore from taskledger.open_store("http://...")).

What differs from in process, by the service's design (docs/deploy.md):
every request commits before it answers (a user message, a decision and an
outcome are each a version; end_turn() adds one), the tenant is the token's
(`tenant=`, if given, must be it), the pack is the service's
(the decision names its pack_version; `pack=` given to open must be that
version), and the service leases an allowed write to this client: the
callable runs it with the command's idempotency key and the outcome goes back
under the lease. Not offered by the service, so absent here: check() (pure
policy without a lease), rebase(), resume_approved() and the journal.
Thread-safety: one ServiceSession per thread, like a Session; a ServiceStore
may be shared.
"""

import json

from taskledger import _calls
from taskledger._core import FailedPrecondition, InvalidArgument, State, ToolCall, Turn
from taskledger._http import ServiceClient, ServiceError

_OUTCOMES = ("allow", "confirm", "require_approval", "deny")


class ServiceStore:
    """The service URLs and credentials a ServiceSession talks to; see
    ServiceClient for the arguments. The tenant is the token's (without
    --tokens, the service's --tenant)."""

    def __init__(self, urls, *, token=None, ca_file=None, cert_file=None, key_file=None,
                 timeout=10.0):
        self.client = ServiceClient(urls, token=token, ca_file=ca_file, cert_file=cert_file,
                                    key_file=key_file, timeout=timeout)

    @property
    def urls(self):
        return self.client.urls

    def ready(self):
        """True when one of the services answers /readyz."""
        try:
            self.client.send("GET", "/readyz")
            return True
        except Exception:  # noqa: BLE001 -- any failure means "not ready"
            return False

    def close(self):
        self.client.close()

    def __repr__(self):
        return f"<taskledger.ServiceStore {' '.join(self.urls)}>"


class ServiceRuleEvaluation:
    """What one rule said, as taskledger.RuleEvaluation has it."""

    def __init__(self, d):
        self.rule = d.get("id", "")
        self.outcome = d.get("outcome", "")
        self.reason = d.get("reason", "")
        self.error = bool(d.get("error", False))
        self.log = list(d.get("log", []))

    def __repr__(self):
        return f"<taskledger.ServiceRuleEvaluation {self.rule} {self.outcome}>"


class ServiceDecision:
    """The gate's answer, as taskledger.Decision has it (from the service's
    `decision` and `decision_record`)."""

    def __init__(self, decision, record):
        self._d = decision
        self._record = record or {}

    allowed = property(lambda self: bool(self._d.get("allowed", False)))
    outcome = property(lambda self: self._d.get("outcome", "deny"))
    rule = property(lambda self: self._d.get("rule_id", ""))
    reason = property(lambda self: self._d.get("reason", ""))
    read_only = property(lambda self: bool(self._d.get("read_only", False)))
    pack_version = property(lambda self: self._d.get("pack_version", ""))
    latency_us = property(lambda self: int(self._record.get("latency_us", 0)))

    @property
    def tool_class(self):
        """"read_only" or "writes" (the service treats an unknown tool as a write)."""
        return "read_only" if self.read_only else "writes"

    @property
    def rules(self):
        """Every rule evaluated, in order."""
        return [ServiceRuleEvaluation(r) for r in self._record.get("rules", [])]

    def __bool__(self):
        return self.allowed

    def __repr__(self):
        return f"<taskledger.ServiceDecision {self.outcome} {self.rule}>"


class ServiceCallResult:
    """What became of one proposed call, as taskledger.CallResult has it;
    `command` is the service's command (dict) for a write."""

    def __init__(self, call, proposed):
        self.call = call
        self.decision = ServiceDecision(proposed.get("decision", {}),
                                        proposed.get("decision_record"))
        self.record = proposed.get("decision_record", {})
        self.command = proposed.get("command")
        self.executed = False
        self.message = proposed.get("message", "")
        self.is_error = bool(proposed.get("message_is_error", False))
        self.output = proposed.get("recorded_output")
        self.error = None
        self.version = proposed.get("version")

    call_id = property(lambda self: self.call.id)
    tool = property(lambda self: self.call.tool)
    idempotency_key = property(
        lambda self: self.command.get("idempotency_key") if self.command else None)
    command_state = property(lambda self: self.command.get("state") if self.command else None)

    def _settled(self, reported, output):
        self.executed = True
        self.output = output
        self.message = reported.get("message", "")
        self.is_error = bool(reported.get("message_is_error", False))
        self.command = reported.get("command", self.command)
        self.version = reported.get("version", self.version)

    def __repr__(self):
        what = "executed" if self.executed else "allowed" if self.decision.allowed else "blocked"
        return f"<taskledger.ServiceCallResult {self.call_id} {self.tool} {what}>"


class ServiceLedger:
    """The conversation's versions, read from the service: the same State
    and Turn objects as in process."""

    def __init__(self, session):
        self._s = session

    def _post(self, path, **fields):
        return self._s._post(path, **fields)

    @property
    def version(self):
        return int(self._post("/v1/versions", **{"from": 1, "to": 0})["head"])

    @property
    def head(self):
        return State.from_dict(self._post("/v1/state"))

    def at(self, version):
        return State.from_dict(self._post("/v1/state", version=version))

    def diff(self, from_version, to_version):
        return self._post("/v1/diff", **{"from": from_version, "to": to_version})["diff"]

    def turns(self, first=1, last=None):
        """Turns first..last (the service answers at most 200 per request)."""
        out = []
        while True:
            fields = {"from": first}
            if last is not None:
                fields["to"] = last
            answer = self._post("/v1/versions", **fields)
            got = [Turn.from_dict(t) for t in answer["turns"]]
            out.extend(got)
            end = answer["head"] if last is None else min(last, answer["head"])
            if not got or got[-1].turn >= end:
                return out
            first = got[-1].turn + 1

    def decisions(self, first=None, last=None):
        """The decision records with their evidence, each with its turn."""
        fields = {}
        if first is not None:
            fields["from"] = first
        if last is not None:
            fields["to"] = last
        return self._post("/v1/decisions", **fields)["decisions"]


def _json_output(value, tool):
    if isinstance(value, str):
        return value
    try:
        json.dumps(value)
    except (TypeError, ValueError) as e:
        raise InvalidArgument(f"the return value of tool {tool} is not JSON: {e}") from None
    return value


class ServiceSession:
    """One conversation on a service; see the module docstring."""

    def __init__(self, store, conversation, pack, tenant=None):
        self._store = store
        self._client = store.client
        self._pack = pack
        self._proposed_action = None
        self._leases = {}  # call id -> command, from authorize() to record_tool_output()
        opened = self._client.post("/v1/open",
                                   {} if conversation is None else {"conversation": conversation})
        self.conversation = opened["conversation"]
        self.tenant = opened["tenant"]
        self.version = opened.get("version", 0)
        self.recovered = opened.get("recovered")
        if tenant is not None and tenant != self.tenant:
            raise FailedPrecondition(
                f"the service serves this token's tenant {self.tenant!r}, not {tenant!r} (the "
                "token decides the tenant: drop tenant= or use that tenant's token)")

    @property
    def pack(self):
        return self._pack

    @property
    def store(self):
        return self._store

    @property
    def ledger(self):
        return ServiceLedger(self)

    def _post(self, path, **fields):
        body = {"conversation": self.conversation, **fields}
        answer = self._client.post(path, body)
        if isinstance(answer, dict) and isinstance(answer.get("version"), int):
            self.version = answer["version"]
        return answer

    def record_user_message(self, text):
        if not isinstance(text, str):
            raise InvalidArgument("text must be a str")
        fields = {"text": text}
        if self._proposed_action is not None:
            fields["proposed_action"] = self._proposed_action
        answer = self._post("/v1/message", **fields)
        self._proposed_action = None
        return answer

    def propose_action(self, call_id, tool, arguments=None):
        """The action proposed to the user; sent with the next user message,
        whose "yes" binds to it."""
        call = ToolCall(call_id, tool, arguments)
        self._proposed_action = {"id": call.id, "tool": call.tool, "arguments": call.arguments}

    def _propose(self, call):
        answer = self._post("/v1/propose", call=_call_json(call))
        result = ServiceCallResult(call, answer)
        want = self._pack.version if self._pack is not None else ""
        if want and result.decision.pack_version and result.decision.pack_version != want:
            if result.command and result.command.get("state") == "leased":
                self._report(call, result.command, "not_made",
                             detail="the client expected another pack version")
            raise FailedPrecondition(
                f"the service decides with pack version {result.decision.pack_version}, "
                f"not this session's {want} (open without pack=, or load the service's pack)")
        return answer, result

    def authorize(self, call_id, tool, arguments=None):
        """Gates the call; run it only if result.decision.allowed and the
        service said execute (a write is leased to this client), then
        record_tool_output()."""
        call = ToolCall(call_id, tool, arguments)
        answer, result = self._propose(call)
        if answer.get("execute") and result.command is not None:
            self._leases[call.id] = result.command
        return result

    def record_tool_output(self, call_id, tool, arguments, output, *, is_error=False):
        call = ToolCall(call_id, tool, arguments)
        command = self._leases.pop(call.id, None)
        self._report(call, command, "error" if is_error else "ok",
                     output=_json_output(output, call.tool))

    def _report(self, call, command, status, output=None, detail=None):
        fields = {"call": _call_json(call), "status": status}
        if output is not None:
            fields["output"] = output
        if detail is not None:
            fields["detail"] = detail
        if command is not None and command.get("state") == "leased":
            fields["command_key"] = command["command_key"]
            fields["fencing_token"] = command["fencing_token"]
        return self._post("/v1/outcome", **fields)

    def handle_tool_call(self, call_id, tool, arguments, execute, *, timeout=None,
                         on_error="raise"):
        """Gates the call; only if the service says execute, runs
        execute(call) (with idempotency_key=... for a leased write when the
        callable takes it) and reports the outcome; see Session.handle_tool_call.
        A tool that raises is reported "uncertain" for a leased write (it may
        have taken effect), "error" otherwise. If the outcome cannot be
        reported (no service reachable), the ServiceError carries the
        CallResult (executed, output) as `call_result`; the service then
        treats the lease as expired (the command becomes uncertain)."""
        if on_error not in ("raise", "return"):
            raise InvalidArgument(f'on_error must be "raise" or "return", not "{on_error}"')
        if not callable(execute):
            raise InvalidArgument("execute must be callable")
        if timeout is not None and not timeout > 0:
            raise InvalidArgument("timeout must be positive")
        call = ToolCall(call_id, tool, arguments)
        answer, result = self._propose(call)
        if not answer.get("execute"):
            return result
        command = result.command
        leased = command is not None and command.get("state") == "leased"
        fn = execute
        if leased and _calls.accepts_idempotency_key(execute):
            def fn(c, _key=command["idempotency_key"]):
                return execute(c, idempotency_key=_key)
        try:
            if timeout is not None:
                value = _calls.run_with_timeout(fn, call, timeout)
            else:
                value = fn(call)
            value = _json_output(value, call.tool)
        except Exception as e:  # noqa: BLE001 -- reported, then raised or returned below
            reported = self._report(call, command, "uncertain" if leased else "error",
                                    detail=f"the tool {call.tool} raised "
                                           f"{type(e).__name__}: {e}")
            result._settled(reported, None)
            result.error = e
            if on_error == "raise":
                e.call_result = result
                raise
            return result
        try:
            reported = self._report(call, command, "ok", output=value)
        except ServiceError as e:  # it ran: hand its value over with the error
            result.executed, result.output = True, value
            e.call_result = result
            raise
        result._settled(reported, value)
        return result

    def end_turn(self):
        """Ends the model's turn; returns the conversation's version."""
        return int(self._post("/v1/end-turn")["version"])

    def render(self, *, format="plain", max_chars=0, include_provenance=False,
               state="working"):
        """The state block of the conversation's head (every request
        committed, so the head is what the working state is in process).
        With the session's pack (open(..., pack=)), max_chars,
        include_provenance or format "json", it is rendered here from the
        head with the pack's pack.json "render" visibility (internal entries
        left out, redacted fields hidden); otherwise the service renders it,
        and the service applies no render visibility (docs/python.md)."""
        if state not in ("working", "head"):
            raise InvalidArgument("state must be working or head")
        if self._pack is not None or max_chars or include_provenance or format == "json":
            return self.ledger.head.render(format=format, max_chars=max_chars,
                                           include_provenance=include_provenance,
                                           pack=self._pack)
        return self._post("/v1/render", format=format)["state_block"]

    def commands(self, state=None):
        """The commands of this conversation's run (dicts), optionally of one state."""
        fields = {} if state is None else {"state": state}
        return self._post("/v1/commands/list", **fields)["commands"]

    def approve(self, command_key, *, reason, approver=None):
        """Approves a held command (an operator token); the next proposal of
        the call leases it."""
        return self._operator("/v1/commands/approve", command_key, reason, approver)

    def deny(self, command_key, *, reason, approver=None):
        """Denies a held command (an operator token); the model is told once."""
        return self._operator("/v1/commands/deny", command_key, reason, approver)

    def _operator(self, path, command_key, reason, approver):
        fields = {"command_key": command_key, "reason": reason}
        if approver is not None:
            fields["approver"] = approver
        return self._post(path, **fields)["command"]

    def __repr__(self):
        return f"<taskledger.ServiceSession {self.tenant}/{self.conversation}>"


def _call_json(call):
    return {"id": call.id, "tool": call.tool, "arguments": call.arguments}
