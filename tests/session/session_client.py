"""session_client.py: the Python Session (clients/python/airlock/session.py)
against a real serve: context manager, exec, write_file, read_file, extend
refused, reattach by offset, cleanup. usage: session_client.py REDIS_URL"""
import sys

import airlock

c = airlock.Client(sys.argv[1])
with c.session(template="python", ttl_s=60, metadata={"who": "py"}) as s:
    assert s.record["state"] == "alive", s.record
    s.write_file("pkg/main.py", "print(6 * 7)\n")
    r = s.exec("python3 pkg/main.py")
    assert (r.status, r.exit_code, r.stdout) == ("OK", 0, b"42\n"), r.record
    s.write_file("bin.dat", bytes(range(256)))
    assert s.read_file("bin.dat") == bytes(range(256))
    r = s.exec(["sh", "-c", "echo out; echo err >&2; exit 5"])
    assert (r.exit_code, r.stdout, r.stderr) == (5, b"out\n", b"err\n")
    n = s.start("for i in 1 2 3; do echo $i; sleep 0.2; done")
    assert s.wait(n).stdout == b"1\n2\n3\n"
    assert s.read(n, 1, 2) == b"2\n3\n"
    try:
        s.extend(100000)
        raise AssertionError("extend past the maximum was not refused")
    except airlock.SessionError as e:
        assert "maximum lifetime" in str(e), e
    sid = s.id
rec = s.get()
assert rec["state"] == "ended" and rec["reason"] == "destroyed", rec
print("python session client: ok (%s)" % sid)
