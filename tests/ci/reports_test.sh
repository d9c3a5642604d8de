#!/bin/bash
# reports_test.sh: a step's test reports read into per-test results
# (issue 38): a pytest project runs on the `python` template (pytest
# itself goes in with the project: the image has none) writing JUnit XML,
# a step writes TAP (and a billion-laughs XML, refused), and the result's
# records and counts must equal what pytest itself counts on the host for
# the same project; a report that is
# a symlink out of the work dir is not followed (no such file), and
# `airlock report` shows the counts and the failing tests. Embedded
# Redis and workers, real VMs from $AIRLOCK_TEST_STATE.
# usage: reports_test.sh AIRLOCK_BIN SRC_DIR
set -euo pipefail

bin=$1 src=$2
state=${AIRLOCK_TEST_STATE:-/var/tmp/airlock-test}
py=/usr/bin/python3
tmp=$(mktemp -d /tmp/al-reports-XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
fail() { echo "reports: FAIL: $*" >&2; exit 1; }

"$py" -c 'import pytest' 2>/dev/null || {
	echo "reports: SKIP: no python3-pytest on the host"
	exit 77
}
lib=$("$py" -c 'import os, pytest; print(os.path.dirname(os.path.dirname(pytest.__file__)))')

cat > "$tmp/airlock.conf" <<CONF
[sandbox]
state_dir = $state
CONF
export AIRLOCK_CONFIG=$tmp/airlock.conf
unset AIRLOCK_REDIS

# the project, and pytest's own counts for it on the host
mkdir -p "$tmp/p/proj" "$tmp/p/lib"
cp "$src/tests/data/reports/pytest_sample.py" "$tmp/p/proj/test_sample.py"
(cd "$tmp/p/proj" && "$py" -m pytest -q -p no:cacheprovider \
	--junitxml="$tmp/host.xml" > "$tmp/host.out" 2>&1) || true
for m in pytest _pytest pluggy iniconfig packaging attr py.py; do
	cp -r "$lib/$m" "$tmp/p/lib/"
done
tar -C "$tmp/p" --exclude=__pycache__ -czf "$tmp/p.tgz" proj lib

"$py" - "$tmp" <<'PY'
import base64, json, sys
tmp = sys.argv[1]
blob = base64.b64encode(open(f"{tmp}/p.tgz", "rb").read()).decode()
job = {"id": "pytest-project", "template": "python",
       "files": {"p.tgz": {"base64": blob}},
       "limits": {"wall_ms": 300000},
       "steps": [
           {"name": "unpack", "sh": "tar xzf p.tgz && mkdir out && "
            "ln -s /etc/hostname out/link.xml"},
           {"name": "pytest", "cwd": "proj", "timeout_ms": 240000,
            "env": {"PYTHONPATH": "../lib"},
            "sh": "python3 -m pytest -q -p no:cacheprovider "
                  "--junitxml=../out/junit.xml",
            "reports": ["out/junit.xml", "out/link.xml", "out/none.xml"]},
           {"name": "tap", "sh": "printf 'TAP version 13\\n1..3\\n"
            "ok 1 - a\\nnot ok 2 - b <i>\\nok 3 - c # SKIP later\\n' > t.tap"
            " && cat > bl.xml",
            "stdin": "<?xml version='1.0'?><!DOCTYPE l [<!ENTITY a 'aaaa'>"
                     "<!ENTITY b '&a;&a;&a;&a;&a;&a;&a;&a;'>]><testsuite>"
                     "<testcase name='&b;'/></testsuite>\n",
            "reports": ["t.tap", "bl.xml"]}]}
open(f"{tmp}/jobs.jsonl", "w").write(json.dumps(job) + "\n")
PY

rc=0
"$bin" batch --workers 1 -o "$tmp/out.jsonl" "$tmp/jobs.jsonl" \
	2>"$tmp/err" >/dev/null || rc=$?
[ "$rc" = 0 ] || fail "batch exit $rc: $(tail -5 "$tmp/err")"

"$py" - "$tmp" <<'PY' || exit 1
import json, sys, xml.etree.ElementTree as ET
tmp = sys.argv[1]
res = json.loads(open(f"{tmp}/out.jsonl").readline())
bad = []
def want(cond, what):
    if not cond:
        bad.append(what)
# pytest's own counts, from the report it wrote on the host
suite = ET.parse(f"{tmp}/host.xml").getroot().find("testsuite")
host = {k: int(suite.get(k)) for k in ("tests", "failures", "errors", "skipped")}
names = sorted(c.get("name") for c in suite.iter("testcase"))
steps = res["steps"]
want(len(steps) == 3, f"steps: {len(steps)}")
s = steps[1]
c = s.get("test_counts", {})
got = {"tests": c.get("total"), "failures": c.get("failed"),
       "errors": c.get("error"), "skipped": c.get("skipped")}
want(got == host, f"counts {got} != pytest's own {host}")
want(c.get("passed") == host["tests"] - host["failures"] - host["errors"]
     - host["skipped"], f"passed {c.get('passed')}")
want(sorted(t["name"] for t in s.get("tests", [])) == names,
     f"names {sorted(t['name'] for t in s.get('tests', []))} != {names}")
want(s["status"] == "RE", f"pytest step status {s['status']}")
err = s.get("reports_error", "")
want("report[1]: out/link.xml: no such file" in err, f"reports_error {err!r}")
want("report[2]: out/none.xml: no such file" in err, f"reports_error {err!r}")
fails = [t for t in s["tests"] if t["status"] == "failed"]
want(any("arithmetic <is>" in t.get("message", "") for t in fails),
     "test_fail's message")
err = steps[2].get("reports_error", "")
want("report[1]: refused at line 1: a DOCTYPE" in err,
     f"billion laughs: reports_error {err!r}")
t = steps[2].get("test_counts", {})
want(t == {"total": 3, "passed": 1, "failed": 1, "error": 0, "skipped": 1},
     f"tap counts {t}")
j = res.get("test_counts", {})
want(j.get("total") == host["tests"] + 3, f"job counts {j}")
for b in bad:
    print("reports: FAIL:", b, file=sys.stderr)
print(f"reports: pytest in the VM {c}, on the host {host}")
sys.exit(1 if bad else 0)
PY

"$bin" report "$tmp/out.jsonl" > "$tmp/text"
grep -q "tests: 9, 4 passed, 2 failed, 1 error, 2 skipped" "$tmp/text" ||
	fail "report text: $(cat "$tmp/text")"
grep -q "failed: test_sample::test_param\[3\]" "$tmp/text" ||
	fail "report text lacks test_param[3]"
"$bin" report -o "$tmp/rep" "$tmp/out.jsonl" >/dev/null
rows=$("$py" -c 'import csv, sys; print(len(list(csv.reader(open(sys.argv[1])))))' "$tmp/rep/cases.csv")
[ "$rows" = 13 ] || fail "cases.csv: $rows rows, want 13 (a header, 9 + 3 tests)"
grep -q 'b &lt;i&gt;' "$tmp/rep/index.html" || fail "index.html: TAP name not escaped"
grep -q '<i>' "$tmp/rep/index.html" && fail "index.html: a test's name as HTML"
echo "reports: ok"
