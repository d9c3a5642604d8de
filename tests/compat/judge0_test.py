#!/usr/bin/env python3
"""judge0_test.py: Judge0 CE requests as Judge0's own docs write them,
against `airlock serve --http` with real VMs (the c and python images).

usage: judge0_test.py BASE_URL CALLBACK_HOST CALLBACK_PORT
Checks: single with wait, base64 both ways, a batch (POST, then GET
?tokens=), fields (default, a list, *), the languages, statuses and
about routes, and every status id the c and python images can give:
3 accepted, 4 wrong answer, 5 TLE, 6 CE, 7 SIGSEGV, 9 SIGFPE, 10
SIGABRT, 11 NZEC, 14 exec format error; a callback received.
"""
import base64
import http.server
import json
import struct
import sys
import threading
import time

import requests

BASE = sys.argv[1]
CB_HOST = sys.argv[2]
CB_PORT = int(sys.argv[3])
H = {"Content-Type": "application/json"}


def check(cond, what):
    if not cond:
        sys.exit("judge0: FAIL: " + what)


def post(path, body, **params):
    r = requests.post(BASE + path, json=body, params=params, headers=H,
                      timeout=600)
    return r.status_code, r.json()


C = {
    3: ("#include <stdio.h>\nint main(){int a,b;scanf(\"%d %d\",&a,&b);"
        "printf(\"%d\\n\",a+b);}", "2 3", "5"),
    4: ("#include <stdio.h>\nint main(){puts(\"6\");}", "", "5"),
    5: ("int main(){for(;;);}", "", None),
    6: ("int main(){x}", "", None),
    7: ("int main(){volatile int*p=0;return *p;}", "", None),
    9: ("int main(int c,char**v){volatile int z=c-1;return 5/z;}", "", None),
    10: ("#include <stdlib.h>\nint main(){abort();}", "", None),
    11: ("int main(){return 3;}", "", None),
}


def b64(s):
    return base64.b64encode(s.encode()).decode()


def statuses_batch():
    subs = []
    for want, (src, stdin, exp) in C.items():
        s = {"source_code": b64(src), "language_id": 50,
             "stdin": b64(stdin), "cpu_time_limit": 2, "wall_time_limit": 5}
        if exp is not None:
            s["expected_output"] = b64(exp)
        subs.append(s)
    # 14: an aarch64 ELF header, which execve refuses on x86-64
    elf = (b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8) +
           struct.pack("<HHI", 2, 183, 1) + bytes(40))
    subs.append({"source_code": base64.b64encode(elf).decode(),
                 "language_id": 44})
    # 11: a Python SyntaxError, as Judge0 (no compile step for Python:
    # isolate runs python3 on the file, which exits 1)
    subs.append({"source_code": b64("print(1\n"), "language_id": 71})
    want = list(C) + [14, 11]
    code, out = post("/submissions/batch", {"submissions": subs},
                     base64_encoded="true")
    check(code == 201 and len(out) == len(subs) and
          all("token" in o for o in out), f"batch: {code} {out}")
    tokens = ",".join(o["token"] for o in out)
    deadline = time.time() + 500
    while True:
        r = requests.get(BASE + "/submissions/batch",
                         params={"tokens": tokens, "base64_encoded": "true",
                                 "fields": "token,status_id,status,"
                                 "compile_output,exit_signal"},
                         timeout=60)
        check(r.status_code == 200, f"batch get: {r.status_code} {r.text}")
        got = r.json()["submissions"]
        if all(g["status_id"] > 2 for g in got) or time.time() > deadline:
            break
        time.sleep(2)
    ids = [g["status_id"] for g in got]
    check(ids == want, f"status ids {ids}, want {want}")
    for g in got:
        check(set(g) == {"token", "status_id", "status", "compile_output",
                         "exit_signal"}, f"fields: {sorted(g)}")
    ce = base64.b64decode(got[want.index(6)]["compile_output"]).decode()
    check("error" in ce, "compile_output: " + ce)
    print("judge0: status ids", ids)


def single():
    # the docs' first example: wait=true, default fields
    code, out = post("/submissions",
                     {"source_code": "print(f'hello, {input()}')",
                      "language_id": 71, "stdin": "world"},
                     base64_encoded="false", wait="true")
    check(code == 201, f"wait: {code} {out}")
    check(set(out) == {"token", "stdout", "stderr", "compile_output",
                       "message", "status", "time", "memory"},
          f"default fields: {sorted(out)}")
    check(out["stdout"] == "hello, world\n" and out["status"]["id"] == 3,
          f"wait: {out}")
    # base64 both ways; output that is not UTF-8 needs it
    src = "import sys; sys.stdout.buffer.write(bytes([255, 254, 10]))"
    code, out = post("/submissions",
                     {"source_code": base64.b64encode(src.encode()).decode(),
                      "language_id": 92}, base64_encoded="true", wait="true")
    check(code == 201 and base64.b64decode(out["stdout"]) == b"\xff\xfe\n",
          f"base64: {code} {out}")
    r = requests.get(BASE + "/submissions/" + out["token"], timeout=60)
    check(r.status_code == 400 and "base64_encoded" in r.json()["error"],
          f"not UTF-8 without base64: {r.status_code} {r.text}")
    r = requests.get(BASE + "/submissions/" + out["token"],
                     params={"base64_encoded": "true", "fields": "*"},
                     timeout=60)
    full = r.json()
    for k in ("token", "status_id", "language_id", "time", "wall_time",
              "memory", "exit_code", "created_at", "finished_at",
              "cpu_time_limit", "wall_time_limit", "memory_limit"):
        check(k in full, f"fields=*: no {k}: {sorted(full)}")
    check(full["language_id"] == 92 and full["exit_code"] == 0,
          f"fields=*: {full}")
    # no wait: a token, then 1/2 or a result on GET
    code, out = post("/submissions", {"source_code": "print(1)",
                                      "language_id": 92})
    check(code == 201 and set(out) == {"token"}, f"no wait: {code} {out}")
    print("judge0: single, base64, fields ok")


def routes():
    langs = requests.get(BASE + "/languages", timeout=30).json()
    ids = {l["id"]: l["name"] for l in langs}
    check(ids.get(92) == "Python (3.11.2)" and 50 in ids and 54 in ids,
          f"languages: {ids}")
    one = requests.get(BASE + "/languages/92", timeout=30).json()
    check(one["source_file"] == "main.py" and not one["is_archived"],
          f"languages/92: {one}")
    st = requests.get(BASE + "/statuses", timeout=30).json()
    check([s["id"] for s in st] == list(range(1, 15)), f"statuses: {st}")
    check(requests.get(BASE + "/about", timeout=30).json()["version"],
          "about")
    check(requests.get(BASE + "/config_info", timeout=30).json()
          ["max_cpu_time_limit"] == 15, "config_info")
    w = requests.get(BASE + "/workers", timeout=30).json()
    check(w[0]["available"] >= 1, f"workers: {w}")
    print("judge0: routes ok")


def callback():
    got = []

    class H(http.server.BaseHTTPRequestHandler):
        def _take(self):
            n = int(self.headers.get("Content-Length", 0))
            got.append((self.command, json.loads(self.rfile.read(n))))
            self.send_response(200)
            self.end_headers()
        do_PUT = do_POST = _take

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer((CB_HOST, CB_PORT), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    code, out = post("/submissions", {
        "source_code": "print(40 + 2)", "language_id": 71,
        "callback_url": f"http://{CB_HOST}:{CB_PORT}/cb"})
    check(code == 201, f"callback submit: {code} {out}")
    deadline = time.time() + 300
    while not got and time.time() < deadline:
        time.sleep(0.5)
    srv.shutdown()
    check(got, "no callback received")
    method, body = got[0]
    check(method == "PUT", f"callback method {method}")
    check(body["token"] == out["token"] and body["status"]["id"] == 3 and
          body["stdout"] == "42\n", f"callback body: {body}")
    print("judge0: callback ok")


routes()
single()
statuses_batch()
callback()
print("judge0: ok")
