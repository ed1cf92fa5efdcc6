"""What a Python agent pays for a service: one gated call (handle_tool_call)
in process against the same call through `taskledger serve` on loopback
(keep-alive), for a read and for a leased write, on the memory store. Over
HTTP each call is two requests (propose, then the outcome of the tool the
client ran). In process, each call is followed by end_turn() so both sides
commit what they decided (the service commits every request). Ten calls per
conversation. Last line JSON.

    PYTHONPATH=build/python /usr/bin/python3 python/bench/service.py \\
        --cli build/cli/taskledger --rules rules/subscription [--samples 2000]
"""

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

import taskledger


def tool(call, idempotency_key=None):
    if call.tool == "get_subscription":
        return {"status": "active"}
    if call.tool == "verify_identity":
        return {"verified": True}
    return {"ok": True}


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def timed(open_session, samples, write, commit):
    """Times `samples` calls; a conversation takes 10 of them (the service's
    startup guard on a write proposal lists every command of the run, so a
    run's writes get slower as it grows: docs/python.md)."""
    out = []
    for i in range(samples):
        if i % 10 == 0:
            session = open_session(i)
            session.handle_tool_call("v", "verify_identity", {"user_id": "u"}, tool)
            session.handle_tool_call("g", "get_subscription", {"user_id": "u"}, tool)
            if commit:
                session.end_turn()
        name = "cancel_subscription" if write else "get_subscription"
        t0 = time.perf_counter_ns()
        r = session.handle_tool_call(f"c{i}", name, {"user_id": f"u{i}"}, tool)
        if commit:
            session.end_turn()
        out.append((time.perf_counter_ns() - t0) / 1000)
        assert r.executed, r.message
    return out


def start_serve(cli, rules, log):
    proc = subprocess.Popen([cli, "serve", "--rules", rules, "--listen", "127.0.0.1:0"],
                            stdout=subprocess.DEVNULL, stderr=log)
    for _ in range(500):
        text = pathlib.Path(log.name).read_text()
        if "listening on " in text:
            return proc, text.split("listening on ", 1)[1].split(",", 1)[0]
        time.sleep(0.02)
    proc.kill()
    sys.exit("bench_service: taskledger serve did not start: " + text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--rules", required=True)
    ap.add_argument("--samples", type=int, default=2000)
    a = ap.parse_args()
    pack = taskledger.RulePack.load(a.rules)
    result = {}
    with tempfile.NamedTemporaryFile("w", suffix=".log") as log:
        proc, url = start_serve(a.cli, a.rules, log)
        try:
            for kind, write in (("read", False), ("write", True)):
                store, commands = taskledger.MemoryStore(), taskledger.MemoryCommandStore()
                mine = timed(lambda i: taskledger.Session.open(
                    store, conversation=f"{kind}-{i}", pack=pack, command_store=commands),
                    a.samples, write, commit=True)
                theirs = timed(lambda i: taskledger.Session.open(url, conversation=f"{kind}-{i}"),
                               a.samples, write, commit=False)
                p50, p99 = percentile(mine, 0.5), percentile(mine, 0.99)
                result[f"{kind}_in_process_p50_us"] = round(p50, 1)
                result[f"{kind}_service_p50_us"] = round(percentile(theirs, 0.5), 1)
                result[f"{kind}_service_p99_us"] = round(percentile(theirs, 0.99), 1)
                result[f"{kind}_added_p50_us"] = round(percentile(theirs, 0.5) - p50, 1)
                result[f"{kind}_added_p99_us"] = round(percentile(theirs, 0.99) - p99, 1)
        finally:
            proc.kill()
            proc.wait()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
