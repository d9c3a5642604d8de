"""http.py: the client over `airlock serve --http` (docs/http.md), for a
caller that cannot or should not reach Redis: Client("http://HOST:PORT",
token=...) returns an HttpClient. The same calls as the Redis client
where the HTTP API has them (submit, submit_many, result, status, cancel,
wait, as_completed, run, evaluate), the same result dicts (stdout, stderr
and files' contents as bytes). Standard library only.
"""
import base64
import json
import time
import urllib.error
import urllib.parse
import urllib.request

from .blobs import blobs_to_bytes

BATCH_MAX = 1000        # POST /jobs/batch takes 1..1000 jobs
POLL_S = 0.2            # between GET /jobs/{id} of unfinished jobs
WAIT_MAX_S = 60         # ?wait= of one request (serve caps it itself)


def _as_bytes(v):
    if isinstance(v, dict) and "base64" in v:
        return base64.b64decode(v["base64"])
    return v.encode() if isinstance(v, str) else v


def _json_result(res):
    """A result as GET /jobs/{id} gives it, with the Redis client's types."""
    return blobs_to_bytes(res, _as_bytes)


class HttpClient:
    """A connection to one `airlock serve --http` (its queue).

    url: http://HOST:PORT; token: the bearer token (http.token_file's
    contents; default $AIRLOCK_TOKEN), None when serve has none."""

    def __init__(self, url, token=None, timeout=75.0):
        import os
        self.base = url.rstrip("/")
        self.token = token or os.environ.get("AIRLOCK_TOKEN")
        self.timeout = timeout

    def _req(self, method, path, body=None, ok=(200,)):
        from .errors import AirlockError, IdConflict
        hdr = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdr["Content-Type"] = "application/json"
        if self.token:
            hdr["Authorization"] = "Bearer " + self.token.strip()
        rq = urllib.request.Request(self.base + path, data=data,
                                    headers=hdr, method=method)
        try:
            with urllib.request.urlopen(rq, timeout=self.timeout) as r:
                code, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            code, raw = e.code, e.read()
        except OSError as e:
            raise AirlockError("%s: %s" % (self.base, e)) from None
        try:
            doc = json.loads(raw) if raw else {}
        except ValueError:
            doc = {"error": raw[:200].decode("utf-8", "replace")}
        if code == 409 and "conflicts" in doc:
            raise IdConflict(doc["conflicts"], doc.get("error"))
        if code not in ok:
            why = doc.get("error", "") if isinstance(doc, dict) else ""
            for p in (doc.get("problems") or []) if isinstance(doc, dict) \
                    else []:
                why += "; %s: %s" % (p.get("path"), p.get("reason"))
            raise AirlockError("%s %s: %d %s" % (method, path, code, why))
        return code, doc

    @staticmethod
    def _q(job_id):
        return urllib.parse.quote(job_id, safe="")

    def submit(self, job):
        """POST /jobs: enqueue one job; returns its id."""
        return self._req("POST", "/jobs", job, ok=(201,))[1]["id"]

    def submit_many(self, jobs):
        """POST /jobs/batch, 1000 at a time; returns the ids in order."""
        return self._submit_many(jobs)[0]

    def _submit_many(self, jobs):
        ids = []
        for i in range(0, len(jobs), BATCH_MAX):
            _, doc = self._req("POST", "/jobs/batch", jobs[i:i + BATCH_MAX],
                               ok=(201,))
            ids += [j["id"] for j in doc["jobs"]]
        return ids, None        # serve refuses another payload's id (409)

    def result(self, job_id):
        """GET /jobs/{id}: the result, or None before it is stored."""
        code, doc = self._req("GET", "/jobs/" + self._q(job_id),
                              ok=(200, 202, 404))
        return _json_result(doc) if code == 200 else None

    def status(self, job_id):
        """Where a job is: {"id", "state"} (queued, running, done, dead,
        cancelled or unknown), with status and attempt when done."""
        code, doc = self._req("GET", "/jobs/" + self._q(job_id),
                              ok=(200, 202, 404))
        if code == 404:
            return {"id": job_id, "state": "unknown"}
        if code == 202:
            return doc
        st = doc.get("status")
        return {"id": job_id, "status": st, "attempt": doc.get("attempt"),
                "state": {"XX": "dead", "CX": "cancelled"}.get(st, "done")}

    def cancel(self, job_id):
        """DELETE /jobs/{id}: "queued" or "running" when cancelled now,
        "done" (it has a result) or "unknown", as the Redis client."""
        code, doc = self._req("DELETE", "/jobs/" + self._q(job_id),
                              ok=(202, 404, 409))
        return {202: doc.get("was"), 404: "unknown", 409: "done"}[code]

    def as_completed(self, ids, timeout=None):
        """Yield (id, result) as results are stored; stops at timeout."""
        pending = list(dict.fromkeys(ids))
        end = None if timeout is None else time.monotonic() + timeout
        while pending:
            done = 0
            for jid in list(pending):
                res = self.result(jid)
                if res is not None:
                    pending.remove(jid)
                    done += 1
                    yield jid, res
            if not pending or done:
                continue
            if end is not None and time.monotonic() >= end:
                return
            time.sleep(POLL_S)

    def wait(self, job_id, timeout=None):
        for _, res in self.as_completed([job_id], timeout=timeout):
            return res
        return None

    def run(self, cmd, template=None, timeout=None, files=None, limits=None,
            job_id=None):
        """One command in a fresh VM (POST /jobs?wait=); its result, or
        None when timeout (seconds) passes first."""
        job = {"cmd": list(cmd)} if not isinstance(cmd, str) else {"sh": cmd}
        for k, v in (("template", template), ("files", files),
                     ("limits", limits), ("id", job_id)):
            if v:
                job[k] = v
        w = WAIT_MAX_S if timeout is None else max(0, min(timeout,
                                                          WAIT_MAX_S))
        code, doc = self._req("POST", "/jobs?wait=%d" % w, job,
                              ok=(200, 201, 202))
        if code == 200:
            return _json_result(doc)
        left = None if timeout is None else max(timeout - w, 0)
        return self.wait(doc["id"], timeout=left)

    def evaluate(self, samples, problems, **kw):
        """As Client.evaluate (the same jobs, ids and verdicts)."""
        from .evaluate import evaluate_with
        return evaluate_with(self, samples, problems, **kw)
