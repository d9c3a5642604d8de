#!/usr/bin/env bash
# e2b_test.sh: E2B's own npm SDKs (`e2b`, `@e2b/code-interpreter`, the
# versions of package-lock.json) against a real `airlock serve --http`
# with its session host, a real redis-server and real VMs
# (docs/compat-e2b.md). The SDKs are installed from the npm registry with
# `npm ci` into a cache keyed by the lockfile's hash
# ($AIRLOCK_TEST_STATE/npm-e2b-HASH), never into the source tree.
#
# usage: e2b_test.sh AIRLOCK_BIN CASE
#   sdk    e2b_sdk.mjs: the acceptance list of issue 36 that runs today
#          (create with template, metadata, timeout; commands in the
#          foreground, background, with a timeout, kill, connect; files
#          text, binary, 20 MiB, list, makeDir, remove, exists, rename;
#          setTimeout, getInfo, list by metadata, kill) and a second key
#          that can neither see, run in nor kill the first key's sandbox;
#          malformed Connect requests answered with Connect's codes and
#          the session unharmed (AIRLOCK_FULL=1 only: skipped otherwise)
#   code   e2b_code.mjs: @e2b/code-interpreter's runCode: state across
#          calls, stdout and stderr, the last value, an error with its
#          traceback, a second context; a chart with CHARTS=1 (a template
#          with matplotlib: E2B_TEMPLATE names it)
#   cap    e2b_cap.mjs (MAX_SESSIONS=1 CREATE_TIMEOUT_MS=3000): a create
#          with no room is 429 with Retry-After (the SDK's RateLimitError)
#          (AIRLOCK_FULL=1 only)
#   keys   e2b_keys.mjs: with http.tokens_file, E2B keys are its tokens:
#          an unknown or malformed key is 401, alice and bob each list
#          only their own, bob's delete of alice's sandbox is 404
#   bench  e2b_bench.mjs (a benchmark, not in CTest): the SDK against
#          `airlock session` on the same serve (docs/performance.md)
set -euo pipefail

bin=$(readlink -f "$1") case=$2
if { [ "$case" = sdk ] || [ "$case" = cap ]; } && [ "${AIRLOCK_FULL:-0}" != 1 ]; then
  echo "e2b $case: AIRLOCK_FULL=1 only" >&2
  exit 77
fi
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../lib/port.sh"
state=${AIRLOCK_TEST_STATE:-/var/tmp/airlock-test}
ls -d "$state"/images/python-* >/dev/null 2>&1 || {
  echo "e2b $case: no images in $state (tests/vm/build-images.sh)" >&2
  exit 77
}
[ "$(id -u)" = 0 ] || { echo "e2b $case: needs root (jailed VMs)" >&2; exit 77; }
command -v node >/dev/null && command -v npm >/dev/null || {
  echo "e2b $case: needs node and npm" >&2
  exit 77
}
tmp=$(mktemp -d /tmp/al-e2b-XXXXXX)
sock=$tmp/redis.sock
serve_pid=

log() { printf 'e2b %s: %s\n' "$case" "$*" >&2; }
fail() {
  log "FAIL: $*"
  [ -f "$tmp/serve.log" ] && tail -30 "$tmp/serve.log" >&2
  exit 1
}
cleanup() {
  set +e
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null
  for _ in $(seq 100); do
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$serve_pid" ] && kill -9 "$serve_pid" 2>/dev/null
  [ -f "$tmp/redis.pid" ] && kill -9 "$(cat "$tmp/redis.pid")" 2>/dev/null
  wait 2>/dev/null
  if [ "${KEEP:-}" ]; then log "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# the SDKs, once per lockfile
hash=$(sha256sum "$here/package-lock.json" | cut -c1-16)
mods=$state/npm-e2b-$hash
if [ ! -d "$mods/node_modules" ]; then
  mkdir -p "$mods.tmp"
  cp "$here/package.json" "$here/package-lock.json" "$mods.tmp/"
  (cd "$mods.tmp" && npm ci --no-audit --no-fund >/dev/null) ||
    { echo "e2b $case: npm ci failed (no registry?)" >&2; exit 77; }
  rm -rf "$mods" && mv "$mods.tmp" "$mods"
fi

redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --dir "$tmp" \
  --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" \
  --logfile "$tmp/redis.log"
for _ in $(seq 100); do
  redis-cli -s "$sock" ping 2>/dev/null | grep -q PONG && break
  sleep 0.05
done
cat > "$tmp/airlock.conf" <<EOC
[redis]
url = unix://$sock
[queue]
heartbeat_ms = 1000
[workers]
count = 1
max_sessions = ${MAX_SESSIONS:-4}
shutdown_grace_ms = 1000
[sessions]
ttl_max_s = 600
idle_default_s = 0
create_timeout_ms = ${CREATE_TIMEOUT_MS:-60000}
[templates]
default = python
[sandbox]
state_dir = $state
EOC
if [ "$case" = keys ]; then
  # keys issued for principals of the config (docs/compat-e2b.md)
  export KEY_ALICE=e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
  export KEY_BOB=e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
  printf 'alice %s\nbob %s\n' "$KEY_ALICE" "$KEY_BOB" > "$tmp/tokens"
  chmod 600 "$tmp/tokens"
  printf '[http]\ntokens_file = %s\n' "$tmp/tokens" >> "$tmp/airlock.conf"
fi
export AIRLOCK_CONFIG=$tmp/airlock.conf
port=$(free_port)
"$bin" serve --http 127.0.0.1:$port >> "$tmp/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
  sleep 0.1
done

cp "$here"/*.mjs "$mods/"
export E2B_API_URL=http://127.0.0.1:$port E2B_SANDBOX_URL=http://127.0.0.1:$port
export E2B_DOMAIN=127.0.0.1:$port
t0=$(date +%s%3N)
AIRLOCK_BIN=$bin node "$mods/e2b_$case.mjs" || fail "e2b_$case.mjs"
log "ok ($(( $(date +%s%3N) - t0 )) ms)"
