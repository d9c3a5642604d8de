#!/usr/bin/env python3
"""bench_doors.py: the front doors under RL load (docs/performance.md,
"Front doors under load"): N HumanEval programs (prompt + canonical
solution + test + check(entry_point), as bench_humaneval.c makes them)
POSTed C at a time to a running serve's /run_code (verl's request shape)
and /api/v2/execute (piston-client's), each request held until its job is
done; then the same programs with `runsc --rootless --network=none do
python3 FILE` at the same concurrency, in the same run.

usage: bench_doors.py --url http://HOST:PORT [--n 256] [--concurrency 256]
                      [--doors run_code,piston] [--no-runsc]
                      [--dataset datasets/HumanEval.jsonl.gz]

Per path: requests/s, p50/p99 latency, passes, errors (any answer but 200
with a result, or a result that is our failure: SandboxError, XX), lost
(no answer at all). tests/compat/load_test.py runs
the doors part and asserts 0 lost, 0 errors.
"""
import argparse
import concurrent.futures as cf
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))


def programs(path, n):
    with gzip.open(path, "rt") as f:
        probs = [json.loads(line) for line in f if line.strip()]
    out = []
    for i in range(n):
        p = probs[i % len(probs)]
        out.append(p["prompt"] + p["canonical_solution"] + "\n" + p["test"] +
                   f"\ncheck({p['entry_point']})\n")
    return out


def run_code(url, prog, timeout):
    """verl's call_sandbox_api payload; True when the program passed."""
    r = requests.post(url + "/run_code", timeout=timeout,
                      headers={"Content-Type": "application/json",
                               "Accept": "application/json"},
                      data=json.dumps({
                          "compile_timeout": 10, "run_timeout": 60,
                          "code": prog, "stdin": "", "memory_limit_MB": 1024,
                          "language": "python", "files": {},
                          "fetch_files": []}))
    if r.status_code != 200:
        return r.status_code, False
    j = r.json()
    if j["status"] == "SandboxError":  # ours, not the program's: an error
        return "SandboxError", False
    return 200, j["status"] == "Success"


def piston(url, prog, timeout):
    """piston-client's body (text/plain, as node-fetch sends a string)."""
    r = requests.post(url + "/api/v2/execute", timeout=timeout,
                      data=json.dumps({
                          "language": "python", "version": "3.11.2",
                          "files": [{"content": prog}], "stdin": "",
                          "args": [], "compile_timeout": 10000,
                          "run_timeout": 60000, "compile_memory_limit": -1,
                          "run_memory_limit": -1}))
    if r.status_code != 200:
        return r.status_code, False
    j = r.json()
    if (j.get("run") or {}).get("status") == "XX":  # ours: an error
        return "XX", False
    return 200, j["run"]["code"] == 0


def runsc(prog, tmp, i):
    path = os.path.join(tmp, f"p{i}.py")
    with open(path, "w") as f:
        f.write(prog)
    r = subprocess.run(["/usr/bin/runsc", "--rootless", "--network=none",
                        "do", "/usr/bin/python3", path],
                       env={"PATH": "/usr/bin:/bin"}, capture_output=True,
                       timeout=600)
    return 200, r.returncode == 0


def measure(name, fn, progs, conc):
    lat, codes, passed, lost = [], {}, 0, 0

    def one(i):
        t = time.monotonic()
        try:
            code, ok = fn(progs[i], i)
        except Exception as e:  # no answer: lost
            return None, False, time.monotonic() - t, repr(e)
        return code, ok, time.monotonic() - t, None

    t0 = time.monotonic()
    with cf.ThreadPoolExecutor(max_workers=conc) as ex:
        for code, ok, dt, err in ex.map(one, range(len(progs))):
            if code is None:
                lost += 1
                print(f"{name}: lost: {err}", file=sys.stderr)
                continue
            codes[code] = codes.get(code, 0) + 1
            passed += ok
            lat.append(dt)
    wall = time.monotonic() - t0
    lat.sort()
    pct = (lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000
           if lat else 0)
    res = {"path": name, "n": len(progs), "concurrency": conc,
           "wall_s": round(wall, 1), "rps": round(len(progs) / wall, 2),
           "p50_ms": round(pct(0.50)), "p99_ms": round(pct(0.99)),
           "passed": passed, "errors": sum(v for k, v in codes.items()
                                           if k != 200),
           "codes": codes, "lost": lost}
    print(json.dumps(res), flush=True)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--doors", default="run_code,piston")
    ap.add_argument("--no-runsc", action="store_true")
    ap.add_argument("--dataset", default=os.path.join(
        HERE, "..", "..", "datasets", "HumanEval.jsonl.gz"))
    ap.add_argument("--timeout", type=float, default=3600)
    a = ap.parse_args()
    progs = programs(a.dataset, a.n)
    url = a.url.rstrip("/")
    out = []
    doors = {"run_code": run_code, "piston": piston}
    for d in a.doors.split(","):
        if d:
            out.append(measure(d, lambda p, i, f=doors[d]: f(url, p,
                                                              a.timeout),
                               progs, a.concurrency))
    if not a.no_runsc:
        with tempfile.TemporaryDirectory() as tmp:
            out.append(measure("runsc", lambda p, i: runsc(p, tmp, i),
                               progs, a.concurrency))
    return out


if __name__ == "__main__":
    main()
