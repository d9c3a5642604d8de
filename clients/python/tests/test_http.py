"""test_http.py: the Python client's HTTP mode (issue 37, item 7) against
a real redis-server and a real `airlock serve --http` with a token:
Client("http://...", token=...) talks to serve only, never to Redis.

usage: /usr/bin/python3 test_http.py AIRLOCK_BIN redis|vm
  redis  no VM: the HTTP client is chosen by the URL; no token or a wrong
         one is an AirlockError naming 401; an invalid job names its
         problem; submit, status, cancel (a CX result read back), batch;
         evaluate() refuses a sample with no completion before submitting
  vm     a real job: run() and evaluate() through the HTTP API
"""
import os
import socket
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import airlock  # noqa: E402
import test_client  # noqa: E402
from airlock.http import HttpClient  # noqa: E402

TOKEN = "t0ken-for-the-http-client-test"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Http(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.port = free_port()
        tmp_state = None
        if MODE == "redis":     # no images: nothing runs, jobs stay queued
            tmp_state = os.path.join("/tmp", "al-py-http-state-%d" %
                                     os.getpid())
            os.makedirs(tmp_state, exist_ok=True)
        # no images there: serve must take the jobs all the same
        # (templates.check_images; they stay queued)
        cls.env = test_client.Env(
            state_dir=tmp_state,
            extra_conf="[templates]\ncheck_images = false\n"
            if tmp_state else "")
        tok = os.path.join(cls.env.tmp, "token")
        fd = os.open(tok, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, (TOKEN + "\n").encode())
        os.close(fd)
        with open(cls.env.conf, "a") as f:
            f.write("[http]\nlisten = 127.0.0.1:%d\ntoken_file = %s\n" %
                    (cls.port, tok))
        cls.env.log = open(os.path.join(cls.env.tmp, "serve.log"), "w")
        cls.env.serve = subprocess.Popen(
            [BIN, "serve", "--workers", "1"], env=cls.env.env(),
            stdout=cls.env.log, stderr=subprocess.STDOUT)
        cls.url = "http://127.0.0.1:%d" % cls.port
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", cls.port), 1).close()
                break
            except OSError:
                time.sleep(0.05)
        cls.c = airlock.Client(cls.url, token=TOKEN)

    @classmethod
    def tearDownClass(cls):
        cls.env.close()
        if MODE == "redis":
            import shutil
            shutil.rmtree(os.path.join("/tmp", "al-py-http-state-%d" %
                                       os.getpid()), ignore_errors=True)

    def test_redis_mode_chosen_by_url(self):
        self.assertIsInstance(self.c, HttpClient)
        self.assertIsInstance(airlock.Client("https://x.invalid:1"),
                              HttpClient)

    def test_token(self):
        for tok in (None, "wrong-token-wrong-token"):
            os.environ.pop("AIRLOCK_TOKEN", None)
            with self.assertRaisesRegex(airlock.AirlockError, "401"):
                airlock.Client(self.url, token=tok).submit({"sh": "true"})

    def test_invalid_job_names_problem(self):
        with self.assertRaisesRegex(airlock.AirlockError,
                                    "422.*timeout_ms"):
            self.c.submit({"sh": "true", "timeout_ms": "x"})

    def test_evaluate_refuses_no_completion(self):
        with self.assertRaisesRegex(airlock.AirlockError,
                                    "completion or solution"):
            self.c.evaluate([{"task_id": "t", "generation": "x"}],
                            [{"task_id": "t", "prompt": "", "test": "",
                              "entry_point": "f"}])

    def test_submit_status_cancel(self):
        if MODE != "redis":
            self.skipTest("redis mode")
        jid = self.c.submit({"id": "http-py-1", "sh": "sleep 100"})
        self.assertEqual(jid, "http-py-1")
        self.assertEqual(self.c.submit({"id": "http-py-1",
                                        "sh": "sleep 100"}), jid)
        with self.assertRaises(airlock.IdConflict):
            self.c.submit({"id": "http-py-1", "sh": "sleep 1"})
        self.assertIn(self.c.status(jid)["state"],
                      ("queued", "running", "done", "dead"))
        was = self.c.cancel(jid)
        self.assertIn(was, ("queued", "running", "done"))
        res = self.c.wait(jid, timeout=20)
        self.assertIsNotNone(res)
        if was != "done":
            self.assertEqual(res["status"], "CX")
            self.assertEqual(self.c.status(jid)["state"], "cancelled")
        self.assertEqual(self.c.status("http-py-none")["state"], "unknown")
        self.assertIsNone(self.c.result("http-py-none"))
        ids = self.c.submit_many([{"sh": "true"}, {"sh": "false"}])
        self.assertEqual(len(ids), 2)
        for i in ids:
            self.c.cancel(i)

    def test_run_and_evaluate(self):
        if MODE != "vm":
            self.skipTest("vm mode")
        res = self.c.run(["python3", "-c", "print(6*7)"], timeout=600)
        self.assertEqual(res["status"], "OK", res)
        self.assertEqual(res["steps"][0]["stdout"], b"42\n")
        probs = [{"task_id": "T/0", "prompt": "def f(x):\n",
                  "entry_point": "f",
                  "test": "def check(c):\n    assert c(2) == 4\n"}]
        rows, k = self.c.evaluate(
            [{"task_id": "T/0", "completion": "    return x * 2\n"},
             {"task_id": "T/0", "completion": "    return x + 3\n"}],
            probs, k=(1,), timeout=600)
        self.assertEqual([r["passed"] for r in rows], [True, False])
        self.assertAlmostEqual(k["pass@1"], 0.5)


if __name__ == "__main__":
    BIN, MODE = sys.argv[1], sys.argv[2]
    test_client.BIN, test_client.MODE = BIN, MODE
    unittest.main(argv=[sys.argv[0], "-v"])
