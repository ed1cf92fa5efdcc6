"""Every example under python/examples runs and reaches its stated end,
in a fresh interpreter, the agent loops also unchanged against a real
`taskledger serve`; the auditor reads back a conversation an example wrote
to a real redis-server."""

import pathlib
import subprocess
import sys
import uuid

import pytest

from conftest import REDIS_URL, RULES

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def run(*args):
    p = subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_quickstart():
    out = run(EXAMPLES / "quickstart.py")
    assert out.startswith("blocked subscription.identity_verified")
    assert "verify_identity" in out
    assert "Current Task State:\nFacts:\n- subscription_status: grace_period" in out


@pytest.mark.parametrize("example", ["openai_chat_loop.py", "anthropic_loop.py"])
def test_agent_loops(example):
    out = run(EXAMPLES / example)
    assert "loop complete: blocked once, then allowed" in out
    assert "the model is told:" in out


@pytest.mark.parametrize("example", ["openai_chat_loop.py", "anthropic_loop.py"])
def test_agent_loops_unchanged_on_a_service(example, serve):
    # The same example, its store a `taskledger serve` URL (docs/python.md).
    service = serve("--rules", RULES, "--tenant", "examples")
    out = run(EXAMPLES / example, "--store", service.url)
    assert "loop complete: blocked once, then allowed" in out
    assert ": blocked by subscription." in out


def test_auditor_reads_a_redis_conversation():
    if not REDIS_URL:
        pytest.skip("TASKLEDGER_TEST_REDIS_URL is not set (scripts/test sets it)")
    conversation = "audit-" + uuid.uuid4().hex[:8]
    run(EXAMPLES / "openai_chat_loop.py", "--store", REDIS_URL, "--conversation", conversation)
    out = run(EXAMPLES / "auditor.py", REDIS_URL, "examples", conversation)
    assert "== version 1" in out
    assert "downgrade_subscription -> deny [subscription.identity_verified]" in out
    assert "downgrade_subscription -> allow" in out
    assert "verified" in out and "identity_verified" in out


def test_the_readme_python_example(root):
    # The README's 30-second example exactly as printed, run from the root.
    readme = (root / "README.md").read_text(encoding="utf-8")
    code = readme.split("```python\n", 1)[1].split("```", 1)[0]
    p = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("blocked subscription.identity_verified - ")
    assert "call verify_identity first" in p.stdout
    assert "Current Task State:\nFacts:\n- subscription_status: grace_period\n" in p.stdout
