"""Sessions: a live microVM an agent works in turn by turn (docs/sessions.md).

Speaks the session keys of dispatcher/session/sessions.h on the queue's
Redis, as the C client does, so any `airlock serve` with
workers.max_sessions > 0 may hold the VM:

    with client.session(template="python", ttl_s=600) as s:
        s.write_file("main.py", "print(6 * 7)\\n")
        r = s.exec("python3 main.py")
        assert r.stdout == b"42\\n" and r.exit_code == 0

Each exec runs in the same VM, in order; files persist between execs,
processes do not (unless the command backgrounds them; they die with the
VM). The session ends at its ttl_s (never implicitly extended), after
idle_s without a request, on close(), or `lost` when its host dies.
"""
import base64
import json
import os
import time

LOST = """
local st = redis.call('HGET', KEYS[1], 'state')
if not st or st == 'ended' or st == 'pending' then return 0 end
local h = redis.call('HGET', KEYS[1], 'host')
if not h then return 0 end
if redis.call('EXISTS', ARGV[1] .. h) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'state', 'ended', 'reason', 'lost',
  'ended_at_ms', ARGV[2], 'error', 'its host ' .. h ..
  ' stopped heartbeating (died or lost Redis)')
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
redis.call('HINCRBY', KEYS[2], 'ended:lost', 1)
return 1
"""

NUMERIC = {"created_at_ms", "expires_at_ms", "alive_at_ms", "ended_at_ms",
           "idle_at_ms", "ttl_s", "idle_s", "execs", "exit_code", "signal",
           "wall_ms", "cpu_ms", "stdout_bytes", "stderr_bytes",
           "started_at_ms", "restore_ms", "exec", "hibernate_s",
           "resumed_ms", "resumes", "hibernated_at_ms", "hibernate_ms"}


class SessionError(Exception):
    """A refusal (its message says why) or a session that ended."""


class ExecResult:
    """One exec: status (OK RE SG TO TL ML OL XX), exit_code, stdout and
    stderr (bytes; the tail when `*_truncated`), wall_ms, cpu_ms, and
    expires_at (the session's end, unix s)."""

    def __init__(self, rec, stdout, stderr):
        self.record = rec
        self.exec_id = int(rec.get("exec", 0))
        self.status = rec.get("status")
        self.exit_code = rec.get("exit_code")
        self.stdout = stdout
        self.stderr = stderr
        self.stdout_truncated = rec.get("stdout_truncated", False)
        self.stderr_truncated = rec.get("stderr_truncated", False)
        self.wall_ms = rec.get("wall_ms")
        self.cpu_ms = rec.get("cpu_ms")
        self.signal = rec.get("signal")
        # the session's end (unix s) as it stood when the exec ended
        self.expires_at = rec.get("expires_at_ms", 0) / 1000.0 or None
        # a cancel (TERM KILL INT HUP QUIT) was sent while it ran; status
        # says how it ended (SG when the signal ended it)
        self.cancelled = rec.get("cancelled", False)
        self.signals_sent = rec.get("signals_sent", "").split()

    def __repr__(self):
        return "ExecResult(status=%r, exit_code=%r)" % (self.status,
                                                        self.exit_code)


class Exec(int):
    """An exec's id (an int, as before) that can also wait for it and
    signal it: s.start(...) returns one."""

    def __new__(cls, session, n):
        e = int.__new__(cls, n)
        e.session = session
        return e

    def wait(self, on_output=None):
        return self.session.wait(int(self), on_output)

    def signal(self, signal, grace_ms=None):
        return self.session.cancel(int(self), signal=signal,
                                   grace_ms=grace_ms)

    def cancel(self, signal="TERM", grace_ms=None):
        """TERM (by default), then SIGKILL after grace_ms (2000)."""
        return self.session.cancel(int(self), signal=signal,
                                   grace_ms=grace_ms)

    def kill(self):
        return self.session.cancel(int(self), signal="KILL")


def _rid(prefix):
    return prefix + "-" + os.urandom(12).hex()


def _iso(ms):
    """Unix ms as the C side's ISO 8601 (UTC, ms)."""
    t = time.gmtime(ms // 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", t) + ".%03dZ" % (ms % 1000)


def _decode(raw):
    """A record's HGETALL as the C client's JSON has it."""
    rec = {}
    for k, v in raw.items():
        k = k.decode()
        if k in NUMERIC:
            rec[k] = int(v)
        elif k in ("stdout_truncated", "stderr_truncated", "warm",
                   "saveable", "hibernated"):
            rec[k] = v == b"1"
        elif k == "metadata":
            rec[k] = json.loads(v)
        else:
            rec[k] = v.decode(errors="replace")
    for ms, iso in (("created_at_ms", "created_at"),
                    ("expires_at_ms", "expires_at"),
                    ("ended_at_ms", "ended_at"), ("idle_at_ms", "idle_at")):
        if rec.get(ms):
            rec[iso] = _iso(rec[ms])
    return rec


def _record(client, sid, lost=None):
    """Session sid's record (None when there is none), ended `lost` first
    when its host stopped heartbeating, as the C client does."""
    k = client.key("sess:", sid)
    lost = lost or client.r.register_script(LOST)
    lost(keys=[k, client.key("sess:", "stats")],
         args=[client.key("sess:", "host:"), int(time.time() * 1000), 3600])
    raw = client.r.hgetall(k)
    return _decode(raw) if raw else None


def list_sessions(client, state=None, metadata=None):
    """The records of the sessions in `state` (None: any) whose metadata
    holds every pair of `metadata` (a dict), as `airlock session list
    --state S --meta K=V` and GET /sessions?state=S&meta=K=V."""
    lost = client.r.register_script(LOST)
    out = []
    for sid in sorted(client.r.smembers(client.key("sess:", "all"))):
        rec = _record(client, sid.decode(), lost)
        if rec is None:
            continue
        if state is not None and rec.get("state") != state:
            continue
        meta = rec.get("metadata") or {}
        if any(meta.get(k) != v for k, v in (metadata or {}).items()):
            continue
        out.append(rec)
    return out


class Session:
    """One session; make it with Client.session(). A context manager:
    leaving the block destroys it."""

    def __init__(self, client, template=None, ttl_s=None, idle_s=None,
                 network=None, env=None, files=None, metadata=None,
                 limits=None, create_timeout=30.0, saveable=None,
                 hibernate_s=None, id=None, _fork=None):
        self.c = client
        self.r = client.r
        self._lost = self.r.register_script(LOST)
        if id is not None:  # reopen a live session (Client.session(id=))
            if any(v is not None for v in (template, ttl_s, idle_s, network,
                                           env, files, metadata, limits,
                                           saveable, hibernate_s)):
                raise SessionError("session(id=...) reopens a session: "
                                   "it takes no create fields")
            self.id = id
            self.record = self._alive()
            return
        self.id = _rid("s")
        if _fork is not None:  # Session.fork(): queued, waited for there
            self.record = None
            self._rid = self._push_create(_fork[0], create_timeout,
                                          _fork[1])
            return
        body = {}
        for k, v in (("template", template), ("ttl_s", ttl_s),
                     ("idle_s", idle_s), ("network", network), ("env", env),
                     ("files", files), ("metadata", metadata),
                     ("limits", limits), ("saveable", saveable),
                     ("hibernate_s", hibernate_s)):
            if v is not None:
                body[k] = v
        self.record = self._create(body, create_timeout)

    def _k(self, rest):
        return self.c.key("sess:", rest)

    def _push_create(self, body, timeout, lst="create"):
        now = int(time.time() * 1000)
        rid = _rid("r")
        self._created_ms = now
        self.r.hset(self._k(self.id), mapping={
            "id": self.id, "state": "pending", "created_at_ms": now,
            "template": body.get("template", ""),
            "network": body.get("network", "none"),
            "metadata": json.dumps(body.get("metadata", {})), "execs": 0})
        self.r.sadd(self._k("all"), self.id)
        self.r.rpush(self._k(lst), json.dumps({
            "id": self.id, "rid": rid, "body": body,
            "deadline_ms": now + int(timeout * 1000)}))
        if lst != "create":  # a host's own list: gone with its deadlines
            self.r.expire(self._k(lst), int(timeout) + 120)
        return rid

    def _wait_create(self, rid, timeout):
        now = self._created_ms
        end = time.monotonic() + timeout + 120
        while time.monotonic() < end:
            rep = self._reply(rid)
            if rep is not None:
                return rep
            rec = self._alive()
            if rec["state"] == "pending" and \
                    time.time() * 1000 > now + timeout * 1000:
                raise SessionError("create_timeout: no host had room "
                                   "within %.1f s" % timeout)
        raise SessionError("the session's VM did not come up")

    def _create(self, body, timeout):
        return self._wait_create(self._push_create(body, timeout), timeout)

    def _to_session(self, op, body):
        """Send op to the session's own process (in order with its execs);
        its reply."""
        self._alive()
        rid = _rid("r")
        self.r.rpush(self._k(self.id + ":req"),
                     json.dumps({"op": op, "rid": rid, "body": body}))
        while True:
            rep = self._reply(rid)
            if rep is not None:
                return rep
            self._alive()

    def snapshot(self, name):
        """Save the session (created saveable=True) as snapshot `name` on
        its host: {snapshot, base, origin, mem_bytes, save_ms}."""
        return self._expiry(self._to_session("snapshot", {"name": name}))

    def fork(self, n=1, saveable=False, create_timeout=30.0):
        """n new Sessions from this one's current state (created
        saveable=True), each a full session with its own clocks; each
        one's record has fork_ms (the request to its VM ready).
        saveable=True: the forks can be forked and saved in turn."""
        if not 1 <= n <= 16:
            raise SessionError("fork: n must be 1..16")
        rec = self._alive()
        t0 = int(time.time() * 1000)
        rep = self._to_session("fork", {})
        body = dict(rep["body"], ttl_s=rec["ttl_s"], idle_s=rec["idle_s"])
        if saveable:
            body["saveable"] = True
        forks = []
        try:
            for _ in range(n):
                forks.append(Session(self.c, create_timeout=create_timeout,
                                     _fork=(body, "host:%s:create" %
                                            rec["host"])))
            for f in forks:
                f.record = f._wait_create(f._rid, create_timeout)
                f.record["fork_ms"] = f.record["alive_at_ms"] - t0
        except Exception:
            for f in forks:
                try:
                    f.close()
                except SessionError:
                    pass
            raise
        finally:
            self._to_session("fork_done", {"name": rep["snapshot"]})
        return forks

    def get(self):
        """The record: state, reason, host, expires_at, ... (a session whose
        host stopped heartbeating becomes `lost` here)."""
        rec = _record(self.c, self.id, self._lost)
        if rec is None:
            raise SessionError("%s: no such session" % self.id)
        return rec

    def _expiry(self, rep):
        """rep with the session's expires_at_ms and expires_at, as its
        record holds them now (every reply carries them)."""
        ms = self.r.hget(self._k(self.id), "expires_at_ms")
        if ms and int(ms) > 0:
            rep["expires_at_ms"] = int(ms)
            rep["expires_at"] = _iso(int(ms))
        return rep

    @property
    def expires_at(self):
        """Unix time (s) the session ends at, as its host holds it."""
        return self.get()["expires_at_ms"] / 1000.0

    def _reply(self, rid):
        """The reply to rid within a second, or None; its error raised."""
        rep = self.r.blpop(self._k("reply:" + rid), 1)
        if not rep:
            return None
        rep = json.loads(rep[1])
        if rep.get("error"):
            raise SessionError(rep["error"])
        return rep

    def _alive(self):
        rec = self.get()
        if rec["state"] == "ended":
            raise SessionError("session ended (%s): %s" % (
                rec.get("reason"), rec.get("error", "")))
        return rec

    def _to_host(self, op, **extra):
        rec = self._alive()
        if not rec.get("host"):
            raise SessionError("%s: not on a host yet (%s)" % (
                self.id, rec["state"]))
        rid = _rid("r")
        msg = dict(op=op, id=self.id, rid=rid, **extra)
        self.r.rpush(self._k("host:%s:ctl" % rec["host"]), json.dumps(msg))
        for _ in range(10):
            rep = self._reply(rid)
            if rep is not None:
                return rep
            self._alive()
        raise SessionError("no reply from host %s" % rec["host"])

    def extend(self, ttl_s):
        """End the session ttl_s from now; refused past sessions.ttl_max_s
        from its start."""
        self.record = self._to_host("extend", ttl_s=int(ttl_s))
        return self.record

    def start(self, cmd, stdin=None, env=None, cwd=None, timeout_ms=None,
              cpu_ms=None):
        """Start an exec (cmd: a list, or a str run by /bin/sh -c); its id."""
        body = {"cmd": list(cmd)} if not isinstance(cmd, str) else {"sh": cmd}
        if stdin is not None:
            if isinstance(stdin, str):
                stdin = stdin.encode()
            body["stdin"] = {"base64": base64.b64encode(stdin).decode()}
        for k, v in (("env", env), ("cwd", cwd), ("timeout_ms", timeout_ms),
                     ("cpu_ms", cpu_ms)):
            if v is not None:
                body[k] = v
        self._alive()
        rid = _rid("r")
        self.r.rpush(self._k(self.id + ":req"),
                     json.dumps({"op": "exec", "rid": rid, "body": body}))
        while True:
            rep = self._reply(rid)
            if rep is not None:
                return Exec(self, int(rep["exec"]))
            self._alive()

    def cancel(self, exec_id, signal="TERM", grace_ms=None):
        """Send signal (TERM KILL INT HUP QUIT USR1 USR2) to the running
        exec's processes; a cancel (TERM INT HUP QUIT) is followed by
        SIGKILL after grace_ms (default 2000; 0 never). Served at once,
        even while the exec runs; SessionError when it has ended or is
        not this session's. The reply: {exec, signal, cancelled,
        grace_ms}."""
        self._alive()
        raw = self.r.hgetall(self._k("%s:x:%d" % (self.id, int(exec_id))))
        if not raw:
            raise SessionError("%s: no exec %d" % (self.id, int(exec_id)))
        if raw.get(b"state") == b"done":
            raise SessionError("%s: exec %d has already ended (%s)" % (
                self.id, int(exec_id),
                raw.get(b"status", b"?").decode(errors="replace")))
        rid = _rid("r")
        msg = {"op": "signal", "rid": rid, "exec": int(exec_id),
               "signal": signal}
        if grace_ms is not None:
            msg["grace_ms"] = int(grace_ms)
        self.r.rpush(self._k(self.id + ":sig"), json.dumps(msg))
        for _ in range(10):
            rep = self._reply(rid)
            if rep is not None:
                return self._expiry(rep)
            self._alive()
        raise SessionError("no reply to the signal")

    def read(self, exec_id, fd=1, offset=0, size=1 << 20):
        """Bytes of an exec's stdout (fd 1) or stderr (2) from offset, as
        stored while it runs (reattach)."""
        key = self._k("%s:x:%d:%d" % (self.id, exec_id, fd))
        return self.r.getrange(key, offset, offset + size - 1)

    def wait(self, exec_id, on_output=None):
        """Wait for exec_id to end; its ExecResult. on_output(fd, bytes) gets
        the output as it is stored."""
        off = {1: 0, 2: 0}
        out = {1: b"", 2: b""}
        last = 0.0
        while True:
            raw = self.r.hgetall(self._k("%s:x:%d" % (self.id, exec_id)))
            done = raw.get(b"state") == b"done"
            for fd in (1, 2):
                while True:
                    b = self.read(exec_id, fd, off[fd])
                    if not b:
                        break
                    off[fd] += len(b)
                    out[fd] += b
                    if on_output:
                        on_output(fd, b)
            if done:
                rec = {k.decode(): (int(v) if k.decode() in NUMERIC else
                                    v == b"1" if k.decode().endswith(
                                        "_truncated") or k == b"cancelled"
                                    else v)
                       for k, v in raw.items()}
                for k in ("status", "error", "signals_sent"):
                    if isinstance(rec.get(k), bytes):
                        rec[k] = rec[k].decode(errors="replace")
                self._expiry(rec)
                # the stored streams are the first output_max bytes; the
                # record keeps the last output_bytes: prefer what is whole
                o1 = out[1] if len(out[1]) == rec.get("stdout_bytes") \
                    else rec.get("stdout", b"")
                o2 = out[2] if len(out[2]) == rec.get("stderr_bytes") \
                    else rec.get("stderr", b"")
                return ExecResult(rec, o1, o2)
            if time.monotonic() - last > 1:
                last = time.monotonic()
                self._alive()
            # up to 50 ms, less when the exec ends: the session pushes one
            # token on x:N:end then (another waiter may take it: then the
            # 50 ms, as a sleep)
            self.r.blpop([self._k("%s:x:%d:end" % (self.id, exec_id))],
                         timeout=0.05)

    def exec(self, cmd, **kw):
        """Run cmd (a list, or a shell string) and wait: an ExecResult."""
        on_output = kw.pop("on_output", None)
        return self.wait(self.start(cmd, **kw), on_output)

    def write_file(self, path, data):
        """Write `data` (bytes or str) to `path` in the VM's work area."""
        r = self.exec(["sh", "-c", 'mkdir -p "$(dirname "$1")" && '
                       'cat > "$1"', "put", path], stdin=data)
        if r.status != "OK":
            raise SessionError("write_file %s: %s %s" % (
                path, r.status, r.stderr.decode(errors="replace")))

    def read_file(self, path):
        """The bytes of `path` in the VM (at most sessions.output_max_bytes)."""
        r = self.exec(["cat", path])
        if r.status != "OK":
            raise SessionError("read_file %s: %s %s" % (
                path, r.status, r.stderr.decode(errors="replace")))
        if r.stdout_truncated:
            raise SessionError("read_file %s: larger than the session's "
                               "output_bytes" % path)
        return r.stdout

    def upload_dir(self, local, remote=".", tar=None, **caps):
        """Local directory `local` (or ustar bytes `tar`) into `remote`;
        refused whole (tarfiles.TarRefused) when it breaks a rule or the
        caps (max_bytes, max_files): see airlock/tarfiles.py."""
        from . import tarfiles
        data = tar if tar is not None else tarfiles.tar_dir(local, **caps)
        tarfiles.put(self, data, remote, **caps)

    def download_dir(self, remote, local=None, **caps):
        """Directory `remote` into local directory `local`, nothing
        followed; or, without `local`, its checked ustar bytes."""
        from . import tarfiles
        data = tarfiles.get(self, remote, **caps)
        if local is None:
            return data
        tarfiles.untar(data, local, **caps)
        return None

    def close(self):
        """Destroy the session (nothing if it ended already)."""
        try:
            self._to_host("delete")
        except SessionError:
            return
        for _ in range(200):
            if self.get()["state"] == "ended":
                return
            time.sleep(0.05)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
