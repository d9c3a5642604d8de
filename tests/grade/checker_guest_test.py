#!/usr/bin/env python3
"""checker_guest_test.py AIRLOCK SRC WORKDIR: a submission that breaks the
checker's ground (issue 33) gets its test's failure with a reason, never
Airlock's own (XX, retried, then internal_error).

Two submissions to one checker test ("factor 91", tests/grade's
check_divisor.sh), each printing a wrong divisor after it:
  disk-fill   fills its work dir's disk (the checker's files cannot be
              written there)
  chmod-work  chmod 000 its work dir
  node-planted (node template) plants /work/node_modules/semver, whose
              index.js exits 0, for a Node checker that requires semver
              (Node walks up from the checker's directory)
Each must end runtime_error or wrong_answer, attempt 1, with a reason in
checker_output. VM images from $AIRLOCK_TEST_STATE.
"""
import json
import os
import subprocess
import sys

airlock, src, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
checker = open(os.path.join(src, "tests/grade/check_divisor.sh")).read()
CASES = {
    "disk-fill": "cat /dev/zero > /work/fill 2>/dev/null; "
                 "cat /dev/zero > /tmp/fill 2>/dev/null; echo 5",
    "chmod-work": "chmod 000 /work; echo 5",
}
NODE_CHECKER = """
try { require("semver"); } catch (e) { }
const fs = require("fs");
const n = parseInt(fs.readFileSync("input", "utf8").split(" ")[1]);
const d = parseInt(fs.readFileSync("output", "utf8"));
if (d > 1 && d < n && n % d === 0) process.exit(0);
console.error("wrong answer: " + d + " is not a proper divisor of " + n);
process.exit(1);
"""
PLANT = ("mkdir -p /work/node_modules/semver && "
         "echo 'process.exit(0)' > /work/node_modules/semver/index.js; "
         "echo 5")
state = os.environ.get("AIRLOCK_TEST_STATE", "/var/tmp/airlock-test")
jobs = os.path.join(work, "jobs.jsonl")
with open(jobs, "w") as f:
    for sid, sh in CASES.items():
        f.write(json.dumps({
            "id": "cg-" + sid, "template": "python",
            "limits": {"wall_ms": 300000, "disk_mb": 8},
            "steps": [{"name": "factor", "sh": sh, "stdin": "factor 91\n",
                       "timeout_ms": 60000, "cpu_ms": 30000,
                       "check": {"cmd": ["sh", "check_divisor.sh"],
                                 "timeout_ms": 60000,
                                 "files": {"check_divisor.sh": checker},
                                 "answer": "7\n"}}]}) + "\n")
    # the node case needs the node template's image (CI's vm_images builds
    # python and c only): run where it is built, say so where it is not
    if os.path.exists(os.path.join(state, "images", "node")):
        f.write(json.dumps({
            "id": "cg-node-planted", "template": "node",
            "limits": {"wall_ms": 300000},
            "steps": [{"name": "factor", "sh": PLANT, "stdin": "factor 91\n",
                       "timeout_ms": 60000, "cpu_ms": 30000,
                       "check": {"cmd": ["node", "check.js"],
                                 "timeout_ms": 60000,
                                 "files": {"check.js": NODE_CHECKER},
                                 "answer": "7\n"}}]}) + "\n")
conf = os.path.join(work, "airlock.conf")
with open(conf, "w") as f:
    f.write("[sandbox]\nstate_dir = %s\n[templates]\n"
            "allowed = python node\ndefault = python\ndir = %s\n"
            % (state, os.path.join(src, "configs/templates")))
env = dict(os.environ, AIRLOCK_CONFIG=conf)
env.pop("AIRLOCK_REDIS", None)
out = os.path.join(work, "out.jsonl")
if os.path.exists(out):
    os.unlink(out)
p = subprocess.run([airlock, "batch", "-o", out, "--workers", "2", jobs],
                   env=env, capture_output=True, text=True, timeout=600)
print(p.stdout[-2000:], p.stderr[-2000:])
bad = []
for line in open(out):
    r = json.loads(line)
    st = (r.get("steps") or [{}])[0]
    got = (r.get("id"), r.get("verdict"), st.get("verdict"), r.get("attempt"))
    print(got, st.get("status"), (st.get("error") or r.get("error") or
                                  "")[:160], st.get("checker_output",
                                                    "")[:160])
    if st.get("verdict") not in ("runtime_error", "wrong_answer") or \
            r.get("attempt", 1) != 1 or not st.get("checker_output"):
        bad.append(got)
if bad or p.returncode not in (0, 1):
    sys.exit("FAIL: %r (batch exit %d)" % (bad, p.returncode))
if not os.path.exists(os.path.join(state, "images", "node")):
    print("node-planted not run: no node image in %s (build-image.sh "
          "--template node)" % state)
print("ok: each is the test's failure, attempt 1")
