#!/usr/bin/env bash
# session_test.sh AIRLOCK GATEWAY AGENT SRC: a session's VM is known to the
# package gateway by the session's id (worker/job.c, al_worker_open_vm
# and al_worker_close_vm; docs/packages.md, "Sessions"). In a network
# namespace of its own (unshare -n), a real `airlock serve` with Redis
# and the `packages` policy (it keeps the gateway), a python session on
# that policy: `pip install` of a pinned wheel in an exec installs and
# imports; the audit records (JSONL and the Redis stream) carry the
# session's id, the slot's file names it while the session lives and is
# gone once it is removed. Images from the vm_images fixture (built here
# when run alone); ~10 s under TCG.
set -euo pipefail
bin=$(realpath "$1") gw=$(realpath "$2") agent=$3 src=$4
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/serve.log" ] && tail -20 "$tmp/serve.log" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
for c in redis-server redis-cli python3 jq; do
  command -v "$c" > /dev/null || { echo "SKIP: no $c"; exit 77; }
done
state=${AIRLOCK_TEST_STATE:-/var/tmp/airlock-test}
if [ -z "${IN_NETNS:-}" ]; then
  unshare -n true 2> /dev/null || { echo "SKIP: cannot unshare -n"; exit 77; }
  "$src/sandbox/image/build-image.sh" --template python --agent "$agent" --state-dir "$state" \
    --templates-dir "$src/configs/templates" > "$state/gw-sess-image.log" 2>&1 ||
    { echo "FAIL: image build: $(tail -5 "$state/gw-sess-image.log")" >&2; exit 1; }
  exec unshare -n env IN_NETNS=1 bash "$0" "$@"
fi
ip link set lo up
tmp=$(mktemp -d /tmp/al-gwsess-XXXXXX)
chmod 0755 "$tmp"
spid=
cleanup() {
  [ -n "$spid" ] && kill "$spid" 2> /dev/null && wait "$spid" 2> /dev/null
  [ -f "$tmp/redis.pid" ] && kill "$(cat "$tmp/redis.pid")" 2> /dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

sock=$tmp/redis.sock
redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --dir "$tmp" \
  --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" \
  --logfile "$tmp/redis.log"
for _ in $(seq 100); do redis-cli -s "$sock" ping 2> /dev/null | grep -q PONG && break; sleep 0.05; done
R() { redis-cli -s "$sock" "$@"; }

dir=$state/packages
rm -rf "$dir"
mkdir -p "$dir"
python3 "$src/tests/gateway/mkpkg.py" "$tmp/pk"
"$bin" packages add --dir "$dir" --pin "$tmp/pk/tinypkg-1.0-py3-none-any.whl" > /dev/null
cat > "$tmp/airlock.conf" <<CONF
[redis]
url = unix://$sock
[workers]
count = 1
max_sessions = 2
shutdown_grace_ms = 1000
[sessions]
ttl_max_s = 300
idle_default_s = 0
create_timeout_ms = 120000
[sandbox]
state_dir = $state
[templates]
dir = $src/configs/templates
allowed = python
default = python
[network.packages]
allow = 10.202.0.2/32
ports = tcp/3141
CONF
export AIRLOCK_CONFIG=$tmp/airlock.conf
AIRLOCK_GATEWAY=$gw "$bin" serve > "$tmp/serve.log" 2>&1 &
spid=$!
for _ in $(seq 300); do
  R --scan --pattern 'airlock:{default}:sess:host:*' | grep -qv ':ctl$' && break
  sleep 0.1
done
id=$("$bin" session create -t python -n packages --ttl 300 -q) || fail "create: $id"
[ -n "$id" ] || fail "no session id"
# the slot's file names the session while it lives
grep -lx "$id" "$dir"/slots/* > /dev/null 2>&1 || fail "no slot file names $id: $(head "$dir"/slots/* 2>&1)"
# pip under TCG spends ~9.4 s of CPU here: past the exec's 10 s default
# (the cause of the failures that had this test gated, not the gateway)
"$bin" session exec "$id" --timeout-ms 120000 --cpu-ms 120000 --sh "pip install --target /tmp/t tinypkg==1.0 2>&1 && PYTHONPATH=/tmp/t python3 -c 'import tinypkg; print(tinypkg.VALUE)'" \
  > "$tmp/exec.out" 2> "$tmp/exec.err" || fail "exec: $(cat "$tmp/exec.out" "$tmp/exec.err")"
grep -q "tinypkg 1.0" "$tmp/exec.out" || fail "exec output: $(cat "$tmp/exec.out")"
jq -e -s --arg id "$id" 'any(.[]; .job == $id and .route == "file" and .name == "tinypkg" and .decision == "allow")
  and any(.[]; .job == $id and .route == "project")
  and all(.[]; (.job | startswith("unknown")) | not)' "$dir/audit.jsonl" > /dev/null ||
  fail "audit: $(cat "$dir/audit.jsonl")"
R xrange airlock:packages:audit - + | grep -qx "$id" || fail "the stream has no record of $id"
"$bin" session rm "$id" > /dev/null || fail "rm"
for _ in $(seq 100); do [ -z "$(ls -A "$dir/slots")" ] && break; sleep 0.1; done
[ -z "$(ls -A "$dir/slots")" ] || fail "slot file left after rm: $(ls "$dir/slots")"
echo ok
