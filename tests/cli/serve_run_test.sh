#!/usr/bin/env bash
# serve_run_test.sh AIRLOCK_BIN: `airlock run -- python3 -c 'print(6*7)'`
# with a local `airlock serve` configured answers 42 through that serve, a
# real VM of the real python image, and starts no private redis-server
# (issue 27: "a one-shot job on a host that runs the service costs a
# submit and a wait"). backend_test.sh checks the same routing without
# images (every job XX); this one runs the job.
#
# The host: a redis-server on a unix socket, one `serve` (1 worker, no
# prestart, no warm pool) on $AIRLOCK_TEST_STATE, where the vm_images
# fixture built the images. The run, under a PATH whose `redis-server`
# only leaves a mark (and then execs the real one), must:
#   - print 42 and exit 0, saying "via serve";
#   - exec no redis-server (no mark); no redis-server appears as its
#     child or working in the state dir while it runs; no new
#     redis-PID.sock/.log nor a touched embedded-redis/ in the state dir.
# Prints the run's time (a submit and a wait; docs/performance.md has the
# embedded figure to compare).
set -euo pipefail
bin=$(readlink -f "$1")
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (jailed VMs)"; exit 77; }
state=${AIRLOCK_TEST_STATE:-/var/tmp/airlock-test}
[ -e "$state/images/python" ] || { echo "SKIP: no python image in $state"; exit 77; }
tmp=$(mktemp -d /tmp/al-serverun-XXXXXX)
sock=$tmp/redis.sock
pids=()
fail() {
  echo "FAIL: $*" >&2
  [ -f "$tmp/serve.log" ] && { echo "--- serve.log" >&2; tail -15 "$tmp/serve.log" >&2; }
  exit 1
}
cleanup() {
  set +e
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  [ -f "$tmp/redis.pid" ] && kill "$(cat "$tmp/redis.pid")" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --dir "$tmp" \
  --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" \
  --logfile "$tmp/redis.log"
for _ in $(seq 100); do
  redis-cli -s "$sock" ping 2>/dev/null | grep -q PONG && break
  sleep 0.05
done
cat > "$tmp/served.conf" <<EOC
[redis]
url = unix://$sock
[queue]
heartbeat_ms = 500
max_deliveries = 1
[workers]
count = 1
[sandbox]
state_dir = $state
prestart = 0
[pool]
warm_last = 0
EOC

"$bin" serve --config "$tmp/served.conf" > "$tmp/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do
  [ "$(redis-cli -s "$sock" hlen 'airlock:{default}:serves')" = 1 ] && break
  kill -0 "${pids[0]}" 2>/dev/null || fail "serve exited"
  sleep 0.1
done
name=$(redis-cli -s "$sock" hkeys 'airlock:{default}:serves')
[ -n "$name" ] || fail "serve never heartbeat"

# what the embedded mode would leave in the state dir (tools/cli/embed.c)
embedded() {
  ls -1 "$state" | grep -E '^redis-[0-9]+\.(sock|log)$' || true
  stat -c 'embedded-redis %Y' "$state/embedded-redis" 2>/dev/null || true
}
embedded > "$tmp/before"
mkdir "$tmp/bin"
real=$(command -v redis-server)
cat > "$tmp/bin/redis-server" <<EOS
#!/bin/sh
echo "\$*" >> "$tmp/private-redis"
exec "$real" "\$@"
EOS
chmod +x "$tmp/bin/redis-server"

t0=$(date +%s%N)
PATH=$tmp/bin:$PATH "$bin" run --config "$tmp/served.conf" \
  -- python3 -c 'print(6*7)' > "$tmp/out" 2> "$tmp/err" &
run=$!
# a private redis-server is the run's child, working in the state dir
# (tools/cli/embed.c): none may appear
while kill -0 "$run" 2>/dev/null; do
  for p in $(pgrep -x redis-server); do
    cwd=$(readlink "/proc/$p/cwd" 2>/dev/null) || continue
    ppid=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null) || continue
    case "$cwd/" in "$state"/*) echo "$p cwd $cwd" >> "$tmp/seen" ;; esac
    [ "$ppid" = "$run" ] && echo "$p child of the run" >> "$tmp/seen"
  done
  sleep 0.05
done
rc=0
wait "$run" || rc=$?
t1=$(date +%s%N)

[ "$rc" = 0 ] || fail "run: exit $rc: $(cat "$tmp/err")"
[ "$(cat "$tmp/out")" = 42 ] || fail "run printed '$(cat "$tmp/out")', stderr: $(cat "$tmp/err")"
grep -qx "airlock run: via serve: queue default on unix:$sock, 1 dispatcher ($name)" \
  "$tmp/err" || fail "serve note: $(cat "$tmp/err")"
grep -q embedded "$tmp/err" && fail "run went embedded: $(cat "$tmp/err")"
[ -e "$tmp/private-redis" ] && fail "run exec'd redis-server: $(cat "$tmp/private-redis")"
[ -s "$tmp/seen" ] && fail "a redis-server on the state dir ran: $(sort -u "$tmp/seen")"
embedded > "$tmp/after"
cmp -s "$tmp/before" "$tmp/after" ||
  fail "embedded redis files changed: $(diff "$tmp/before" "$tmp/after")"
# the job went through the serve's queue: its one result is there
[ "$(redis-cli -s "$sock" hlen 'airlock:{default}:serves')" = 1 ] || fail "serve gone"
grep -q 'status=OK' "$tmp/serve.log" || fail "serve logged no OK job"
printf 'serve_run: ok: 42 via serve %s in %d ms, no private redis-server\n' \
  "$name" $(((t1 - t0) / 1000000))
