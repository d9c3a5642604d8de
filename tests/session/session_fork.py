"""session_fork.py: the Python Session's fork(n) and snapshot(name)
against a real serve (case `fork` of session_test.sh): forks are Session
objects that see the parent's files, differ in os.urandom and not in
what the parent wrote before; a session not saveable is refused.
usage: session_fork.py REDIS_URL"""
import sys

import airlock

c = airlock.Client(sys.argv[1])
with c.session(template="python", ttl_s=60, saveable=True) as s:
    assert s.record["saveable"] is True, s.record
    s.write_file("w/p.txt", "parent\n")
    forks = s.fork(2)
    try:
        assert len(forks) == 2
        rnd = set()
        for i, f in enumerate(forks):
            assert f.record["state"] == "alive", f.record
            assert f.read_file("w/p.txt") == b"parent\n"
            rnd.add(f.exec(["python3", "-c",
                            "import os; print(os.urandom(16).hex())"]).stdout)
            f.write_file("w/f%d" % i, "x")
        assert len(rnd) == 2, rnd
        assert forks[0].exec("ls w").stdout == b"f0\np.txt\n"
        print("python fork: fork_ms %s" % [f.record["fork_ms"] for f in forks])
    finally:
        for f in forks:
            f.close()
with c.session(template="python", ttl_s=60) as p:
    try:
        p.fork(1)
        raise AssertionError("a session not saveable was forked")
    except airlock.SessionError as e:
        assert "not created saveable" in str(e), e
print("python session fork: ok")
