#!/usr/bin/env bash
# backend_test.sh AIRLOCK_BIN: `airlock run` and `batch` say which way
# their jobs run and use a configured `serve` instead of a private Redis
# (issue 27). A real redis-server on a unix socket, the real binary, an
# empty state dir (no image: every job ends XX at once, no VM starts).
#   - redis.url set, one `serve` on the queue: run says "via serve ...
#     1 dispatcher (NAME)", gets the serve's result (XX: exit 125) and
#     starts no redis-server of its own (none is left in the state dir,
#     none is its child); batch says the same;
#   - redis.url set, no serve: run says no serve heartbeats, and waits
#     (killed after a moment, no result);
#   - no redis.url: run says "embedded".
set -euo pipefail
bin=$1
tmp=$(mktemp -d /tmp/al-backend-XXXXXX)
sock=$tmp/redis.sock
pids=()
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/serve.log" ] && tail -5 "$tmp/serve.log" >&2; exit 1; }
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
mkdir "$tmp/state"
cat > "$tmp/served.conf" <<EOC
[redis]
url = unix://$sock
[queue]
max_deliveries = 1
heartbeat_ms = 200
[sandbox]
state_dir = $tmp/state
EOC
grep -v '^url' "$tmp/served.conf" > "$tmp/embedded.conf"

# no serve yet: said, and the job waits
timeout -s INT 2 "$bin" run --config "$tmp/served.conf" -- true \
  > /dev/null 2> "$tmp/wait.err" && fail "run without a serve finished"
grep -q "^airlock run: via queue default on unix:$sock: no serve heartbeats" \
  "$tmp/wait.err" || fail "no-serve note: $(cat "$tmp/wait.err")"

AIRLOCK_CONFIG=$tmp/served.conf "$bin" serve --workers 1 > "$tmp/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  [ "$(redis-cli -s "$sock" hlen 'airlock:{default}:serves')" = 1 ] && break
  sleep 0.05
done
name=$(redis-cli -s "$sock" hkeys 'airlock:{default}:serves')
[ -n "$name" ] || fail "serve never heartbeat"

rc=0
"$bin" run --config "$tmp/served.conf" -- true > /dev/null 2> "$tmp/run.err" || rc=$?
[ $rc = 125 ] || fail "run via serve: exit $rc (want 125, XX): $(cat "$tmp/run.err")"
grep -qx "airlock run: via serve: queue default on unix:$sock, 1 dispatcher ($name)" \
  "$tmp/run.err" || fail "serve note: $(cat "$tmp/run.err")"
grep -q 'embedded' "$tmp/run.err" && fail "run embedded: $(cat "$tmp/run.err")"
ls "$tmp/state" | grep -q '^redis-' && fail "a private redis-server ran"
# batch the same way
printf '{"id":"b1","sh":"true"}\n{"id":"b2","sh":"true"}\n' > "$tmp/jobs.jsonl"
"$bin" batch --config "$tmp/served.conf" "$tmp/jobs.jsonl" -o "$tmp/out.jsonl" \
  2> "$tmp/batch.err" || true
grep -q "^airlock batch: via serve: queue default on unix:$sock, 1 dispatcher ($name)" \
  "$tmp/batch.err" || fail "batch note: $(cat "$tmp/batch.err")"
[ "$(wc -l < "$tmp/out.jsonl")" = 2 ] || fail "batch results: $(cat "$tmp/batch.err")"
ls "$tmp/state" | grep -q '^redis-\|^embedded-redis' && fail "batch: a private redis"

# no redis.url: embedded; run says so at log.level debug only (issue 37:
# not on every call)
"$bin" run --config "$tmp/embedded.conf" -- true > /dev/null 2> "$tmp/emb.err" || true
if grep -q "embedded:" "$tmp/emb.err"; then fail "run: embedded note at info"; fi
printf '[log]\nlevel = debug\n' >> "$tmp/embedded.conf"
rc=0
"$bin" run --config "$tmp/embedded.conf" -- true > /dev/null 2> "$tmp/emb.err" || rc=$?
grep -q "^airlock run: embedded: a private redis-server" "$tmp/emb.err" ||
  fail "embedded note (exit $rc): $(cat "$tmp/emb.err")"
echo "backend: ok"
