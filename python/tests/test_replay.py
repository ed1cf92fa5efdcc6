"""The tau-bench retail traces replayed from Python give exactly the CLI's
decisions (`taskledger replay ... --json`), call by call."""

import json
import os
import subprocess

import pytest

import taskledger

CLI = os.environ.get("TASKLEDGER_CLI", "")


@pytest.mark.parametrize("trace", ["retail_gold.jsonl", "retail_violations.jsonl"])
def test_replay_matches_the_cli(root, retail_pack, trace):
    if not CLI:
        pytest.skip("TASKLEDGER_CLI is not set (the ctest registration sets it)")
    path = root / "tests" / "data" / "tau-bench-retail" / trace
    out = subprocess.run([CLI, "replay", str(path), "--rules", str(root / "rules" / "retail"),
                          "--json"], check=True, capture_output=True, text=True).stdout
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    cli = [(d["conversation"], d["call_id"], d["tool"], d["decision"], d["rule"], d["reason"],
            d["version_seen"], d["executed"]) for d in lines if "call_id" in d]
    py = []
    for conv in taskledger.replay(str(path), retail_pack):
        assert "error" not in conv, conv
        py += [(conv["conversation"], c["call_id"], c["tool"], c["decision"], c["rule"],
                c["reason"], c["version_seen"], c["executed"])
               for c in conv["calls"] if not c["read_only"]]
    assert len(cli) > 500
    assert py == cli
    assert any(d[3] == "deny" for d in py)
