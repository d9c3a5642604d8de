#!/bin/bash
# progress_test.sh: what `airlock eval` says while and after it runs (issue
# 37, items 10 and 14): its progress and summary count samples passed and
# failed, never the VMs' "OK" of a failed sample; a -k above the samples a
# problem has is named, not dropped silently. Two samples of one problem,
# real VMs (python image). usage: progress_test.sh AIRLOCK WORK_DIR
set -u
airlock=$1
work=$2
failures=0
. "$(dirname "$0")/../lib/vmstate.sh"
vm_state "$work" python
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
cat >"$work/p.jsonl" <<'EOP'
{"task_id": "T/0", "prompt": "def f(x):\n", "entry_point": "f", "test": "def check(c):\n    assert c(2) == 4\n", "canonical_solution": "    return x * 2\n"}
EOP
cat >"$work/s.jsonl" <<'EOS'
{"task_id": "T/0", "completion": "    return x * 2\n"}
{"task_id": "T/0", "completion": "    return x + 3\n"}
EOS
"$airlock" eval "$work/s.jsonl" --problems "$work/p.jsonl" -k 1,5 \
	--workers 1 >"$work/out" 2>"$work/err"
rc=$?
cat "$work/err" "$work/out"
[ "$rc" -eq 0 ] || fail "eval exit $rc"
grep -q '2/2 done passed 1 failed 1' "$work/err" ||
	fail "progress does not count passed and failed"
if grep -qE 'done.* OK [0-9]' "$work/err"; then
	fail "progress counts a failed sample as OK"
fi
grep -q 'note: pass@5 left out: a problem has only 2 sample(s)' "$work/err" ||
	fail "-k 5 dropped without a note"
grep -q 'pass@1' "$work/out" || fail "no pass@1"
echo "$failures failure(s)"
[ "$failures" -eq 0 ]
