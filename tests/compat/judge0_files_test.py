#!/usr/bin/env python3
"""judge0_files_test.py: Judge0's additional_files as its docs write
them (a base64 zip made here with Python's zipfile) against a real serve
with real VMs, in one batch: language 89 (Multi-file program) with its
`compile` and `run` scripts (a C program of two files, stdin read),
language 89 with `run.sh` and a failing compile, and Python (71) with a
module beside the source; then stack_limit (a C program with 16 MiB on
its stack: accepted at 64000 KB, SIGSEGV (7) at 4000 KB, the Linux
default 8 MiB being between) and number_of_runs (3 runs of one Python
program: 3 run steps in its job, GET /jobs/{token}) and memory_limit
with enable_per_process_and_thread_memory_limit (RLIMIT_AS, as isolate's
-m: Python's 300 MiB bytearray is a MemoryError, 11).

usage: judge0_files_test.py BASE_URL
"""
import base64
import io
import sys
import time
import zipfile

import requests

BASE = sys.argv[1]


def check(cond, what):
    if not cond:
        sys.exit("judge0 files: FAIL: " + what)


def zipped(files):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in files.items():
            z.writestr(name, text)
    return base64.b64encode(buf.getvalue()).decode()


project = zipped({
    "compile": "gcc -O0 -o main main.c add.c\n",
    "run": "./main\n",
    "main.c": "#include <stdio.h>\nint add(int, int);\n"
              "int main(void){int a, b; scanf(\"%d %d\", &a, &b);"
              "printf(\"%d\\n\", add(a, b)); return 0;}\n",
    "add.c": "int add(int a, int b) { return a + b; }\n",
})
broken = zipped({"compile.sh": "gcc -o main main.c\n", "run.sh": "./main\n",
                 "main.c": "int main(){x}\n"})
module = zipped({"helper.py": "def twice(x):\n    return 2 * x\n",
                 "main.py": "print('not the source')\n"})
STACK = ("#include <string.h>\nint main(void){volatile char a[16 << 20];"
         "memset((char *)a, 1, sizeof a); return a[100] - 1;}\n")
subs = [
    {"language_id": 89, "additional_files": project, "stdin": "40 2",
     "expected_output": "42"},
    {"language_id": 89, "additional_files": broken},
    {"language_id": 71, "additional_files": module,
     "source_code": "import helper\nprint(helper.twice(21))\n"},
    {"language_id": 50, "source_code": STACK, "stack_limit": 64000},
    {"language_id": 50, "source_code": STACK, "stack_limit": 4000},
    {"language_id": 71, "source_code": "print(6 * 7)\n",
     "number_of_runs": 3},
    {"language_id": 71, "memory_limit": 128000,
     "enable_per_process_and_thread_memory_limit": True,
     "source_code": "x = bytearray(300 << 20)\nprint(len(x))\n"},
]
r = requests.post(BASE + "/submissions/batch", json={"submissions": subs},
                  timeout=600)
check(r.status_code == 201 and all("token" in o for o in r.json()),
      f"batch: {r.status_code} {r.text}")
tokens = ",".join(o["token"] for o in r.json())
deadline = time.time() + 500
while True:
    out = requests.get(BASE + "/submissions/batch",
                       params={"tokens": tokens, "fields": "*"},
                       timeout=600).json()["submissions"]
    if all(s["status"]["id"] > 2 for s in out) or time.time() > deadline:
        break
    time.sleep(1)
p, b, m, big, small, runs, mem = out
check(p["status"]["id"] == 3 and p["stdout"] == "42\n",
      f"89 compile+run: {p}")
check(b["status"]["id"] == 6 and "main.c" in (b["compile_output"] or ""),
      f"89 compile.sh error: {b}")
check(m["status"]["id"] == 3 and m["stdout"] == "42\n",
      f"71 with a module: {m}")
check(big["status"]["id"] == 3, f"stack_limit 64000: {big}")
check(small["status"]["id"] == 7 and small["exit_signal"] == 11,
      f"stack_limit 4000: {small}")
job = requests.get(BASE + "/jobs/" + runs["token"], timeout=60).json()
check(runs["status"]["id"] == 3 and runs["stdout"] == "42\n" and
      [st["status"] for st in job["steps"]] == ["OK"] * 3,
      f"number_of_runs 3: {runs} {job.get('steps')}")
check(mem["status"]["id"] == 11 and "MemoryError" in (mem["stderr"] or ""),
      f"memory_limit per process: {mem}")
print("judge0 files: ok")
