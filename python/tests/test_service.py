"""taskledger.Session over a real `taskledger serve` (TASKLEDGER_CLI, the
binary of this build) started per test on a free port: the same scripted
conversation in process and over HTTP gives the same decisions; two workers
on two serve processes over one Redis share one ledger; failover past a dead
URL; 20 conversations at once through taskledger.aio; the service's statuses
as Python exceptions (401, 403, 404, 413, 429) with nothing written; https with a
CA file. The Redis parts need TASKLEDGER_TEST_REDIS_URL.
"""

import asyncio
import hashlib
import shutil
import socket
import subprocess
import threading
import time

import pytest

import taskledger
from taskledger import aio
from conftest import REDIS_URL, RULES

def store_args(kind, tenant):
    if kind == "memory":
        return []
    if not REDIS_URL:
        pytest.skip("TASKLEDGER_TEST_REDIS_URL is not set (scripts/test sets it)")
    return ["--store", REDIS_URL, "--tenant", tenant]


def free_port_url():
    """A loopback URL where nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def tools(status):
    ran = []

    def run(call, idempotency_key=None):
        ran.append((call.tool, idempotency_key))
        if call.tool == "get_subscription":
            return {"status": status, "days_remaining": 5} if status == "grace_period" else {
                "status": status}
        if call.tool == "verify_identity":
            return {"verified": True}
        return {"ok": True}

    run.ran = ran
    return run


def scripted(session, status):
    """A subscription conversation; returns what a user of the API sees."""
    run = tools(status)
    seen = []
    session.record_user_message("Please cancel my subscription, user u1.")
    steps = [("c1", "get_subscription"), ("c2", "cancel_subscription"),
             ("c3", "verify_identity"), ("c4", "cancel_subscription"),
             ("c4", "cancel_subscription")]  # the same call again: not run twice
    for call_id, tool in steps:
        r = session.handle_tool_call(call_id, tool, {"user_id": "u1"}, run)
        seen.append((tool, r.executed, r.decision.outcome, r.decision.allowed, r.decision.rule,
                     r.decision.reason, r.is_error, r.command_state,
                     [(e.rule, e.outcome) for e in r.decision.rules]))
    session.end_turn()
    return seen, run.ran, session.render(), session.ledger.head.facts


@pytest.mark.parametrize("kind", ["memory", "redis"])
@pytest.mark.parametrize("status", ["grace_period", "active"])
def test_same_decisions_in_process_and_over_http(serve, subscription_pack, tenant, kind, status):
    local_store = taskledger.MemoryStore() if kind == "memory" else taskledger.open_store(REDIS_URL)
    local = taskledger.Session.open(local_store, tenant=tenant, conversation="conv",
                                    pack=subscription_pack,
                                    command_store=taskledger.MemoryCommandStore())
    service = serve("--rules", RULES, *store_args(kind, tenant + "-svc"))
    remote = taskledger.Session.open(service.url, conversation="conv", pack=subscription_pack)
    assert isinstance(remote, taskledger.ServiceSession)
    assert isinstance(local, taskledger.Session)

    want, local_ran, local_block, local_facts = scripted(local, status)
    got, remote_ran, remote_block, remote_facts = scripted(remote, status)
    assert got == want
    assert remote_block == local_block
    assert remote_facts == local_facts
    assert [t for t, _ in remote_ran] == [t for t, _ in local_ran]
    cancels = [key for tool, key in remote_ran if tool == "cancel_subscription"]
    if status == "active":  # the write ran once, with the service's idempotency key
        assert len(cancels) == 1 and cancels[0].startswith(remote.tenant + ":conv/")
        [cmd] = remote.commands()
        assert cmd["state"] == "succeeded" and cmd["idempotency_key"] == cancels[0]
    else:  # denied by the grace-period rule, with its reason
        assert cancels == []
        assert got[3][4] == "subscription.no_cancel_in_grace_period"
        assert "grace period" in got[3][5]
        assert remote.commands() == []


def test_two_workers_on_two_processes_share_one_ledger(serve, subscription_pack, tenant):
    args = ["--rules", RULES, *store_args("redis", tenant)]
    a, b = serve(*args), serve(*args)
    run = tools("active")
    one = taskledger.Session.open(a.url, conversation="shared")
    one.handle_tool_call("c1", "get_subscription", {"user_id": "u1"}, run)
    one.handle_tool_call("c2", "verify_identity", {"user_id": "u1"}, run)

    two = taskledger.Session.open(b.url, conversation="shared")
    assert two.ledger.head.facts == {"subscription_status": "active"}
    assert two.ledger.head.conditions == {"identity_verified": True}
    r = two.handle_tool_call("c3", "cancel_subscription", {"user_id": "u1"}, run)
    assert r.executed and r.command_state == "succeeded"

    # What worker two wrote, worker one reads; the write is not run again.
    again = one.handle_tool_call("c3", "cancel_subscription", {"user_id": "u1"}, run)
    assert not again.executed and again.command_state == "succeeded"
    assert again.output == {"ok": True}
    assert [t for t, _ in run.ran].count("cancel_subscription") == 1
    assert one.ledger.version == two.ledger.version
    assert [t.turn for t in one.ledger.turns()] == list(range(1, one.ledger.version + 1))


def test_failover_past_a_dead_url(serve, subscription_pack):
    live = serve("--rules", RULES)
    dead = free_port_url()
    s = taskledger.Session.open([dead, live.url], conversation="f")
    r = s.handle_tool_call("c1", "get_subscription", {"user_id": "u1"}, tools("active"))
    assert r.executed and s.ledger.version == 2

    with pytest.raises(taskledger.Unavailable) as e:
        taskledger.Session.open([dead, free_port_url()], conversation="f")
    assert isinstance(e.value, taskledger.ServiceError) and e.value.status == 0


def test_a_hung_service_times_out_and_fails_over(serve):
    live = serve("--rules", RULES)
    with socket.socket() as hung:  # takes connections, never answers
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)
        hung_url = f"http://127.0.0.1:{hung.getsockname()[1]}"
        t0 = time.monotonic()
        s = taskledger.Session.open([hung_url, live.url], conversation="h", timeout=0.5)
        assert 0.5 <= time.monotonic() - t0 < 2.0 and s.ledger.version == 0
        with pytest.raises(taskledger.Unavailable):
            taskledger.Session.open(hung_url, conversation="h", timeout=0.3)


def test_a_process_dying_between_calls_fails_over(serve, subscription_pack, tenant):
    args = ["--rules", RULES, *store_args("redis", tenant)]
    a, b = serve(*args), serve(*args)
    s = taskledger.Session.open([a.url, b.url], conversation="k")
    run = tools("active")
    s.handle_tool_call("c1", "get_subscription", {"user_id": "u1"}, run)
    a.stop()  # SIGKILL: its kept-alive connection dies with it
    s.handle_tool_call("c2", "verify_identity", {"user_id": "u1"}, run)
    r = s.handle_tool_call("c3", "cancel_subscription", {"user_id": "u1"}, run)
    assert r.executed and r.command_state == "succeeded"
    assert s.ledger.head.conditions == {"identity_verified": True}


def test_a_service_lost_while_the_tool_ran_hands_back_its_output(serve):
    service = serve("--rules", RULES)
    s = taskledger.Session.open(service.url, conversation="lost")

    def tool(call):
        service.stop()  # SIGKILL while the call runs: the outcome cannot be reported
        return {"status": "active"}

    with pytest.raises(taskledger.Unavailable) as e:
        s.handle_tool_call("c1", "get_subscription", {"user_id": "u1"}, tool)
    r = e.value.call_result
    assert r.executed and r.output == {"status": "active"} and r.decision.allowed


def tokens_file(tmp_path, *lines):
    path = tmp_path / "tokens"
    path.write_text("".join(
        f"{tenant} {hashlib.sha256(token.encode()).hexdigest()}{' operator' if op else ''}\n"
        for tenant, token, op in lines))
    return str(path)


def test_tokens_statuses_become_exceptions(serve, tmp_path, subscription_pack):
    tokens = tokens_file(tmp_path, ("acme", "agent-secret", False), ("acme", "ops-secret", True))
    service = serve("--rules", RULES, "--tokens", tokens, "--max-body-bytes", "4096")

    for token in (None, "wrong-secret"):
        with pytest.raises(taskledger.Unauthorized) as e:
            taskledger.Session.open(service.url, token=token, conversation="t")
        assert e.value.status == 401

    s = taskledger.Session.open(service.url, token="agent-secret", conversation="t")
    assert s.tenant == "acme"
    with pytest.raises(taskledger.Forbidden) as e:
        s.approve("call|x", reason="not an operator")
    assert e.value.status == 403

    ops = taskledger.Session.open(service.url, token="ops-secret", conversation="t")
    with pytest.raises(taskledger.NotFound) as e:
        ops.approve("call|no-such-command", reason="looks fine")
    assert isinstance(e.value, taskledger.ServiceError) and e.value.status == 404

    before = s.ledger.version
    with pytest.raises(taskledger.PayloadTooLarge) as e:
        s.record_user_message("x" * 10_000)
    assert isinstance(e.value, taskledger.LimitExceeded) and e.value.status == 413
    assert s.ledger.version == before  # nothing written

    with pytest.raises(taskledger.InvalidArgument):
        s.handle_tool_call("", "get_subscription", {}, tools("active"))  # no call id
    assert s.ledger.version == before


def test_a_session_pinned_to_another_pack_is_refused(serve, subscription_pack, retail_pack):
    service = serve("--rules", RULES)
    run = tools("active")
    s = taskledger.Session.open(service.url, conversation="p", pack=retail_pack)
    with pytest.raises(taskledger.FailedPrecondition, match="pack version"):
        s.handle_tool_call("c1", "get_subscription", {"user_id": "u1"}, run)
    right = taskledger.Session.open(service.url, conversation="p", pack=subscription_pack)
    right.handle_tool_call("c2", "verify_identity", {"user_id": "u1"}, run)
    # A write the service leased to the wrong-pack session is handed back, not run.
    with pytest.raises(taskledger.FailedPrecondition, match="pack version"):
        s.handle_tool_call("c3", "cancel_subscription", {"user_id": "u1"}, run)
    assert [t for t, _ in run.ran] == ["verify_identity"]
    [cmd] = right.commands()
    assert cmd["state"] == "failed" and "another pack version" in cmd["last_error"]


def test_open_store_by_url_and_bad_arguments(serve):
    service = serve("--rules", RULES)
    store = taskledger.open_store(service.url + "/")
    assert isinstance(store, taskledger.ServiceStore) and store.ready()
    s = taskledger.Session.open(store, conversation="o")
    assert s.conversation == "o" and s.ledger.version == 0  # opening commits nothing
    with pytest.raises(taskledger.InvalidArgument):
        taskledger.open_store("ftp://127.0.0.1:1")
    with pytest.raises(taskledger.FailedPrecondition, match="tenant"):
        taskledger.Session.open(store, tenant="other", conversation="o")
    assert taskledger.Session.open(store, tenant="default", conversation="o").tenant == "default"
    named = taskledger.Session.open(store)  # the service names a new conversation
    assert named.conversation and named.conversation != "o" and named.ledger.version == 0
    with pytest.raises(taskledger.InvalidArgument, match="conversation"):
        taskledger.Session.open(taskledger.MemoryStore(), pack=None)
    with pytest.raises(taskledger.InvalidArgument, match="command_store"):
        taskledger.Session.open(store, conversation="o",
                                command_store=taskledger.MemoryCommandStore())
    with pytest.raises(taskledger.InvalidArgument, match="service URL"):
        taskledger.open_store("memory", token="t")
    assert isinstance(taskledger.open_store("memory"), taskledger.Store)
    assert not taskledger.open_store(free_port_url()).ready()


def make_tls(tmp_path):
    """A CA and a certificate for 127.0.0.1 it signed (openssl CLI)."""
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=tmp_path)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1",
            "-subj", "/CN=taskledger-test-ca")
    openssl("req", *ec, "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=127.0.0.1")
    (tmp_path / "ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "srv.pem", "-days", "1", "-extfile", "ext")
    return tmp_path / "ca.pem", tmp_path / "srv.pem", tmp_path / "srv.key"


def test_https_with_a_ca_file(serve, tmp_path):
    ca, cert, key = make_tls(tmp_path)
    service = serve("--rules", RULES, "--tls-cert", str(cert), "--tls-key", str(key))
    assert service.url.startswith("https://")
    s = taskledger.Session.open(service.url, ca_file=str(ca), conversation="tls")
    r = s.handle_tool_call("c1", "get_subscription", {"user_id": "u1"}, tools("active"))
    assert r.executed and s.ledger.head.facts == {"subscription_status": "active"}

    # Without the CA the certificate is not trusted: refused, never sent in clear.
    with pytest.raises(taskledger.ServiceError, match="TLS|certificate"):
        taskledger.Session.open(service.url, conversation="tls")


def test_many_conversations_concurrently_through_aio(serve):
    # One ServiceStore shared by 20 conversations running at once (asyncio
    # worker threads, each with its own connections).
    service = serve("--rules", RULES)
    store = taskledger.open_store(service.url)
    run = tools("active")

    async def conversation(n):
        s = await aio.open_session(store, conversation=f"a{n}")
        await aio.record_user_message(s, "cancel please")
        for call_id, tool in (("c1", "get_subscription"), ("c2", "cancel_subscription"),
                              ("c3", "verify_identity"), ("c4", "cancel_subscription")):
            r = await aio.handle_tool_call(s, call_id, tool, {"user_id": f"u{n}"}, run)
        return r, await aio.end_turn(s)

    async def main():
        return await asyncio.gather(*(conversation(n) for n in range(20)))

    results = asyncio.run(main())
    assert all(r.executed and r.command_state == "succeeded" for r, _ in results)
    assert len({version for _, version in results}) == 1  # no conversation saw another's turns
    keys = [k for tool, k in run.ran if tool == "cancel_subscription"]
    assert len(keys) == 20 and len(set(keys)) == 20


def test_state_and_turn_from_dict_round_trip_and_refuse_garbage(subscription_pack):
    s = taskledger.Session.open(taskledger.MemoryStore(), conversation="rt", pack=subscription_pack)
    s.record_user_message("my email is ann@example.com")
    s.handle_tool_call("c1", "get_subscription", {"user_id": "u1"}, tools("grace_period"))
    s.end_turn()
    head, [turn] = s.ledger.head, s.ledger.turns()
    again = taskledger.State.from_dict(head.to_dict())
    assert again.to_dict() == head.to_dict() and again.render() == head.render()
    assert taskledger.Turn.from_dict(turn.to_dict()).to_dict() == turn.to_dict()
    for bad in ({}, [], "state", {"version": "1"}):
        with pytest.raises(taskledger.Corruption):
            taskledger.State.from_dict(bad)
        with pytest.raises(taskledger.Corruption):
            taskledger.Turn.from_dict(bad)


@pytest.fixture
def own_redis(tmp_path):
    """A redis-server of this test alone (it gets paused)."""
    if not shutil.which("redis-server") or not shutil.which("redis-cli"):
        pytest.skip("redis-server / redis-cli not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        if subprocess.run(["redis-cli", "-p", str(port), "PING"], capture_output=True,
                          text=True).stdout.strip() == "PONG":
            break
        time.sleep(0.02)
    yield port
    proc.kill()
    proc.wait()


def test_too_many_requests_of_one_tenant_is_429(serve, own_redis):
    service = serve("--rules", RULES, "--store", f"redis://127.0.0.1:{own_redis}",
                    "--max-concurrent-per-tenant", "1")
    taskledger.Session.open(service.url, conversation="busy")
    # Redis paused: the first request holds the tenant's one slot while its
    # store call waits; the second is turned away at once, whichever it is.
    subprocess.run(["redis-cli", "-p", str(own_redis), "CLIENT", "PAUSE", "1200", "ALL"],
                   check=True, capture_output=True)
    errors = []

    def request():
        try:
            taskledger.open_store(service.url).client.post("/v1/versions", {"conversation": "busy"})
            errors.append(None)
        except taskledger.ServiceError as e:
            errors.append(e)

    threads = [threading.Thread(target=request) for _ in range(2)]
    for t in threads:
        t.start()
        time.sleep(0.2)
    for t in threads:
        t.join()  # the pause ends by itself (an UNPAUSE would wait for it too)
    refused = [e for e in errors if isinstance(e, taskledger.TooManyRequests)]
    assert len(errors) == 2 and len(refused) == 1, errors
    assert refused[0].status == 429 and isinstance(refused[0], taskledger.LimitExceeded)
