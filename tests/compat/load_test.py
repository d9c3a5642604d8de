#!/usr/bin/env python3
"""load_test.py: N concurrent HumanEval programs on /run_code, then on
/api/v2/execute, each held until its job is done (tools/bench/
bench_doors.py does the requests): 0 lost, 0 errors, every canonical
solution passes.

usage: load_test.py BASE_URL [N]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools", "bench"))
import bench_doors  # noqa: E402

url, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 256
progs = bench_doors.programs(bench_doors.os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "datasets",
    "HumanEval.jsonl.gz"), n)
for name, fn in (("run_code", bench_doors.run_code),
                 ("piston", bench_doors.piston)):
    r = bench_doors.measure(name, lambda p, i, f=fn: f(url, p, 3600),
                            progs, n)
    if r["lost"] or r["errors"] or r["passed"] != n:
        sys.exit(f"load: FAIL: {name}: {r}")
print("load: ok")
