#!/usr/bin/env bash
# session_test.sh: sessions (docs/sessions.md) end to end: a real
# redis-server, a real `airlock serve` with its session host, real VMs,
# the real CLI. Every VM test uses $AIRLOCK_TEST_STATE's images.
#
# usage: session_test.sh AIRLOCK_BIN CASE
#   life      create (template, env, metadata, ttl_s, idle_s), exec with cmd
#             and sh, stdin, env, cwd, exit codes, stdout and stderr kept
#             apart, the tail kept with `truncated`, a timeout (TO), files
#             persisting between execs, put/get, expires_at in create, get
#             and extend, extend past the maximum refused, four execs sent
#             at once run in order (by their records, each started at or
#             after the one before ended), list by metadata and by state,
#             rm; end reason destroyed; nothing left
#             (SPARE=true: with a spare session process, the create is a
#             warm hand-off)
#   clocks    ttl_s=5 running `sleep 100` ends `ttl` between 5 and 6 s after
#             create; idle_s=3 untouched ends `idle` within 1 s of its
#             idle_at
#   reattach  `for i in $(seq 1 20); do echo $i; sleep 0.2; done`, the client
#             killed after 1 s; reattach from 0 and from a middle offset:
#             every line once, the exec ran to the end
#   lost      serve SIGKILLed holding 3 sessions: each `lost` naming the
#             host within the heartbeat window; a restarted serve leaves
#             no VM, cgroup, run dir of them
#   http      the /sessions routes through curl (create, exec with ?wait,
#             reattach by offset, base64 for non-UTF-8, extend 409; the
#             expires_at extend set in exec start, get, signal, stream and
#             files replies; list, by ?state= and ?meta=K=V; 400, delete,
#             410 after), then the Python Session (session_client.py:
#             expires_at, Client.sessions(state, metadata), reopen by id)
#             and the agent loop of clients/python/README.md
#   redisdown redis-server SIGSTOPped while a ttl_s=6 session runs
#             `sleep 100`: the session and its VM are gone by 8.5 s anyway;
#             once Redis is back its record says `ttl`
#   capacity  MAX_SESSIONS=1: a create without room fails with
#             create_timeout at its --timeout; a job still runs; a waiting
#             create succeeds once the session ends
#   files     directories as tar (docs/sessions.md "Files"): a 50 MiB tree
#             (4 x 12 MiB, small files, a symlink down) put and got back
#             with identical hashes, --tar both ways; hostile tars (..,
#             absolute, symlinks and hard links out, device nodes, fifo,
#             pax, truncated, over the caps) each refused with its reason
#             and nothing of them in the guest; a guest's symlink out
#             refused by get with nothing written on the host; the HTTP
#             form (POST/GET /sessions/ID/files) and the Python Session's
#             upload_dir/download_dir (session_files.py)
#   cancel    a `sleep 100` exec cancelled (CLI) ends SG 15 within 2.5 s,
#             the session and its files go on; a trapping command sees
#             USR1 (CLI) and TERM (HTTP POST .../signal); a background
#             child dies with its exec (HTTP DELETE); an ended exec and a
#             missing one are refused (exit 1, 409, 422 for STOP); Ctrl-C
#             on `session exec` cancels (130); the Python Exec.kill()
#             (session_cancel.py), and another session's exec id refused
#   stream    POST .../exec?stream=1 through curl -N: output lines arrive
#             before the exec ends (timestamps), the exec record last;
#             GET .../exec/N?stream=1&offset=B reattaches; a client
#             dropped mid-stream, then a reattach (Python http.client)
#             from the offset it got to: every line once, exec not killed
#   snapcap   sessions.snapshots_per_principal = 1 over HTTP with a
#             tokens file: alice's second session snapshot is refused
#             naming the key, bob's first saves, an operator has no cap
#   snapshot  a --saveable session writes files and builds a C binary, is
#             saved by `session snapshot ID NAME` (listed with its origin)
#             and runs on (its later writes stay out of the snapshot); a
#             job and a new session started from NAME see the files and
#             run the binary; a second snapshot to the same name and one
#             of a session not saveable are refused with the reason, and a
#             saveable create with a network
#   fork      a --saveable python session writes files, starts nothing, and
#             is forked 4 ways in one call: each fork is a live session of
#             its own that sees the files, gets another os.urandom, and
#             sees none of the other forks' (or the parent's) later
#             writes; the fork snapshot is gone afterwards; fork_ms logged;
#             HTTP POST /sessions/ID/fork and the Python Session.fork(n)
#             (session_fork.py); a session not saveable is refused
#   hibernate a session with hibernate_s=2 writes files (/work and /tmp), is
#             left idle: it is hibernated and no QEMU of it remains; the
#             next exec restores it (resumed_ms in the exec's record) and
#             sees its files and the same kernel (boot_id: RAM restored,
#             not booted), and a background process started before the
#             first hibernation still running (same pid, its tick file
#             grown); idle again, hibernated again, resumed again;
#             rm leaves no hib-* snapshot or lock; hibernated sessions still end
#             at their ttl (8 s) and idle (4 s) deadlines
#   background a session exec starts a ticking loop with `nohup ... &` and
#             returns at once (its wall_ms under 1 s); later execs see the
#             tick file grow and the same pid alive in the session's
#             job/bg cgroup (with the session's memory and pids caps);
#             cancelling a later exec leaves it be; a job's step doing
#             the same has it killed (test_guest no_survivors for setsid)
#   snapbg    issue 34's proof: a --saveable session runs `nohup python3
#             loop.py &`, which rewrites any checker and output it sees,
#             and is saved as an allowed snapshot; a job on that snapshot
#             printing a wrong divisor under a checker is still graded
#             wrong_answer (on main: accepted), and the loop is gone from
#             the job's VM and from the session after the save
#   budget    BUDGET=65536 (sessions.output_budget_bytes): execs of 40000,
#             40000 and 300000 bytes; once the second passes the budget
#             the first's streams are gone (output_dropped 1 in its
#             record), the session's stored output never passes the
#             budget, the latest exec keeps what fits, the session runs on
#   agentloop 4 sessions x 5 turns at once, 8 x 10 with AIRLOCK_FULL=1
#             (AIRLOCK_AGENTLOOP_N and _TURNS override): each turn
#             writes a file, execs, reads its output and execs again with what it printed; every turn sees its
#             earlier files and none of another session's. With all alive,
#             leftovers sees each one's process, VM, cgroup, uid lease and
#             TTL-less keys, and nothing_left fails; after rm nothing_left
#             passes (no process, VM, cgroup, lease, link; every session
#             key, :x: ones included, with a TTL)
set -euo pipefail

bin=$(readlink -f "$1") case=$2
. "$(dirname "$0")/../lib/port.sh"
state=${AIRLOCK_TEST_STATE:-/var/tmp/airlock-test}
ls -d "$state"/images/python-* >/dev/null 2>&1 || {
  echo "session $case: no images in $state (tests/vm/build-images.sh)" >&2
  exit 77
}
[ "$(id -u)" = 0 ] || { echo "session $case: needs root (jailed VMs)" >&2; exit 77; }
tmp=$(mktemp -d /tmp/al-sess-XXXXXX)
SNAP=session-snap-test  # case_snapshot's snapshot (removed before and after)
sock=$tmp/redis.sock
pids=()
serve_pid=

log() { printf 'session %s: %s\n' "$case" "$*" >&2; }
fail() {
  log "FAIL: $*"
  [ -f "$tmp/serve.log" ] && tail -30 "$tmp/serve.log" >&2
  exit 1
}

cleanup() {
  set +e
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for _ in $(seq 100); do
    alive=0
    for p in $serve_pid "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for p in $serve_pid "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -f "$tmp/redis.pid" ] && kill -9 "$(cat "$tmp/redis.pid")" 2>/dev/null
  wait 2>/dev/null
  if [ "${KEEP:-}" ]; then log "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --dir "$tmp" \
  --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" \
  --logfile "$tmp/redis.log"
for _ in $(seq 100); do
  redis-cli -s "$sock" ping 2>/dev/null | grep -q PONG && break
  sleep 0.05
done
R() { redis-cli -s "$sock" "$@"; }

cat > "$tmp/airlock.conf" <<EOC
[redis]
url = unix://$sock
[queue]
heartbeat_ms = 1000
visibility_slack_ms = 2000
[workers]
count = 1
max_sessions = ${MAX_SESSIONS:-8}
shutdown_grace_ms = 1000
[sessions]
ttl_max_s = 120
idle_default_s = 0
create_timeout_ms = 60000
spare = ${SPARE:-false}
output_budget_bytes = ${BUDGET:-67108864}
[sandbox]
state_dir = $state
[snapshots]
allowed = $SNAP
EOC
# SPARE=true: a spare session process with a warm python clone
[ "${SPARE:-false}" = true ] && printf '[pool]\nwarm = python:1\n' >> "$tmp/airlock.conf"
export AIRLOCK_CONFIG=$tmp/airlock.conf
A() { "$bin" "$@"; }
S() { "$bin" session "$@"; }

start_serve() {
  "$bin" serve >> "$tmp/serve.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 100); do
    R --scan --pattern 'airlock:{default}:sess:host:*' | grep -qv ':ctl$' && return 0
    sleep 0.1
  done
  fail "serve's session host did not heartbeat"
}

# jq helpers
field() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); v=d
for k in sys.argv[1].split("."): v=v.get(k) if isinstance(v,dict) else None
print("" if v is None else (json.dumps(v) if isinstance(v,(dict,list,bool)) else v))' "$1"; }

now_ms() { date +%s%3N; }

# The session processes this test's serve(s) started (serve.log: "session=ID
# started process PID"): each made its session's VM, whose host cgroup is
# PID-vm-XXXXXX and whose uid lease is an flock PID took (sandbox/sweep.c,
# sandbox/lease.h).
session_pids() {
  sed -n 's/.*session=s-[0-9a-f]* started process \([0-9]*\) .*/\1/p' "$tmp/serve.log" 2>/dev/null | sort -u
}

# What of the sessions is on the host and in Redis, one line each:
#   process PID      a session process alive (not a zombie)
#   vm PID CMD       a process in one of their VM cgroups (QEMU) or under them
#   cgroup PATH      a PID-vm-* cgroup (any controller)
#   rundir PATH      a run dir of the old layout (RUN/PID-vm-*)
#   lease UID        a uid lease (RUN/uids/UID) flocked by one of them
#   link NAME        a network slot's host link alPID-SLOT
#   key KEY          a session key of Redis without a TTL
leftovers() {
  local sp=() p st f ino pat cgs links uids_dev
  mapfile -t sp < <(session_pids)
  if [ "${#sp[@]}" -gt 0 ]; then
    cgs=$(find /sys/fs/cgroup -maxdepth 4 -type d -name '*-vm-*' 2>/dev/null || true)
    links=$(ip -o link show 2>/dev/null | grep -o ' al[0-9]*-[0-9]*' || true)
    for p in "${sp[@]}"; do
      st=$(ps -o stat= -p "$p" 2>/dev/null || true)
      [ -n "$st" ] && [ "${st#Z}" = "$st" ] && echo "process $p"
      echo "$cgs" | grep "/$p-vm-[^/]*$" | sed 's/^/cgroup /' || true
      for f in /run/airlock/"$p"-vm-*; do [ -e "$f" ] && echo "rundir $f"; done
      echo "$links" | grep "^ al$p-" | sed 's/^ /link /' || true
      # a live session process's children: its VMM
      for f in $(pgrep -P "$p" 2>/dev/null); do echo "vm $f (child of $p)"; done
    done
    # processes in their VM cgroups, wherever they were reparented
    pat=$(printf '/%s-vm-\\|' "${sp[@]}"); pat=${pat%\\|}
    for f in /proc/[0-9]*/cgroup; do
      p=${f#/proc/}; p=${p%/cgroup}
      grep -q "$pat" "$f" 2>/dev/null &&
        echo "vm $p $(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-60)"
    done
    # uid leases: /proc/locks names each flock's owner and its file as
    # MAJOR:MINOR:INODE (hex device numbers, as the kernel prints them)
    local -A uid_of=() ours=()
    if [ -d /run/airlock/uids ]; then
      p=$(stat -c %d /run/airlock/uids)
      uids_dev=$(printf '%02x:%02x' $(( (p >> 8) & 0xfff )) $(( (p & 0xff) | ((p >> 12) & 0xfff00) )))
      for f in /run/airlock/uids/*; do
        [ -f "$f" ] && ino=$(stat -c %i "$f") && uid_of[$uids_dev:$ino]=${f##*/}
      done
    fi
    for p in "${sp[@]}"; do ours[$p]=1; done
    while read -r _ kind _ _ p f _; do
      [ "$kind" = FLOCK ] && [ -n "${ours[$p]:-}" ] && [ -n "${uid_of[$f]:-}" ] &&
        echo "lease ${uid_of[$f]} (flock of $p)"
    done < /proc/locks
  fi
  # Redis: every key of a session carries a TTL (the record, :req, :sig,
  # each exec's :x:N and its streams :x:N:1, :x:N:2), replies too (one
  # script: this Redis is the test's own)
  R eval "local o = {}
    for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
      if redis.call('TTL', k) == -1 then o[#o + 1] = k end
    end
    return o" 0 'airlock:{default}:sess:*' | while read -r f; do
    case $f in '' | *':sess:all' | *':sess:stats' | *':sess:host:'*) continue ;; esac
    echo "key $f"
  done
  return 0
}

# nothing of any session is left: no process, VM, cgroup, run dir, lease,
# link, or Redis key without a TTL (the sessions have all ended)
nothing_left() {
  local left
  left=$(leftovers)
  [ -z "$left" ] || fail "left behind: $(echo "$left" | head -20 | tr '\n' ';')"
  log "nothing left of $(session_pids | wc -l) session processes"
}

# exec N of session $1 has printed "ready" / has ended
wait_ready() {
  for _ in $(seq 600); do
    [ "$(R get "airlock:{default}:sess:$1:x:$2:1" | head -1)" = ready ] && return 0
    sleep 0.05
  done
  fail "exec $2 of $1 never printed ready"
}
wait_done() {
  for _ in $(seq 600); do
    [ "$(R hget "airlock:{default}:sess:$1:x:$2" state)" = done ] && return 0
    sleep 0.02
  done
  fail "exec $2 of $1 did not end"
}

case_cancel() {
  local port=$(free_port) api id n m t0 dt x out ex cpid
  api=http://127.0.0.1:$port
  "$bin" serve --http 127.0.0.1:$port >> "$tmp/serve.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 100); do curl -sf "$api/health" >/dev/null && break; sleep 0.1; done
  H() { curl -s -H 'Content-Type: application/json' "$@"; }
  id=$(S create -t python --ttl 120 -q)
  S exec "$id" --sh 'echo kept > keep.txt' >/dev/null 2>&1 || fail "write keep.txt"
  # sleep 100, cancelled by the CLI (TERM): SG 15 at once
  n=$(S exec "$id" --detach --sh 'echo ready; sleep 100' 2>/dev/null)
  wait_ready "$id" "$n"
  t0=$(now_ms)
  out=$(S cancel "$id" "$n") || fail "cancel: $out"
  [ "$(echo "$out" | field cancelled)" = true ] || fail "cancel reply: $out"
  wait_done "$id" "$n"
  dt=$(( $(now_ms) - t0 ))
  x=$(H "$api/sessions/$id/exec/$n")
  [ "$(echo "$x" | field status)" = SG ] && [ "$(echo "$x" | field signal)" = 15 ] &&
    [ "$(echo "$x" | field cancelled)" = true ] &&
    [ "$(echo "$x" | field signals_sent)" = TERM ] || fail "cancelled record: $x"
  [ "$dt" -lt 2500 ] || fail "sleep 100 ended $dt ms after its cancel"
  log "sleep 100: ended (SG 15) $dt ms after \`session cancel\`"
  # the session goes on, its files intact
  [ "$(S exec "$id" -- cat keep.txt 2>/dev/null)" = kept ] || fail "keep.txt after a cancel"
  # a command that traps USR1 and TERM sees both (USR1 by the CLI, TERM
  # by HTTP POST .../signal) and ends as its trap says
  n=$(S exec "$id" --detach --sh 'trap "echo got-usr1" USR1; trap "echo got-term; exit 3" TERM; echo ready; while :; do sleep 0.1; done' 2>/dev/null)
  wait_ready "$id" "$n"
  out=$(S cancel "$id" "$n" --signal USR1) || fail "USR1: $out"
  [ "$(echo "$out" | field cancelled)" = false ] || fail "USR1 is no cancel: $out"
  sleep 0.5
  out=$(H -X POST -d '{"signal":"TERM"}' "$api/sessions/$id/exec/$n/signal")
  [ "$(echo "$out" | field signal)" = TERM ] || fail "POST signal: $out"
  wait_done "$id" "$n"
  x=$(H "$api/sessions/$id/exec/$n")
  [ "$(echo "$x" | field status)" = RE ] && [ "$(echo "$x" | field exit_code)" = 3 ] &&
    [ "$(echo "$x" | field stream.stdout)" = "$(printf 'ready\ngot-usr1\ngot-term')" ] &&
    [ "$(echo "$x" | field signals_sent)" = "USR1 TERM" ] || fail "trapped: $x"
  # a background child of the exec dies with it (HTTP DELETE = cancel)
  n=$(S exec "$id" --detach --sh 'sleep 1234 & echo $! > bg.pid; echo ready; wait' 2>/dev/null)
  wait_ready "$id" "$n"
  [ "$(H -o /dev/null -w '%{http_code}' -X DELETE "$api/sessions/$id/exec/$n")" = 200 ] || fail "DELETE exec"
  wait_done "$id" "$n"
  [ "$(R hget "airlock:{default}:sess:$id:x:$n" status)" = SG ] || fail "background: not SG"
  S exec "$id" --sh 'test ! -d /proc/$(cat bg.pid) && ! grep -qs "[s]leep.1234" /proc/[0-9]*/cmdline' \
    >/dev/null 2>&1 || fail "the exec's background child outlived its cancel"
  # an ended exec: said so (CLI exit 1, HTTP 409)
  out=$(S cancel "$id" "$n" 2>&1) && fail "cancel of an ended exec succeeded"
  echo "$out" | grep -q "exec $n has already ended (SG)" || fail "ended: $out"
  [ "$(H -o /dev/null -w '%{http_code}' -X DELETE "$api/sessions/$id/exec/$n")" = 409 ] || fail "ended not 409"
  [ "$(H -o /dev/null -w '%{http_code}' -X POST -d '{"signal":"STOP"}' "$api/sessions/$id/exec/$n/signal")" = 422 ] ||
    fail "STOP not 422"
  out=$(S cancel "$id" 99 2>&1) && fail "cancel of no exec succeeded"
  echo "$out" | grep -q "no exec 99" || fail "no exec: $out"
  # Ctrl-C on `session exec` cancels the exec (SIGINT: 130)
  "$bin" session exec "$id" --sh 'echo ready; sleep 100' > "$tmp/cc" 2> "$tmp/cc.err" &
  cpid=$!  # the CLI itself (S would be a subshell)
  for _ in $(seq 600); do [ "$(cat "$tmp/cc")" = ready ] && break; sleep 0.05; done
  t0=$(now_ms)
  kill -INT $cpid
  ex=0; wait $cpid || ex=$?
  dt=$(( $(now_ms) - t0 ))
  [ "$ex" = 130 ] && [ "$dt" -lt 3000 ] || fail "Ctrl-C: exit $ex after $dt ms: $(cat "$tmp/cc.err")"
  n=$(sed -n 's/^airlock session: exec \([0-9]*\)$/\1/p' "$tmp/cc.err")
  [ "$(R hget "airlock:{default}:sess:$id:x:$n" status)" = SG ] &&
    [ "$(R hget "airlock:{default}:sess:$id:x:$n" signal)" = 2 ] || fail "Ctrl-C: exec $n not SG 2"
  log "Ctrl-C on session exec: exit 130 after $dt ms"
  # Python: Exec.kill() in a session of its own, which refuses exec m of
  # this one while m runs on here untouched
  m=$(S exec "$id" --detach --sh 'echo ready; sleep 2; echo fine' 2>/dev/null)
  wait_ready "$id" "$m"
  PYTHONPATH=$(dirname "$0")/../../clients/python /usr/bin/python3 \
    "$(dirname "$0")/session_cancel.py" "unix://$sock" "$m" >&2 || fail "python cancel"
  wait_done "$id" "$m"
  [ "$(R hget "airlock:{default}:sess:$id:x:$m" status)" = OK ] || fail "exec $m was touched"
  S rm "$id" >/dev/null
}

case_stream() {
  local port=$(free_port) api id n t_first t_last nx x
  local nd="/usr/bin/python3 $(dirname "$0")/ndjson.py"
  api=http://127.0.0.1:$port
  "$bin" serve --http 127.0.0.1:$port >> "$tmp/serve.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 100); do curl -sf "$api/health" >/dev/null && break; sleep 0.1; done
  id=$(S create -t python --ttl 120 -q)
  # curl -N: each line stamped as it arrives; output before the end
  curl -sN -H 'Content-Type: application/json' -X POST \
    -d '{"sh":"for i in $(seq 1 10); do echo $i; sleep 0.3; done","timeout_ms":60000}' \
    "$api/sessions/$id/exec?stream=1" |
    while IFS= read -r l; do printf '%s %s\n' "$(date +%s%3N)" "$l"; done > "$tmp/st" ||
    fail "stream: curl failed: $(cat "$tmp/st")"
  cut -d' ' -f2- "$tmp/st" > "$tmp/st.nd"
  [ "$($nd "$tmp/st.nd" data)" = "$(seq 1 10)" ] || fail "stream: $(cat "$tmp/st.nd")"
  x=$($nd "$tmp/st.nd" last)
  [ "$(echo "$x" | field state)" = done ] && [ "$(echo "$x" | field status)" = OK ] ||
    fail "stream: last line $x"
  t_first=$(grep -m1 '"fd":1' "$tmp/st" | cut -d' ' -f1)
  t_last=$(tail -1 "$tmp/st" | cut -d' ' -f1)
  [ $((t_last - t_first)) -ge 2000 ] || fail "stream: the first output came $((t_last - t_first)) ms before the end"
  log "stream: $(grep -c '"fd":1' "$tmp/st") output lines, the first $((t_last - t_first)) ms before the record"
  # reattach from a middle offset, streamed
  n=$($nd "$tmp/st.nd" exec)
  curl -sN "$api/sessions/$id/exec/$n?stream=1&offset=4" > "$tmp/re.nd"
  [ "$($nd "$tmp/re.nd" data)" = "$(seq 3 10)" ] || fail "stream reattach: $(cat "$tmp/re.nd")"
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$api/sessions/$id/exec/99?stream=1")" = 404 ] ||
    fail "stream of no exec not 404"
  # a client dropped mid-stream; a new one goes on from the offset it
  # got to: every line exactly once, the exec not killed
  curl -sN --max-time 1.5 -H 'Content-Type: application/json' -X POST \
    -d '{"sh":"for i in $(seq 1 20); do echo $i; sleep 0.2; done","timeout_ms":60000}' \
    "$api/sessions/$id/exec?stream=1" > "$tmp/cut.nd" || true
  n=$($nd "$tmp/cut.nd" exec)
  nx=$($nd "$tmp/cut.nd" next)
  [ "$nx" -gt 0 ] || fail "the dropped client got nothing: $(cat "$tmp/cut.nd")"
  /usr/bin/python3 - "$api/sessions/$id/exec/$n?stream=1&offset=$nx" > "$tmp/rest.nd" <<'PY' || fail "http.client reattach"
import sys, urllib.parse, http.client
u = urllib.parse.urlsplit(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
c.request("GET", u.path + "?" + u.query)
r = c.getresponse()
assert r.status == 200 and r.getheader("Content-Type") == "application/x-ndjson"
while True:
    line = r.readline()
    if not line:
        break
    sys.stdout.write(line.decode())
PY
  { $nd "$tmp/cut.nd" data; $nd "$tmp/rest.nd" data; } > "$tmp/both"
  [ "$(cat "$tmp/both")" = "$(seq 1 20)" ] || fail "dropped + reattach: $(tr '\n' ' ' < "$tmp/both")"
  [ "$($nd "$tmp/rest.nd" last | field status)" = OK ] || fail "the dropped stream's exec did not end OK"
  log "dropped after $(( $(wc -l < <($nd "$tmp/cut.nd" data)) )) lines; the reattach from byte $nx read the rest once"
  S rm "$id" >/dev/null
}

case_life() {
  start_serve
  local rec id ex out n
  if [ "${SPARE:-false}" = true ]; then
    for _ in $(seq 300); do
      grep -q "spare process .* ready" "$tmp/serve.log" && break
      sleep 0.1
    done
  fi
  rec=$(S create -t python --ttl 60 -e GREETING=hello -m team=a -m task=t1)
  id=$(echo "$rec" | field id)
  [ "$(echo "$rec" | field state)" = alive ] || fail "create: $rec"
  [ -n "$(echo "$rec" | field expires_at)" ] || fail "no expires_at: $rec"
  log "created $id in $(echo "$rec" | field restore_ms) ms (restore)"
  if [ "${SPARE:-false}" = true ]; then
    # the spare's warm clone was handed over: a second create too
    grep -q "session=$id" "$tmp/serve.log"
    [ "$(echo "$rec" | field warm)" = true ] || fail "no warm hand-off: $rec"
  fi
  # cmd, env from create, separate streams, exit code
  set +e
  out=$(S exec "$id" --sh 'echo out-$GREETING; echo err >&2; exit 3' 2>"$tmp/err")
  ex=$?
  set -e
  [ "$ex" = 3 ] || fail "exit code $ex, want 3"
  [ "$out" = out-hello ] || fail "stdout: $out"
  grep -qx err "$tmp/err" || fail "stderr: $(cat "$tmp/err")"
  # files persist, cwd, stdin, exec env overrides create env
  S exec "$id" --sh 'mkdir -p sub && echo persisted > sub/f.txt' 2>/dev/null
  out=$(S exec "$id" --cwd sub -- cat f.txt 2>/dev/null)
  [ "$out" = persisted ] || fail "file did not persist: $out"
  printf 'from stdin' > "$tmp/in"
  out=$(S exec "$id" --stdin "$tmp/in" -e GREETING=over --sh 'cat; echo " $GREETING"' 2>/dev/null)
  [ "$out" = "from stdin over" ] || fail "stdin/env: $out"
  # put/get
  printf 'hello file\n' > "$tmp/put.txt"
  S put "$id" "$tmp/put.txt" dir/put.txt 2>/dev/null
  [ "$(S get "$id" dir/put.txt 2>/dev/null)" = "hello file" ] || fail "put/get"
  head -c 100000 /dev/urandom > "$tmp/bin.dat"
  S put "$id" "$tmp/bin.dat" bin.dat 2>/dev/null
  S get "$id" bin.dat "$tmp/bin.back" 2>/dev/null
  cmp "$tmp/bin.dat" "$tmp/bin.back" || fail "binary put/get differ"
  # text with NULs is valid UTF-8: it goes as a JSON string with \u0000
  # (so does a tar of text files), which every decoder on the way takes
  printf 'text\0with a NUL\n' > "$tmp/nul.txt"
  S put "$id" "$tmp/nul.txt" nul.txt || fail "put of text with a NUL"
  S get "$id" nul.txt "$tmp/nul.back" 2>/dev/null
  cmp "$tmp/nul.txt" "$tmp/nul.back" || fail "text with a NUL: put/get differ"
  # the tail kept: 3 MiB of output, limit output_bytes default
  local big k
  big=$(S exec "$id" --detach --sh 'seq 1 400000; echo LAST' 2>/dev/null)
  out=$(S exec "$id" --sh 'echo after' 2>/dev/null)
  [ "$out" = after ] || fail "exec after a big one: $out"
  k="airlock:{default}:sess:$id:x:$big"
  [ "$(R hget "$k" stdout_truncated)" = 1 ] || fail "big exec not truncated"
  [ "$(R hget "$k" stdout_bytes)" = "$(seq 1 400000 | wc -c | awk '{print $1+5}')" ] ||
    fail "stdout_bytes $(R hget "$k" stdout_bytes)"
  [ "$(R hget "$k" stdout | tail -n 2 | head -n 1)" = LAST ] ||
    fail "the tail was not kept: $(R hget "$k" stdout | tail -c 40)"
  [ "$(R hget "$k" stdout | head -n 1)" != 1 ] || fail "the head was kept, not the tail"
  [ "$(R hget "$k" stderr_truncated)" = 0 ] || fail "stderr truncated"
  log "big exec: $(R hget "$k" stdout_bytes) bytes, kept tail $(R hget "$k" stdout | wc -c), stored $(R strlen "$k:1")"
  # its end pushed one token for a waiter (al_sess_exec_nap); nobody
  # waited on this exec, so it is there, and goes by itself
  [ "$(R llen "$k:end")" = 1 ] || fail "no end token for exec $big"
  local ttl
  ttl=$(R ttl "$k:end")
  [ "$ttl" -gt 0 ] && [ "$ttl" -le 60 ] || fail "end token ttl $ttl"
  # a timeout: TO, 124; the session lives on
  set +e
  S exec "$id" --timeout-ms 1000 -- sleep 30 2>/dev/null
  ex=$?
  set -e
  [ "$ex" = 124 ] || fail "timeout exit $ex, want 124"
  [ "$(S exec "$id" -- echo still 2>/dev/null)" = still ] || fail "dead after TO"
  # four execs sent at once run in order, one at a time: by their
  # records, exec N+1 started at or after exec N ended
  local i ords=() ns=() x0 x1
  for i in 1 2 3 4; do
    S exec "$id" --detach --sh "sleep 0.4; echo order-$i" > "$tmp/ord$i" 2>/dev/null & ords+=($!)
  done
  for i in "${ords[@]}"; do wait "$i" || fail "a detached exec was refused"; done
  mapfile -t ns < <(sort -n "$tmp"/ord[1-4])
  [ "${#ns[@]}" = 4 ] && [ "${ns[3]}" = $((ns[0] + 3)) ] || fail "exec numbers: ${ns[*]}"
  wait_done "$id" "${ns[3]}"
  for i in 0 1 2; do
    x0="airlock:{default}:sess:$id:x:${ns[$i]}" x1="airlock:{default}:sess:$id:x:${ns[$((i + 1))]}"
    [ "$(R hget "$x1" started_at_ms)" -ge "$(R hget "$x0" ended_at_ms)" ] ||
      fail "exec ${ns[$((i + 1))]} started at $(R hget "$x1" started_at_ms), before exec ${ns[$i]} ended at $(R hget "$x0" ended_at_ms)"
  done
  x0="airlock:{default}:sess:$id:x:${ns[0]}"
  log "4 execs sent at once ran in order: the first started $(R hget "$x0" started_at_ms), the last ended $(R hget "$x1" ended_at_ms)"
  [ $(( $(R hget "$x1" ended_at_ms) - $(R hget "$x0" started_at_ms) )) -ge 1600 ] || fail "4 x sleep 0.4 overlapped"
  # get and expires_at agree; extend moves it; past the max is refused
  local e1 e2
  e1=$(S get "$id" | field expires_at_ms)
  rec=$(S extend "$id" 90)
  e2=$(echo "$rec" | field expires_at_ms)
  [ "$e2" -gt "$e1" ] || fail "extend did not move expires_at ($e1 -> $e2)"
  [ "$(S get "$id" | field expires_at_ms)" = "$e2" ] || fail "get disagrees with extend"
  set +e
  out=$(S extend "$id" 500 2>&1)
  ex=$?
  set -e
  [ "$ex" = 1 ] && echo "$out" | grep -q 'past its maximum lifetime' ||
    fail "extend past max: $ex $out"
  # a reply that is no session record carries expires_at too (cancel's)
  n=$(S exec "$id" --detach --sh 'echo ready; sleep 100' 2>/dev/null)
  wait_ready "$id" "$n"
  out=$(S cancel "$id" "$n") || fail "cancel: $out"
  [ "$(echo "$out" | field expires_at_ms)" = "$e2" ] && [ -n "$(echo "$out" | field expires_at)" ] ||
    fail "cancel's reply: $out (expires_at_ms $e2)"
  wait_done "$id" "$n"
  # list by metadata and by state
  S list --meta team=a | grep -q "$id" || fail "list --meta team=a"
  [ -z "$(S list --meta team=b)" ] || fail "list --meta team=b not empty"
  S list --state alive --meta team=a | grep -q "$id" || fail "list --state alive"
  S list --state ended | grep -q "$id" && fail "list --state ended lists a live session"
  rec=$(S rm "$id")
  [ "$(echo "$rec" | field reason)" = destroyed ] || fail "rm: $rec"
  S list --state ended --meta team=a | grep -q "$id" || fail "list --state ended after rm"
  S list --state alive | grep -q "$id" && fail "list --state alive lists an ended session"
  sleep 1
  nothing_left
}

case_clocks() {
  start_serve
  local t0 id rec t1 dt
  t0=$(now_ms)
  id=$(S create -t python --ttl 5 -q)
  t0=$(( $(S get "$id" | field alive_at_ms) ))
  S exec "$id" -- sleep 100 >/dev/null 2>&1 || true
  for _ in $(seq 100); do
    rec=$(S get "$id")
    [ "$(echo "$rec" | field state)" = ended ] && break
    sleep 0.1
  done
  [ "$(echo "$rec" | field reason)" = ttl ] || fail "ttl: $rec"
  dt=$(( $(echo "$rec" | field ended_at_ms) - t0 ))
  log "ttl_s=5 with sleep 100: ended after $dt ms"
  [ "$dt" -ge 5000 ] && [ "$dt" -le 6000 ] || fail "ttl end at $dt ms"
  id=$(S create -t python --ttl 60 --idle 3 -q)
  rec=$(S get "$id")
  local idle_at
  idle_at=$(echo "$rec" | field idle_at_ms)
  for _ in $(seq 100); do
    rec=$(S get "$id")
    [ "$(echo "$rec" | field state)" = ended ] && break
    sleep 0.1
  done
  [ "$(echo "$rec" | field reason)" = idle ] || fail "idle: $rec"
  dt=$(( $(echo "$rec" | field ended_at_ms) - idle_at ))
  log "idle_s=3: ended $dt ms after its idle_at"
  [ "$dt" -ge 0 ] && [ "$dt" -le 1000 ] || fail "idle end $dt ms off"
  nothing_left
}

case_reattach() {
  start_serve
  local id n all mid out
  id=$(S create -t python --ttl 60 -q)
  S exec "$id" --sh 'for i in $(seq 1 20); do echo $i; sleep 0.2; done' \
    > "$tmp/first" 2> "$tmp/first.err" &
  local cpid=$!
  for _ in $(seq 200); do  # the exec started (a loaded host is slow)
    grep -q '^airlock session: exec' "$tmp/first.err" && break
    sleep 0.05
  done
  sleep 1
  kill -9 $cpid; wait $cpid 2>/dev/null || true
  n=$(sed -n 's/^airlock session: exec \([0-9]*\)$/\1/p' "$tmp/first.err")
  [ -n "$n" ] || fail "no exec id: $(cat "$tmp/first.err")"
  log "client killed after 1 s with $(wc -l < "$tmp/first") lines"
  S exec "$id" --attach "$n" > "$tmp/all" 2>/dev/null
  [ "$(cat "$tmp/all")" = "$(seq 1 20)" ] || fail "from 0: $(cat "$tmp/all" | tr '\n' ' ')"
  mid=$(seq 1 9 | wc -c)  # the offset just after "9\n"
  S exec "$id" --attach "$n" --offset "$mid" > "$tmp/mid" 2>/dev/null
  [ "$(cat "$tmp/mid")" = "$(seq 10 20)" ] || fail "from $mid: $(cat "$tmp/mid" | tr '\n' ' ')"
  rec=$(S exec "$id" -- echo ok 2>/dev/null)
  [ "$(R hget "airlock:{default}:sess:$id:x:$n" status)" = OK ] || fail "exec was not OK"
  S rm "$id" >/dev/null
}

case_lost() {
  start_serve
  local ids=() host rec t0 dt
  for i in 1 2 3; do ids+=("$(S create -t python --ttl 120 -q)"); done
  host=$(S get "${ids[0]}" | field host)
  # the session processes: children of the host, a child of serve
  local spids=() hpid
  for hpid in $(pgrep -P "$serve_pid"); do
    for p in $(pgrep -P "$hpid"); do spids+=("$p"); done
  done
  [ "${#spids[@]}" -ge 3 ] || fail "found ${#spids[@]} session processes"
  local traces=0
  for p in "${spids[@]}"; do
    traces=$((traces + $(find /run/airlock /sys/fs/cgroup -maxdepth 4 -name "$p-vm-*" 2>/dev/null | wc -l)))
  done
  log "before the kill: ${#spids[@]} session processes, $traces run dirs and cgroups of theirs"
  [ "$traces" -ge 3 ] || fail "no run dirs or cgroups found to check"
  kill -9 "$serve_pid"
  t0=$(now_ms)
  for id in "${ids[@]}"; do
    for _ in $(seq 100); do
      rec=$(S get "$id")
      [ "$(echo "$rec" | field state)" = ended ] && break
      sleep 0.1
    done
    [ "$(echo "$rec" | field reason)" = lost ] || fail "$id: $rec"
    echo "$rec" | field error | grep -qF "$host" || fail "$id names no host: $rec"
  done
  dt=$(( $(S get "${ids[0]}" | field ended_at_ms) - t0 ))
  log "3 sessions lost ($host): the first seen $dt ms after the kill, all" \
    "within $(( $(now_ms) - t0 )) ms (heartbeat window: 3 x 1000 ms)"
  [ "$dt" -le 3500 ] || fail "lost after $dt ms"
  # no process of theirs survives serve (PDEATHSIG down the chain)
  for p in "${spids[@]}"; do
    kill -0 "$p" 2>/dev/null && fail "session process $p outlived serve"
  done
  start_serve
  for p in "${spids[@]}"; do
    left=$(find /run/airlock /sys/fs/cgroup -maxdepth 4 -name "$p-vm-*" 2>/dev/null)
    [ -z "$left" ] || fail "left after the restart: $left"
  done
  # (whoever swept first: this restart, or another serve on the host;
  # sb_sweep removes what any dead process left)
  grep "sweep at start-up" "$tmp/serve.log" | tail -1 >&2
}

# One agent: session $1 runs $2 turns. A turn writes turn$t.txt (a
# nonce of the client's), then exec 1 prints the turn files it sees, how
# many are not this session's, and V = sha256(state.txt turn$t.txt) (its
# first 16 hex digits), state.txt being what exec 2 of the turn before
# wrote; the client checks V against its own sha256 of what it sent, and
# exec 2 stores the V it printed (state.txt, chain.txt) and prints the
# chain. So each turn's second exec depends on its first one's output, and
# its first on every turn before. Then the agent waits for $tmp/go (all
# sessions alive at once) and ends its session.
agent_one() {
  local k=$1 turns=$2 id out v want prev="" chain=""
  id=$(S create -t python --ttl 120 -m loop=$k -q) || { echo "create failed" > "$tmp/a$k.fail"; return; }
  echo "$id" > "$tmp/a$k.id"
  for t in $(seq 1 "$turns"); do
    printf 'session %s turn %s nonce %s%s\n' "$k" "$t" "$RANDOM" "$RANDOM" > "$tmp/a$k.in"
    S put "$id" "$tmp/a$k.in" "turn$t.txt" 2>/dev/null || { echo "put $t" > "$tmp/a$k.fail"; return; }
    out=$(S exec "$id" --sh 'ls turn*.txt | wc -l; cat turn*.txt | grep -vc "^session '"$k"' turn " || true
      cat state.txt "turn'"$t"'.txt" 2>/dev/null | sha256sum | cut -c1-16' 2>/dev/null)
    want=$({ [ -n "$prev" ] && echo "$prev"; cat "$tmp/a$k.in"; } | sha256sum | cut -c1-16)
    [ "$out" = "$t
0
$want" ] || { echo "turn $t: exec 1 saw: $(echo "$out" | tr '\n' ' ') (want $t 0 $want)" > "$tmp/a$k.fail"; return; }
    v=${out##*$'\n'}
    chain="$chain$v "
    out=$(S exec "$id" --sh "echo $v > state.txt && echo $v >> chain.txt && tr '\n' ' ' < chain.txt" 2>/dev/null)
    [ "$out" = "$chain" ] || { echo "turn $t: exec 2 chain: $out (want $chain)" > "$tmp/a$k.fail"; return; }
    prev=$v
  done
  [ "$(S get "$id" state.txt 2>/dev/null)" = "$prev" ] || { echo "state.txt by get" > "$tmp/a$k.fail"; return; }
  touch "$tmp/a$k.done"
  for _ in $(seq 1200); do [ -e "$tmp/go" ] && break; sleep 0.1; done
  S rm "$id" > /dev/null || echo "rm" > "$tmp/a$k.fail"
}

# Acceptance of issue #24: 8 sessions at once, 10 turns each.
case_agentloop() {
  # CI: 4 sessions x 5 turns; AIRLOCK_FULL=1: 8 x 10
  local n=${AIRLOCK_AGENTLOOP_N:-${AIRLOCK_FULL:+8}} t0 k id left c
  local turns=${AIRLOCK_AGENTLOOP_TURNS:-${AIRLOCK_FULL:+10}}
  n=${n:-4} turns=${turns:-5}
  start_serve
  t0=$(now_ms)
  for k in $(seq 1 "$n"); do agent_one "$k" "$turns" & pids+=($!); done
  # all n alive and done with their turns (or one failed): what the
  # checks of nothing_left see now, each kind once per session at least;
  # nothing_left itself must fail
  for _ in $(seq 3000); do
    c=0
    for k in $(seq 1 "$n"); do
      [ -e "$tmp/a$k.done" ] || [ -e "$tmp/a$k.fail" ] || ! kill -0 "${pids[$((k - 1))]}" 2>/dev/null &&
        c=$((c + 1))
    done
    [ "$c" = "$n" ] && break
    sleep 0.1
  done
  for k in $(seq 1 "$n"); do
    [ -f "$tmp/a$k.fail" ] && { touch "$tmp/go"; fail "session $k: $(cat "$tmp/a$k.fail")"; }
    [ -f "$tmp/a$k.done" ] || { touch "$tmp/go"; fail "session $k: its agent stopped (or is still at it) without a word"; }
  done
  log "$n sessions x $turns turns in $(( $(now_ms) - t0 )) ms"
  left=$(leftovers)
  for c in process cgroup lease vm key; do
    [ "$(echo "$left" | grep -c "^$c ")" -ge "$n" ] ||
      { touch "$tmp/go"; fail "with $n sessions alive, leftovers found $(echo "$left" | grep -c "^$c ") of kind $c: $left"; }
  done
  # one VM a session: no VMM pre-started for a next job beside it
  [ "$(echo "$left" | grep -c '^lease ')" = "$n" ] ||
    { touch "$tmp/go"; fail "$n sessions hold $(echo "$left" | grep -c '^lease ') uid leases, not one each"; }
  [ "$(echo "$left" | grep -c '^key .*:x:[0-9]*$')" -ge $((n * turns * 2)) ] ||
    { touch "$tmp/go"; fail "the exec keys of live sessions: $(echo "$left" | grep -c ':x:')"; }
  c=$( (nothing_left) 2>&1 ) && { touch "$tmp/go"; fail "nothing_left passed with $n sessions alive"; }
  log "with $n alive, nothing_left fails: $(echo "$c" | grep -m1 FAIL | cut -c1-160)..."
  log "alive: leftovers saw $(echo "$left" | cut -d' ' -f1 | sort | uniq -c | tr -s ' \n' ' ')"
  touch "$tmp/go"
  for p in "${pids[@]}"; do wait "$p" || true; done
  pids=()
  for k in $(seq 1 "$n"); do
    [ -f "$tmp/a$k.fail" ] && fail "session $k: $(cat "$tmp/a$k.fail")"
    [ -f "$tmp/a$k.id" ] || fail "session $k: no id"
  done
  for k in $(seq 1 "$n"); do
    id=$(cat "$tmp/a$k.id")
    [ "$(S get "$id" | field reason)" = destroyed ] || fail "$id not destroyed"
    [ "$(R --scan --pattern "airlock:{default}:sess:$id:x:*" | wc -l)" -ge $((turns * 2)) ] ||
      fail "$id: its exec keys are gone already"
  done
  nothing_left
  log "agent loop done in $(( $(now_ms) - t0 )) ms"
}

case_http() {
  local port=$(free_port) api rec id x n
  api=http://127.0.0.1:$port
  "$bin" serve --http 127.0.0.1:$port >> "$tmp/serve.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 100); do curl -sf "$api/health" >/dev/null && break; sleep 0.1; done
  H() { curl -s -H 'Content-Type: application/json' "$@"; }
  rec=$(H -X POST -d '{"template":"python","ttl_s":60,"metadata":{"who":"http"}}' "$api/sessions")
  id=$(echo "$rec" | field id)
  [ "$(echo "$rec" | field state)" = alive ] || fail "create: $rec"
  [ -n "$(echo "$rec" | field expires_at)" ] || fail "no expires_at: $rec"
  x=$(H -X POST -d '{"sh":"echo hi; echo oops >&2; exit 4"}' "$api/sessions/$id/exec?wait=60")
  [ "$(echo "$x" | field status)" = RE ] && [ "$(echo "$x" | field exit_code)" = 4 ] ||
    fail "exec: $x"
  [ "$(echo "$x" | field stream.stdout)" = hi ] && [ "$(echo "$x" | field stream.stderr)" = oops ] ||
    fail "streams: $x"
  # reattach: start without waiting, read from a middle offset later
  x=$(H -X POST -d '{"sh":"for i in 1 2 3 4 5; do echo $i; sleep 0.2; done"}' "$api/sessions/$id/exec")
  n=$(echo "$x" | field exec)
  x=$(H "$api/sessions/$id/exec/$n?offset=4&wait=30")
  [ "$(echo "$x" | field stream.stdout)" = "$(printf '3\n4\n5')" ] || fail "reattach: $x"
  # bytes that are not UTF-8 come as base64
  x=$(H -X POST -d '{"sh":"printf \"\\377\\001\""}' "$api/sessions/$id/exec?wait=30")
  [ "$(echo "$x" | field stream.stdout)" = '{"base64": "/wE="}' ] || fail "binary: $x"
  # extend past the maximum: 409 with the reason
  [ "$(H -o /dev/null -w '%{http_code}' -X POST -d '{"ttl_s":100000}' "$api/sessions/$id/extend")" = 409 ] ||
    fail "extend past max not 409"
  rec=$(H -X POST -d '{"ttl_s":30}' "$api/sessions/$id/extend")
  [ "$(echo "$rec" | field state)" = alive ] || fail "extend: $rec"
  # every reply carries expires_at, the one extend just set
  local e ex_ms nd="/usr/bin/python3 $(dirname "$0")/ndjson.py"
  e=$(echo "$rec" | field expires_at) ex_ms=$(echo "$rec" | field expires_at_ms)
  [ -n "$e" ] && [ -n "$ex_ms" ] || fail "extend's record: $rec"
  has_exp() {  # $1 what, $2 JSON
    [ "$(echo "$2" | field expires_at)" = "$e" ] && [ "$(echo "$2" | field expires_at_ms)" = "$ex_ms" ] ||
      fail "$1: expires_at $(echo "$2" | field expires_at), want $e: $2"
  }
  x=$(H -X POST -d '{"sh":"echo ready; sleep 100"}' "$api/sessions/$id/exec")
  has_exp "exec start" "$x"
  n=$(echo "$x" | field exec)
  wait_ready "$id" "$n"
  has_exp "exec get" "$(H "$api/sessions/$id/exec/$n")"
  has_exp "signal" "$(H -X POST -d '{"signal":"KILL"}' "$api/sessions/$id/exec/$n/signal")"
  curl -sN -H 'Content-Type: application/json' -X POST -d '{"sh":"echo s1"}' \
    "$api/sessions/$id/exec?stream=1" > "$tmp/http.nd"
  has_exp "the stream's first line" "$(head -1 "$tmp/http.nd")"
  has_exp "the stream's last line" "$($nd "$tmp/http.nd" last)"
  mkdir -p "$tmp/one" && echo one > "$tmp/one/f" && tar --format=ustar -C "$tmp/one" -cf "$tmp/one.tar" f
  has_exp "files POST" "$(curl -s -H 'Content-Type: application/x-tar' -X POST \
    --data-binary @"$tmp/one.tar" "$api/sessions/$id/files?path=up")"
  curl -s -D "$tmp/hdr" -o /dev/null "$api/sessions/$id/files?path=up"
  grep -qi "^X-Airlock-Expires-At: $e" "$tmp/hdr" && grep -qi "^X-Airlock-Expires-At-Ms: $ex_ms" "$tmp/hdr" ||
    fail "files GET headers: $(cat "$tmp/hdr")"
  log "expires_at $e in exec start, get, signal, stream, files replies"
  # list, and list filtered by state and metadata (?state=S&meta=K=V)
  lst() { H "$api/sessions$1" | python3 -c 'import json,sys; print(" ".join(s["id"] for s in json.load(sys.stdin)["sessions"]))'; }
  [[ " $(lst '') " = *" $id "* ]] || fail "list"
  [[ " $(lst '?state=alive&meta=who%3Dhttp') " = *" $id "* ]] || fail "list ?state=alive&meta=who=http"
  [[ " $(lst '?meta=who=http&meta=x=y') " = *" $id "* ]] && fail "list ?meta=who=http&meta=x=y lists it"
  [[ " $(lst '?state=ended') " = *" $id "* ]] && fail "list ?state=ended lists a live one"
  [ "$(H -o /dev/null -w '%{http_code}' "$api/sessions?meta=novalue")" = 422 ] || fail "list ?meta=novalue not 422"
  [ "$(H -o /dev/null -w '%{http_code}' "$api/sessions/s-zz")" = 404 ] || fail "bad id not 404"
  [ "$(H -X DELETE "$api/sessions/$id" | field reason)" = destroyed ] || fail "delete"
  [[ " $(lst '?state=ended&meta=who=http') " = *" $id "* ]] || fail "list ?state=ended after delete"
  curl -s "$api/metrics" > "$tmp/metrics"
  grep -qx 'airlock_sessions_created_total 1' "$tmp/metrics" &&
    grep -qx 'airlock_sessions_ended_total{reason="destroyed"} 1' "$tmp/metrics" &&
    grep -qx 'airlock_sessions_alive 0' "$tmp/metrics" ||
    fail "metrics: $(grep sessions "$tmp/metrics")"
  # the execs' run-time histogram: every exec above counted once, buckets
  # cumulative up to +Inf = count, a sum above 1 s (5 x 0.2 s slept)
  python3 - "$tmp/metrics" <<'PY' || fail "exec metrics: $(grep session_exec "$tmp/metrics")"
import re, sys
t = open(sys.argv[1]).read()
b = [int(v) for v in re.findall(r'^airlock_session_exec_seconds_bucket\{le="[^"]+"\} (\d+)$', t, re.M)]
n = int(re.search(r'^airlock_session_exec_seconds_count (\d+)$', t, re.M).group(1))
s = float(re.search(r'^airlock_session_exec_seconds_sum ([\d.]+)$', t, re.M).group(1))
assert len(b) == 13 and b == sorted(b) and b[-1] == n and n >= 3 and s >= 1.0, (b, n, s)
PY
  if command -v promtool >/dev/null; then
    promtool check metrics < "$tmp/metrics" || fail "promtool"
  fi
  [ "$(H -o /dev/null -w '%{http_code}' -X POST -d '{"sh":"true"}' "$api/sessions/$id/exec")" = 410 ] ||
    fail "exec in an ended session not 410"
  # the Python Session, on the same serve (python3-redis: tools/deps.sh)
  if /usr/bin/python3 -c 'import redis, msgpack' 2>/dev/null; then
    PYTHONPATH=$(dirname "$0")/../../clients/python /usr/bin/python3 \
      "$(dirname "$0")/session_client.py" "unix://$sock" >&2 || fail "python client"
    # the agent loop of clients/python/README.md, as written there
    /usr/bin/python3 - "$(dirname "$0")/../../clients/python/README.md" > "$tmp/readme.py" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
print(re.search(r"## Sessions: an agent loop.*?```python\n(.*?)```", t, re.S).group(1))
PY
    out=$(AIRLOCK_REDIS=unix://$sock PYTHONPATH=$(dirname "$0")/../../clients/python \
      /usr/bin/python3 "$tmp/readme.py") || fail "the README's agent loop: $out"
    [ "$out" = "42 solved True" ] || fail "the README's agent loop printed: $out"
  else
    log "python3-redis missing: the Python client was not tested"
  fi
}

case_capacity() {  # run with MAX_SESSIONS=1
  start_serve
  local a b out t0 dt
  a=$(S create -t python --ttl 60 -q)
  # no room: a create waits its timeout, then fails with a clear status
  t0=$(now_ms)
  set +e
  out=$(S create -t python --ttl 60 --timeout 2000 -q 2>&1)
  local ex=$?
  set -e
  dt=$(( $(now_ms) - t0 ))
  [ "$ex" = 1 ] && echo "$out" | grep -q 'create_timeout' || fail "full host: $ex $out"
  [ "$dt" -ge 2000 ] && [ "$dt" -le 4500 ] || fail "create_timeout after $dt ms"
  log "a create with no room failed after $dt ms: $out"
  # batch jobs still run while sessions are at their cap
  out=$(A run -t python -- echo job-ran 2>/dev/null)
  [ "$out" = job-ran ] || fail "a job did not run beside a full session host: $out"
  # a waiting create succeeds once a session ends
  S create -t python --ttl 60 --timeout 60000 -q > "$tmp/b" 2>&1 &
  local cp=$!
  sleep 1.5
  kill -0 $cp 2>/dev/null || fail "the second create did not wait: $(cat "$tmp/b")"
  S rm "$a" >/dev/null
  wait $cp || fail "the waiting create failed: $(cat "$tmp/b")"
  b=$(cat "$tmp/b")
  [ "$(S get "$b" | field state)" = alive ] || fail "waited create: $(S get "$b")"
  S rm "$b" >/dev/null
}

case_snapshot() {
  start_serve
  local rec id out ex j s2 t0
  A snapshot rm "$SNAP" >/dev/null 2>&1 || true
  t0=$(now_ms)
  rec=$(S create -t c --ttl 120 --saveable)
  id=$(echo "$rec" | field id)
  [ "$(echo "$rec" | field saveable)" = true ] || fail "not saveable: $rec"
  log "saveable create in $(( $(now_ms) - t0 )) ms (restore_ms $(echo "$rec" | field restore_ms))"
  S exec "$id" --sh 'mkdir -p proj && printf "#include <stdio.h>\nint main(void){puts(\"built-ok\");return 0;}\n" > proj/m.c &&
    gcc -O2 -o proj/app proj/m.c && echo kept > /tmp/note && echo data > proj/data.txt' >/dev/null 2>&1 ||
    fail "build in the session"
  rec=$(S snapshot "$id" "$SNAP") || fail "snapshot: $rec"
  log "snapshot: $rec"
  [ "$(echo "$rec" | field origin)" = "session:$id" ] || fail "origin: $rec"
  A snapshot list | grep "^$SNAP " | grep -q "from session:$id" ||
    fail "snapshot list: $(A snapshot list)"
  # the session runs on after the save; what it writes now is its own
  out=$(S exec "$id" --sh 'echo later > proj/later.txt; cat proj/data.txt' 2>/dev/null)
  [ "$out" = data ] || fail "session after the snapshot: $out"
  # a job from the snapshot: the files, the built binary, not the later write
  out=$(A run -t "$SNAP" -- sh -c 'cat proj/data.txt /tmp/note; proj/app; ls proj/later.txt 2>&1 || true' 2>&1) ||
    fail "job from the snapshot: $out"
  echo "$out" | grep -qx data && echo "$out" | grep -qx kept &&
    echo "$out" | grep -qx built-ok || fail "job from the snapshot saw: $out"
  echo "$out" | grep -q 'No such file' || fail "the session's later write is in the snapshot: $out"
  # a new session from it
  s2=$(S create -t "$SNAP" --ttl 60 -q)
  out=$(S exec "$s2" --sh 'proj/app && cat proj/data.txt' 2>/dev/null)
  [ "$out" = "$(printf 'built-ok\ndata')" ] || fail "session from the snapshot: $out"
  # refusals: an existing name; a session not created saveable
  set +e
  out=$(S snapshot "$id" "$SNAP" 2>&1); ex=$?
  set -e
  [ "$ex" = 1 ] && echo "$out" | grep -q 'never replaces' || fail "same name: $ex $out"
  # sessions' own namespace: no name an operator's snapshot may take
  set +e
  out=$(S snapshot "$id" c-deps 2>&1); ex=$?
  set -e
  [ "$ex" = 1 ] && echo "$out" | grep -q 'starts with "session-"' || fail "operator's namespace: $ex $out"
  set +e
  out=$(S snapshot "$s2" session-other 2>&1); ex=$?
  set -e
  [ "$ex" = 1 ] && echo "$out" | grep -q 'not created saveable' || fail "not saveable: $ex $out"
  set +e
  out=$(S create -t c --saveable -n somepolicy 2>&1); ex=$?
  set -e
  [ "$ex" = 1 ] && echo "$out" | grep -q 'not with a network' || fail "saveable with a network: $ex $out"
  S rm "$id" >/dev/null
  S rm "$s2" >/dev/null
  A snapshot rm "$SNAP" >/dev/null
  sleep 1
  nothing_left
}

# Issue 34: a principal's cap on session snapshots (sessions.
# snapshots_per_principal = 1 here). Over HTTP with a tokens file: alice
# saves one (its `owner` recorded with it), her second is refused with
# the key named; bob's first still saves (the cap is per principal); a
# session of an operator (the CLI, over Redis) is not capped.
case_snapcap() {
  local port=$(free_port) api ta=tok-alice-0123456789 tb=tok-bob-0123456789ab
  local a b rec ex n refusal
  api=http://127.0.0.1:$port
  printf 'alice %s\nbob %s\n' "$ta" "$tb" > "$tmp/tokens"
  chmod 0600 "$tmp/tokens"
  printf '[http]\ntokens_file = %s\n' "$tmp/tokens" >> "$tmp/airlock.conf"
  sed -i 's/^output_budget_bytes = .*/&\nsnapshots_per_principal = 1/' "$tmp/airlock.conf"
  for n in session-cap-a1 session-cap-a2 session-cap-b1 session-cap-o1 session-cap-o2; do
    A snapshot rm "$n" >/dev/null 2>&1 || true
  done
  "$bin" serve --http 127.0.0.1:$port >> "$tmp/serve.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 100); do curl -sf "$api/health" >/dev/null && break; sleep 0.1; done
  H() { local t=$1; shift; curl -s -H "Authorization: Bearer $t" -H 'Content-Type: application/json' "$@"; }
  a=$(H "$ta" -X POST -d '{"template":"c","ttl_s":120,"saveable":true}' "$api/sessions" | field id)
  b=$(H "$tb" -X POST -d '{"template":"c","ttl_s":120,"saveable":true}' "$api/sessions" | field id)
  [ -n "$a" ] && [ -n "$b" ] || fail "creates: a=$a b=$b"
  rec=$(H "$ta" -X POST -d '{"name":"session-cap-a1"}' "$api/sessions/$a/snapshot")
  [ "$(echo "$rec" | field snapshot)" = session-cap-a1 ] || fail "alice's first: $rec"
  grep -q ' owner=alice' "$(ls -d "$state"/snapshots/session-cap-a1-*)/inputs" ||
    fail "no owner=alice in the snapshot's inputs"
  rec=$(H "$ta" -w ' %{http_code}' -X POST -d '{"name":"session-cap-a2"}' "$api/sessions/$a/snapshot")
  echo "$rec" | grep -q 'snapshots_per_principal' || fail "alice's second: $rec"
  refusal=$rec
  case $rec in *' 201') fail "alice's second saved: $rec" ;; esac
  A snapshot list | grep -q '^session-cap-a2 ' && fail "alice's second is listed"
  rec=$(H "$tb" -X POST -d '{"name":"session-cap-b1"}' "$api/sessions/$b/snapshot")
  [ "$(echo "$rec" | field snapshot)" = session-cap-b1 ] || fail "bob's first: $rec"
  # an operator's sessions (the CLI over Redis) have no cap
  rec=$(S create -t c --ttl 120 --saveable)
  id=$(echo "$rec" | field id)
  S snapshot "$id" session-cap-o1 >/dev/null || fail "operator's first"
  S snapshot "$id" session-cap-o2 >/dev/null || fail "operator's second"
  log "cap 1: alice's second refused ($refusal), bob's and the operator's two saved"
  H "$ta" -X DELETE "$api/sessions/$a" >/dev/null
  H "$tb" -X DELETE "$api/sessions/$b" >/dev/null
  S rm "$id" >/dev/null
  for n in session-cap-a1 session-cap-b1 session-cap-o1 session-cap-o2; do
    A snapshot rm "$n" >/dev/null || fail "rm $n"
  done
  sleep 1
  nothing_left
}

case_fork() {
  local port=$(free_port) api
  api=http://127.0.0.1:$port
  "$bin" serve --http 127.0.0.1:$port >> "$tmp/serve.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 100); do curl -sf "$api/health" >/dev/null && break; sleep 0.1; done
  local rec id out f i fs=() rnd=() ms=() hf=()
  rec=$(S create -t python --ttl 120 --saveable -m team=f)
  id=$(echo "$rec" | field id)
  S exec "$id" --sh 'mkdir -p w && echo base > w/base.txt && echo tmp > /tmp/t.txt' >/dev/null 2>&1 ||
    fail "write in the parent"
  out=$(S fork "$id" -n 4) || fail "fork: $out"
  mapfile -t fs < <(echo "$out" | python3 -c 'import json,sys
d=json.load(sys.stdin)
for f in d["forks"]: print(f["id"])')
  mapfile -t ms < <(echo "$out" | python3 -c 'import json,sys
d=json.load(sys.stdin)
for f in d["forks"]: print(f["fork_ms"])')
  [ "${#fs[@]}" = 4 ] || fail "4 forks wanted: $out"
  log "fork: save_ms $(echo "$out" | field save_ms), RAM diff $(echo "$out" | field mem_bytes) B, fork_ms ${ms[*]}"
  for i in 0 1 2 3; do
    f=${fs[$i]}
    [ "$(S get "$f" | field state)" = alive ] || fail "fork $f: $(S get "$f")"
    [ "$(S get "$f" | field metadata.team)" = f ] || fail "fork $f metadata: $(S get "$f")"
    out=$(S exec "$f" --sh 'cat w/base.txt /tmp/t.txt' 2>/dev/null)
    [ "$out" = "$(printf 'base\ntmp')" ] || fail "fork $f files: $out"
    rnd[$i]=$(S exec "$f" -- python3 -c 'import os; print(os.urandom(16).hex())' 2>/dev/null)
    S exec "$f" --sh "echo $i > w/mine-$i" >/dev/null 2>&1
  done
  S exec "$id" --sh 'echo p > w/parent-later' >/dev/null 2>&1
  [ "$(printf '%s\n' "${rnd[@]}" | sort -u | wc -l)" = 4 ] || fail "os.urandom alike: ${rnd[*]}"
  for i in 0 1 2 3; do
    out=$(S exec "${fs[$i]}" --sh 'ls w | tr "\n" " "' 2>/dev/null)
    [ "$out" = "base.txt mine-$i " ] || fail "fork $i sees: $out"
  done
  out=$(S exec "$id" --sh 'ls w | tr "\n" " "' 2>/dev/null)
  [ "$out" = "base.txt parent-later " ] || fail "the parent sees: $out"
  A snapshot list | grep -q '^fork-' && fail "a fork snapshot was left: $(A snapshot list)"
  # HTTP: POST /sessions/ID/fork {"n": 2}
  out=$(curl -s -H 'Content-Type: application/json' -X POST -d '{"n":2}' "$api/sessions/$id/fork")
  mapfile -t hf < <(echo "$out" | python3 -c 'import json,sys
for f in json.load(sys.stdin)["forks"]: print(f["id"])')
  [ "${#hf[@]}" = 2 ] || fail "HTTP fork: $out"
  out=$(S exec "${hf[1]}" --sh 'ls w | tr "\n" " "' 2>/dev/null)
  [ "$out" = "base.txt parent-later " ] || fail "HTTP fork sees: $out"
  fs+=("${hf[@]}")
  for f in "${fs[@]}"; do S rm "$f" >/dev/null; done
  fs=()
  # Python: Session.fork(n)
  PYTHONPATH=$(dirname "$0")/../../clients/python /usr/bin/python3 \
    "$(dirname "$0")/session_fork.py" "unix://$sock" >&2 || fail "python fork"
  # a session not created saveable is refused with the reason
  local plain ex
  plain=$(S create -t python --ttl 60 -q)
  set +e
  out=$(S fork "$plain" -n 2 2>&1); ex=$?
  set -e
  [ "$ex" = 1 ] && echo "$out" | grep -q 'not created saveable' || fail "fork of a plain session: $ex $out"
  for f in "$id" "$plain"; do S rm "$f" >/dev/null; done
  sleep 1
  nothing_left
}

# QEMU processes under process $1 (any depth)
qemus_under() {
  local p=$1 kids
  kids=$(pgrep -P "$p" || true)
  for k in $kids; do
    if grep -q qemu "/proc/$k/comm" 2>/dev/null || tr '\0' ' ' < "/proc/$k/cmdline" 2>/dev/null | grep -q qemu-system; then echo "$k"; fi
    qemus_under "$k"
  done
}

case_hibernate() {
  start_serve
  local rec id sp out boot k t
  local bt bi t0
  # clocks run on while a session sleeps: ttl 8 s, and idle 4 s
  t0=$(now_ms)
  bt=$(S create -t python --ttl 8 --hibernate 1 -q)
  bi=$(S create -t python --ttl 120 --idle 4 --hibernate 1 -q)
  rec=$(S create -t python --ttl 120 --hibernate 2)
  id=$(echo "$rec" | field id)
  [ "$(echo "$rec" | field saveable)" = true ] || fail "hibernate_s did not make it saveable: $rec"
  sp=$(grep "session=$id started process" "$tmp/serve.log" | sed 's/.*started process \([0-9]*\).*/\1/')
  boot=$(S exec "$id" --sh 'mkdir -p w && echo kept > w/f.txt && echo tmp > /tmp/t && cat /proc/sys/kernel/random/boot_id' 2>/dev/null)
  # a background process, started before the first hibernation
  S exec "$id" --sh "$TICKER" >/dev/null 2>&1 || fail "the ticker's exec failed"
  local bgpid ticks0 a b
  read -r bgpid ticks0 <<< "$(S exec "$id" --sh 'echo $(cat /work/bg.pid) $(wc -l < /work/tick)' 2>/dev/null)"
  [ -n "$ticks0" ] || fail "no ticker"
  [ -n "$(qemus_under "$sp")" ] || fail "no QEMU under session process $sp before"
  for round in 1 2; do
    for _ in $(seq 100); do
      [ "$(S get "$id" | field hibernated)" = true ] && break
      sleep 0.1
    done
    [ "$(S get "$id" | field hibernated)" = true ] || fail "round $round: not hibernated: $(S get "$id")"
    sleep 0.5
    [ -z "$(qemus_under "$sp")" ] || fail "round $round: a QEMU remains: $(qemus_under "$sp")"
    [ "$(S get "$id" | field state)" = alive ] || fail "round $round: $(S get "$id")"
    A snapshot list | grep -q "^hib-${id#s-} " || fail "round $round: no saved state listed"
    log "round $round: hibernated, no VMM; session process $sp: $(awk '/VmRSS/{print $2" kB RSS"}' /proc/$sp/status)"
    out=$(S exec "$id" --sh 'cat w/f.txt /tmp/t /proc/sys/kernel/random/boot_id' 2>/dev/null)
    [ "$out" = "$(printf 'kept\ntmp\n%s' "$boot")" ] || fail "round $round: after resume: $out (boot $boot)"
    read -r out a b _ <<< "$(ticker_state "$id")"
    [ "$out" = "$bgpid" ] && [ "$a" -ge "$ticks0" ] && [ "$b" -gt "$a" ] ||
      fail "round $round: the background process after resume: $out $a $b (pid $bgpid, $ticks0 ticks before)"
    log "round $round: background pid $bgpid still running after resume ($ticks0 -> $a -> $b ticks)"
    ticks0=$b
    k="airlock:{default}:sess:$id:x:$((round * 2 + 2))"
    t=$(R hget "$k" resumed_ms)
    [ -n "$t" ] || fail "round $round: no resumed_ms in the exec record"
    [ "$(S get "$id" | field resumes)" = "$round" ] || fail "resumes: $(S get "$id")"
    [ -n "$(qemus_under "$sp")" ] || fail "round $round: no QEMU after resume"
    A snapshot list | grep -q "^hib-${id#s-} " && fail "round $round: saved state left after resume"
    log "round $round: resumed in $t ms, files and boot_id intact"
  done
  S rm "$id" >/dev/null
  while [ $(( $(now_ms) - t0 )) -lt 9500 ]; do sleep 0.2; done
  rec=$(S get "$bt")
  [ "$(echo "$rec" | field reason)" = ttl ] && [ "$(echo "$rec" | field resumes)" = "" ] ||
    fail "a hibernated session's ttl: $rec"
  rec=$(S get "$bi")
  [ "$(echo "$rec" | field reason)" = idle ] || fail "a hibernated session's idle: $rec"
  sleep 1
  for x in "$id" "$bt" "$bi"; do
    A snapshot list | grep -q "^hib-${x#s-} " && fail "the hibernated state of $x was left"
    [ -e "$state/snapshots/.hib-${x#s-}.lock" ] && fail "the lock file of $x was left"
  done
  nothing_left
}

# the ticking loop of issue #24 (docs/sessions.md "Background processes")
TICKER="nohup sh -c 'while :; do date +%s%N >> /work/tick; sleep 0.2; done' > /dev/null 2>&1 & echo \$! > /work/bg.pid"
# in session $1: "PID TICKS-NOW TICKS-1s-LATER CGROUP" of the ticker
ticker_state() {
  S exec "$1" --sh 'p=$(cat /work/bg.pid); a=$(wc -l < /work/tick); sleep 1
    b=$(wc -l < /work/tick); test -d /proc/$p || p=dead
    echo "$p $a $b $(cut -d: -f3 /proc/$p/cgroup 2>/dev/null)"' 2>/dev/null
}

case_snapbg() {
  start_serve
  local id out job jid v
  A snapshot rm "$SNAP" >/dev/null 2>&1 || true
  id=$(S create -t python --ttl 120 --saveable -q)
  S exec "$id" --sh 'cat > loop.py <<EOP
import glob, time
while True:
    for d in glob.glob("/work/.airlock-check-*"):
        for f, t in (("output", "7\\n"), ("check_divisor.sh", "#!/bin/sh\\nexit 0\\n")):
            try:
                open(d + "/" + f, "w").write(t)
            except OSError:
                pass
    time.sleep(0.01)
EOP
nohup python3 loop.py > /dev/null 2>&1 &' > /dev/null 2>&1 || fail "start the loop"
  # the control: it runs in the session
  out=$(S exec "$id" --sh 'grep -ls "loop[.]py" /proc/[0-9]*/cmdline | wc -l' 2>/dev/null) ||
    fail "probe exec: exit $? (a loaded machine times it out at 10 s)"
  [ "$out" -ge 1 ] || fail "the loop is not running in the session: $out"
  out=$(S snapshot "$id" "$SNAP" 2>&1) || fail "snapshot: $out"
  out=$(S exec "$id" --sh 'grep -ls "loop[.]py" /proc/[0-9]*/cmdline | wc -l' 2>/dev/null) ||
    fail "probe exec: exit $? (a loaded machine times it out at 10 s)"
  [ "$out" = 0 ] || fail "the loop outlived the save in the session: $out"
  job=$(python3 -c 'import json,sys; print(json.dumps({"template": sys.argv[1],
    "steps": [{"name": "factor", "sh": "read c n; sleep 0.3; echo 1",
      "stdin": "factor 91\n",
      "check": {"cmd": ["sh", "check_divisor.sh"], "timeout_ms": 60000,
        "files": {"check_divisor.sh": open(sys.argv[2]).read()},
        "answer": "7\n"}},
     {"name": "probe", "sh": "grep -ls \"loop[.]py\" /proc/[0-9]*/cmdline | wc -l"}]}))' \
    "$SNAP" "$(dirname "$0")/../grade/check_divisor.sh")
  jid=$(A submit - <<< "$job") || fail "submit: $jid"
  A wait --timeout 240 "$jid" >/dev/null 2>&1 || fail "job $jid did not end"
  out=$(A result --json "$jid" 2>/dev/null)
  v=$(echo "$out" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["steps"][0].get("verdict"), r["steps"][1]["stdout"].strip())')
  [ "$v" = "wrong_answer 0" ] || fail "a job on the session's snapshot: verdict and loops: $v"
  log "a job on a snapshot saved with a rewriting loop: $v (verdict, loops alive)"
  S rm "$id" >/dev/null
  A snapshot rm "$SNAP" >/dev/null
}

# Bytes of exec output session $1 holds in Redis: streams and record tails.
stored_bytes() {
  local k t=0 n
  for k in $(R --scan --pattern "airlock:{default}:sess:$1:x:*"); do
    case $k in
      *:x:*:end) continue ;;  # an exec's end token, no output
      *:x:*:[12]) n=$(R strlen "$k") ;;
      *) n=$(( $(R hstrlen "$k" stdout) + $(R hstrlen "$k" stderr) )) ;;
    esac
    t=$((t + n))
  done
  echo $t
}

case_budget() {  # run with BUDGET=65536
  start_serve
  local id P t
  id=$(S create -t python --ttl 120 -q)
  P="airlock:{default}:sess:$id"
  S exec "$id" --sh 'head -c 40000 /dev/zero | tr "\\0" a' > /dev/null 2>&1 || fail "exec 1"
  [ "$(R strlen "$P:x:1:1")" = 40000 ] || fail "exec 1 not stored"
  S exec "$id" --sh 'head -c 40000 /dev/zero | tr "\\0" b' > /dev/null 2>&1 || fail "exec 2"
  [ "$(R exists "$P:x:1:1")" = 0 ] || fail "exec 1's output kept past the budget"
  [ "$(R hget "$P:x:1" output_dropped)" = 1 ] || fail "exec 1 not said dropped"
  [ "$(R hget "$P:x:1" status)" = OK ] || fail "exec 1's record lost its status"
  [ "$(R strlen "$P:x:2:1")" = 40000 ] || fail "exec 2 not stored whole"
  t=$(stored_bytes "$id"); [ "$t" -le 65536 ] || fail "stored $t bytes after exec 2"
  S exec "$id" --sh 'head -c 300000 /dev/zero | tr "\\0" c' > /dev/null 2>&1 || fail "exec 3"
  t=$(stored_bytes "$id"); [ "$t" -le 65536 ] || fail "stored $t bytes after exec 3"
  [ "$(R strlen "$P:x:3:1")" -gt 0 ] || fail "exec 3 kept nothing"
  [ "$(R hget "$P:x:3" stdout_bytes)" = 300000 ] || fail "exec 3's count"
  [ "$(S exec "$id" --sh 'echo still' 2>/dev/null)" = still ] || fail "the session stopped"
  t=$(stored_bytes "$id"); [ "$t" -le 65536 ] || fail "stored $t bytes after exec 4"
  log "output kept within the budget: $t bytes stored of 65536 after 380 kB written"
  S rm "$id" > /dev/null
}

case_background() {
  start_serve
  local id n t0 dt w st pid a b cg out job
  id=$(S create -t python --ttl 120 -q)
  t0=$(now_ms)
  S exec "$id" --sh "$TICKER" >/dev/null 2>&1 || fail "the ticker's exec failed"
  dt=$(( $(now_ms) - t0 ))
  w=$(R hget "airlock:{default}:sess:$id:x:1" wall_ms)
  [ -n "$w" ] && [ "$w" -lt 1000 ] || fail "the ticker's exec took wall_ms=$w"
  log "exec starting a background process: wall_ms=$w, round trip $dt ms"
  read -r pid a b cg <<< "$(ticker_state "$id")"
  [ "$pid" != dead ] && [ "$pid" -gt 1 ] || fail "the background process died with its exec: $pid"
  [ "$b" -gt "$a" ] || fail "tick file not growing: $a then $b"
  [ "$cg" = /job/bg ] || fail "background process in cgroup '$cg'"
  # job/bg has the caps an exec's own cgroup has
  out=$(S exec "$id" --sh 'c=/sys/fs/cgroup; s=$c$(cut -d: -f3 /proc/self/cgroup)
    for f in memory.max pids.max memory.swap.max; do
      echo "$f $(cat $c/job/bg/$f) $(cat $s/$f)"; done' 2>/dev/null)
  echo "$out" | awk '$2 != $3 {bad=1} $1 == "memory.max" && $2 == "max" {bad=1} END {exit bad}' &&
    [ "$(echo "$out" | wc -l)" = 3 ] || fail "job/bg caps: $out"
  # a cancel reaches the running exec's processes only
  n=$(S exec "$id" --detach --sh 'echo ready; sleep 100' 2>/dev/null)
  wait_ready "$id" "$n"
  S cancel "$id" "$n" >/dev/null 2>&1 || fail "cancel"
  wait_done "$id" "$n"
  st=$(R hget "airlock:{default}:sess:$id:x:$n" status)
  [ "$st" = SG ] || fail "the cancelled exec: $st"
  read -r out a b cg <<< "$(ticker_state "$id")"
  [ "$out" = "$pid" ] && [ "$b" -gt "$a" ] || fail "a cancel of another exec hit the background process: $out $a $b"
  log "pid $pid in $cg: alive and ticking ($a, $b) after a later exec's cancel"
  S rm "$id" >/dev/null
  # a job's step: nothing outlives it
  t0=$(now_ms)
  job=$(python3 -c 'import json,sys; print(json.dumps({"template": "python",
    "steps": [{"sh": sys.argv[1]}, {"sh": "sleep 0.5; test -d /proc/$(cat /work/bg.pid) && echo alive || echo dead"}]}))' "$TICKER")
  out=$(A submit - <<< "$job") || fail "submit: $out"
  A wait --timeout 120 "$out" >/dev/null 2>&1 || fail "job $out did not end"
  out=$(A result --json "$out" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["steps"][1]["stdout"].strip())')
  [ "$out" = dead ] || fail "a job step's background process outlived it: $out"
  log "a job step's background process was killed with it (job in $(( $(now_ms) - t0 )) ms)"
  nothing_left
}

case_redisdown() {
  start_serve
  local id alive hpid spid rec dt
  id=$(S create -t python --ttl 6 -q)
  alive=$(S get "$id" | field alive_at_ms)
  S exec "$id" --detach -- sleep 100 >/dev/null 2>&1
  hpid=$(for p in $(pgrep -P "$serve_pid"); do pgrep -P "$p" >/dev/null && echo "$p"; done | head -1 || true)
  spid=$(pgrep -P "$hpid" | head -1 || true)
  [ -n "$spid" ] || fail "no session process"
  # the session process and everything under it (the VMM)
  local tree="$spid" more=1
  while [ -n "$more" ]; do
    more=
    for p in $(for q in $tree; do pgrep -P "$q" || true; done); do
      case " $tree " in *" $p "*) ;; *) tree="$tree $p"; more=1 ;; esac
    done
  done
  log "session process tree: $tree"
  running() {  # any of $tree alive and not a zombie
    for p in $tree; do
      st=$(ps -o stat= -p "$p" 2>/dev/null || true)
      [ -n "$st" ] && [ "${st#Z}" = "$st" ] && return 0
    done
    return 1
  }
  # Redis hangs: the host's clocks must not
  kill -STOP "$(cat "$tmp/redis.pid")"
  while [ $(( $(now_ms) - alive )) -lt 8500 ]; do
    running || break
    sleep 0.1
  done
  dt=$(( $(now_ms) - alive ))
  kill -CONT "$(cat "$tmp/redis.pid")"
  running && fail "the session outlived its ttl with Redis stopped ($dt ms)"
  log "with Redis stopped, the ttl_s=6 session was gone $dt ms after alive_at"
  for _ in $(seq 100); do
    rec=$(S get "$id")
    [ "$(echo "$rec" | field state)" = ended ] && break
    sleep 0.1
  done
  [ "$(echo "$rec" | field reason)" = ttl ] || fail "after Redis came back: $rec"
}

# hostile tars for case_files (python's tarfile, ustar unless said)
mk_hostile() {
  python3 - "$tmp/h" <<'PY'
import io, sys, tarfile, os
d = sys.argv[1]; os.makedirs(d, exist_ok=True)
def tar(name, entries, fmt=tarfile.USTAR_FORMAT):
    with tarfile.open(os.path.join(d, name + ".tar"), "w", format=fmt) as t:
        for ti, data in entries:
            t.addfile(ti, io.BytesIO(data) if data is not None else None)
def f(path, data=b"evil\n"):
    ti = tarfile.TarInfo(path); ti.size = len(data); return (ti, data)
def ent(path, typ, link=""):
    ti = tarfile.TarInfo(path); ti.type = typ; ti.linkname = link; return (ti, None)
tar("dotdot", [f("ok.txt"), f("../al-evil-dotdot")])
tar("dotdot2", [f("a/../../al-evil-dotdot2")])
tar("absolute", [f("/tmp/al-evil-abs")])
tar("symlink_abs", [ent("l", tarfile.SYMTYPE, "/tmp"), f("l/al-evil-sym")])
tar("symlink_up", [ent("l", tarfile.SYMTYPE, "../.."), f("l/al-evil-symup")])
tar("hardlink_out", [ent("h", tarfile.LNKTYPE, "../../etc/passwd")])
tar("hardlink_abs", [ent("h", tarfile.LNKTYPE, "/etc/passwd")])
tar("chardev", [ent("null", tarfile.CHRTYPE)])
tar("blockdev", [ent("sda", tarfile.BLKTYPE)])
tar("fifo", [ent("p", tarfile.FIFOTYPE)])
tar("pax_path", [f("x" * 300)], tarfile.PAX_FORMAT)
tar("files_cap", [f("f%d" % i) for i in range(20)])
tar("bytes_cap", [f("big", b"x" * 5000)])
tar("three_k", [f("mid", b"y" * 3000)])
with open(os.path.join(d, "truncated.tar"), "wb") as o:
    b = open(os.path.join(d, "three_k.tar"), "rb").read(); o.write(b[:1500])
os.unlink(os.path.join(d, "three_k.tar"))
PY
}

case_files() {
  local id rec out ex t0 ms port=$(free_port) api
  api=http://127.0.0.1:$port
  "$bin" serve --http 127.0.0.1:$port >> "$tmp/serve.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 100); do curl -sf "$api/health" >/dev/null && break; sleep 0.1; done
  rec=$(S create -t python --ttl 120)
  id=$(echo "$rec" | field id)
  [ "$(echo "$rec" | field state)" = alive ] || fail "create: $rec"
  # a 50 MiB tree: a few large files, small ones, a subdir, a symlink down
  mkdir -p "$tmp/tree/sub/deeper"
  for i in $(seq 1 "${FILES_BIG:-4}"); do head -c $((12 << 20)) /dev/urandom > "$tmp/tree/big$i.bin"; done
  head -c $((2 << 20)) /dev/urandom > "$tmp/tree/sub/deeper/mid.bin"
  for i in $(seq 1 20); do echo "small $i" > "$tmp/tree/sub/s$i.txt"; done
  chmod +x "$tmp/tree/sub/s1.txt"
  ln -s deeper/mid.bin "$tmp/tree/sub/link"
  (cd "$tmp/tree" && find . -type f -print0 | sort -z | xargs -0 sha256sum) > "$tmp/sums"
  t0=$(now_ms)
  S put "$id" "$tmp/tree" up/tree || fail "put of a directory"
  ms=$(( $(now_ms) - t0 ))
  log "put of a $(du -sm "$tmp/tree" | cut -f1) MiB tree: $ms ms"
  out=$(S exec "$id" --timeout-ms 300000 --sh 'cd up/tree && find . -type f -print0 | sort -z | xargs -0 sha256sum' 2>/dev/null)
  [ "$out" = "$(cat "$tmp/sums")" ] || fail "hashes in the guest differ"
  [ "$(S exec "$id" --sh 'readlink up/tree/sub/link' 2>/dev/null)" = deeper/mid.bin ] ||
    fail "the symlink did not arrive"
  S exec "$id" --sh 'test ! -e .airlock-tar-* 2>/dev/null || ls -a; ls -a | grep -q "^.airlock-tar-" && exit 1 || exit 0' \
    2>/dev/null || fail "the temporary tar was left in the work dir"
  t0=$(now_ms)
  S get "$id" --dir up/tree "$tmp/back" || fail "get --dir"
  ms=$(( $(now_ms) - t0 ))
  log "get of the tree: $ms ms"
  (cd "$tmp/back" && find . -type f -print0 | sort -z | xargs -0 sha256sum) > "$tmp/sums.back"
  cmp "$tmp/sums" "$tmp/sums.back" || fail "round-trip hashes differ"
  [ "$(readlink "$tmp/back/sub/link")" = deeper/mid.bin ] || fail "symlink back"
  [ -x "$tmp/back/sub/s1.txt" ] || fail "the executable bit was lost"
  # --tar both ways, through stdin/stdout
  S get "$id" --tar - up/tree/sub > "$tmp/sub.tar" || fail "get --tar -"
  tar -tf "$tmp/sub.tar" | grep -q 'deeper/mid.bin' || fail "get --tar: $(tar -tf "$tmp/sub.tar")"
  S put "$id" --tar - again < "$tmp/sub.tar" || fail "put --tar -"
  out=$(S exec "$id" --timeout-ms 300000 --sh 'sha256sum < again/deeper/mid.bin' 2>/dev/null) || true
  [ "${out%% *}" = "$(sha256sum < "$tmp/tree/sub/deeper/mid.bin" | cut -d' ' -f1)" ] ||
    fail "put --tar: $out"
  # hostile tars: each refused with its reason, nothing written anywhere
  mk_hostile
  local name want
  for name in dotdot:'. or .. part' dotdot2:'. or .. part' absolute:'relative' \
      symlink_abs:'symlink must point down' symlink_up:'symlink must point down' \
      hardlink_out:'hard link' hardlink_abs:'hard link' chardev:'device nodes' \
      blockdev:'device nodes' fifo:'device nodes' pax_path:"entry type 'x'" \
      files_cap:'cap of 10 entries' bytes_cap:'cap of 4096 bytes' truncated:'truncated'; do
    want=${name#*:} name=${name%%:*}
    set +e
    out=$(S put "$id" --max-files 10 --max-bytes 4096 --tar "$tmp/h/$name.tar" hostile 2>&1)
    ex=$?
    set -e
    [ "$ex" = 1 ] || fail "$name: put exit $ex: $out"
    echo "$out" | grep -qF "$want" || fail "$name: want '$want' in: $out"
    log "$name refused: $out"
  done
  out=$(S exec "$id" --timeout-ms 300000 --sh 'find "$PWD/.." /tmp / -maxdepth 3 -xdev -name "al-evil-*" 2>/dev/null
    test -e hostile && echo "hostile/ made"; ls -a | grep "^.airlock-tar-"; echo checked' 2>/dev/null || true)
  [ "$out" = checked ] || fail "something of a refused tar reached the guest: $out"
  # a guest's symlink pointing out, and a device node: get refuses them,
  # and writes nothing on the host
  S exec "$id" --sh 'mkdir -p g && echo hi > g/a && ln -s /etc/passwd g/out' 2>/dev/null
  set +e
  out=$(S get "$id" --dir g "$tmp/gback" 2>&1)
  ex=$?
  set -e
  [ "$ex" = 1 ] && echo "$out" | grep -qF 'symlink must point down' || fail "get of a symlink out: $ex $out"
  [ ! -e "$tmp/gback/a" ] || fail "get wrote files of a refused tar"
  S exec "$id" --sh 'rm g/out && ln -s ../../../../../../tmp g/up' 2>/dev/null
  set +e
  out=$(S get "$id" --dir g "$tmp/gback2" 2>&1)
  ex=$?
  set -e
  [ "$ex" = 1 ] && echo "$out" | grep -qF 'symlink must point down' || fail "get of a symlink up: $ex $out"
  # over the caps on the way out
  set +e
  out=$(S get "$id" --max-bytes 1000000 --dir up/tree "$tmp/capped" 2>&1)
  ex=$?
  set -e
  [ "$ex" = 1 ] && echo "$out" | grep -q 'over the cap' || fail "get over the cap: $ex $out"
  # the HTTP form: a tar body in, a tar body out, a hostile one 422
  out=$(curl -s -w ' %{http_code}' -H 'Content-Type: application/x-tar' -X POST --data-binary @"$tmp/sub.tar" \
    "$api/sessions/$id/files?path=viahttp")
  [ "${out##* }" = 200 ] || fail "POST files: $out"
  curl -sf -o "$tmp/viahttp.tar" "$api/sessions/$id/files?path=viahttp" || fail "GET files"
  [ "$(tar -tf "$tmp/viahttp.tar" | sort)" = "$(tar -tf "$tmp/sub.tar" | sort)" ] ||
    fail "GET files: $(tar -tf "$tmp/viahttp.tar")"
  out=$(curl -s -w ' %{http_code}' -H 'Content-Type: application/x-tar' -X POST --data-binary @"$tmp/h/dotdot.tar" \
    "$api/sessions/$id/files?path=viahttp2")
  [ "${out##* }" = 422 ] && echo "$out" | grep -qF '. or .. part' || fail "POST dotdot: $out"
  S rm "$id" >/dev/null
  # the Python Session's upload_dir / download_dir (its own session)
  PYTHONPATH=$(dirname "$0")/../../clients/python /usr/bin/python3 \
    "$(dirname "$0")/session_files.py" "unix://$sock" "$tmp" "$tmp/h/dotdot.tar" >&2 ||
    fail "python upload_dir/download_dir"
}

"case_$case"
log ok
