"""client.py: the blocking queue client (docs/queue.md, dispatcher/queue/script.c).

Keys of queue Q (one hash tag per queue):
  airlock:{Q}:jobs      stream {id, t, w}, group `workers`
  airlock:{Q}:job:ID    the job, msgpack (SET NX: the id is the idempotency key)
  airlock:{Q}:sid:ID    the job's stream entry
  airlock:{Q}:result:ID the result, msgpack, written once
  airlock:{Q}:done:ID   list RPUSHed once when the result is stored (BLPOP)
  airlock:{Q}:cancel    hash: cancelled entries a dispatcher still holds
  airlock:{Q}:cancels   jobs cancelled, ever (airlock_cancels_total)
  airlock:{Q}:digest:ID SHA-256 (hex) of job:ID's payload

An id is taken by the first payload submitted under it: submitting the
same payload again is a no-op, another payload under it raises IdConflict.
Payloads are encoded as the C side encodes a job (canonical(): its field
order, str where bytes are UTF-8), so the same job from this client and
from the CLI is the same payload. Results carry the digest of the payload
they ran (`digest`); evaluate() uses a stored result only when it is its
own payload's.

SUBMIT, JOB_STATUS and CANCEL are the very scripts of dispatcher/queue/script.c
(tests/test_client.py compares them), so a Python submit and a CLI submit
of the same id are one job, and status()/cancel() are `airlock status
ID`/`airlock cancel ID`.

Results: stdout, stderr and file contents are always bytes (the stored
msgpack has str where the bytes are UTF-8 and bin otherwise; a Python
caller should not have to test which); stdout_of()/stderr_of() decode.
"""
import hashlib
import os
import time
import urllib.parse

import msgpack
import redis

# dispatcher/queue/script.c: scripts[ALQ_SUBMIT], byte for byte; K: job jobs sid
# digest; A: payload id t w digest -> sid | nil (the same payload was
# submitted before) | [conflict, its digest] (another payload was)
SUBMIT = (
    "if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then\n"
    "  local d = redis.call('GET', KEYS[4])\n"
    "  if d then\n"
    "    if d == ARGV[5] then return false end\n"
    "    return {'conflict', d}\n"
    "  end\n"
    "  if redis.call('GET', KEYS[1]) == ARGV[1] then return false end\n"
    "  return {'conflict', ''}\n"
    "end\n"
    "redis.call('SET', KEYS[4], ARGV[5], 'EX', 604800)\n"
    "local sid = redis.call('XADD', KEYS[2], '*', 'id', ARGV[2],\n"
    "                       't', ARGV[3], 'w', ARGV[4])\n"
    "redis.call('SET', KEYS[3], sid)\n"
    "return sid\n")

# dispatcher/queue/script.c: scripts[ALQ_JOB_STATUS]; K: job result sid jobs
JOB_STATUS = (
    "if redis.call('EXISTS', KEYS[2]) == 1 then return {'done'} end\n"
    "if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end\n"
    "local sid = redis.call('GET', KEYS[3])\n"
    "if not sid then return {'queued', ''} end\n"
    "local p = redis.pcall('XPENDING', KEYS[4], 'workers', sid, sid, 1)\n"
    "if type(p) == 'table' and #p == 1 then\n"
    "  return {'running', sid, p[1][2], p[1][4]}\n"
    "end\n"
    "return {'queued', sid}\n")

# dispatcher/queue/script.c: scripts[ALQ_CANCEL]; K: job result done sid jobs
# cancel cancels; A: CX result (queued), CX result (running), ttl, id
CANCEL = (
    "if redis.call('EXISTS', KEYS[2]) == 1 then return {'done'} end\n"
    "if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end\n"
    "local sid = redis.call('GET', KEYS[4])\n"
    "local st = 'queued'\n"
    "if sid then\n"
    "  local p = redis.pcall('XPENDING', KEYS[5], 'workers', sid, sid, 1)\n"
    "  if type(p) == 'table' and #p == 1 then st = 'running' end\n"
    "  redis.call('EXPIRE', KEYS[4], ARGV[3])\n"
    "end\n"
    "local res = ARGV[1]\n"
    "if st == 'running' then\n"
    "  res = ARGV[2]\n"
    "  redis.call('HSET', KEYS[6], sid, ARGV[4])\n"
    "end\n"
    "redis.call('SET', KEYS[2], res, 'EX', ARGV[3])\n"
    "redis.call('RPUSH', KEYS[3], '1')\n"
    "redis.call('EXPIRE', KEYS[3], ARGV[3])\n"
    "redis.call('EXPIRE', KEYS[1], ARGV[3])\n"
    "redis.call('INCR', KEYS[7])\n"
    "return {st}\n")

DEFAULT_WALL_MS = 120000      # results/policy.c: the built-in default
RESULT_MAX_BYTES = 96 << 20   # results/caps.h: AL_RESULT_MAX_BYTES
WAIT_MANY = 512               # keys per BLPOP, as ALQ_WAIT_MANY


from .blobs import blobs_to_bytes
from .errors import AirlockError, HarnessTimeout, IdConflict  # noqa: F401


def new_id():
    """A fresh job id, as the CLI makes them: j- and 20 hex digits."""
    return "j-" + os.urandom(10).hex()


_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789._:/-")


def valid_id(job_id):
    """Is job_id a valid job id, as results/job.c's al_id_valid: 1..128
    of [A-Za-z0-9._:/-], no empty, "." or ".." part between slashes."""
    return (isinstance(job_id, str) and 0 < len(job_id) <= 128 and
            set(job_id) <= _ID_CHARS and
            all(p not in ("", ".", "..") for p in job_id.split("/")))


def _text_of(result, field, step):
    steps = result.get("steps") or []
    if not steps:
        return ""
    out = steps[step].get(field, b"")
    return out.decode("utf-8", "replace") if isinstance(out, bytes) else out


def stdout_of(result, step=-1):
    """A step's stdout as text (the last step by default): UTF-8, bytes
    that are not UTF-8 as U+FFFD. The bytes are in steps[i]["stdout"]."""
    return _text_of(result, "stdout", step)


def stderr_of(result, step=-1):
    """A step's stderr as text, as stdout_of."""
    return _text_of(result, "stderr", step)


def _as_bytes(v):
    return v.encode("utf-8", "surrogateescape") if isinstance(v, str) else v


def _blobs_to_bytes(res):
    """stdout, stderr and files' contents as bytes, whichever msgpack type
    (str: UTF-8, bin: anything else) the result was stored with."""
    return blobs_to_bytes(res, _as_bytes)


# results/job.c's encoder (pack_job, al_step_pack, al_limits_pack): the
# order of fields, what it leaves out
_JOB_KEYS = ("id", "template", "files", "steps", "limits", "network",
             "collect", "meta", "language", "source_code")
_STEP_KEYS = ("name", "sh", "cmd", "stdin", "env", "cwd", "timeout_ms",
              "cpu_ms", "if", "expect", "attest")
_TOP_STEP = ("cmd", "sh", "stdin", "env", "cwd", "timeout_ms", "cpu_ms",
             "expect", "attest")
_LIMIT_KEYS = ("memory_mb", "vcpus", "wall_ms", "output_bytes", "pids",
               "disk_mb", "file_size_mb")


def _blob(v):
    """A blob as the C encoder writes it: str when UTF-8, else bin."""
    if isinstance(v, (bytes, bytearray)):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(v)
    return v


def _ordered(d, keys):
    """d's known keys in `keys` order, the others after (the C decoder
    refuses those: the worker answers RJ)."""
    out = {k: d[k] for k in keys if k in d}
    out.update((k, v) for k, v in d.items() if k not in out)
    return out


def _c_step(st):
    if not isinstance(st, dict):
        return st
    st = dict(st)
    for k, empty in (("timeout_ms", 0), ("cpu_ms", 0), ("attest", False),
                     ("env", {}), ("if", "always")):
        if k in st and st[k] == empty:
            del st[k]
    if "stdin" in st:
        st["stdin"] = _blob(st["stdin"])
    exp = st.get("expect")
    if isinstance(exp, dict):
        exp = _ordered(exp, ("stdout", "compare"))
        if exp.get("compare") == "exact":
            del exp["compare"]
        if "stdout" in exp:
            exp["stdout"] = _blob(exp["stdout"])
        st["expect"] = exp
    return _ordered(st, _STEP_KEYS)


def canonical(job):
    """The job as the C side encodes it (alq_prepare: al_job_to_msgpack of
    the decoded job): the one-step shorthand (cmd or sh at the top) as
    steps, fields in the encoder's order, zero limits and defaults left
    out, str for UTF-8 blobs. The same job then has the same payload, and
    so the same digest, from this client and from the CLI."""
    job = dict(job)
    if "steps" not in job and ("cmd" in job or "sh" in job or
                               "language" in job):
        job["steps"] = [{k: job.pop(k) for k in _TOP_STEP if k in job}]
    if isinstance(job.get("steps"), list):
        job["steps"] = [_c_step(st) for st in job["steps"]]
    if isinstance(job.get("limits"), dict):
        lim = {k: v for k, v in job["limits"].items() if v != 0}
        job["limits"] = _ordered(lim, _LIMIT_KEYS)
        if not lim:
            del job["limits"]
    if isinstance(job.get("files"), dict):
        job["files"] = {k: _blob(v) for k, v in job["files"].items()}
        if not job["files"]:
            del job["files"]
    if "source_code" in job:
        job["source_code"] = _blob(job["source_code"])
    if job.get("collect") == []:
        del job["collect"]
    return _ordered(job, _JOB_KEYS)


def digest(payload):
    """A payload's digest, as the queue keeps it and results carry it."""
    return hashlib.sha256(payload).hexdigest()


def _cx_result(job_id, why):
    """The CX result `airlock cancel` stores (dispatcher/queue/job.c cx_result,
    results/result.c pack_result), field for field and in its order."""
    return msgpack.packb(
        {"id": job_id, "status": "CX", "error": why, "steps": [],
         "vm": {"accel": "none", "restored": False, "restore_ms": 0},
         "timing": {"queued_ms": 0, "run_ms": 0, "total_ms": 0},
         "attempt": 1}, use_bin_type=True)


def _connect(url):
    """redis://[[USER]:PASS@]HOST[:PORT][/DB] or unix://[[USER]:PASS@]/PATH[?db=N]"""
    if url.startswith("unix://"):
        rest = url[len("unix://"):]
        user = password = None
        if "@" in rest:
            cred, rest = rest.split("@", 1)
            user, _, password = cred.partition(":")
            user = urllib.parse.unquote(user) or None
            password = urllib.parse.unquote(password)
        path, _, query = rest.partition("?")
        db = int(query[3:]) if query.startswith("db=") else 0
        return redis.Redis(unix_socket_path=path, db=db, username=user,
                           password=password)
    if url.startswith("redis://"):
        return redis.Redis.from_url(url)
    raise AirlockError("not a redis:// or unix:// URL: %s" % url)


class Client:
    """A connection to one queue.

    url: as the CLI's --redis (default $AIRLOCK_REDIS); queue: the name.
    """

    def __new__(cls, url=None, *args, **kw):
        url = url or os.environ.get("AIRLOCK_REDIS") or ""
        if cls is Client and url.startswith(("http://", "https://")):
            from .http import HttpClient
            return HttpClient(url, *args, **kw)
        return super().__new__(cls)

    def __init__(self, url=None, queue="default", result_ttl_s=604800):
        url = url or os.environ.get("AIRLOCK_REDIS")
        if not url:
            raise AirlockError("no Redis URL (url= or $AIRLOCK_REDIS)")
        self.r = _connect(url)
        self.queue = queue
        self.result_ttl_s = result_ttl_s
        self._submit = self.r.register_script(SUBMIT)
        self._job_status = self.r.register_script(JOB_STATUS)
        self._cancel = self.r.register_script(CANCEL)

    def key(self, kind, job_id=""):
        return "airlock:{%s}:%s%s" % (self.queue, kind, job_id)

    # --- submitting -----------------------------------------------------

    def _prepare(self, job):
        job = dict(job)
        if not job.get("id"):
            job["id"] = new_id()
        wall = (job.get("limits") or {}).get("wall_ms") or DEFAULT_WALL_MS
        job = canonical(job)
        return job, msgpack.packb(job, use_bin_type=True), int(wall)

    def submit(self, job):
        """Enqueue one job (a dict in the schema of docs/schema.md); returns
        its id. Submitting the same job under its id again enqueues
        nothing; another job under a taken id raises IdConflict."""
        return self.submit_many([job])[0]

    def submit_many(self, jobs):
        """Enqueue jobs, pipelined; returns their ids in order. Raises
        IdConflict naming the ids another payload holds (the other jobs
        are enqueued)."""
        return self._submit_many(jobs)[0]

    def _submit_many(self, jobs):
        """submit_many(), and the digests of the payloads."""
        ids, digests = [], []
        pipe = self.r.pipeline(transaction=False)
        now = str(int(time.time() * 1000))
        for job in jobs:
            job, payload, wall = self._prepare(job)
            ids.append(job["id"])
            digests.append(digest(payload))
            self._submit(keys=[self.key("job:", job["id"]), self.key("jobs"),
                               self.key("sid:", job["id"]),
                               self.key("digest:", job["id"])],
                         args=[payload, job["id"], now, str(wall),
                               digests[-1]],
                         client=pipe)
        replies = pipe.execute()
        taken = [i for i, rep in zip(ids, replies)
                 if isinstance(rep, list) and rep and
                 rep[0] in (b"conflict", "conflict")]
        if taken:
            raise IdConflict(taken)
        return ids, digests

    # --- results --------------------------------------------------------

    def result(self, job_id):
        """The stored result (a dict, as `airlock result --json` prints it,
        but steps' stdout/stderr and files' contents always bytes), or None
        when there is none yet."""
        k = self.key("result:", job_id)
        n = self.r.strlen(k)
        if not n:
            return None
        if n > RESULT_MAX_BYTES:
            raise AirlockError("%s: result over the size cap" % job_id)
        raw = self.r.get(k)
        if raw is None:
            return None
        return _blobs_to_bytes(msgpack.unpackb(
            raw, raw=False, unicode_errors="surrogateescape"))

    def _check_id(self, job_id):
        if not valid_id(job_id):
            raise ValueError("%r: not a valid job id" % (job_id,))

    def status(self, job_id):
        """Where a job is, as `airlock status --json ID` prints it: a dict
        with id and state ("unknown": never submitted or its result
        expired; "queued"; "running"; "done"; "dead": an XX result and a
        dead letter; "cancelled": a CX result), and as the CLI gives them:
        entry (its stream entry), dispatcher and attempt (running), status,
        attempt, worker and error (done, dead, cancelled). ValueError for
        an invalid id, AirlockError when Redis answers nonsense."""
        self._check_id(job_id)
        r = self._job_status(keys=[self.key("job:", job_id),
                                   self.key("result:", job_id),
                                   self.key("sid:", job_id),
                                   self.key("jobs")])
        kind = r[0].decode() if r else ""
        out = {"id": job_id, "state": kind}
        if kind == "done":
            res = self.result(job_id)
            if res is None:            # expired in between
                out["state"] = "unknown"
                return out
            st = res.get("status")
            out["state"] = {"XX": "dead", "CX": "cancelled"}.get(st, "done")
            out["status"] = st
            out["attempt"] = res.get("attempt", 0)
            for f in ("worker", "error"):
                if res.get(f):
                    out[f] = res[f]
        elif kind == "queued" and len(r) == 2:
            if r[1]:
                out["entry"] = r[1].decode()
        elif kind == "running" and len(r) == 4:
            out["entry"] = r[1].decode()
            out["dispatcher"] = r[2].decode()
            out["attempt"] = int(r[3])
        elif kind != "unknown":
            raise AirlockError("%s: unexpected status reply %r" % (job_id, r))
        return out

    def cancel(self, job_id):
        """Cancel a job, as `airlock cancel ID` (the same script): its
        result becomes CX at once and waiters wake. Returns the state it
        was in: "queued" (it will never run) or "running" (its VM is
        killed at its dispatcher's next heartbeat) when this call
        cancelled it; "done" when it had a result already (nothing
        changed) or "unknown" when there is no such job, where the CLI
        exits 1. ValueError for an invalid id."""
        self._check_id(job_id)
        r = self._cancel(
            keys=[self.key("job:", job_id), self.key("result:", job_id),
                  self.key("done:", job_id), self.key("sid:", job_id),
                  self.key("jobs"), self.key("cancel"),
                  self.key("cancels")],
            args=[_cx_result(job_id, "cancelled before it ran "
                             "(airlock cancel)"),
                  _cx_result(job_id, "cancelled while running (airlock "
                             "cancel): its VM was killed"),
                  str(self.result_ttl_s or 1), job_id])
        was = r[0].decode() if r else ""
        if was not in ("queued", "running", "done", "unknown"):
            raise AirlockError("%s: unexpected cancel reply %r" % (job_id, r))
        return was

    def wait(self, job_id, timeout=None):
        """Block until job_id has a result and return it; None on timeout
        (seconds; None = forever)."""
        for jid, res in self.as_completed([job_id], timeout=timeout):
            return res
        return None

    def as_completed(self, ids, timeout=None):
        """Yield (id, result) for each of ids as its result is stored, in
        completion order; stops at timeout (seconds, None = forever)."""
        pending = list(dict.fromkeys(ids))
        end = None if timeout is None else time.monotonic() + timeout
        while pending:
            pipe = self.r.pipeline(transaction=False)
            for jid in pending:
                pipe.exists(self.key("result:", jid))
            done = [jid for jid, e in zip(pending, pipe.execute()) if e]
            for jid in done:
                pending.remove(jid)
                yield jid, self.result(jid)
            if not pending or done:
                continue
            left = 5.0 if end is None else min(5.0, end - time.monotonic())
            if left <= 0:
                return
            keys = [self.key("done:", j) for j in pending[:WAIT_MANY]]
            self.r.blpop(keys, timeout=max(left, 0.01))

    def run(self, cmd, template=None, timeout=None, files=None, limits=None,
            job_id=None):
        """Run one command (a list, or a string for `sh -c`) in a fresh VM
        and return its result."""
        job = {"cmd": list(cmd)} if not isinstance(cmd, str) else {"sh": cmd}
        if template:
            job["template"] = template
        if files:
            job["files"] = files
        if limits:
            job["limits"] = limits
        if job_id:
            job["id"] = job_id
        return self.wait(self.submit(job), timeout=timeout)

    def session(self, id=None, **kw):
        """A live VM worked in turn by turn (session.py, docs/sessions.md):
        template, ttl_s, idle_s, network, env, files, metadata, limits,
        create_timeout. A context manager (leaving it destroys the
        session). With id=: the live session of that id, reopened (from
        any process or machine); SessionError if it has ended."""
        from .session import Session
        return Session(self, id=id, **kw)

    def attach(self, session_id):
        """The live session `session_id` (as session(id=...))."""
        return self.session(id=session_id)

    def sessions(self, state=None, metadata=None):
        """Session records (dicts, as `airlock session list`): those in
        `state` (pending starting alive ended; None: any) whose metadata
        holds every pair of the dict `metadata`."""
        from .session import list_sessions
        return list_sessions(self, state=state, metadata=metadata)

    def evaluate(self, samples, problems, k=(1, 10, 100), timeout=None,
                 cpu_ms=20000, template="python", check_timeout=3.0,
                 strict=False, guard=True):
        """Run code samples against problems and score them, as `airlock
        eval` (evaluate_with() says how)."""
        from .evaluate import evaluate_with
        return evaluate_with(self, samples, problems, k, timeout, cpu_ms,
                             template, check_timeout, strict, guard)
