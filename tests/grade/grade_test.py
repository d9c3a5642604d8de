#!/usr/bin/env python3
"""grade_test.py AIRLOCK SRC WORKDIR: the grading acceptance test (issue 26).

A class of 12 submissions in 4 languages (C, C++, Python, Bash) to one
problem with 5 weighted tests (tokens, numbers with a tolerance, a checker
program accepting several answers), plus one hostile submission, run as one
`airlock batch --report`; the per-test table (tests.csv, read with the csv
module), the scores, the verdicts (submissions.csv) and the batch summary
must be exactly as expected, and the hostile one must neither read nor
change the checker and the answers, nor outlive its step.

VM images come from $AIRLOCK_TEST_STATE (the vm_images fixture). The
HTML report is screenshotted with headless chromium (tools/deps.sh) to
$AIRLOCK_REPORT_PNG (default WORKDIR/report.png), the path printed, and
the PNG checked (screenshot.py): the test fails without chromium unless
AIRLOCK_NO_CHROMIUM=1.
"""
import csv
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import screenshot  # noqa: E402

airlock, src, work = sys.argv[1:4]
state = os.environ.get("AIRLOCK_TEST_STATE", "/var/tmp/airlock-test")
os.makedirs(work, exist_ok=True)
checker = open(os.path.join(src, "tests/grade/check_divisor.sh")).read()
# the hostile submission searches for this marker of the checker's file
# (built there from parts, so that its own file does not match)
CHECKER_MARK = "SECRET-CHECKER-1729"
if CHECKER_MARK not in checker:
    sys.exit(f"FAIL: check_divisor.sh lost its marker {CHECKER_MARK}")

# Limits are roomy (30 s of CPU a test): under TCG on a 2-core host at a
# load of 9 (parallel builds) a python3 start has taken 10 s of guest CPU
# time (the guest has no steal-time accounting, docs/schema.md "CPU
# time"). The time-limit case loops for ever, so it costs one test's 30 s,
# beside the other worker's jobs.
# The problem: one line "sum A B" (print A+B), "div A B" (A/B as a
# decimal) or "factor N" (any divisor D, 1 < D < N).
TESTS = [  # name, stdin, expect or check, weight
    ("sum-small", "sum 2 3\n", {"stdout": "5\n", "compare": "tokens"}, 1),
    ("sum-big", "sum 1000000 2345\n", {"stdout": "1002345\n",
                                       "compare": "tokens"}, 1),
    ("div", "div 1 3\n", {"stdout": "0.333333\n", "compare": "numbers",
                          "abs_tol": 1e-6}, 2),
    ("factor", "factor 91\n", "check", 3),
    ("sum-neg", "sum -5 5\n", {"stdout": "0\n", "compare": "tokens"}, 3),
]

C_OK = r"""#include <stdio.h>
#include <string.h>
int main(void)
{
	char c[16];
	long a, b = 0;
	if (scanf("%15s %ld %ld", c, &a, &b) < 2) return 1;
	if (!strcmp(c, "sum")) printf("%ld\n", a + b);
	else if (!strcmp(c, "div")) printf("%.6f\n", (double)a / b);
	else for (long d = 2; d < a; d++) if (a % d == 0) { printf("%ld\n", d); break; }
	return 0;
}
"""
CPP_OK = r"""#include <cstdio>
#include <cstring>
// C++ without iostream: <iostream> alone costs tens of seconds under TCG
int main()
{
	char c[16];
	long a, b = 0;
	auto largest = [](long n) { for (long d = n - 1; d > 1; d--) if (n % d == 0) return d; return n; };
	if (std::scanf("%15s %ld %ld", c, &a, &b) < 2) return 1;
	if (!std::strcmp(c, "sum")) std::printf("%ld\n", a + b);
	else if (!std::strcmp(c, "div")) std::printf("%.10g\n", double(a) / b);
	else std::printf("%ld\n", largest(a));
}
"""
PY_OK = """c, *n = input().split()
n = list(map(int, n))
if c == "sum": print(n[0] + n[1])
elif c == "div": print(n[0] / n[1])
else: print(next(d for d in range(2, n[0]) if n[0] % d == 0))
"""
SH_OK = """read -r c a b
case $c in
sum) echo $((a + b)) ;;
div) awk -v a="$a" -v b="$b" 'BEGIN { printf "%.8f\\n", a / b }' ;;
factor) d=2; while [ $((a % d)) -ne 0 ]; do d=$((d + 1)); done; echo $d ;;
esac
"""


def lang(kind, code):
    """files, compile step and run command of a submission."""
    if kind == "c":
        return "c", {"main.c": code}, ["gcc", "-O2", "-o", "main", "main.c"], ["./main"]
    if kind == "cpp":
        return "c", {"main.cc": code}, ["g++", "-O2", "-o", "main", "main.cc"], ["./main"]
    if kind == "py":
        return "python", {"main.py": code}, ["python3", "-m", "py_compile", "main.py"], ["python3", "main.py"]
    return "python", {"main.sh": code}, ["bash", "-n", "main.sh"], ["bash", "main.sh"]


def job(sid, kind, code, tests=TESTS, answer="SECRET-ANSWER-7\n",
        cpu_ms=30000):
    template, files, compile_cmd, run = lang(kind, code)
    steps = [{"name": "compile", "cmd": compile_cmd, "compile": True,
              "timeout_ms": 300000}]
    for name, stdin, exp, weight in tests:
        st = {"name": name, "cmd": run, "stdin": stdin, "if": "setup_ok",
              "weight": weight, "timeout_ms": 120000, "cpu_ms": cpu_ms}
        if exp == "check":
            st["check"] = {"cmd": ["sh", "check_divisor.sh"],
                           "timeout_ms": 120000,
                           "files": {"check_divisor.sh": checker},
                           "answer": answer}
        else:
            st["expect"] = exp
        steps.append(st)
    return {"id": sid, "template": template, "files": files, "steps": steps,
            "limits": {"wall_ms": 600000}}


# submission id -> (language, source, verdict, score, per-test verdicts)
AC = ["accepted"] * 5
CLASS = [
    ("c-ok", "c", C_OK, "accepted", 10, AC),
    ("cpp-ok", "cpp", CPP_OK, "accepted", 10, AC),
    ("py-ok", "py", PY_OK, "accepted", 10, AC),
    ("sh-ok", "sh", SH_OK, "accepted", 10, AC),
    ("c-ce", "c", C_OK.replace("return 0;", "return 0"), "compile error",
     0, ["skipped"] * 5),
    ("cpp-ce", "cpp", CPP_OK.replace("largest(a)", "undefined_name(a)"),
     "compile error", 0, ["skipped"] * 5),
    ("c-wa", "c", C_OK.replace("long a, b = 0;", "short a, b = 0;")
     .replace("%ld %ld", "%hd %hd").replace('"%ld\\n", a + b', '"%d\\n", (short)(a + b)'),
     "wrong answer", 9, ["accepted", "wrong answer", "accepted", "accepted", "accepted"]),
    ("py-wa-float", "py", PY_OK.replace("print(n[0] / n[1])", "print(round(n[0] / n[1], 2))"),
     "wrong answer", 8, ["accepted", "accepted", "wrong answer", "accepted", "accepted"]),
    ("c-crash", "c", C_OK.replace("else for", "else if (a == 91) *(volatile int *)0 = 1;\n\telse for"),
     "runtime error (SIGSEGV)", 7, ["accepted"] * 3 + ["runtime error (SIGSEGV)", "accepted"]),
    ("py-tle", "py", PY_OK.replace('if c == "sum":', 'if c == "sum" and n[0] < 0:\n    while True: pass\nif c == "sum":'),
     "time limit", 7, ["accepted"] * 4 + ["time limit"]),
    ("sh-wa-checker", "sh", SH_OK.replace("echo $d ;;", "echo 1 ;;"),
     "wrong answer", 7, ["accepted"] * 3 + ["wrong answer", "accepted"]),
    ("py-rte", "py", PY_OK.replace("else: print(next(", "else: print(int('x') + next("),
     "runtime error", 7, ["accepted"] * 3 + ["runtime error", "accepted"]),
]

# The hostile one plants fake checkers, looks for the answers and the
# checker program (its marker) everywhere it can read and by name, and
# leaves a process to rewrite the checker's output and checker and to
# copy the answer and the checker; then prints a wrong divisor. A later
# probe step reports what the first one left behind.
HOSTILE = r"""read -r c a b
if [ "$c" = factor ]; then
  for d in /work /tmp /var/tmp /dev/shm; do
    printf '#!/bin/sh\nexit 0\n' > "$d/check_divisor.sh" 2>/dev/null
  done
  mkdir -p /work/.airlock-check-00000000000000000000000000000000
  s=SECRET  # the patterns are built here, so this file does not match
  # the files the searches must find: one per kind of secret, the
  # second also by the checker's name
  echo "$s-ANSWER control" > /tmp/ctl
  echo "$s-CHECKER control" > /tmp/check_divisor.ctl
  grep -rlI -e "$s-ANSWER" -e "$s-EXPECT" -e "$s-CHECKER" /work /tmp \
    /var/tmp /dev/shm /run /home 2>/dev/null | sort > /work/found
  # the checker by name, anywhere on the root file system
  find / \( -path /proc -o -path /sys \) -prune -o -name 'check_divisor*' \
    -type f -print 2>/dev/null |
    xargs cat 2>/dev/null | grep -c "$s-CHECKER" > /work/by_name
  nohup setsid sh -c 'while :; do for d in /work/.airlock-check-*; do
    cat "$d/answer" >> /work/leak; grep -h CHECKER "$d/check_divisor.sh" >> /work/leak
    echo 7 > "$d/output"; printf "#!/bin/sh\nexit 0\n" > "$d/check_divisor.sh"
    done 2>/dev/null; sleep 0.2; done' \
    >/dev/null 2>&1 &
  sleep 0.3
  # the control: while its step lasts, the probe below sees the rewriter
  grep -las 'echo [7]' /proc/[0-9]*/cmdline | wc -l > /work/alive_in_step
  echo 1
else
  s=SECRET
  grep -rhI -e "$s-EXPECT" -e "$s-CHECKER" /work /tmp /var/tmp /dev/shm /run \
    2>/dev/null | grep -v control | head -1
  echo none
fi
"""
PROBE = ("echo found=$(cat /work/found); "
         "echo by_name=$(cat /work/by_name); "
         "echo leak=$(cat /work/leak 2>/dev/null | wc -c); "
         "echo dirs=$(ls -a /work | grep -c airlock-check); "
         # the rewriter's command line has "echo 7"; grep's has "echo [7]"
         "echo alive=$(grep -las 'echo [7]' /proc/[0-9]*/cmdline | wc -l); "
         "echo control=$(cat /work/alive_in_step); "
         # the agent's checker area, emptied as each step ends
         "echo area=$(ls -A /run/airlock-checkers | wc -l)")
hostile = job("hostile", "sh", HOSTILE, tests=[
    ("factor", "factor 91\n", "check", 1),
    ("expect", "probe\n", {"stdout": "SECRET-EXPECT-42\n"}, 1)],
    cpu_ms=60000)  # its searches are not what is under test
hostile["steps"].append({"name": "probe", "sh": PROBE, "timeout_ms": 120000})

jobs = [job(sid, kind, code) for sid, kind, code, *_ in CLASS] + [hostile]
jobs_path = os.path.join(work, "class.jsonl")
with open(jobs_path, "w") as f:
    for j in jobs:
        f.write(json.dumps(j) + "\n")
conf = os.path.join(work, "airlock.conf")
with open(conf, "w") as f:
    f.write(f"[sandbox]\nstate_dir = {state}\n")
out = os.path.join(work, "results.jsonl")
rep = os.path.join(work, "report")
shutil.rmtree(rep, ignore_errors=True)
for p in (out, out + ".partial"):
    if os.path.exists(p):
        os.unlink(p)
env = dict(os.environ, AIRLOCK_CONFIG=conf)
env.pop("AIRLOCK_REDIS", None)
p = subprocess.run([airlock, "batch", "-o", out, "--workers", "2",
                    "--report", rep, jobs_path], env=env,
                   capture_output=True, text=True, timeout=900)
print(p.stdout)
if p.returncode != 0:
    sys.exit(f"FAIL: batch exit {p.returncode}: {p.stderr[-2000:]}")

failures = []


def want(what, got, exp):
    if got != exp:
        failures.append(f"{what}: got {got!r}, want {exp!r}")


want("summary", [l for l in p.stdout.splitlines() if l.startswith("verdicts:")],
     ["verdicts: 4 accepted, 4 wrong answer, 2 compile error, 1 time limit, "
      "1 runtime error, 1 runtime error (SIGSEGV)"])

with open(os.path.join(rep, "submissions.csv"), newline="") as f:
    subs = {r["id"]: r for r in csv.DictReader(f)}
with open(os.path.join(rep, "tests.csv"), newline="") as f:
    rows = list(csv.DictReader(f))
want("submissions", sorted(subs), sorted([c[0] for c in CLASS] + ["hostile"]))
want("tests.csv rows", len(rows), len(CLASS) * len(TESTS) + 2)
# a test's verdict -> its step's status and Judge0 status id
# (docs/schema.md "Grading"); time limit: the loop spins out its cpu_ms
STATUS = {"accepted": ("OK", "3"), "wrong answer": ("OK", "4"),
          "time limit": ("TL", "5"), "skipped": ("SK", "0"),
          "runtime error (SIGSEGV)": ("SG", "7"), "runtime error": ("RE", "11")}


def ran(sid, r):
    """The measurements of a test row: filled where its step ran (a
    process under TCG takes a millisecond and some memory), zeros where
    it was skipped."""
    m = (r["wall_ms"], r["cpu_ms"], r["max_rss_kb"])
    if r["status"] == "SK":
        want(f"{sid} test {r['test']} skipped, not measured", m, ("0", "0", "0"))
    elif not all(x.isdigit() for x in m) or int(m[0]) < 1 or int(m[2]) < 100:
        failures.append(f"{sid} test {r['test']}: wall_ms, cpu_ms, max_rss_kb "
                        f"{m} not filled")


for sid, kind, _, verdict, score, per_test in CLASS:
    s = subs.get(sid, {})
    want(f"{sid} verdict", s.get("verdict_text"), verdict)
    want(f"{sid} verdict token", s.get("verdict"),
         verdict.split(" (")[0].replace(" ", "_"))
    want(f"{sid} score", (s.get("score"), s.get("max_score")), (str(score), "10"))
    got = [(r["test"], r["name"], r["verdict_text"], r["score"], r["status"],
            r["judge0_status"]) for r in rows if r["id"] == sid]
    want(f"{sid} tests", got,
         [(str(i + 1), t[0], v, str(t[3] if v == "accepted" else 0))
          + STATUS[v] for i, (t, v) in enumerate(zip(TESTS, per_test))])
    for r in rows:
        if r["id"] == sid:
            ran(sid, r)
            if r["verdict"] == "time_limit" and int(r["cpu_ms"] or 0) < 30000:
                failures.append(f"{sid}: time limit at {r['cpu_ms']} ms of "
                                f"CPU, under its cpu_ms 30000")
    if verdict == "compile error":
        want(f"{sid} compile_output", "error" in s.get("compile_output", ""), True)
        want(f"{sid} judge0", s.get("judge0_status"), "6")
want("c-crash judge0", subs["c-crash"]["judge0_status"], "7")
want("py-rte judge0", subs["py-rte"]["judge0_status"], "11")

# The hostile submission: both tests wrong, nothing read, nothing left.
want("hostile verdict", subs["hostile"]["verdict"], "wrong_answer")
want("hostile tests", [(r["test"], r["name"], r["verdict_text"], r["score"],
                        r["status"], r["judge0_status"])
                       for r in rows if r["id"] == "hostile"],
     [("1", "factor", "wrong answer", "0", "OK", "4"),
      ("2", "expect", "wrong answer", "0", "OK", "4")])
for r in rows:
    if r["id"] == "hostile":
        ran("hostile", r)
want("hostile score", (subs["hostile"]["score"], subs["hostile"]["max_score"]),
     ("0", "2"))
res = {json.loads(l)["id"]: json.loads(l) for l in open(out)}
h = {s["name"]: s for s in res["hostile"]["steps"]}
want("hostile checker said", h["factor"].get("checker_output", "").startswith(
    "wrong answer: 1 is not a proper divisor"), True)
want("hostile expect read", h["expect"]["stdout"], "none\n")
want("hostile probe", h["probe"]["stdout"],
     "found=/tmp/check_divisor.ctl /tmp/ctl\nby_name=1\nleak=0\ndirs=1\n"
     "alive=0\ncontrol=1\narea=0\n")  # dirs: its decoy; by_name: its control

# Text output keeps UTF-8 and every step's name (skipped ones too).
t = subprocess.run([airlock, "report", out], capture_output=True, text=True)
want("text utf-8", "expected \u2018;\u2019" in t.stdout or "\u2018" in t.stdout, True)
want("text \\x escapes", "\\xe2" in t.stdout, False)
want("text skipped names", "step 5 (sum-neg): SK" in t.stdout, True)

html = open(os.path.join(rep, "index.html")).read()
want("html has the diff", 'class="diff"' in html and "- 0.333333" in html, True)
want("html compile error", 'class="compile"' in html, True)

# The report in a real browser: not blank, and every verdict's colour
# painted (AC, WA, CE, TLE, RE cells: tools/cli/report.c's CSS).
browser = screenshot.chromium()
if browser:
    png = os.environ.get("AIRLOCK_REPORT_PNG", os.path.join(work, "report.png"))
    err = screenshot.shoot(browser, os.path.join(rep, "index.html"), png,
                           "1100,1600")
    failures += [err] if err else screenshot.check(
        png, ["#c8f0c8", "#f8c8c8", "#f0d8a0", "#c8d8f8", "#f8b0a0"])
    print(f"screenshot: {png}")

for f in failures:
    print("FAIL:", f)
if failures:
    sys.exit(1)
n = len(CLASS) + 1
print(f"grade: {n} submissions, {len(rows)} tests as expected")
