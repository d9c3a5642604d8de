#!/bin/bash
# interrupt_test.sh: Ctrl-C on `airlock batch` (issue 37, item 6). The first
# SIGINT says "draining" at once (it was silent for the length of the
# running job); a second stops the command; an immediate `--resume` then
# gets the embedded Redis's lock (the draining dispatcher child held it)
# and keeps the result finished before the interrupt. Real VMs (python
# image), one worker. usage: interrupt_test.sh AIRLOCK WORK_DIR
set -u
airlock=$1
work=$2
failures=0
. "$(dirname "$0")/../lib/vmstate.sh"
vm_state "$work" python
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
cat >"$work/jobs.jsonl" <<'EOJ'
{"id": "int-1", "template": "python", "sh": "true"}
{"id": "int-2", "template": "python", "sh": "sleep 120"}
{"id": "int-3", "template": "python", "sh": "sleep 120"}
EOJ
setsid "$airlock" batch "$work/jobs.jsonl" -o "$work/out.jsonl" --workers 1 \
	>"$work/1.out" 2>"$work/1.err" &
pid=$!
for _ in $(seq 600); do # the first job done: up to 300 s under TCG
	grep -q '1/3 done' "$work/1.err" && break
	sleep 0.5
done
grep -q '1/3 done' "$work/1.err" || fail "first job not done: $(tail -3 "$work/1.err")"
kill -INT "$pid"
sleep 1
grep -q 'interrupted: draining' "$work/1.err" ||
	fail "no draining message within 1 s: $(tail -2 "$work/1.err")"
kill -INT "$pid"
for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
kill -0 "$pid" 2>/dev/null && fail "a second Ctrl-C did not stop it"
wait "$pid"
rc=$?
[ "$rc" -eq 130 ] || fail "exit $rc after two Ctrl-C, wanted 130"
# at once: --resume
setsid "$airlock" batch "$work/jobs.jsonl" -o "$work/out.jsonl" --workers 1 \
	--resume >"$work/2.out" 2>"$work/2.err" &
pid=$!
sleep 0.5
for _ in $(seq 60); do
	grep -q 'resuming' "$work/2.err" && break
	sleep 0.5
done
sleep 2
if grep -q 'is held by another command' "$work/2.err"; then
	fail "resume: the lock was still held: $(cat "$work/2.err")"
fi
# int-1's result at least: int-2 may have ended (TO) in the drain too
grep -qE 'resuming: [12] of 3 already done' "$work/2.err" ||
	fail "resume lost the saved result: $(head -5 "$work/2.err")"
kill -INT "$pid"; sleep 0.5; kill -INT "$pid" 2>/dev/null
wait "$pid"
echo "$failures failure(s)"
[ "$failures" -eq 0 ]
