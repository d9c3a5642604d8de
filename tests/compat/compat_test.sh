#!/usr/bin/env bash
# compat_test.sh: the front doors (tools/api/doors/, docs/compat.md)
# against a real `airlock serve --http`, a real redis-server and, but for
# `malformed`, real VMs (the c and python images CI builds).
#
# usage: compat_test.sh AIRLOCK_BIN CASE
#   judge0     judge0_test.py: Judge0 CE requests as its docs write them
#   judge0_files judge0_files_test.py: additional_files, language 89
#   piston     piston_test.mjs: the npm piston-client, pinned in
#              package-lock.json, installed once into $AIRLOCK_NPM_CACHE
#   sf         sf_test.py: /run_code as verl's sandbox_fusion client
#   sf_submit  sf_submit_test.py: /submit (humaneval_python, mbpp) as
#              SandboxFusion's SDK sends it, HumanEval/0 from the
#              repo's datasets/HumanEval.jsonl.gz
#   malformed  malformed_test.py: each door's own errors, then nothing
#              enqueued (the stream is empty, no job key exists); no VM
#   cap        http.queue_cap reached (the one worker SIGSTOPped before
#              any job, jobs queued behind it through POST /jobs): each
#              door answers 503 with Retry-After in its own shape and
#              enqueues nothing; no VM starts (an image must exist)
#   load       load_test.py: 256 concurrent /run_code and /api/v2/execute
#              held until done: 0 lost, 0 errors (AIRLOCK_FULL=1 only)
set -euo pipefail

bin=$1 case=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/al-compat-XXXXXX)
sock=$tmp/redis.sock
url=unix://$sock
. "$here/../lib/port.sh"
port=$(free_port)
api=http://127.0.0.1:$port
pids=()

log() { printf 'compat %s: %s\n' "$case" "$*" >&2; }
fail() {
  log "FAIL: $*"
  [ -f "$tmp/serve.log" ] && tail -20 "$tmp/serve.log" >&2
  exit 1
}
cleanup() {
  set +e
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for _ in $(seq 50); do
    alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -f "$tmp/redis.pid" ] && kill -9 "$(cat "$tmp/redis.pid")" 2>/dev/null
  wait 2>/dev/null
  if [ "${KEEP:-}" ]; then log "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

state=${AIRLOCK_TEST_STATE:-/var/tmp/airlock-test}
workers=2
case $case in
malformed) mkdir "$tmp/empty"; state=$tmp/empty ;;
load)
  [ "${AIRLOCK_FULL:-}" = 1 ] || { log "SKIP: AIRLOCK_FULL=1 only"; exit 77; } ;;
esac
if [ "$case" != malformed ]; then
  [ -d "$state/images" ] || { log "SKIP: no images in $state"; exit 77; }
fi

redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --dir "$tmp" \
  --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" \
  --logfile "$tmp/redis.log"
for _ in $(seq 100); do
  redis-cli -s "$sock" ping 2>/dev/null | grep -q PONG && break
  sleep 0.05
done

extra=""
case $case in
judge0)
  cport=$(free_port)
  # callbacks never go to loopback: a non-loopback address of ours
  hip=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -v '^127\.' | grep -v : | head -1)
  [ -n "$hip" ] || { log "SKIP: no non-loopback address"; exit 77; }
  extra="callback_allow = $hip:$cport" ;;
malformed)
  printf 'tok-compat-0123456789\n' > "$tmp/token"
  chmod 0600 "$tmp/token"
  extra="token_file = $tmp/token" ;;
cap)
  workers=1
  extra="queue_cap = 2" ;;
load)
  workers=${LOAD_WORKERS:-2}
  extra="max_connections = 600
max_wait_s = 3600
timeout_s = 3600" ;;
esac
cat > "$tmp/airlock.conf" <<EOC
[queue]
max_deliveries = 1
[sandbox]
state_dir = $state
[http]
$extra
EOC

AIRLOCK_CONFIG=$tmp/airlock.conf "$bin" serve --redis "$url" \
  --workers "$workers" --http "127.0.0.1:$port" > "$tmp/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  curl -s -o /dev/null "$api/health" && break
  kill -0 "${pids[0]}" 2>/dev/null || fail "serve exited"
  sleep 0.1
done

case $case in
judge0) python3 "$here/judge0_test.py" "$api" "$hip" "$cport" || fail judge0 ;;
sf) python3 "$here/sf_test.py" "$api" || fail sandboxfusion ;;
judge0_files)
  python3 "$here/judge0_files_test.py" "$api" || fail "judge0 files" ;;
sf_submit)
  python3 "$here/sf_submit_test.py" "$api" \
    "$here/../../datasets/HumanEval.jsonl.gz" || fail "sandboxfusion submit" ;;
piston)
  # the client, as its lockfile pins it, installed once per cache dir
  cache=${AIRLOCK_NPM_CACHE:-/var/tmp/airlock-npm-compat}
  lock=$(sha256sum "$here/package-lock.json" | cut -c1-16)
  if [ ! -f "$cache/$lock/node_modules/piston-client/package.json" ]; then
    mkdir -p "$cache/$lock"
    cp "$here/package.json" "$here/package-lock.json" "$here/.npmrc" "$cache/$lock/"
    (cd "$cache/$lock" && npm ci --no-audit --no-fund --cache "$cache/npm" \
      > "$tmp/npm.log" 2>&1) || { cat "$tmp/npm.log" >&2; fail "npm ci"; }
  fi
  cp "$here/piston_test.mjs" "$cache/$lock/"
  node "$cache/$lock/piston_test.mjs" "$api" || fail piston ;;
malformed)
  python3 "$here/malformed_test.py" "$api" "$(cat "$tmp/token")" ||
    fail malformed
  n=$(redis-cli -s "$sock" xlen 'airlock:{default}:jobs')
  keys=$(redis-cli -s "$sock" --scan --pattern 'airlock:*:job:*' | wc -l)
  [ "$n" = 0 ] && [ "$keys" = 0 ] ||
    fail "enqueued: stream length $n, $keys job keys"
  log "nothing enqueued" ;;
cap)
  stream='airlock:{default}:jobs'
  sleep 1 # the worker started
  wpid=$(pgrep -P "${pids[0]}" | head -1)
  [ -n "$wpid" ] || fail "no worker process"
  # stopped before any job: no VM ever starts; killed with serve
  kill -STOP "$wpid"
  pids+=("$wpid")
  for i in $(seq 10); do
    c=$(curl -s -o "$tmp/body" -w '%{http_code}' -H 'Content-Type: application/json' \
      -X POST "$api/jobs" -d "{\"id\":\"cap$i\",\"sh\":\"true\"}")
    [ "$c" = 503 ] && break
    [ "$c" = 201 ] || fail "POST /jobs: $c $(cat "$tmp/body")"
  done
  [ "$c" = 503 ] || fail "no 503 at the cap"
  n0=$(redis-cli -s "$sock" xlen "$stream")
  # each door: 503, Retry-After, its own error shape, nothing enqueued
  for d in '/submissions|{"source_code":"print(1)","language_id":71}|error' \
    '/api/v2/execute|{"language":"python","files":[{"content":"print(1)"}]}|message' \
    '/run_code|{"code":"print(1)","language":"python"}|detail' \
    '/submit|{"dataset":"mbpp","id":1,"completion":"def f(): return 1","config":{"provided_data":{"labels":{"test_setup_code":""},"test_list":["assert f() == 1"]}}}|detail' \
    '/jobs|{"sh":"true"}|error'; do
    IFS='|' read -r path body key <<< "$d"
    curl -s -D "$tmp/hdr" -o "$tmp/body" -H 'Content-Type: application/json' \
      -X POST "$api$path" -d "$body" > /dev/null
    grep -q '^HTTP/1.1 503' "$tmp/hdr" || fail "$path: $(head -1 "$tmp/hdr")"
    grep -qi '^Retry-After: [0-9]' "$tmp/hdr" || fail "$path: no Retry-After"
    jq -e ".$key | strings" "$tmp/body" > /dev/null ||
      fail "$path: $(cat "$tmp/body")"
  done
  [ "$(redis-cli -s "$sock" xlen "$stream")" = "$n0" ] ||
    fail "a refused request was enqueued"
  log "503 with Retry-After at queue_cap, nothing enqueued" ;;
load) python3 "$here/load_test.py" "$api" "${LOAD_N:-256}" || fail load ;;
*) fail "unknown case" ;;
esac
grep -q 'ERROR\|AddressSanitizer' "$tmp/serve.log" && fail "serve logged errors"
log ok
