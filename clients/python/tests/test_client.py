"""test_client.py: the Python client against a real redis-server and the
real `airlock` binary (serve, status, result, submit).

usage: /usr/bin/python3 test_client.py AIRLOCK_BIN redis|vm
  redis  the protocol, no VMs: ids and payloads the C side reads (serve
         decodes and rejects an over-policy job: RJ), the CLI sees the
         same jobs and results, idempotent ids, wait timeouts, pass@k;
         status()/cancel() against `airlock status`/`cancel` (the same
         scripts as dispatcher/queue/script.c, the same answers and stored CX
         results), stdout/stderr always bytes, evaluate()'s harness
         timeout (HarnessTimeout, never a sample's "timed out")
  vm     real VM jobs through a real `airlock serve`: run(), and the
         README's harness example (evaluate: pass@1 = 1/3 exactly),
         cross-checked with `airlock status`/`result` under the same ids
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import msgpack  # noqa: E402

import airlock  # noqa: E402
from airlock import Client, pass_at_k, sample_job  # noqa: E402
from airlock import client as client_mod  # noqa: E402

BIN = None
MODE = None


class Env:
    """A redis-server on a unix socket and, on demand, `airlock serve`."""

    def __init__(self, state_dir=None, extra_conf=""):
        self.tmp = tempfile.mkdtemp(prefix="al-py-")
        self.sock = os.path.join(self.tmp, "redis.sock")
        self.url = "unix://" + self.sock
        self.conf = os.path.join(self.tmp, "airlock.conf")
        state = state_dir or os.environ.get("AIRLOCK_TEST_STATE",
                                            "/var/tmp/airlock-test")
        with open(self.conf, "w") as f:
            f.write("[queue]\nheartbeat_ms = 300\n[sandbox]\n"
                    "state_dir = %s\n%s" % (state, extra_conf))
        self.redis = subprocess.Popen(
            ["redis-server", "--port", "0", "--unixsocket", self.sock,
             "--unixsocketperm", "700", "--dir", self.tmp, "--save", "",
             "--appendonly", "no"], stdout=subprocess.DEVNULL)
        for _ in range(200):
            if os.path.exists(self.sock):
                break
            time.sleep(0.05)
        self.serve = None

    def env(self):
        e = dict(os.environ, AIRLOCK_CONFIG=self.conf, AIRLOCK_REDIS=self.url)
        return e

    def cli(self, *args, check=True):
        p = subprocess.run([BIN] + list(args), env=self.env(),
                           capture_output=True, text=True, timeout=300)
        if check and p.returncode != 0:
            raise AssertionError("airlock %s: exit %d: %s" %
                                 (" ".join(args), p.returncode, p.stderr))
        return p

    def start_serve(self, workers=1):
        self.log = open(os.path.join(self.tmp, "serve.log"), "w")
        self.serve = subprocess.Popen(
            [BIN, "serve", "--workers", str(workers)], env=self.env(),
            stdout=self.log, stderr=subprocess.STDOUT)

    def close(self):
        if self.serve:
            self.serve.terminate()
            try:
                self.serve.wait(30)
            except subprocess.TimeoutExpired:
                self.serve.kill()
                self.serve.wait()
            self.log.close()
        self.redis.kill()
        self.redis.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


class Unit(unittest.TestCase):
    def test_pass_at_k(self):
        self.assertAlmostEqual(pass_at_k(3, 1, 1), 1 / 3, places=15)
        self.assertAlmostEqual(pass_at_k(3, 1, 2), 2 / 3, places=15)
        self.assertEqual(pass_at_k(3, 1, 3), 1.0)
        self.assertEqual(pass_at_k(5, 0, 1), 0.0)
        # 1 - C(7,5)/C(10,5) = 1 - 21/252
        self.assertAlmostEqual(pass_at_k(10, 3, 5), 1 - 21 / 252, places=15)
        self.assertTrue(math.isnan(pass_at_k(2, 1, 3)))

    def test_verdict(self):
        j = airlock.judge
        rep = b'{"result": "passed", "reason": "passed"}\n'
        ok = {"status": "OK", "attested": True, "stdout": rep}
        self.assertEqual(j({"status": "OK", "steps": [ok]}),
                         ("passed", True, "passed"))
        # the runner's words without the host's proof: not a pass
        forged = dict(ok, attested=False)
        self.assertEqual(j({"status": "OK", "steps": [forged]}),
                         ("timed out", False,
                          "failed: exited before check (OK)"))
        self.assertEqual(j({"status": "OK", "steps": [dict(
            ok, attested=None)]})[1], False)
        self.assertEqual(j({"status": "ML", "steps": [dict(
            ok, status="ML")]}), ("failed: ML", False, "passed"))
        self.assertEqual(j({"status": "OK", "steps": [dict(
            ok, stdout=b'{"result": "failed: ", "reason": '
            b'"failed: AssertionError"}\n')]}),
            ("failed: ", False, "failed: AssertionError"))
        self.assertEqual(j({"status": "TL"})[:2], ("timed out", False))
        self.assertEqual(j({"status": "RE", "steps": [
            {"stderr": b"", "exit_code": 3}]}),
            ("timed out", False, "failed: exited before check (RE: exit 3)"))
        self.assertEqual(j({"status": "RJ", "error": "steps: bad",
                            "steps": []})[0], "failed: RJ: steps: bad")
        self.assertEqual(airlock.verdict({"status": "SG", "steps": [
            {"stderr": b"", "signal": 9}]}), "timed out")

    def test_sample_ids(self):
        p = {"task_id": "HumanEval/7", "prompt": "def f():\n",
             "entry_point": "f", "test": "def check(c): pass\n"}
        a = sample_job(p, {"task_id": "HumanEval/7", "completion": "  1\n"}, 0)
        b = sample_job(p, {"task_id": "HumanEval/7", "completion": "  1\n"}, 0)
        c = sample_job(p, {"task_id": "HumanEval/7", "completion": "  2\n"}, 0)
        self.assertEqual(a, b)
        self.assertRegex(a["id"], r"^HumanEval/7/s0-[0-9a-f]{10}$")
        self.assertNotEqual(a["id"], c["id"])
        step = a["steps"][0]
        self.assertEqual(step["cmd"], ["python3",
                                       "/run/airlock-check/check.py"])
        self.assertIs(step["attest"], True)
        spec = json.loads(step["stdin"])
        # the program and the test apart: the judge runs the test
        self.assertEqual(spec["program"], "def f():\n  1\n")
        self.assertEqual(spec["test"], "def check(c): pass\n")
        self.assertEqual((spec["check"], spec["candidate"]), ("check", "f"))
        # jansson's text, control characters in capitals: the CLI's hash
        d = sample_job(p, {"task_id": "HumanEval/7",
                           "completion": "  '\x0c\x01\x1f\u00e9'\n"}, 0)
        self.assertIn("\\f\\u0001\\u001F\u00e9", d["steps"][0]["stdin"])
        self.assertNotEqual(sample_job(p, {"task_id": "HumanEval/7",
                                           "completion": "  1\n"}, 0,
                                       strict=True)["id"], a["id"])


def c_scripts():
    """The Lua scripts of dispatcher/queue/script.c, by name (ALQ_X ->
    text)."""
    with open(os.path.join(HERE, "..", "..", "..", "dispatcher", "queue",
                           "script.c")) as f:
        src = f.read()
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    body = src[src.index("scripts[ALQ_N_SCRIPTS] = {"):]
    body = body[:body.index("\n};\n")]
    lit = r'"(?:[^"\\]|\\.)*"'
    out = {}
    for m in re.finditer(r"\[(ALQ_\w+)\]\s*=((?:\s*%s)+)" % lit, body):
        out[m.group(1)] = "".join(
            x[1:-1].encode().decode("unicode_escape")
            for x in re.findall(lit, m.group(2)))
    return out


class Redis(unittest.TestCase):
    def setUp(self):
        if MODE != "redis":
            self.skipTest("redis mode only")
        self.e = Env(extra_conf="[limits]\nmemory_mb_max = 1024\n")
        self.c = Client(self.e.url)

    def tearDown(self):
        self.e.close()

    def test_eval_ids_as_the_cli(self):
        # `airlock eval` against a queue nobody serves: the ids it enqueues
        # are the ones sample_job computes, control characters, non-ASCII,
        # --strict and --timeout included (jansson's text, hashed)
        p = {"task_id": "E/0", "prompt": "def f(x):\n", "entry_point": "f",
             "test": "def check(c):\n    assert c(1) == '\x0c\x01\u00e9'\n"}
        samples = [{"task_id": "E/0", "completion": "    return '\x0c'\n"},
                   {"task_id": "E/0", "completion": "    return '\u00e9\t'\n"}]
        sp = os.path.join(self.e.tmp, "s.jsonl")
        pp = os.path.join(self.e.tmp, "p.jsonl")
        with open(sp, "w") as f:
            f.writelines(json.dumps(s) + "\n" for s in samples)
        with open(pp, "w") as f:
            f.write(json.dumps(p) + "\n")
        for args, kw in ((["--cpu-ms", "7000"], {"cpu_ms": 7000}),
                         (["--strict", "--timeout", "2.5"],
                          {"strict": True, "timeout_ms": 2500})):
            want = {sample_job(p, s, i, **kw)["id"]
                    for i, s in enumerate(samples)}
            ev = subprocess.Popen([BIN, "eval", sp, "--problems", pp,
                                   "-o", os.devnull] + args,
                                  env=self.e.env(), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
            try:
                got = set()
                for _ in range(200):
                    got = {k.decode().split(":job:", 1)[1] for k in
                           self.c.r.keys(self.c.key("job:") + "*")} & want
                    if got == want:
                        break
                    time.sleep(0.05)
                self.assertEqual(got, want)
                # and the same payloads, byte for byte: the same digests
                for i, s in enumerate(samples):
                    job = sample_job(p, s, i, **kw)
                    self.assertEqual(
                        self.c.r.get(self.c.key("digest:",
                                                job["id"])).decode(),
                        airlock.digest(self.c._prepare(job)[1]))
            finally:
                ev.kill()
                ev.wait()

    def test_same_jobs_as_the_cli(self):
        jid = self.c.submit({"id": "py/1", "sh": "echo hi"})
        self.assertEqual(jid, "py/1")
        st = json.loads(self.e.cli("status", "--json", "py/1").stdout)
        self.assertEqual(st["state"], "queued")
        # the id is the idempotency key across clients: the same job from
        # the CLI is the same payload (canonical()), a no-op
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write('{"id": "py/1", "sh": "echo hi"}')
            f.flush()
            p = self.e.cli("submit", f.name)
            self.assertIn("submitted before", p.stderr)
        # another job under it is refused, from either client
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write('{"id": "py/1", "sh": "echo other"}')
            f.flush()
            p = self.e.cli("submit", f.name, check=False)
            self.assertEqual(p.returncode, 4, p.stderr)
            self.assertIn("another payload", p.stderr)
        with self.assertRaises(airlock.IdConflict) as cm:
            self.c.submit({"id": "py/1", "sh": "echo third"})
        self.assertEqual(cm.exception.ids, ["py/1"])
        self.c.submit({"id": "py/1", "sh": "echo hi"})  # the same: fine
        self.assertEqual(self.c.r.xlen(self.c.key("jobs")), 1)
        # ids without one are fresh, as the CLI's
        ids = self.c.submit_many([{"sh": "true"}, {"sh": "true"}])
        self.assertEqual(len(set(ids)), 2)
        self.assertTrue(all(re.match(r"^j-[0-9a-f]{20}$", i) for i in ids))

    def test_payloads_as_the_cli(self):
        # the CLI's payload of a job is ours, byte for byte (so the same
        # digest): shorthand, limits, files, expect, bytes stdin
        jobs = [{"id": "pc/1", "sh": "echo hi"},
                {"id": "pc/2", "cmd": ["python3", "-c", "print(1)"],
                 "stdin": "x\u00e9", "timeout_ms": 5000,
                 "limits": {"wall_ms": 30000, "memory_mb": 512},
                 "template": "python", "files": {"a.txt": "hello"}},
                {"id": "pc/3", "steps": [
                    {"name": "s", "sh": "cat", "stdin": "in",
                     "expect": {"stdout": "in", "compare": "exact"}},
                    {"cmd": ["true"], "if": "success", "cpu_ms": 100,
                     "attest": True}]}]
        for job in jobs:
            with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
                f.write(json.dumps(job))
                f.flush()
                self.e.cli("submit", f.name)
            theirs = self.c.r.get(self.c.key("job:", job["id"]))
            ours = self.c._prepare(job)[1]
            self.assertEqual(ours, theirs, job["id"])
            self.assertEqual(
                self.c.r.get(self.c.key("digest:", job["id"])).decode(),
                airlock.digest(ours))
            self.c.submit(job)  # a no-op, not a conflict

    def test_id_conflict(self):
        # a squatter takes an eval sample's id first with {"cmd": ["true"]}
        p = {"task_id": "C/0", "prompt": "def f():\n", "entry_point": "f",
             "test": "def check(c):\n    assert c() == 1\n"}
        s = {"task_id": "C/0", "completion": "    return 2\n"}
        sid = sample_job(p, s, 0)["id"]
        self.c.submit({"id": sid, "cmd": ["true"]})
        with self.assertRaises(airlock.IdConflict) as cm:
            self.c.submit_many([{"id": "ok/1", "sh": "true"},
                                sample_job(p, s, 0)])
        self.assertEqual(cm.exception.ids, [sid])
        self.assertEqual(self.c.status("ok/1")["state"], "queued")
        with self.assertRaises(airlock.IdConflict):
            self.c.evaluate([s], [p], k=(1,), timeout=5)
        # a result stored for our payload's id but of another payload
        # (its digest) is not taken as ours
        job = sample_job(p, dict(s, completion="    return 1\n"), 0)
        self.c.submit(job)
        self.c.r.set(self.c.key("result:", job["id"]), msgpack.packb(
            {"id": job["id"], "status": "OK", "steps": [], "attempt": 1,
             "digest": "0" * 64}, use_bin_type=True))
        self.c.r.rpush(self.c.key("done:", job["id"]), "1")
        with self.assertRaises(airlock.IdConflict) as cm:
            self.c.evaluate([dict(s, completion="    return 1\n")], [p],
                            k=(1,), timeout=5)
        self.assertIn("stored result", str(cm.exception))

    def test_serve_reads_our_payloads(self):
        # an over-policy job: serve's worker decodes our msgpack and
        # rejects it (RJ naming the field); no VM starts
        self.e.start_serve()
        jid = self.c.submit({"id": "py-big", "sh": "true",
                             "limits": {"memory_mb": 4096}})
        res = self.c.wait(jid, timeout=60)
        self.assertIsNotNone(res, "no result from serve")
        self.assertEqual(res["status"], "RJ")
        self.assertIn("memory_mb", res["error"])
        cli = json.loads(self.e.cli("result", "--json", jid).stdout)
        self.assertEqual((cli["id"], cli["status"], cli["error"]),
                         (res["id"], res["status"], res["error"]))
        got = list(self.c.as_completed(["py-big"], timeout=1))
        self.assertEqual([g[0] for g in got], ["py-big"])
        st = self.c.status(jid)
        self.assertEqual((st["state"], st["status"]), ("done", "RJ"))
        self.assertEqual(st, json.loads(self.e.cli("status", "--json",
                                                   jid).stdout))
        self.assertEqual(self.c.cancel(jid), "done")

    def test_scripts_are_the_c_ones(self):
        c = c_scripts()
        self.assertEqual(client_mod.SUBMIT, c["ALQ_SUBMIT"])
        self.assertEqual(client_mod.JOB_STATUS, c["ALQ_JOB_STATUS"])
        self.assertEqual(client_mod.CANCEL, c["ALQ_CANCEL"])

    def cli_status(self, jid):
        p = self.e.cli("status", "--json", jid, check=False)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        return json.loads(p.stdout)

    def test_status_as_the_cli(self):
        # eval-style ids, with slashes; every state but done/dead (below)
        q, r = "HumanEval/0/s0-q", "HumanEval/0/s1-r"
        self.assertEqual(self.c.status(q), {"id": q, "state": "unknown"})
        self.assertEqual(self.c.status(q), self.cli_status(q))
        self.c.submit_many([{"id": q, "sh": "true"}, {"id": r, "sh": "true"}])
        st = self.c.status(q)
        self.assertEqual(st["state"], "queued")
        self.assertEqual(st, self.cli_status(q))
        # a dispatcher "d1" claims the first entry: q runs, r waits
        jobs = self.c.key("jobs")
        self.c.r.xgroup_create(jobs, "workers", id="0")
        self.c.r.xreadgroup("workers", "d1", {jobs: ">"}, count=1)
        st = self.c.status(q)
        self.assertEqual((st["state"], st["dispatcher"], st["attempt"]),
                         ("running", "d1", 1))
        self.assertEqual(st, self.cli_status(q))
        self.assertEqual(self.c.status(r)["state"], "queued")
        self.assertEqual(self.c.status(r), self.cli_status(r))
        for bad in ("", "a b", "a//b", "../x", "x" * 129, "a/./b"):
            with self.assertRaises(ValueError, msg=bad):
                self.c.status(bad)
            with self.assertRaises(ValueError, msg=bad):
                self.c.cancel(bad)

    def test_cancel_as_the_cli(self):
        # one queued job cancelled by each client: the same answer and
        # the same stored result, byte for byte but for the id
        self.c.submit_many([{"id": "cq/1", "sh": "true"},
                            {"id": "pq/1", "sh": "true"},
                            {"id": "pr/1", "sh": "true"}])
        p = self.e.cli("cancel", "cq/1")
        self.assertIn("it was queued", p.stdout)
        self.assertEqual(self.c.cancel("pq/1"), "queued")
        cli = self.c.r.get(self.c.key("result:", "cq/1"))
        mine = self.c.r.get(self.c.key("result:", "pq/1"))
        self.assertEqual(mine.replace(b"pq/1", b"cq/1"), cli)
        self.assertEqual(self.c.status("pq/1"), self.cli_status("pq/1"))
        self.assertEqual(self.c.status("pq/1")["state"], "cancelled")
        self.assertEqual(self.c.wait("pq/1", timeout=1)["status"], "CX")
        # a running one: its entry goes to the cancel hash for serve
        jobs = self.c.key("jobs")
        self.c.r.xgroup_create(jobs, "workers", id="0")
        got = self.c.r.xreadgroup("workers", "d1", {jobs: ">"}, count=3)
        sid = {f[b"id"]: e for e, f in got[0][1]}[b"pr/1"]
        self.assertEqual(self.c.cancel("pr/1"), "running")
        self.assertEqual(self.c.r.hget(self.c.key("cancel"), sid), b"pr/1")
        res = json.loads(self.e.cli("result", "--json", "pr/1").stdout)
        self.assertEqual(res["status"], "CX")
        self.assertIn("while running", res["error"])
        # nothing to cancel: as the CLI's exit 1 cases
        before = int(self.c.r.get(self.c.key("cancels")) or 0)
        self.assertEqual(self.c.cancel("pq/1"), "done")
        self.assertEqual(self.c.cancel("nobody"), "unknown")
        # counted like the CLI's and the API's (airlock_cancels_total):
        # the two that took effect, not these
        self.assertGreaterEqual(before, 2)
        self.assertEqual(int(self.c.r.get(self.c.key("cancels"))), before)
        for jid in ("pq/1", "nobody"):
            self.assertEqual(self.e.cli("cancel", jid,
                                        check=False).returncode, 1)

    def digest_of(self, job):
        """The digest serve puts in the result of `job` (its payload's)."""
        return airlock.digest(self.c._prepare(job)[1])

    def store(self, jid, res):
        """A result as serve stores it: msgpack, blobs str when UTF-8."""
        self.c.r.set(self.c.key("result:", jid),
                     msgpack.packb(res, use_bin_type=True))
        self.c.r.rpush(self.c.key("done:", jid), "1")

    def test_output_is_bytes(self):
        step = {"status": "RE", "exit_code": 1, "stdout": "caf\u00e9\n",
                "stderr": b"\xff\xfe\n", "stdout_truncated": False,
                "stderr_truncated": False, "stdout_bytes": 6,
                "stderr_bytes": 3, "wall_ms": 1, "cpu_ms": 1,
                "max_rss_kb": 1}
        self.store("b/1", {"id": "b/1", "status": "RE", "steps": [step],
                           "files": {"a.txt": "x", "b.bin": b"\x00\xff"},
                           "vm": {"accel": "kvm", "restored": True,
                                  "restore_ms": 1},
                           "timing": {"queued_ms": 0, "run_ms": 1,
                                      "total_ms": 1}, "attempt": 1})
        # the CLI reads it: text where it can, base64 where it cannot
        cli = json.loads(self.e.cli("result", "--json", "b/1").stdout)
        self.assertEqual(cli["steps"][0]["stdout"], "caf\u00e9\n")
        self.assertEqual(cli["steps"][0]["stderr"], {"base64": "//4K"})
        # Python: bytes whichever the content, text on request
        res = self.c.result("b/1")
        st = res["steps"][0]
        self.assertEqual(st["stdout"], "caf\u00e9\n".encode())
        self.assertEqual(st["stderr"], b"\xff\xfe\n")
        self.assertEqual(res["files"], {"a.txt": b"x", "b.bin": b"\x00\xff"})
        self.assertEqual(airlock.stdout_of(res), "caf\u00e9\n")
        self.assertEqual(airlock.stderr_of(res), "\ufffd\ufffd\n")
        self.assertEqual(airlock.judge(res), (
            "timed out", False, "failed: exited before check (RE: ??)"))

    def test_harness_timeout(self):
        # no serve: nothing runs. One sample's result is stored already
        # (OK); the other never comes: evaluate gives up after its
        # timeout, and that is no verdict of the sample's
        p = {"task_id": "T/0", "prompt": "def f():\n", "entry_point": "f",
             "test": "def check(c): pass\n"}
        samples = [{"task_id": "T/0", "completion": "    return 1\n"},
                   {"task_id": "T/0", "completion": "    return 2\n"}]
        job0 = sample_job(p, samples[0], 0)
        done = job0["id"]
        self.store(done, {"id": done, "status": "OK", "steps": [{
            "status": "OK", "attested": True,
            "stdout": '{"result": "passed", "reason": "passed"}\n'}],
            "digest": self.digest_of(job0)})
        t0 = time.monotonic()
        with self.assertRaises(airlock.HarnessTimeout) as cm:
            self.c.evaluate(samples, [p], k=[1], timeout=0.5)
        self.assertLess(time.monotonic() - t0, 10)
        e = cm.exception
        self.assertIsInstance(e, airlock.AirlockError)
        self.assertIn("harness timeout", str(e))
        self.assertEqual([(r["result"], r["passed"]) for r in e.results],
                         [("passed", True), (None, None)])
        self.assertEqual(e.pending, [sample_job(p, samples[1], 1)["id"]])
        # the job is still queued: a later evaluate picks it up
        self.assertEqual(self.c.status(e.pending[0])["state"], "queued")
        self.store(e.pending[0], {"id": e.pending[0], "status": "TL",
                                  "steps": [], "digest": self.digest_of(
                                      sample_job(p, samples[1], 1))})
        rows, scores = self.c.evaluate(samples, [p], k=[1], timeout=5)
        self.assertEqual([r["result"] for r in rows], ["passed", "timed out"])
        self.assertEqual(scores, {"pass@1": 0.5})

    def test_wait_timeout(self):
        t0 = time.monotonic()
        self.assertIsNone(self.c.wait("nobody", timeout=0.3))
        self.assertIsNone(self.c.result("nobody"))
        self.assertLess(time.monotonic() - t0, 3)
        self.assertEqual(list(self.c.as_completed(["a", "b"], timeout=0.2)),
                         [])


class VM(unittest.TestCase):
    def setUp(self):
        if MODE != "vm":
            self.skipTest("vm mode only")
        self.e = Env()
        self.e.start_serve(workers=2)
        self.c = Client(self.e.url)

    def tearDown(self):
        self.e.close()

    def test_readme_example(self):
        readme = open(os.path.join(HERE, "..", "README.md")).read()
        code = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
        env = dict(self.e.env(), PYTHONPATH=os.path.dirname(HERE))
        p = subprocess.run(["/usr/bin/python3", "-c", code], env=env,
                           capture_output=True, text=True, timeout=900)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], "OK")
        self.assertIn("'passed', 'failed: ', 'timed out'", lines[1])
        self.assertIn("'pass@1': 0.333333333333333", lines[1])
        self.assertIn("'pass@2': 0.666666666666666", lines[1])
        # the same jobs and results through the CLI, under the same ids
        ids = [k.decode() for k in self.c.r.keys(self.c.key("result:") + "*")]
        self.assertEqual(len(ids), 4)
        for k in ids:
            jid = k.split(":result:", 1)[1]
            mine = self.c.result(jid)
            cli = json.loads(self.e.cli("result", "--json", jid).stdout)
            self.assertEqual(cli["status"], mine["status"])
            self.assertEqual(json.loads(self.e.cli(
                "status", "--json", jid).stdout)["state"], "done")
        # rerun: the samples map to the same jobs, nothing runs again
        n = self.c.r.xlen(self.c.key("jobs"))
        p = subprocess.run(["/usr/bin/python3", "-c", code], env=env,
                           capture_output=True, text=True, timeout=900)
        self.assertEqual(p.stdout.splitlines()[1], lines[1])
        self.assertEqual(self.c.r.xlen(self.c.key("jobs")), n + 1)  # run()
        # `airlock eval` on the same samples: the same job ids (nothing
        # new is enqueued), the same verdicts and pass@k
        ns = {}
        exec(code[code.index("problem = "):code.index("rows, scores")], ns)
        sp = os.path.join(self.e.tmp, "samples.jsonl")
        pp = os.path.join(self.e.tmp, "problems.jsonl")
        with open(sp, "w") as f:
            f.writelines(json.dumps(s) + "\n" for s in ns["samples"])
        with open(pp, "w") as f:
            f.write(json.dumps(ns["problem"]) + "\n")
        n = self.c.r.xlen(self.c.key("jobs"))
        p = self.e.cli("eval", sp, "--problems", pp, "-k", "1,2",
                       "--json", "-")
        cli_scores = json.loads([ln for ln in p.stdout.splitlines()
                                 if ln.startswith("{")][-1])
        mine = self.c.evaluate(ns["samples"], [ns["problem"]], k=[1, 2])
        for k, v in mine[1].items():
            self.assertAlmostEqual(cli_scores[k], v, places=12)
        self.assertEqual(self.c.r.xlen(self.c.key("jobs")), n,
                         "airlock eval made other job ids")
        with open(sp + "_results.jsonl") as f:
            cli_rows = [json.loads(x) for x in f]
        self.assertEqual([r["result"] for r in cli_rows],
                         [r["result"] for r in mine[0]])

    def test_run(self):
        res = self.c.run(["sh", "-c", "echo hello; printf '\\377' >&2; "
                          "exit 3"], timeout=300)
        self.assertEqual(res["status"], "RE")
        self.assertEqual(airlock.stdout_of(res), "hello\n")
        self.assertEqual(res["steps"][0]["stdout"], b"hello\n")
        self.assertEqual(res["steps"][0]["stderr"], b"\xff")
        cli = json.loads(self.e.cli("result", "--json", res["id"]).stdout)
        self.assertEqual(cli["steps"][0]["stdout"], "hello\n")


if __name__ == "__main__":
    BIN, MODE = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0], "-v"])
