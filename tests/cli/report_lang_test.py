#!/usr/bin/env python3
"""report_lang_test.py AIRLOCK WORKDIR: `airlock report --jobs` on a
`language` job (issue 37, item 2). The worker puts a compile step first,
so the result's steps are one ahead of the job's; the diff of the failing
test must compare against that test's own expect, not the next one's.
Canned results, no VM."""
import json
import os
import subprocess
import sys

airlock, work = sys.argv[1:3]
os.makedirs(work, exist_ok=True)


def step(name, status, verdict=None, stdout=""):
    s = {"name": name, "status": status, "stdout": stdout, "stderr": "",
         "stdout_truncated": False, "stderr_truncated": False,
         "stdout_bytes": len(stdout), "stderr_bytes": 0, "wall_ms": 5,
         "cpu_ms": 4, "max_rss_kb": 900}
    if verdict:
        s["verdict"] = verdict
        s["score"] = 1 if verdict == "accepted" else 0
    return s


job = {"id": "sum", "language": "c", "source_code": "int main(){}",
       "steps": [{"name": "t1", "stdin": "1", "expect": {"stdout": "one\n"}},
                 {"name": "t2", "stdin": "2", "expect": {"stdout": "two\n"}},
                 {"name": "t3", "stdin": "3", "expect": {"stdout": "three\n"}}]}
res = {"id": "sum", "status": "OK", "verdict": "wrong_answer",
       "steps": [step("compile", "OK"),
                 step("t1", "OK", "accepted", "one\n"),
                 step("t2", "OK", "wrong_answer", "TWO\n"),
                 step("t3", "OK", "accepted", "three\n")],
       "vm": {"template": "c", "accel": "tcg", "restored": True,
              "restore_ms": 30},
       "timing": {"queued_ms": 1, "run_ms": 900, "total_ms": 901},
       "attempt": 1, "score": 2, "max_score": 3}
rpath, jpath = os.path.join(work, "r.jsonl"), os.path.join(work, "j.jsonl")
with open(rpath, "w") as f:
    f.write(json.dumps(res) + "\n")
with open(jpath, "w") as f:
    f.write(json.dumps(job) + "\n")
rep = os.path.join(work, "report")
p = subprocess.run([airlock, "report", "-o", rep, "--jobs", jpath, rpath],
                   capture_output=True, text=True)
if p.returncode != 0:
    sys.exit(f"FAIL: report exit {p.returncode}: {p.stderr}")
html = open(os.path.join(rep, "index.html"), encoding="utf-8").read()
bad = []
if '<span class="del">- two</span>' not in html:
    bad.append("t2's expected line 'two' not in the diff")
if "three" in html.split('id="s0"')[1]:
    bad.append("t3's expect shown against t2's output")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
