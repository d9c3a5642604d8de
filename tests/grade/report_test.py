#!/usr/bin/env python3
"""report_test.py AIRLOCK WORKDIR: `airlock report` over canned results
(no VM): hostile output stays text in the HTML, a formula stays a string
in the CSV (read with the csv module), the first failing test's diff, and
the text output's UTF-8, escapes and skipped steps' names; the page in
headless chromium (screenshot.py) is not blank and shows the verdicts'
colours."""
import base64
import csv
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import screenshot  # noqa: E402

airlock, work = sys.argv[1:3]
os.makedirs(work, exist_ok=True)


def step(name, status, verdict=None, score=0, stdout="", **kw):
    s = {"name": name, "status": status, "stdout": stdout, "stderr": "",
         "stdout_truncated": False, "stderr_truncated": False,
         "stdout_bytes": 0, "stderr_bytes": 0, "wall_ms": 5, "cpu_ms": 4,
         "max_rss_kb": 900}
    s.update(kw)
    if verdict:
        s["verdict"] = verdict
        s["score"] = score
    return s


# every kind of invisible or direction-changing character: LRM, RLM,
# ALM, zero-width space, ZWNJ, ZWJ, word joiner, BOM, soft hyphen, the
# line and paragraph separators, an isolate, a tag character, a filler
INVISIBLE = ("\u200e\u200f\u061c\u200b\u200c\u200d\u2060\ufeff\u00ad"
             "\u2028\u2029\u2066\U000e0041\u3164")


def result(rid, status, verdict, steps, score, max_score):
    return {"id": rid, "status": status, "verdict": verdict, "steps": steps,
            "vm": {"template": "c", "accel": "tcg", "restored": True,
                   "restore_ms": 30},
            "timing": {"queued_ms": 1, "run_ms": 900, "total_ms": 901},
            "attempt": 1, "score": score, "max_score": max_score}


XSS = "<script>alert(1)</script>&\"'"
results = [
    result("ok", "OK", "accepted", [step("compile", "OK"),
                                     step("t1", "OK", "accepted", 2, "3\n")], 2, 2),
    result("-evil", "OK", "wrong_answer", [
        step("compile", "OK"),
        step("=cmd|'/C calc'!A0", "OK", "wrong_answer", 0,
             "1\n2\n" + XSS + "\n4\n", expect_ok=False)], 0, 2),
    result("ce", "CE", "compile_error", [
        step("compile", "CE", exit_code=1,
             compile_output="m.c:1: error: expected \u2018;\u2019 \x1b[31m\u202e"
             + INVISIBLE),
        step("t1", "SK", "skipped", 0)], 0, 2),
    result("seg", "SG", "runtime_error", [
        step("compile", "OK"),
        step("t1", "SG", "runtime_error", 0, signal=11,
             stderr={"base64": base64.b64encode(b"bad \xff\xfe utf-8").decode()})], 0, 2),
]
jobs = [{"id": "-evil", "steps": [{"sh": "true"}, {"name": "t1", "sh": "x",
         "expect": {"stdout": "1\n2\n3\n4\n"}, "weight": 2}]}]
rpath = os.path.join(work, "results.jsonl")
jpath = os.path.join(work, "jobs.jsonl")
with open(rpath, "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in results)
with open(jpath, "w") as f:
    f.writelines(json.dumps(j) + "\n" for j in jobs)
rep = os.path.join(work, "report")
failures = []
checks = 0


def want(what, cond):
    global checks
    checks += 1
    if not cond:
        failures.append(what)


p = subprocess.run([airlock, "report", "-o", rep, "--jobs", jpath, rpath],
                   capture_output=True, text=True)
want(f"report exit 0 (got {p.returncode}: {p.stderr})", p.returncode == 0)
html = open(os.path.join(rep, "index.html"), encoding="utf-8").read()
want("no raw script tag", "<script>" not in html)
want("escaped script", "&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;&#39;" in html)
want("diff at line 3", "first difference at line 3" in html
     and '<span class="del">- 3</span>' in html)
want("UTF-8 quotes kept", "\u2018;\u2019" in html)
want("escape byte shown", "\\x1b" in html and "\x1b" not in html)
want("bidi control escaped", "\\xe2\\x80\\xae" in html and "\u202e" not in html)
want("invalid UTF-8 shown as \\xff", "\\xff\\xfe" in html)
want("no invisible character left raw",
     not [c for c in INVISIBLE if c in html])
want("invisible characters shown as bytes",
     all("".join("\\x%02x" % b for b in c.encode()) in html
         for c in INVISIBLE))
want("counts", "runtime error (SIGSEGV)" in html)
with open(os.path.join(rep, "submissions.csv"), newline="", encoding="utf-8") as f:
    subs = list(csv.DictReader(f))
want("4 submissions", [s["id"] for s in subs] == ["ok", "'-evil", "ce", "seg"])
want("verdicts", [s["verdict"] for s in subs] ==
     ["accepted", "wrong_answer", "compile_error", "runtime_error"])
want("verdict words", [s["verdict_text"] for s in subs] ==
     ["accepted", "wrong answer", "compile error", "runtime error (SIGSEGV)"])
want("judge0 ids", [s["judge0_status"] for s in subs] == ["3", "4", "6", "7"])
want("scores", [(s["score"], s["max_score"]) for s in subs] ==
     [("2", "2"), ("0", "2"), ("0", "2"), ("0", "2")])
want("compile output", subs[2]["compile_output"].startswith("m.c:1: error"))
with open(os.path.join(rep, "tests.csv"), newline="", encoding="utf-8") as f:
    tests = list(csv.DictReader(f))
want("tests rows", [(t["id"], t["name"], t["verdict"], t["verdict_text"],
                    t["score"]) for t in tests] ==
     [("ok", "t1", "accepted", "accepted", "2"),
      ("'-evil", "'=cmd|'/C calc'!A0", "wrong_answer", "wrong answer", "0"),
      ("ce", "t1", "skipped", "skipped", "0"),
      ("seg", "t1", "runtime_error", "runtime error (SIGSEGV)", "0")])

t = subprocess.run([airlock, "report", rpath], capture_output=True)
text = t.stdout.decode("utf-8", "replace")
want("text exit 0", t.returncode == 0)
want("text UTF-8", "\u2018;\u2019" in text and "\\xe2\\x80\\x98" not in text)
want("text escapes ESC and bidi", "\\x1b" in text and "\\xe2\\x80\\xae" in text
     and b"\x1b" not in t.stdout)
want("text skipped name", "step 1 (t1): SK" in text)
want("text signal", "signal 11 SIGSEGV" in text and "runtime error (SIGSEGV)" in text)
want("text score", "(wrong answer, score 0/2)" in text)

# in a real browser: not blank, the verdict cells' colours painted
browser = screenshot.chromium()
if browser:
    png = os.path.join(work, "report.png")
    err = screenshot.shoot(browser, os.path.join(rep, "index.html"), png)
    for e in [err] if err else screenshot.check(
            png, ["#c8f0c8", "#f8c8c8", "#f0d8a0", "#f8b0a0"]):
        want(e, False)
    want("screenshot", not err)

b = subprocess.run([airlock, "report", "--jobs", jpath, rpath], capture_output=True)
want("--jobs without -o is a usage error", b.returncode == 2)
for f in failures:
    print("FAIL:", f)
print(f"{checks - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
