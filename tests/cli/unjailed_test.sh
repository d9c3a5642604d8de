#!/usr/bin/env bash
# unjailed_test.sh AIRLOCK: what a user who is not root is told (issue 23,
# finding 5), without a VM: run as `nobody` against an empty state dir,
# so each job ends XX at once (no image).
#
#   - `airlock serve` is refused without --unjailed, saying why; with it,
#     it starts and logs the warning;
#   - `airlock run` warns before its job, and the result says
#     "jailed": false (vm.jailed);
#   - as root, nothing is said and the result says "jailed": true.
set -euo pipefail
bin=$(realpath "$1")
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to become nobody"; exit 77; }
command -v redis-server > /dev/null || { echo "SKIP: no redis-server"; exit 77; }
tmp=$(mktemp -d /tmp/al-unjailed-XXXXXX)
chmod 0755 "$tmp"
mkdir -m 0777 "$tmp/home"
spid=
cleanup() {
  [ -n "$spid" ] && kill "$spid" 2> /dev/null
  [ -f "$tmp/redis.pid" ] && kill "$(cat "$tmp/redis.pid")" 2> /dev/null
  wait 2> /dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
as_nobody() {
  (cd / && runuser -u nobody -- env -i HOME="$tmp/home" PATH=/usr/bin:/bin \
    XDG_STATE_HOME="$tmp/home/state" XDG_RUNTIME_DIR="$tmp/home/run" \
    AIRLOCK_CONFIG="$tmp/airlock.conf" "$@")
}
# The same for a background job: the job's shell execs runuser, so `$!`
# is runuser, whom `kill` reaches and who passes the SIGTERM on to serve
# (as_nobody's own subshell would leave serve running after the test).
as_nobody_bg() {
  cd / && exec runuser -u nobody -- env -i HOME="$tmp/home" PATH=/usr/bin:/bin \
    XDG_STATE_HOME="$tmp/home/state" XDG_RUNTIME_DIR="$tmp/home/run" \
    AIRLOCK_CONFIG="$tmp/airlock.conf" "$@"
}
cat > "$tmp/airlock.conf" <<EOC
[queue]
max_deliveries = 1
[sandbox]
state_dir = $tmp/home/state
EOC
chmod 0644 "$tmp/airlock.conf"

# serve: refused without --unjailed (before: it started, silently)
runuser -u nobody -- redis-server --port 0 --unixsocket "$tmp/home/redis.sock" \
  --unixsocketperm 700 --dir "$tmp/home" --save '' --appendonly no \
  --daemonize yes --pidfile "$tmp/home/redis.pid" > /dev/null
cp /dev/null "$tmp/redis.pid"
for _ in $(seq 100); do [ -s "$tmp/home/redis.pid" ] && break; sleep 0.05; done
cp "$tmp/home/redis.pid" "$tmp/redis.pid"
url=unix://$tmp/home/redis.sock
if as_nobody timeout 10 "$bin" serve --redis "$url" --workers 1 > "$tmp/serve0" 2>&1; then
  fail "serve as nobody without --unjailed ran: $(cat "$tmp/serve0")"
fi
grep -q -- 'not root: VMMs would run unjailed.*--unjailed' "$tmp/serve0" ||
  fail "serve refusal not said: $(cat "$tmp/serve0")"
as_nobody_bg "$bin" serve --redis "$url" --workers 1 --unjailed > "$tmp/serve1" 2>&1 &
spid=$!
for _ in $(seq 100); do grep -q 'serving queue' "$tmp/serve1" && break; sleep 0.1; done
grep -q 'serving queue' "$tmp/serve1" || fail "serve --unjailed: $(cat "$tmp/serve1")"
grep -q 'warn.*not root: VMs run unjailed' "$tmp/serve1" ||
  fail "serve --unjailed: no warning: $(cat "$tmp/serve1")"
kill "$spid"; wait "$spid" 2> /dev/null || true
spid=

# run (embedded): the warning, then a result that says it
as_nobody "$bin" run --json -- true > "$tmp/run.json" 2> "$tmp/run.err" || true
grep -q 'not root: VMs run unjailed' "$tmp/run.err" ||
  fail "run as nobody: no warning: $(cat "$tmp/run.err")"
[ "$(jq -r .vm.jailed "$tmp/run.json")" = false ] ||
  fail "run as nobody: vm.jailed: $(cat "$tmp/run.json")"

# root: no warning, and the result says jailed
mkdir -p "$tmp/root-state"
printf '[queue]\nmax_deliveries = 1\n[sandbox]\nstate_dir = %s\n' "$tmp/root-state" > "$tmp/root.conf"
(cd / && AIRLOCK_CONFIG="$tmp/root.conf" XDG_RUNTIME_DIR="$tmp/root-run" \
  "$bin" run --json -- true > "$tmp/root.json" 2> "$tmp/root.err") || true
! grep -q 'unjailed' "$tmp/root.err" || fail "root warned: $(cat "$tmp/root.err")"
[ "$(jq -r .vm.jailed "$tmp/root.json")" = true ] ||
  fail "run as root: vm.jailed: $(cat "$tmp/root.json")"
echo "unjailed: ok"
