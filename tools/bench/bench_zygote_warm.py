#!/usr/bin/python3
"""bench_zygote_warm.py: what the zygote's warm-up (docs/zygote.md,
"Warm-up"; [pool] warm_zygote) saves a job that meets a warm clone.

Two `airlock serve`s on one private redis-server (a unix socket), each
with one worker, `[pool] warm = python:1`, on queues of their own: one
with warm_zygote = true, one with false. HumanEval canonical programs as
`python3 p.py` jobs go to them in turn (program i to one, then to the
other, the order swapped every program), one at a time, GAP seconds
apart so that each meets a warm clone; both serves idle together, so both
kinds meet the same load. Prints the means and p50s of the job's run_ms,
the step's CPU and wall time, and the ratio; writes the same as JSON.

usage: tools/bench/bench_zygote_warm.py [--airlock BIN] [--state-dir DIR]
           [--dataset FILE] [--jobs N] [--gap S] [--json FILE]

Needs the python image built in the state dir (tools/quickstart.sh or
`airlock image build python`), root (the jail), redis-server.
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", ".."))


def conf(d, sock, state, warm):
    path = os.path.join(d, "warm-%s.conf" % ("on" if warm else "off"))
    with open(path, "w") as f:
        f.write("[redis]\nurl = unix://%s\n" % sock)
        f.write("[queue]\nname = zw-%s\n" % ("on" if warm else "off"))
        f.write("[sandbox]\nstate_dir = %s\n" % state)
        f.write("[workers]\ncount = 1\nmax_sessions = 0\n")
        f.write("[pool]\nwarm = python:1\nwarm_zygote = %s\n" %
                ("true" if warm else "false"))
        f.write("[metrics]\nlisten =\n")
    return path


def run_job(airlock, cfg, job_id, prog, d):
    job = {"id": job_id, "template": "python", "files": {"p.py": prog},
           "steps": [{"cmd": ["python3", "p.py"]}]}
    path = os.path.join(d, "job.json")
    with open(path, "w") as f:
        json.dump(job, f)
    subprocess.run([airlock, "submit", "--config", cfg, path], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([airlock, "wait", "--config", cfg, job_id],
                   stdout=subprocess.DEVNULL)
    out = subprocess.run([airlock, "result", "--config", cfg, "--json",
                          job_id], check=True, capture_output=True,
                         text=True).stdout
    r = json.loads(out)
    s = r["steps"][0]
    if r["status"] != "OK":
        raise SystemExit("bench: job %s: %s" % (job_id, r["status"]))
    return r["timing"]["run_ms"], s["cpu_ms"], s["wall_ms"]


def summary(rows):
    cols = list(zip(*rows))
    return {k: {"mean": statistics.mean(c), "p50": statistics.median(c)}
            for k, c in zip(("run_ms", "step_cpu_ms", "step_wall_ms"), cols)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--airlock", default=os.path.join(SRC, "build", "tools",
                                                      "airlock"))
    ap.add_argument("--state-dir", default="/var/tmp/airlock-test")
    ap.add_argument("--dataset", default=os.path.join(
        SRC, "datasets", "HumanEval.jsonl.gz"))
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--gap", type=float, default=6.0)
    ap.add_argument("--json")
    a = ap.parse_args()
    probs = [json.loads(l) for l in gzip.open(a.dataset)]
    d = tempfile.mkdtemp(prefix="al-zw-")
    sock = os.path.join(d, "redis.sock")
    redis = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket",
                              sock, "--save", "", "--appendonly", "no",
                              "--dir", d], stdout=subprocess.DEVNULL)
    serves = []
    try:
        for _ in range(100):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        cfgs = {w: conf(d, sock, a.state_dir, w) for w in (True, False)}
        for w in (True, False):
            log = open(os.path.join(d, "serve-%d.log" % w), "w")
            serves.append(subprocess.Popen(
                [a.airlock, "serve", "--config", cfgs[w]], stdout=log,
                stderr=subprocess.STDOUT))
        rows = {True: [], False: []}
        time.sleep(a.gap)
        for i in range(a.jobs):
            p = probs[(i * 7) % len(probs)]
            prog = "%s%s\n\n%s\n\ncheck(%s)\n" % (
                p["prompt"], p["canonical_solution"], p["test"],
                p["entry_point"])
            order = (True, False) if i % 2 == 0 else (False, True)
            for w in order:
                jid = "zw-%s-%d-%d" % ("on" if w else "off", i, os.getpid())
                rows[w].append(run_job(a.airlock, cfgs[w], jid, prog, d))
                print("%-12s run %6d ms  step cpu %6d ms  wall %6d ms" % (
                    ("warm_zygote" if w else "without",) + rows[w][-1]),
                    flush=True)
            time.sleep(a.gap)
    finally:
        for s in serves:
            s.terminate()
        for s in serves:
            try:
                s.wait(timeout=60)
            except subprocess.TimeoutExpired:
                s.kill()
                s.wait()
        redis.terminate()
        redis.wait()
    on, off = summary(rows[True]), summary(rows[False])
    print("zygote warm-up, %d HumanEval jobs each, one at a time, %.0f s "
          "apart" % (a.jobs, a.gap))
    print("%-14s %12s %12s %8s" % ("mean", "warm_zygote", "without",
                                   "ratio"))
    for k in ("run_ms", "step_cpu_ms", "step_wall_ms"):
        print("%-14s %9.1f ms %9.1f ms %7.2fx" % (
            k, on[k]["mean"], off[k]["mean"], on[k]["mean"] / off[k]["mean"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"jobs": a.jobs, "gap_s": a.gap, "warm_zygote": on,
                       "without": off}, f, indent=1)
    subprocess.run(["rm", "-rf", "--", d])
    return 0


if __name__ == "__main__":
    sys.exit(main())
