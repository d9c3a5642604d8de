#!/bin/bash
# vocab_test.sh: batch's summary speaks one vocabulary (issue 37, item
# 10): each job counted once, by its verdict when graded, else by its
# status; never "OK 3" in the table above "2 accepted" in the verdict
# line. No VM: `batch --resume` takes every result from a canned output
# file, so nothing runs, and prints its summary.
# usage: vocab_test.sh AIRLOCK WORK_DIR
set -u
airlock=$1
work=$2
failures=0
rm -rf "$work" && mkdir -p "$work" || exit 1
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
: >"$work/jobs.jsonl"
: >"$work/out.jsonl"
res() { # ID STATUS [VERDICT]
	local v=""
	[ -n "${3:-}" ] && v=",\"verdict\":\"$3\""
	printf '{"id":"%s","status":"%s"%s,"steps":[],"vm":{"template":"python","accel":"tcg","restored":true,"restore_ms":1},"timing":{"queued_ms":1,"run_ms":10,"total_ms":11},"attempt":1}\n' \
		"$1" "$2" "$v" >>"$work/out.jsonl"
	printf '{"id":"%s","sh":"true"}\n' "$1" >>"$work/jobs.jsonl"
}
res a OK accepted
res b OK accepted
res c OK wrong_answer
res d TL time_limit
res e TL time_limit
res f OK
res g TL
export AIRLOCK_CONFIG=$work/empty.conf
: >"$AIRLOCK_CONFIG"
"$airlock" batch "$work/jobs.jsonl" -o "$work/out.jsonl" --resume \
	>"$work/sum" 2>&1
cat "$work/sum"
row() { grep -qE "^$1 +$2 " "$work/sum" || fail "no row '$1 $2'"; }
row accepted 2
row "wrong answer" 1
row "time limit" 2
row OK 1
row TL 1
grep -qE '^total +7' "$work/sum" || fail "total"
grep -q 'verdicts: 2 accepted, 1 wrong answer, 2 time limit' "$work/sum" ||
	fail "verdict line"
echo "$failures failure(s)"
[ "$failures" -eq 0 ]
