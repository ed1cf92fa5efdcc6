"""bench_python (Python half): `scripts/bench python` runs this with the
taskledger package on PYTHONPATH. It measures Session.handle_tool_call and
PolicyChecker.check from Python on the fixture of bench/bench_python.cc,
then runs that C++ executable for the same calls in C++, and prints one JSON
line (last line of stdout):
{"py_handle_tool_call_p50_us", "cpp_handle_tool_call_p50_us",
 "py_check_p50_us", "cpp_check_p50_us", "handle_ratio", "check_ratio",
 "goal_met", "iterations"}. The goal: the Python call costs at most
1.5x the C++ call plus 2 us. Single-threaded.

Usage: bench_python.py --cpp PATH --rules DIR [--iterations N]
"""

import argparse
import json
import statistics
import subprocess
import time

import taskledger


def tools(call):
    if call.tool == "get_subscription":
        return {"status": "grace_period", "days_remaining": 5}
    return {"verified": True}


def fresh(store, pack, n):
    s = taskledger.Session.open(store, tenant="bench", conversation=f"c{n}", pack=pack)
    s.handle_tool_call("g", "get_subscription", {"user_id": "u1"}, tools)
    s.handle_tool_call("v", "verify_identity", {"user_id": "u1"}, tools)
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpp", required=True)
    ap.add_argument("--rules", required=True)
    ap.add_argument("--iterations", type=int, default=20000)
    args = ap.parse_args()
    pack = taskledger.RulePack.load(args.rules)
    store = taskledger.MemoryStore()
    clock = time.perf_counter_ns
    n = 0
    s = fresh(store, pack, n)
    handle = []
    args_get = {"user_id": "u1"}
    for i in range(args.iterations):
        if i % 200 == 199:
            n += 1
            s = fresh(store, pack, n)
        t0 = clock()
        r = s.handle_tool_call("c", "get_subscription", args_get, tools)
        handle.append((clock() - t0) / 1000)
        assert r.executed
    checker = taskledger.PolicyChecker(pack)
    state = fresh(store, pack, n + 1).ledger.working
    cancel = taskledger.Call("x", "cancel_subscription", {"user_id": "u1"})
    check = []
    for _ in range(args.iterations):
        t0 = clock()
        d = checker.check(cancel, state, now_ms=1_700_000_000_000)
        check.append((clock() - t0) / 1000)
        assert not d.allowed
    out = subprocess.run([args.cpp, args.rules, "--iterations", str(args.iterations)],
                         check=True, capture_output=True, text=True).stdout
    cpp = json.loads(out.strip().splitlines()[-1])
    py_handle = statistics.median(handle)
    py_check = statistics.median(check)
    c_handle = cpp["cpp_handle_tool_call_p50_us"]
    c_check = cpp["cpp_check_p50_us"]
    result = {
        "py_handle_tool_call_p50_us": round(py_handle, 2),
        "cpp_handle_tool_call_p50_us": round(c_handle, 2),
        "py_check_p50_us": round(py_check, 2),
        "cpp_check_p50_us": round(c_check, 2),
        "handle_ratio": round(py_handle / c_handle, 3),
        "check_ratio": round(py_check / c_check, 3),
        "goal_met": py_handle <= 1.5 * c_handle + 2 and py_check <= 1.5 * c_check + 2,
        "iterations": args.iterations,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
