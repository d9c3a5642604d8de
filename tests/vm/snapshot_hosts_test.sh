#!/usr/bin/env bash
# snapshot_hosts_test.sh AIRLOCK_BIN: a snapshot created on one host is
# used by a job that runs on another (issue 27; docs/snapshots.md, "On
# every host"). Two state dirs on this machine stand in for two hosts
# sharing one Redis (a real redis-server on a unix socket):
#
#   host A = $AIRLOCK_TEST_STATE (the vm_images fixture built its images)
#   host B = $AIRLOCK_TEST_STATE_B, else a fresh dir under /var/tmp
#            (removed after), given a copy of A's python image
#
# Why copy the image and nothing else: an image is named by the hash of
# its build inputs (builder script, template config, agent, apt sources,
# kernel package), so B building it from the same inputs gets the same
# name and contents; copying saves the build. Templates (keyed by the
# host's own QEMU and machine config) and snapshots are host-local and are
# never copied: B builds its own template and its own snapshot from the
# definition A published.
#
#   1. `snapshot create` on A (no serve on A at all) builds and publishes;
#   2. a job naming the snapshot, run by B's serve (the only one), sees
#      the setup's file: B built the snapshot from the definition; `list`
#      shows B's build under the definition's key;
#   3. a changed definition (create again on A) rebuilds on B: the next
#      job sees the new file, and B keeps one build of it;
#   4. B with snapshots.build_on_demand = false refuses a job whose
#      definition it has not built: RJ, the error naming the snapshot;
#      after `snapshot pull` on B (the operator builds it), it runs;
#   5. B's policy applies to the setup: one over B's limits is RJ there;
#   6. `snapshot rm` on A removes the definition.
set -euo pipefail
bin=$1
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (jailed VMs)"; exit 77; }
stateA=${AIRLOCK_TEST_STATE:-/var/tmp/airlock-test}
[ -e "$stateA/images/python" ] || { echo "SKIP: no python image in $stateA"; exit 77; }
tmp=$(mktemp -d /tmp/al-snaphosts-XXXXXX)
stateB=${AIRLOCK_TEST_STATE_B:-}
[ -n "$stateB" ] || { stateB=$(mktemp -d /var/tmp/al-hostB-XXXXXX); own_b=1; }
sock=$tmp/redis.sock
pids=()
t0=$SECONDS
say() { echo "[$((SECONDS - t0))s] $*"; }
fail() {
  echo "FAIL: $*" >&2
  for f in "$tmp"/serve*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -15 "$f" >&2; }; done
  exit 1
}
cleanup() {
  set +e
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  [ -f "$tmp/redis.pid" ] && kill "$(cat "$tmp/redis.pid")" 2>/dev/null
  "$bin" snapshot rm hostsnap --local --config "$tmp/a.conf" >/dev/null 2>&1
  "$bin" snapshot rm hostsnap --local --config "$tmp/b.conf" >/dev/null 2>&1
  [ -n "${own_b:-}" ] && rm -rf "$stateB"
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
rcli() { redis-cli -s "$sock" "$@"; }

# host B: the image (see above), under the name the image has
mkdir -p "$stateB/images"
img=$(readlink -f "$stateA/images/python")
[ -d "$stateB/images/$(basename "$img")" ] ||
  cp -a --reflink=auto "$img" "$stateB/images/"
ln -sfn "$(basename "$img")" "$stateB/images/python"

conf() { # conf FILE STATE [EXTRA]
  cat > "$1" <<EOC
[redis]
url = unix://$sock
[queue]
heartbeat_ms = 500
max_deliveries = 1
[workers]
count = 1
[sandbox]
state_dir = $2
prestart = 0
[pool]
warm_last = 0
[snapshots]
allowed = hostsnap
${3:-}
EOC
}
conf "$tmp/a.conf" "$stateA"
conf "$tmp/b.conf" "$stateB"
conf "$tmp/b-off.conf" "$stateB" "build_on_demand = false"
conf "$tmp/b-strict.conf" "$stateB" "[limits]
wall_ms = 20000
wall_ms_max = 30000"
# no build of it left on either host by an earlier run
"$bin" snapshot rm hostsnap --local --config "$tmp/a.conf" >/dev/null 2>&1 || true
"$bin" snapshot rm hostsnap --local --config "$tmp/b.conf" >/dev/null 2>&1 || true

setup() { # setup VALUE: a setup job leaving /work/marker = VALUE
  printf '{"template":"python","steps":[{"sh":"echo %s > /work/marker"}]}\n' "$1" \
    > "$tmp/setup.json"
}
serve_b() { # serve_b CONF: B's serve, the only one on the queue
  "$bin" serve --config "$1" > "$tmp/serve-$(basename "$1").log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do
    [ "$(rcli hlen 'airlock:{default}:serves')" = 1 ] && return
    kill -0 "${pids[-1]}" 2>/dev/null || fail "serve on B ($1) exited"
    sleep 0.1
  done
  fail "serve on B never heartbeat"
}
stop_b() {
  kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
  unset 'pids[-1]'
  for _ in $(seq 100); do
    [ "$(rcli hlen 'airlock:{default}:serves')" = 0 ] && return
    sleep 0.1
  done
}
job_b() { # job_b: the job on B, its result JSON in $tmp/out.json
  "$bin" run --json --config "$tmp/b.conf" --template hostsnap \
    -- cat /work/marker > "$tmp/out.json" 2> "$tmp/run.err" || true
}

# 1. create on A: built there and published
setup one
"$bin" snapshot create hostsnap "$tmp/setup.json" --config "$tmp/a.conf" \
  > "$tmp/create.out" 2> "$tmp/create.err" || fail "create on A: $(cat "$tmp/create.err")"
grep -q "hostsnap published on queue default" "$tmp/create.err" ||
  fail "create did not publish: $(cat "$tmp/create.err")"
key1=$(rcli hget 'airlock:{default}:snapdef:hostsnap' key)
[ ${#key1} = 32 ] || fail "no published key: '$key1'"
[ "$(rcli hget 'airlock:{default}:snapdef:hostsnap' base)" = python ] || fail "base"
ls "$stateB/snapshots" 2>/dev/null | grep -q hostsnap && fail "B has a build already"
say "created on A: key $key1"

# 2. B alone runs a job naming it: B builds it from the definition
serve_b "$tmp/b.conf"
job_b
jq -e '.status == "OK"' "$tmp/out.json" > /dev/null ||
  fail "job on B: $(cat "$tmp/out.json" "$tmp/run.err")"
[ "$(jq -r '.steps[0].stdout' "$tmp/out.json")" = one ] ||
  fail "job on B did not see the setup's file: $(cat "$tmp/out.json")"
ls "$stateB/snapshots" | grep -q '^hostsnap-' || fail "no build in B's state dir"
grep -q "snapshot=hostsnap key=$key1 .*built from its published definition" \
  "$tmp/serve-b.conf.log" || fail "B's log does not say it built hostsnap"
say "job on B from the definition: OK"
for _ in $(seq 50); do # the serve records its host's build after the result
  rcli hget 'airlock:{default}:snaphosts:hostsnap' "$(hostname):$stateB" |
    grep -q "^$key1 " && break
  sleep 0.1
done
"$bin" snapshot list --config "$tmp/a.conf" > "$tmp/list.out" 2>&1 || fail "list"
sed 's/^/    list| /' "$tmp/list.out"
grep -q "^hostsnap .* python .*$key1" "$tmp/list.out" || fail "list: $(cat "$tmp/list.out")"
grep -q "$(hostname):$stateB *$key1 (current" "$tmp/list.out" ||
  fail "list does not show B's build: $(cat "$tmp/list.out")"
grep -q "$(hostname):$stateA *$key1 (current" "$tmp/list.out" ||
  fail "list does not show A's build: $(cat "$tmp/list.out")"

# 3. a changed definition rebuilds on B
setup two
"$bin" snapshot create hostsnap "$tmp/setup.json" --config "$tmp/a.conf" \
  > /dev/null 2> "$tmp/create.err" || fail "create v2: $(cat "$tmp/create.err")"
key2=$(rcli hget 'airlock:{default}:snapdef:hostsnap' key)
[ "$key2" != "$key1" ] || fail "a changed setup kept key $key1"
job_b
[ "$(jq -r '.steps[0].stdout' "$tmp/out.json")" = two ] ||
  fail "changed definition not rebuilt on B: $(cat "$tmp/out.json")"
[ "$(ls "$stateB/snapshots" | grep -c '^hostsnap-')" = 1 ] || fail "old build kept"
grep -q "snapshot=hostsnap key=$key2 .*built from its published definition" \
  "$tmp/serve-b.conf.log" || fail "B's log does not say it rebuilt hostsnap"
say "changed definition: rebuilt on B"
stop_b

# 4. build_on_demand off: a definition B has not built is refused
setup three
"$bin" snapshot create hostsnap "$tmp/setup.json" --config "$tmp/a.conf" \
  > /dev/null 2> "$tmp/create.err" || fail "create v3: $(cat "$tmp/create.err")"
serve_b "$tmp/b-off.conf"
job_b
jq -e '.status == "RJ"' "$tmp/out.json" > /dev/null ||
  fail "build_on_demand off: not RJ: $(cat "$tmp/out.json")"
jq -r .error "$tmp/out.json" | grep -q "^snapshot hostsnap: worker .* has no build of its published definition .* and snapshots.build_on_demand is off" ||
  fail "refusal unclear: $(jq -r .error "$tmp/out.json")"
say "build_on_demand off: RJ ($(jq -r .error "$tmp/out.json"))"
# the operator builds it there (snapshot pull): then it runs
"$bin" snapshot pull hostsnap --config "$tmp/b-off.conf" > /dev/null \
  2> "$tmp/pull.err" || fail "pull on B: $(cat "$tmp/pull.err")"
key3=$(rcli hget 'airlock:{default}:snapdef:hostsnap' key)
rcli hget 'airlock:{default}:snaphosts:hostsnap' "$(hostname):$stateB" |
  grep -q "^$key3 " || fail "pull did not record B's build"
job_b
[ "$(jq -r '.steps[0].stdout' "$tmp/out.json")" = three ] ||
  fail "after pull: $(cat "$tmp/out.json" "$tmp/run.err")"
say "build_on_demand off, after snapshot pull on B: OK"
stop_b

# 5. B's own policy applies to the setup: one that asks more wall time
#    than B allows is refused there, whatever A allowed
printf '{"template":"python","limits":{"wall_ms":60000},"steps":[{"sh":"echo four > /work/marker"}]}\n' \
  > "$tmp/setup.json"
"$bin" snapshot create hostsnap "$tmp/setup.json" --config "$tmp/a.conf" \
  > /dev/null 2> "$tmp/create.err" || fail "create v4: $(cat "$tmp/create.err")"
serve_b "$tmp/b-strict.conf"
job_b
jq -e '.status == "RJ"' "$tmp/out.json" > /dev/null ||
  fail "setup over B's policy: not RJ: $(cat "$tmp/out.json")"
jq -r .error "$tmp/out.json" | grep -q "^snapshot hostsnap: its published setup is refused here: .*wall_ms" ||
  fail "policy refusal unclear: $(jq -r .error "$tmp/out.json")"
say "setup over B's policy: RJ ($(jq -r .error "$tmp/out.json"))"
err4=$(jq -r .error "$tmp/out.json")
job_b # the worker remembers: refused at once, the same way
[ "$(jq -r .error "$tmp/out.json")" = "$err4" ] || fail "second refusal: $(cat "$tmp/out.json")"
stop_b

# 6. rm on A: the definition goes (B's build stays on B's disk)
"$bin" snapshot rm hostsnap --config "$tmp/a.conf" 2> "$tmp/rm.err" || fail "rm: $(cat "$tmp/rm.err")"
[ "$(rcli exists 'airlock:{default}:snapdef:hostsnap')" = 0 ] || fail "definition left"
[ "$(rcli sismember 'airlock:{default}:snapdefs' hostsnap)" = 0 ] || fail "name left"
say "snapshot hosts: ok"
