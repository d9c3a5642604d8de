#!/usr/bin/python3
"""bench_session.py: what a session costs, against a running `airlock serve`
with workers.max_sessions > 0 (docs/sessions.md, docs/performance.md).

Prints p50/p99 of: create (a warm hand-off or restore, to the record
answered), the exec round trip of `true` and of `python3 -c 'print(1)'` in
a live session (submit to result read, through Redis), and the same two
commands as one-shot jobs (Client.run: a fresh VM each) for comparison.

usage: PYTHONPATH=clients/python tools/bench/bench_session.py REDIS_URL [N [PAUSE_S]]
       PYTHONPATH=clients/python tools/bench/bench_session.py REDIS_URL \
           --fork [ROUNDS [SERVE_PID]]

       PYTHONPATH=clients/python tools/bench/bench_session.py REDIS_URL \
           --hibernate [ROUNDS [M [SERVE_PID]]]

--hibernate: a session with hibernate_s=1 hibernated and resumed ROUNDS
times (hibernate_ms, resumed_ms, the exec that resumed it), then, given
serve's pid, M sessions hibernated at once: the PSS and memfds of
serve's tree they add.

--fork: saveable sessions (docs/sessions.md "Snapshot and fork"): the
create of a saveable session against a plain one, the snapshot save, the
time of each fork of ROUNDS rounds of `fork -n 1` and of `fork -n 4`
(fork_ms: the request to the fork's VM ready), and, given the serve's
pid (run as root), the PSS of 4 idle plain and 4 idle saveable sessions
(all of serve's descendants, /proc/PID/smaps_rollup).

PAUSE_S between creates lets a spare session process (sessions.spare)
warm up again, so each create measures the warm hand-off.

AIRLOCK_BENCH_POLL_MS=N: the Python client waits for an exec's end by
reading its record every 50 ms, which puts a 50 ms step into every exec
round trip (runs alternate between two modes 50 ms apart). With N, the
client's session module polls every N ms instead, so the figures measure
the server and the VM, not that interval; the table says which was used.
"""
import os
import statistics
import sys
import time

import airlock
import airlock.session


def fine_poll():
    """AIRLOCK_BENCH_POLL_MS: the session module's sleeps capped to it."""
    ms = float(os.environ.get("AIRLOCK_BENCH_POLL_MS") or 0)
    if ms <= 0:
        return
    import types
    real = time.sleep
    clock = types.SimpleNamespace(**{k: getattr(time, k) for k in dir(time)
                                     if not k.startswith("_")})
    clock.sleep = lambda s: real(min(s, ms / 1000.0))
    airlock.session.time = clock
    print("(the client's session polls every %g ms)" % ms)


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


def tree_pss_kib(root):
    """PSS (KiB) of root and all its descendants."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    total, todo, memfds = 0, [root], {}
    while todo:
        p = todo.pop()
        todo += kids.get(p, [])
        try:
            with open("/proc/%d/smaps_rollup" % p) as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
            for fd in os.listdir("/proc/%d/fd" % p):
                path = "/proc/%d/fd/%s" % (p, fd)
                if os.readlink(path).startswith("/memfd:"):
                    st = os.stat(path)
                    memfds[st.st_ino] = st.st_blocks * 512 // 1024
        except OSError:
            pass
    # a memfd's pages are RAM whether or not a process maps them (PSS
    # counts only the mapped ones): its allocated size, once per memfd
    return total, sum(memfds.values())


def fork_bench(c, rounds, serve_pid):
    plain, saveable, saves = [], [], []
    for _ in range(rounds):
        ms, s = timed(lambda: c.session(template="python", ttl_s=120))
        plain.append(ms)
        s.close()
        ms, s = timed(lambda: c.session(template="python", ttl_s=120,
                                        saveable=True))
        saveable.append(ms)
        s.close()
    row("create, plain (client round trip)", plain)
    row("create, saveable (client round trip)", saveable)
    one, four, one_s = [], [], []
    with c.session(template="python", ttl_s=600, saveable=True) as s:
        s.write_file("w/a.txt", "a" * 100000)
        for i in range(rounds):
            t = time.monotonic()
            r = s.snapshot("bench-save-%d-%d" % (os.getpid(), i))
            saves.append(r["save_ms"])
            for f in s.fork(1):
                one.append(f.record["fork_ms"])
                f.close()
            for f in s.fork(1, saveable=True):
                one_s.append(f.record["fork_ms"])
                f.close()
            fs = s.fork(4)
            four += [f.record["fork_ms"] for f in fs]
            for f in fs:
                f.close()
        for i in range(rounds):  # only root on the host can rm them
            print("(remove: airlock snapshot rm bench-save-%d-%d)" %
                  (os.getpid(), i))
    row("snapshot save (save_ms, guest paused)", saves)
    row("fork -n 1: fork_ms", one)
    row("fork -n 1 --saveable: fork_ms", one_s)
    row("fork -n 4: fork_ms of each", four)
    if serve_pid:
        for name, kw in (("plain", {}), ("saveable", {"saveable": True})):
            base = tree_pss_kib(serve_pid)
            ss = [c.session(template="python", ttl_s=300, **kw)
                  for _ in range(4)]
            time.sleep(3)
            now = tree_pss_kib(serve_pid)
            print("an idle %-9s session: PSS %6.1f MiB, memfds held "
                  "%6.1f MiB (4 at once, serve's tree)" % (
                      name, (now[0] - base[0]) / 4.0 / 1024.0,
                      (now[1] - base[1]) / 4.0 / 1024.0))
            for x in ss:
                x.close()


def wait_hibernated(s, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        rec = s.get()
        if rec.get("hibernated") is True:
            return rec
        time.sleep(0.1)
    raise RuntimeError("%s did not hibernate: %r" % (s.id, s.get()))


def hibernate_bench(c, rounds, serve_pid, m):
    hib, res, rtt = [], [], []
    with c.session(template="python", ttl_s=900, hibernate_s=1) as s:
        s.write_file("w/a.txt", "a" * 100000)
        for _ in range(rounds):
            rec = wait_hibernated(s)
            hib.append(rec["hibernate_ms"])
            ms, r = timed(lambda: s.exec("cat w/a.txt > /dev/null"))
            assert r.status == "OK", r.record
            rtt.append(ms)
            res.append(int(r.record["resumed_ms"]))
    row("hibernate (save + VMM end: hibernate_ms)", hib)
    row("resume (resumed_ms, in the exec's record)", res)
    row("  the exec round trip that resumed it", rtt)
    if not serve_pid:
        return
    base = tree_pss_kib(serve_pid)
    ss = [c.session(template="python", ttl_s=900, hibernate_s=1)
          for _ in range(m)]
    for x in ss:
        wait_hibernated(x)
    time.sleep(1)
    now = tree_pss_kib(serve_pid)
    print("%d hibernated sessions: PSS %.1f MiB, memfds held %.1f MiB in "
          "all (%.1f + %.1f MiB each; serve's tree)" % (
              m, (now[0] - base[0]) / 1024.0, (now[1] - base[1]) / 1024.0,
              (now[0] - base[0]) / 1024.0 / m,
              (now[1] - base[1]) / 1024.0 / m))
    for x in ss:
        x.close()


if __name__ == "__main__":
    fine_poll()
    if len(sys.argv) > 2 and sys.argv[2] == "--hibernate":
        hibernate_bench(airlock.Client(sys.argv[1]),
                        int(sys.argv[3]) if len(sys.argv) > 3 else 5,
                        int(sys.argv[5]) if len(sys.argv) > 5 else 0,
                        int(sys.argv[4]) if len(sys.argv) > 4 else 4)
    elif len(sys.argv) > 2 and sys.argv[2] == "--fork":
        fork_bench(airlock.Client(sys.argv[1]),
                   int(sys.argv[3]) if len(sys.argv) > 3 else 5,
                   int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    else:
        main()
