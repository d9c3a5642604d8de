"""session_cancel.py: cancel from the Python Session (clients/python/
airlock/session.py) against a real serve: Exec.kill() ends a `sleep 100`
at once (SG 9, cancelled), the session goes on, a second cancel is refused
as ended, and an exec number of ANOTHER session (argv[2], running there)
is refused as not this session's. usage: session_cancel.py REDIS_URL N"""
import sys
import time

import airlock

c = airlock.Client(sys.argv[1])
other = int(sys.argv[2])
with c.session(template="python", ttl_s=60) as s:
    e = s.start("echo ready; sleep 100")
    for _ in range(600):
        if s.read(e, 1) == b"ready\n":
            break
        time.sleep(0.05)
    t0 = time.monotonic()
    rep = e.kill()
    assert rep["signal"] == "KILL" and rep["cancelled"], rep
    r = e.wait()
    dt = time.monotonic() - t0
    assert (r.status, r.signal, r.cancelled) == ("SG", 9, True), r.record
    assert r.signals_sent == ["KILL"], r.record
    assert dt < 3, dt
    assert s.exec("echo next").stdout == b"next\n"
    try:
        e.cancel()
        raise AssertionError("a cancel of an ended exec was not refused")
    except airlock.SessionError as err:
        assert "already ended (SG)" in str(err), err
    try:
        s.cancel(other)
        raise AssertionError("another session's exec was not refused")
    except airlock.SessionError as err:
        assert "no exec %d" % other in str(err), err
    try:
        s.cancel(e, signal="STOP")
        raise AssertionError("STOP was not refused")
    except airlock.SessionError as err:
        assert "already ended" in str(err) or "not one of" in str(err), err
print("python cancel: ok, kill() ended sleep 100 in %.0f ms" % (dt * 1000))
