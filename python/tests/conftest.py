"""Fixtures of the taskledger Python tests: the repository root, the rule
packs, and the two stores every Session test runs against -- the memory
store, a real redis-server (TASKLEDGER_TEST_REDIS_URL) and a real Redis
Cluster (TASKLEDGER_TEST_REDIS_CLUSTER_URL), both exported by scripts/test;
a Redis part is skipped only when its variable is unset, and fails when it
is set but the server does not answer. Each Redis test
uses its own tenant, so tests never see each other's conversations.
"""

import os
import pathlib
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
