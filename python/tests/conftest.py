"""Fixtures of the taskledger Python tests: the repository root, the rule
packs, and the two stores every Session test runs against -- the memory
store, a real redis-server (TASKLEDGER_TEST_REDIS_URL) and a real Redis
Cluster (TASKLEDGER_TEST_REDIS_CLUSTER_URL), both exported by scripts/test,
and `serve`, which starts real `taskledger serve` processes (TASKLEDGER_CLI);
a Redis part is skipped only when its variable is unset, and fails when it
is set but the server does not answer. Each Redis test
uses its own tenant, so tests never see each other's conversations.
"""

import os
import pathlib
import signal
import subprocess
import time
import uuid

import pytest

import taskledger

ROOT = pathlib.Path(os.environ.get("TASKLEDGER_ROOT", pathlib.Path(__file__).resolve().parents[2]))
REDIS_URL = os.environ.get("TASKLEDGER_TEST_REDIS_URL", "")
CLUSTER_URL = os.environ.get("TASKLEDGER_TEST_REDIS_CLUSTER_URL", "")


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def subscription_pack():
    return taskledger.RulePack.load(str(ROOT / "rules" / "subscription"))


@pytest.fixture(scope="session")
def retail_pack():
    return taskledger.RulePack.load(str(ROOT / "rules" / "retail"))


@pytest.fixture(params=["memory", "redis", "cluster"])
def store(request):
    if request.param == "memory":
        return taskledger.MemoryStore()
    if request.param == "cluster":
        # A Redis Cluster (scripts/redis-cluster; scripts/test starts one).
        if not CLUSTER_URL:
            pytest.skip("TASKLEDGER_TEST_REDIS_CLUSTER_URL is not set (scripts/test sets it)")
        return taskledger.open_store(CLUSTER_URL)
    if not REDIS_URL:
        pytest.skip("TASKLEDGER_TEST_REDIS_URL is not set (scripts/test sets it)")
    return taskledger.open_store(REDIS_URL)


@pytest.fixture(params=["memory", "redis"])
def command_store(request):
    """The memory command store and one on a real redis-server."""
    if request.param == "memory":
        return taskledger.MemoryCommandStore()
    if not REDIS_URL:
        pytest.skip("TASKLEDGER_TEST_REDIS_URL is not set (scripts/test sets it)")
    return taskledger.open_command_store(REDIS_URL)


@pytest.fixture
def tenant():
    return "pytest-" + uuid.uuid4().hex[:12]


def subscription_tools(call):
    """The quickstart's tools: a subscription in its grace period."""
    if call.tool == "get_subscription":
        return {"status": "grace_period", "days_remaining": 5}
    if call.tool == "verify_identity":
        return {"verified": True}
    return {"ok": True}


CLI = os.environ.get("TASKLEDGER_CLI", str(ROOT / "build" / "cli" / "taskledger"))
RULES = str(ROOT / "rules" / "subscription")


class Serve:
    """One `taskledger serve` process; `url` once it listens."""

    def __init__(self, tmp_path, *args):
        self.log = tmp_path / f"serve-{uuid.uuid4().hex[:8]}.log"
        with open(self.log, "w") as err:
            self.proc = subprocess.Popen([CLI, "serve", "--listen", "127.0.0.1:0", *args],
                                         stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            text = self.log.read_text()
            if "listening on " in text:
                self.url = text.split("listening on ", 1)[1].split(",", 1)[0]
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        self.stop()
        raise AssertionError(f"taskledger serve did not start: {self.log.read_text()}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)


@pytest.fixture
def serve(tmp_path):
    started = []

    def start(*args):
        s = Serve(tmp_path, *args)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()
