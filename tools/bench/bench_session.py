#!/usr/bin/python3
"""bench_session.py: what a session costs, against a running `airlock serve`
with workers.max_sessions > 0 (docs/sessions.md, docs/performance.md).

Prints p50/p99 of: create (a warm hand-off or restore, to the record
answered), the exec round trip of `true` and of `python3 -c 'print(1)'` in
a live session (submit to result read, through Redis), and the same two
commands as one-shot jobs (Client.run: a fresh VM each) for comparison.

usage: PYTHONPATH=clients/python tools/bench/bench_session.py REDIS_URL [N [PAUSE_S]]

PAUSE_S between creates lets a spare session process (sessions.spare)
warm up again, so each create measures the warm hand-off.
"""
import statistics
import sys
import time

import airlock


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def row(name, xs):
    print("%-40s n=%-3d p50 %8.1f ms   p99 %8.1f ms   mean %8.1f ms" % (
        name, len(xs), pct(xs, 50), pct(xs, 99), statistics.mean(xs)))


def timed(fn):
    t = time.monotonic()
    r = fn()
    return (time.monotonic() - t) * 1000.0, r


def main():
    url = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    pause = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    c = airlock.Client(url)
    creates, restores = [], []
    for _ in range(n):
        time.sleep(pause)  # sessions.spare: let the next spare warm up
        ms, s = timed(lambda: c.session(template="python", ttl_s=120))
        creates.append(ms)
        restores.append(s.record.get("restore_ms", 0))
        s.close()
    row("session create (client round trip)", creates)
    row("  of which VM ready (restore_ms)", restores)
    with c.session(template="python", ttl_s=600) as s:
        s.exec("true")  # the first exec warms the agent's paths
        for name, cmd in (("true", ["true"]),
                          ("python3 -c 'print(1)'",
                           ["python3", "-c", "print(1)"])):
            xs = []
            for _ in range(n):
                ms, r = timed(lambda: s.exec(cmd))
                assert r.status == "OK", r.record
                xs.append(ms)
            row("session exec %s" % name, xs)
    for name, cmd in (("true", ["true"]),
                      ("python3 -c 'print(1)'", ["python3", "-c", "print(1)"])):
        xs = []
        for _ in range(n):
            ms, r = timed(lambda: c.run(cmd, template="python", timeout=120))
            xs.append(ms)
        row("one-shot job %s" % name, xs)


if __name__ == "__main__":
    main()
