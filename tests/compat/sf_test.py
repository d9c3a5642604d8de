#!/usr/bin/env python3
"""sf_test.py: SandboxFusion's /run_code as verl's sandbox_fusion client
(verl/utils/reward_score/sandbox_fusion/utils.py, call_sandbox_api) sends
it: a JSON payload of compile_timeout, run_timeout, code, stdin,
memory_limit_MB, language, files and fetch_files, POSTed with
Content-Type and Accept application/json; the answer read the way verl
reads it (status, run_result.status/stdout/return_code).

usage: sf_test.py BASE_URL
"""
import base64
import json
import sys

import requests

URL = sys.argv[1].rstrip("/") + "/run_code"  # verl's sandbox_fusion_url


def fail(what):
    sys.exit("sandboxfusion: FAIL: " + what)


def call(code, stdin="", language="python", files=None, fetch=None,
         run_timeout=10):
    # verl's default compile_timeout is 10 s; g++ under TCG on a loaded
    # host takes longer
    payload = json.dumps({
        "compile_timeout": 10 if language == "python" else 300, "run_timeout": run_timeout, "code": code,
        "stdin": stdin, "memory_limit_MB": 1024, "language": language,
        "files": files or {}, "fetch_files": fetch or []})
    r = requests.post(URL, headers={"Content-Type": "application/json",
                                    "Accept": "application/json"},
                      data=payload, timeout=600)
    return r.status_code, r.json()


code, out = call("a, b = map(int, input().split())\nprint(a + b)", "2 40\n")
if code != 200 or out["status"] != "Success" or \
        out["run_result"]["status"] != "Finished" or \
        out["run_result"]["stdout"] != "42\n" or \
        out["run_result"]["return_code"] != 0 or out["compile_result"]:
    fail(f"stdin: {code} {out}")
code, out = call("import sys; sys.exit(3)")
if out["status"] != "Failed" or out["run_result"]["return_code"] != 3:
    fail(f"exit 3: {out}")
code, out = call("while True: pass", run_timeout=1)
if out["status"] != "Failed" or \
        out["run_result"]["status"] != "TimeLimitExceeded":
    fail(f"timeout: {out}")
code, out = call("open('o.txt','w').write(open('in.txt').read()[::-1])",
                 files={"in.txt": base64.b64encode(b"abc").decode()},
                 fetch=["o.txt"])
if out["status"] != "Success" or \
        base64.b64decode(out["files"]["o.txt"]) != b"cba":
    fail(f"files: {out}")
code, out = call("#include <cstdio>\nint main(){puts(\"cpp\");}",
                 language="cpp")
if out["status"] != "Success" or out["run_result"]["stdout"] != "cpp\n" or \
        out["compile_result"]["status"] != "Finished":
    fail(f"cpp: {out}")
code, out = call("int main(){x}", language="cpp")
if out["status"] != "Failed" or out["run_result"] is not None or \
        out["compile_result"]["return_code"] == 0:
    fail(f"cpp compile error: {out}")
print("sandboxfusion: ok")
