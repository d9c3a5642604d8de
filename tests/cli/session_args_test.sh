#!/bin/bash
# session_args_test.sh: `airlock session SUB --redis URL` (issue 37, item
# 11): the common options after the subcommand, as every other command
# takes them after its name; `--timeout-ms` names create's and fork's
# unit. A real redis-server, no VM (list reads records only).
# usage: session_args_test.sh AIRLOCK WORK_DIR
set -u
airlock=$1
work=$2
failures=0
rm -rf "$work" && mkdir -p "$work" || exit 1
sock=$work/r.sock
redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --save '' \
	--appendonly no --daemonize yes --pidfile "$work/r.pid" \
	--logfile "$work/r.log" >/dev/null
trap 'kill "$(cat "$work/r.pid")" 2>/dev/null' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
unset AIRLOCK_REDIS
: >"$work/empty.conf"
export AIRLOCK_CONFIG=$work/empty.conf
for args in "list --redis unix://$sock" "list --redis=unix://$sock" \
	"list -m k=v --redis unix://$sock" \
	"--redis unix://$sock list" "list --state alive --redis unix://$sock"; do
	# shellcheck disable=SC2086
	"$airlock" session $args >"$work/out" 2>&1 ||
		fail "session $args: $(cat "$work/out")"
done
"$airlock" session list --redis >"$work/out" 2>&1
[ $? -eq 2 ] && grep -q -- '--redis needs a value' "$work/out" ||
	fail "--redis without a value: $(cat "$work/out")"
# exec on an unknown session: the caller's mistake (1), not Airlock's (125)
"$airlock" session exec --redis "unix://$sock" s-000000000000000000000000 \
	-- true >"$work/out" 2>&1
rc=$?
[ "$rc" -eq 1 ] && grep -q 'unknown session' "$work/out" ||
	fail "exec on an unknown session: exit $rc: $(cat "$work/out")"
"$airlock" help session | grep -q -- '--body JSON] \[--timeout-ms MS\]' ||
	fail "help session: create's --timeout-ms"
"$airlock" help eval | grep -q 'SAMPLES.jsonl_results.jsonl)' ||
	fail "help eval: the -o default"
echo "$failures failure(s)"
[ "$failures" -eq 0 ]
