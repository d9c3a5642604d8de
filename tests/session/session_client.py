"""session_client.py: the Python Session (clients/python/airlock/session.py)
against a real serve: context manager, exec, write_file, read_file, extend
refused, reattach by offset, expires_at in exec results and signal
replies, Client.sessions(state, metadata), a session reopened by id
(Client.session(id=), Client.attach), cleanup.
usage: session_client.py REDIS_URL"""
import sys
import time

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
    # every reply carries the session's expires_at
    exp = s.get()["expires_at_ms"]
    assert r.expires_at == exp / 1000.0, (r.expires_at, exp)
    assert r.record["expires_at"] == s.get()["expires_at"], r.record
    n = s.start("echo ready; sleep 100")
    while s.read(n) != b"ready\n":
        time.sleep(0.05)
    rep = n.cancel()
    assert rep["expires_at_ms"] == exp and rep["expires_at"], rep
    assert s.wait(n).status == "SG"
    # listed by state and metadata, as `session list --state --meta`
    ids = [x["id"] for x in c.sessions(state="alive", metadata={"who": "py"})]
    assert s.id in ids, ids
    assert s.id not in [x["id"] for x in c.sessions(metadata={"who": "no"})]
    assert s.id not in [x["id"] for x in c.sessions(state="ended")]
    assert s.id in [x["id"] for x in c.sessions()]
    # reopened by id from another client (another process would do the
    # same): the same VM, its files, the same clock
    c2 = airlock.Client(sys.argv[1])
    s2 = c2.session(id=s.id)
    assert s2.record["state"] == "alive" and s2.record["id"] == s.id
    assert s2.read_file("pkg/main.py") == b"print(6 * 7)\n"
    assert c2.attach(s.id).exec("cat bin.dat").stdout == bytes(range(256))
    assert s2.expires_at == exp / 1000.0
    try:
        c2.session(id=s.id, ttl_s=5)
        raise AssertionError("session(id=, ttl_s=) was not refused")
    except airlock.SessionError as e:
        assert "no create fields" in str(e), e
    sid = s.id
rec = s.get()
assert rec["state"] == "ended" and rec["reason"] == "destroyed", rec
assert sid in [x["id"] for x in c.sessions(state="ended", metadata={"who": "py"})]
assert sid not in [x["id"] for x in c.sessions(state="alive")]
for bad in (sid, "s-" + "0" * 24):
    try:
        c.session(id=bad)
        raise AssertionError("reopened %s" % bad)
    except airlock.SessionError as e:
        assert "ended" in str(e) or "no such session" in str(e), e
print("python session client: ok (%s)" % sid)
