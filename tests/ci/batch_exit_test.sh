#!/bin/bash
# batch_exit_test.sh: `airlock batch --exit-code` tells a CI script whether
# a build failed (issue 38): 0 when every job passed, 3 when one failed
# (a non-zero exit), 0 for the same failure without --exit-code (the
# default stays "every job has a result"). Embedded Redis and workers,
# real VMs from the vm_images fixture ($AIRLOCK_TEST_STATE).
# usage: batch_exit_test.sh AIRLOCK_BIN
set -euo pipefail

bin=$1
state=${AIRLOCK_TEST_STATE:-/var/tmp/airlock-test}
tmp=$(mktemp -d /tmp/al-ciexit-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "batch_exit: FAIL: $*" >&2; exit 1; }

cat > "$tmp/airlock.conf" <<CONF
[sandbox]
state_dir = $state
CONF
export AIRLOCK_CONFIG=$tmp/airlock.conf
unset AIRLOCK_REDIS

ok='{"id":"ok","template":"python","steps":[{"sh":"echo built"}]}'
bad='{"id":"bad","template":"python","steps":[{"sh":"echo 1 test failed; exit 1"}]}'
printf '%s\n' "$ok" > "$tmp/pass.jsonl"
printf '%s\n%s\n' "$ok" "$bad" > "$tmp/mixed.jsonl"

rc=0
"$bin" batch --workers 1 --exit-code -o "$tmp/mixed.out" "$tmp/mixed.jsonl" \
	2>"$tmp/err" >/dev/null || rc=$?
[ "$rc" = 3 ] || fail "mixed --exit-code: exit $rc, want 3: $(tail -3 "$tmp/err")"
grep -q '"id":"bad".*"status":"RE"' "$tmp/mixed.out" ||
	fail "mixed: $(cat "$tmp/mixed.out")"

rc=0 # the same results from the store: the default exit is unchanged
"$bin" batch --workers 1 -o "$tmp/mixed.out" --resume "$tmp/mixed.jsonl" \
	2>"$tmp/err" >/dev/null || rc=$?
[ "$rc" = 0 ] || fail "mixed without --exit-code: exit $rc, want 0"

rc=0
"$bin" batch --workers 1 --exit-code -o "$tmp/pass.out" "$tmp/pass.jsonl" \
	2>"$tmp/err" >/dev/null || rc=$?
[ "$rc" = 0 ] || fail "pass --exit-code: exit $rc, want 0: $(tail -3 "$tmp/err")"
echo "batch_exit: ok"
