#!/usr/bin/env bash
# http_test.sh: the HTTP API of `airlock serve --http` through curl, with a
# real redis-server (unix socket in a temp dir) and the real binary.
#
# usage: http_test.sh AIRLOCK_BIN CASE
#   auth      a token set: no/wrong token 401, right token 201; no token
#             set: serve refuses a non-loopback listener, a Host that
#             is not a loopback name or the listen address gets 403, a
#             body that is not application/json 415
#   limits    oversized (declared and chunked), malformed, wrong method,
#             unknown path, bad id, bad ?wait=, an id taken by another
#             payload (409), huge headers, a slow client: each gets its
#             error, serve keeps answering
#   callback  the result is POSTed to a local server that answers 500
#             once: retried, then delivered; a target outside
#             http.callback_allow is refused at submit
#   metrics   promtool check metrics passes, counters move as a batch
#             runs, metrics.listen serves /metrics and nothing else
#   logjson   log.format = json: every serve line is one JSON object
#   cancel    GET /jobs/ID says queued/running/done, DELETE cancels a
#             running job (its worker is SIGSTOPped to hold it) and a
#             queued one: CX results; 409 once done, 404 unknown; ids
#             with slashes (eval's TASK/sN-HASH), raw or as %2F, and the
#             job "batch" are reached like any other; /metrics counts the
#             cancels that took effect, the API's and the CLI's
#             (airlock_cancels_total)
#   principals  http.tokens_file: two tenants and an operator over one
#             session record planted in Redis (no VM): the other tenant
#             gets 404 "unknown session" on every session route and does
#             not see it listed, its owner and the operator do; fork_of
#             from a client, a create under a live id pushed raw, a
#             string ttl_s: each refused with its reason; refused creates
#             are not failed sessions in /metrics
#   e2e       (real VMs) submit -> wait -> result through curl equals
#             `airlock result --json`, and the CLI's run of the same job
#
# Every case but e2e runs jobs against an empty state dir: no image, so
# each job ends XX at once (max_deliveries 1) and no VM starts.
set -euo pipefail

bin=$1 case=$2
tmp=$(mktemp -d /tmp/al-http-XXXXXX)
sock=$tmp/redis.sock
url=unix://$sock
. "$(dirname "$0")/../lib/port.sh"
port=$(free_port) # and port + 1 (the callback and metrics cases)
api=http://127.0.0.1:$port
pids=()

log() { printf 'http %s: %s\n' "$case" "$*" >&2; }
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

redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --dir "$tmp" \
  --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" \
  --logfile "$tmp/redis.log"
for _ in $(seq 100); do
  redis-cli -s "$sock" ping 2>/dev/null | grep -q PONG && break
  sleep 0.05
done

mkdir "$tmp/empty"
state=$tmp/empty
[ "$case" = e2e ] && state=${AIRLOCK_TEST_STATE:-/var/tmp/airlock-test}
# config: $1 is appended (more sections)
# (no image in the empty state dir: serve must not refuse the jobs at
# submit, templates.check_images; the unbuilt case sets it)
conf() {
  cat > "$tmp/airlock.conf" <<EOC
[queue]
max_deliveries = 1
[sandbox]
state_dir = $state
[templates]
check_images = ${CHECK_IMAGES:-false}
$1
EOC
}

# Start serve with the API on $api; wait until /health answers.
serve_env=() # VAR=VALUE words for serve's environment only
serve_start() {
  env "${serve_env[@]}" AIRLOCK_CONFIG=$tmp/airlock.conf "$bin" serve --redis "$url" --workers 1 \
    --http "127.0.0.1:$port" "$@" > "$tmp/serve.log" 2>&1 &
  pids+=($!)
  serve_pid=$!
  for _ in $(seq 100); do
    curl -s -o /dev/null "$api/health" && return 0
    kill -0 "$serve_pid" 2>/dev/null || fail "serve exited"
    sleep 0.1
  done
  fail "serve did not answer /health"
}

# HTTP status of a curl call (extra curl args follow)
# (a request with a body gets Content-Type: application/json unless it
# names a Content-Type of its own)
code() {
  local a body=0 ct=0
  for a in "$@"; do
    case $a in -d | --data*) body=1 ;; [Cc]ontent-[Tt]ype:*) ct=1 ;; esac
  done
  [ $body = 1 ] && [ $ct = 0 ] && set -- -H 'Content-Type: application/json' "$@"
  curl -s -o "$tmp/body" -w '%{http_code}' "$@"
}
expect() { # WANT CURL-ARGS...
  local want=$1 got
  shift
  got=$(code "$@") || true
  [ "$got" = "$want" ] || fail "curl $*: got $got, want $want: $(head -c 300 "$tmp/body" 2>/dev/null)"
}
alive() { expect 200 "$api/health"; }

case $case in
auth)
  printf 'tok-0123456789abcdef\n' > "$tmp/token"
  conf "[http]
token_file = $tmp/token"
  # a token file others may read or write, or someone else's, is refused
  for m in 0644 0660 0666; do
    chmod "$m" "$tmp/token"
    if AIRLOCK_CONFIG=$tmp/airlock.conf timeout 10 "$bin" serve --redis "$url" \
      --workers 1 --http "127.0.0.1:$port" > "$tmp/serve0.log" 2>&1; then
      fail "serve took a token file of mode $m"
    fi
    grep -q "http.token_file.*mode $m" "$tmp/serve0.log" ||
      fail "token mode $m: $(cat "$tmp/serve0.log")"
  done
  chmod 0600 "$tmp/token"
  serve_start
  job='{"id":"a1","sh":"true"}'
  expect 401 -X POST "$api/jobs" -d "$job"
  expect 401 -X POST "$api/jobs" -H 'Authorization: Bearer tok-0123456789abcdeX' -d "$job"
  expect 401 -X POST "$api/jobs" -H 'Authorization: Bearer short' -d "$job"
  expect 401 "$api/metrics"
  expect 401 "$api/jobs/a1"
  expect 201 -X POST "$api/jobs" -H 'Authorization: Bearer tok-0123456789abcdef' -d "$job"
  [ "$(jq -r .id "$tmp/body")" = a1 ] || fail "no id: $(cat "$tmp/body")"
  [ "$(redis-cli -s "$sock" exists 'airlock:{default}:job:a1')" = 1 ] ||
    fail "job not in Redis"
  alive # /health needs no token
  kill "$serve_pid"; wait "$serve_pid" || true
  # no token: only a loopback listener; serve refuses any other
  conf ""
  if AIRLOCK_CONFIG=$tmp/airlock.conf timeout 10 "$bin" serve --redis "$url" \
    --workers 1 --http "0.0.0.0:$port" > "$tmp/serve0.log" 2>&1; then
    fail "serve without a token listened on 0.0.0.0"
  fi
  grep -q 'not a loopback address' "$tmp/serve0.log" ||
    fail "refusal not said: $(cat "$tmp/serve0.log")"
  serve_start
  job='{"sh":"true"}'
  # the Host must be a loopback name or the listen address: a browser
  # on a DNS-rebound name sends that name
  expect 403 -X POST "$api/jobs" -H 'Host: evil.example' -d "$job"
  expect 403 "$api/jobs/a1" -H "Host: rebind.evil.example:$port"
  expect 201 -X POST "$api/jobs" -H "Host: localhost:$port" -d "$job"
  expect 201 -X POST "$api/jobs" -d "$job"
  # bodies are application/json: a cross-site text/plain POST is refused
  expect 415 -X POST "$api/jobs" -H 'Content-Type: text/plain' -d "$job"
  expect 415 -X POST "$api/jobs" -H 'Content-Type: application/x-www-form-urlencoded' -d "$job"
  expect 415 -X POST "$api/jobs/batch" -H 'Content-Type: text/plain' -d "[$job]"
  expect 201 -X POST "$api/jobs" -H 'Content-Type: application/json; charset=utf-8' -d "$job"
  ;;

limits)
  conf "[http]
max_body_bytes = 4096
timeout_s = 2"
  serve_start
  big=$(head -c 5000 /dev/zero | tr '\0' a)
  expect 413 -X POST "$api/jobs" -d "{\"sh\":\"$big\"}"
  # chunked: no Content-Length, the cap holds while reading
  expect 413 -X POST "$api/jobs" -H 'Transfer-Encoding: chunked' -d "{\"sh\":\"$big\"}"
  expect 422 -X POST "$api/jobs" -d '{"sh":'
  expect 422 -X POST "$api/jobs" -d '{"sh":"true","bogus":1}'
  expect 422 -X POST "$api/jobs" -d '{"sh":"true","limits":{"memory_mb":999999}}'
  expect 422 -X POST "$api/jobs/batch" -d '{"sh":"true"}'
  expect 405 "$api/jobs"
  expect 404 "$api/nope"
  expect 400 "$api/jobs/a%20b"
  expect 400 "$api/jobs/a%00b" # not job "a": a NUL does not cut the path
  expect 400 "$api/jobs/a//b"
  expect 405 -X POST "$api/jobs/a/b" -d '{"sh":"true"}'
  expect 400 -X POST "$api/jobs?wait=x" -d '{"sh":"true"}'
  expect 400 -X POST "$api/jobs?wait=100000" -d '{"sh":"true"}'
  # an id is its first payload's: the same again is a duplicate, another
  # payload is 409 (and in a batch names the id; the others go in)
  expect 201 -X POST "$api/jobs" -d '{"id":"hq1","cmd":["true"]}'
  expect 201 -X POST "$api/jobs" -d '{"id":"hq1","cmd":["true"]}'
  jq -e '.duplicate == true' "$tmp/body" >/dev/null || fail "no duplicate"
  expect 409 -X POST "$api/jobs" -d '{"id":"hq1","sh":"echo mine"}'
  jq -e '.conflicts == ["hq1"]' "$tmp/body" >/dev/null || fail "409 body"
  expect 409 -X POST "$api/jobs/batch" \
    -d '[{"id":"hq2","sh":"true"},{"id":"hq1","sh":"echo mine"}]'
  jq -e '.conflicts == ["hq1"]' "$tmp/body" >/dev/null || fail "409 batch"
  hdr=$(head -c 40000 /dev/zero | tr '\0' h)
  got=$(code -H "X-Big: $hdr" "$api/health") || true
  case $got in 413 | 431) ;; *) fail "huge header: $got" ;; esac
  alive
  # slow client: headers never finished; cut after timeout_s, and others
  # are served meanwhile
  python3 - "$port" > "$tmp/slow" <<'PY' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"POST /jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
          b"Content-Length: 100\r\n\r\n{")
t = time.time()
s.settimeout(20)
try:
    data = s.recv(4096)
except Exception as e:
    data = b"error " + str(e).encode()
print("%.1f %r" % (time.time() - t, data[:40]))
PY
  slow=$!
  sleep 0.5
  alive
  wait "$slow" || fail "slow client script"
  read -r secs _ < "$tmp/slow"
  awk -v s="$secs" 'BEGIN { exit !(s >= 1.5 && s < 10) }' ||
    fail "slow client not cut after timeout_s: $(cat "$tmp/slow")"
  alive
  kill -0 "$serve_pid" || fail "serve died"
  ;;

callback)
  cport=$((port + 1))
  # the receiver listens on a non-loopback address of ours: loopback,
  # link-local and the metadata address are always denied as targets
  hip=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -v '^127\.' | grep -v : | head -1)
  [ -n "$hip" ] || { log "no non-loopback address: skipped"; exit 0; }
  conf "[http]
callback_allow = $hip:$cport 127.0.0.1:$cport localhost:$cport 169.254.0.0/16 0.0.0.0/8 ::/0"
  cat > "$tmp/hook.py" <<'PY'
import http.server, json, sys
hits = 0
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global hits
        hits += 1
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        code = 500 if hits == 1 else 200
        with open(sys.argv[2], "a") as f:
            f.write("%d %d %s %s\n" % (hits, code, self.headers.get("X-Airlock-Job"),
                                       json.loads(body)["id"]))
        self.send_response(code)
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.HTTPServer((sys.argv[3], int(sys.argv[1])), H).serve_forever()
PY
  python3 "$tmp/hook.py" "$cport" "$tmp/hits" "$hip" &
  pids+=($!)
  for _ in $(seq 100); do # a GET: answered 501, counts no hit
    curl -s --noproxy '*' -o /dev/null "http://$hip:$cport/" && break
    sleep 0.1
  done
  # a proxy in the environment is not used: it would connect for serve
  # to wherever it likes (here: nowhere, so a proxied POST fails)
  serve_env=(http_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9
    https_proxy=http://127.0.0.1:9 all_proxy=http://127.0.0.1:9
    ALL_PROXY=http://127.0.0.1:9 no_proxy=)
  serve_start
  expect 422 -X POST "$api/jobs" -d '{"sh":"true","callback_url":"http://10.0.0.1/"}'
  expect 422 -X POST "$api/jobs" -d "{\"sh\":\"true\",\"callback_url\":\"http://$hip:$((cport + 1))/\"}"
  expect 422 -X POST "$api/jobs" -d '{"sh":"true","callback_url":"file:///etc/passwd"}'
  # always denied, even when named or inside an allowed block
  for u in "http://127.0.0.1:$cport/" "http://localhost:$cport/" \
    http://169.254.169.254/ http://0.0.0.0/ "http://[::ffff:127.0.0.1]:$cport/" \
    "http://[::ffff:169.254.169.254]/" "http://[::1]:$cport/"; do
    expect 422 -X POST "$api/jobs" -d "{\"sh\":\"true\",\"callback_url\":\"$u\"}"
    grep -q 'always denied' "$tmp/body" || fail "$u: $(cat "$tmp/body")"
  done
  expect 201 -X POST "$api/jobs" -d "{\"id\":\"cb1\",\"sh\":\"true\",\"callback_url\":\"http://$hip:$cport/hook\"}"
  # the first POST gets 500, the retry 1 s later 200
  for _ in $(seq 150); do
    [ -f "$tmp/hits" ] && [ "$(wc -l < "$tmp/hits")" -ge 2 ] && break
    sleep 0.1
  done
  [ -f "$tmp/hits" ] || fail "no callback arrived"
  grep -q '^1 500 cb1 cb1$' "$tmp/hits" || fail "callback: $(cat "$tmp/hits")"
  grep -q '^2 200 cb1 cb1$' "$tmp/hits" || fail "no retry: $(cat "$tmp/hits")"
  grep -q 'job=cb1 attempt=2: callback delivered' "$tmp/serve.log" ||
    fail "not logged"
  sleep 2
  [ "$(wc -l < "$tmp/hits")" = 2 ] || fail "posted again after a 200"
  curl -sf "$api/metrics" > "$tmp/m" || fail "no /metrics"
  grep -q '^airlock_callbacks_total 1$' "$tmp/m" || fail "callbacks_total"
  ;;

metrics)
  mport=$((port + 1))
  conf "[metrics]
listen = 127.0.0.1:$mport"
  serve_start
  curl -sf "$api/metrics" > "$tmp/m0" || fail "no /metrics"
  promtool check metrics < "$tmp/m0" || fail "promtool: m0"
  grep -q '^airlock_jobs_total{status="XX"} 0$' "$tmp/m0" || fail "XX not 0"
  jobs='['
  for i in 1 2 3 4 5; do jobs+="{\"id\":\"m$i\",\"sh\":\"true\"},"; done
  jobs="${jobs%,}]"
  expect 201 -X POST "$api/jobs/batch" -d "$jobs"
  [ "$(jq '.jobs | length' "$tmp/body")" = 5 ] || fail "batch: $(cat "$tmp/body")"
  # counters move as results are stored; gauges are sampled at serve's
  # tick, which may come after five quick XX results: wait for both
  for _ in $(seq 200); do
    curl -sf "$api/metrics" > "$tmp/m1"
    grep -q '^airlock_jobs_total{status="XX"} 5$' "$tmp/m1" &&
      grep -q '^airlock_workers 1$' "$tmp/m1" && break
    sleep 0.1
  done
  grep -q '^airlock_jobs_total{status="XX"} 5$' "$tmp/m1" ||
    fail "counter did not move: $(grep jobs_total "$tmp/m1")"
  promtool check metrics < "$tmp/m1" || fail "promtool: m1"
  grep -q '^airlock_dead_letters 5$' "$tmp/m1" || fail "dead letters"
  grep -q '^airlock_job_latency_seconds_count 5$' "$tmp/m1" || fail "latency"
  grep -q '^airlock_workers 1$' "$tmp/m1" || fail "workers gauge"
  grep -q '^airlock_up 1$' "$tmp/m1" || fail "up"
  # the metrics-only listener
  curl -sf "http://127.0.0.1:$mport/metrics" > "$tmp/m2" ||
    fail "metrics.listen"
  promtool check metrics < "$tmp/m2" || fail "promtool: metrics.listen"
  expect 404 -X POST "http://127.0.0.1:$mport/jobs" -d '{"sh":"true"}'
  ;;

logjson)
  conf "[log]
format = json"
  serve_start
  expect 201 -X POST "$api/jobs" -d '{"id":"l1","sh":"true"}'
  for _ in $(seq 100); do
    grep -q '"result stored"' "$tmp/serve.log" && break
    sleep 0.1
  done
  kill "$serve_pid"; wait "$serve_pid" || true
  [ "$(wc -l < "$tmp/serve.log")" -ge 4 ] || fail "too few lines"
  while IFS= read -r line; do
    jq -e 'type == "object" and (.time | type == "string") and
           (.level | type == "string") and (.event | type == "string")' \
      <<<"$line" > /dev/null || fail "not a JSON log line: $line"
  done < "$tmp/serve.log"
  jq -se 'any(.[]; .event == "result stored" and .job == "l1" and
         .fields.status == "XX")' "$tmp/serve.log" > /dev/null ||
    fail "no result stored line with job and status"
  ;;

cancel)
  conf ""
  serve_start
  # /health answers before the dispatcher has spawned its worker: wait
  # for the worker's start line (up to 10 s)
  wpid=
  for _ in $(seq 100); do
    wpid=$(sed -n 's/.*worker=0 pid=\([0-9]*\): started.*/\1/p' "$tmp/serve.log" | head -1)
    [ -n "$wpid" ] && break
    sleep 0.1
  done
  [ -n "$wpid" ] || fail "no worker pid"
  kill -STOP "$wpid"
  expect 201 -X POST "$api/jobs" -d '{"id":"c1","sh":"true"}'
  expect 201 -X POST "$api/jobs" -d '{"id":"c2","sh":"true"}'
  for _ in $(seq 50); do
    [ "$(code "$api/jobs/c1")" = 202 ] &&
      [ "$(jq -r .state "$tmp/body")" = running ] && break
    sleep 0.1
  done
  [ "$(jq -r .state "$tmp/body")" = running ] || fail "c1: $(cat "$tmp/body")"
  expect 202 "$api/jobs/c2"
  [ "$(jq -r .state "$tmp/body")" = queued ] || fail "c2: $(cat "$tmp/body")"
  expect 404 "$api/jobs/nope"
  # ids with slashes, as every `airlock eval` id: raw and %2F-encoded
  # (the held worker keeps them queued)
  e1=HumanEval/0/s0-ab12cd34ef e2=HumanEval/0/s1-0123456789
  expect 201 -X POST "$api/jobs" -d "{\"id\":\"$e1\",\"sh\":\"true\"}"
  expect 201 -X POST "$api/jobs" -d "{\"id\":\"$e2\",\"sh\":\"true\"}"
  expect 202 "$api/jobs/$e1"
  [ "$(jq -r .id "$tmp/body")" = "$e1" ] || fail "$e1: $(cat "$tmp/body")"
  expect 202 "$api/jobs/${e2//\//%2F}"
  [ "$(jq -r .id "$tmp/body")" = "$e2" ] || fail "$e2: $(cat "$tmp/body")"
  expect 202 -X DELETE "$api/jobs/${e1//\//%2f}"
  [ "$(jq -r .was "$tmp/body")" = queued ] || fail "$e1 was: $(cat "$tmp/body")"
  expect 202 -X DELETE "$api/jobs/$e2"
  expect 200 "$api/jobs/$e1"
  [ "$(jq -r '.id + " " + .status' "$tmp/body")" = "$e1 CX" ] ||
    fail "$e1: $(cat "$tmp/body")"
  expect 409 -X DELETE "$api/jobs/$e2"
  expect 404 "$api/jobs/HumanEval/0/s9-nope"
  # "batch" is a job id like any other, but for POST
  expect 201 -X POST "$api/jobs" -d '{"id":"batch","sh":"true"}'
  expect 202 "$api/jobs/batch"
  [ "$(jq -r .id "$tmp/body")" = batch ] || fail "batch: $(cat "$tmp/body")"
  expect 202 -X DELETE "$api/jobs/batch"
  expect 202 -X DELETE "$api/jobs/c2"
  [ "$(jq -r .was "$tmp/body")" = queued ] || fail "c2 was: $(cat "$tmp/body")"
  expect 202 -X DELETE "$api/jobs/c1"
  [ "$(jq -r .was "$tmp/body")" = running ] || fail "c1 was: $(cat "$tmp/body")"
  expect 200 "$api/jobs/c1"
  [ "$(jq -r .status "$tmp/body")" = CX ] || fail "c1: $(cat "$tmp/body")"
  expect 200 "$api/jobs/c2"
  [ "$(jq -r .status "$tmp/body")" = CX ] || fail "c2: $(cat "$tmp/body")"
  expect 409 -X DELETE "$api/jobs/c1"
  expect 404 -X DELETE "$api/jobs/nope"
  # the held worker is killed (its job was cancelled) and replaced
  for _ in $(seq 100); do kill -0 "$wpid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$wpid" 2>/dev/null && fail "cancelled job's worker still alive"
  alive
  # the five DELETEs that took effect are counted (not the 409s and
  # 404s), and a CLI cancel is counted the same way (issue 27)
  curl -sf "$api/metrics" > "$tmp/m" || fail "no /metrics"
  grep -q '^airlock_cancels_total 5$' "$tmp/m" ||
    fail "cancels after the API's: $(grep '^airlock_cancels' "$tmp/m")"
  "$bin" cancel --redis "$url" c1 > /dev/null 2>&1 && fail "CLI cancel of a done job"
  expect 201 -X POST "$api/jobs" -d '{"id":"c3","sh":"true"}'
  "$bin" cancel --redis "$url" c3 > /dev/null 2>&1 || true # queued or done
  # counted exactly when it took effect: when c3's result is CX
  st=$("$bin" result --redis "$url" --json c3 2>/dev/null | jq -r .status) || true
  want=5
  [ "$st" = CX ] && want=6
  curl -sf "$api/metrics" > "$tmp/m" || fail "no /metrics"
  grep -q "^airlock_cancels_total $want\$" "$tmp/m" ||
    fail "cancels after the CLI's (want $want): $(grep '^airlock_cancels' "$tmp/m")"
  ;;

unbuilt)
  # issue 37, item 8: a template templates.allowed lists but this host
  # has no image of is refused at submit (422, naming the template and
  # the command that builds it), and a job that reached the queue by
  # Redis ends RJ at its first delivery (not XX, retried, dead-lettered);
  # an image built while serve runs is seen at the next submit
  CHECK_IMAGES=true conf "allowed = python java
default = python"
  serve_start
  expect 422 -X POST "$api/jobs" -d '{"id":"u1","template":"java","sh":"true"}'
  grep -q 'template \\"java\\" is allowed but has no image on this host; fix: airlock image build java' "$tmp/body" ||
    fail "refusal: $(cat "$tmp/body")"
  [ "$(redis-cli -s "$sock" exists 'airlock:{default}:job:u1')" = 0 ] ||
    fail "the refused job is in Redis"
  # the default template, unbuilt too, is named for a job naming none
  expect 422 -X POST "$api/jobs" -d '{"id":"u2","sh":"true"}'
  grep -q 'airlock image build python' "$tmp/body" || fail "default: $(cat "$tmp/body")"
  # through Redis (a client whose config allows any template): RJ once,
  # with the fix
  printf '[templates]\nallowed =\n' > "$tmp/any.conf"
  echo '{"id":"u3","template":"java","sh":"true"}' |
    AIRLOCK_CONFIG=$tmp/any.conf "$bin" submit --redis "$url" - \
      > "$tmp/submit.out" 2>&1 || fail "submit over Redis: $(cat "$tmp/submit.out")"
  AIRLOCK_CONFIG=$tmp/any.conf "$bin" wait --redis "$url" --timeout 30 u3 ||
    fail "no result for u3"
  r=$(AIRLOCK_CONFIG=$tmp/any.conf "$bin" result --redis "$url" --json u3)
  [ "$(echo "$r" | jq -r .status)" = RJ ] && [ "$(echo "$r" | jq -r .attempt)" = 1 ] ||
    fail "u3: $(echo "$r" | jq -c '{status, attempt, error}')"
  echo "$r" | jq -r .error | grep -q 'airlock image build java' ||
    fail "u3's error: $(echo "$r" | jq -r .error)"
  # an image appears (as `airlock image build` leaves one: a link to a
  # directory): the next submit is taken
  mkdir -p "$state/images/java-0123456789abcdef"
  ln -s java-0123456789abcdef "$state/images/java"
  expect 201 -X POST "$api/jobs" -d '{"id":"u4","template":"java","sh":"true"}'
  ;;

principals)
  ta=tok-alice-0123456789 tb=tok-bob-0123456789ab to=tok-ops-0123456789ab
  printf 'alice %s\nbob %s\nops %s operator\n' "$ta" "$tb" "$to" > "$tmp/tokens"
  chmod 0600 "$tmp/tokens"
  conf "[workers]
max_sessions = 1
[http]
tokens_file = $tmp/tokens"
  serve_start
  A=(-H "Authorization: Bearer $ta") B=(-H "Authorization: Bearer $tb")
  O=(-H "Authorization: Bearer $to")
  expect 401 "$api/sessions" -H "Authorization: Bearer tok-eve-0123456789abc"
  # alice's session, as a host that took it would leave it: alive on a
  # host whose heartbeat is current, one exec done
  id=s-0123456789abcdef01234567 P='airlock:{default}:sess'
  R() { redis-cli -s "$sock" "$@"; }
  R set "$P:host:h1" 1 EX 600 >/dev/null
  R hset "$P:$id" id "$id" state alive host h1 owner alice created_at_ms 1 \
    expires_at_ms 99999999999999 ttl_s 600 idle_s 0 execs 1 metadata '{}' >/dev/null
  R sadd "$P:all" "$id" >/dev/null
  R hset "$P:$id:x:1" state done status OK exit_code 0 >/dev/null
  R set "$P:$id:x:1:1" secret-output >/dev/null
  tar=$tmp/t.tar; (cd "$tmp" && tar --format=ustar -cf "$tar" tokens)
  # bob: every session route answers 404 unknown session, nothing queued
  routes=(
    "GET /sessions/$id" "DELETE /sessions/$id"
    "POST /sessions/$id/extend {\"ttl_s\":60}"
    "POST /sessions/$id/exec {\"sh\":\"true\"}"
    "POST /sessions/$id/exec?stream=1 {\"sh\":\"true\"}"
    "GET /sessions/$id/exec/1" "GET /sessions/$id/exec/1?stream=1"
    "DELETE /sessions/$id/exec/1"
    "POST /sessions/$id/exec/1/signal {\"signal\":\"USR1\"}"
    "GET /sessions/$id/files" "POST /sessions/$id/files TAR"
    "POST /sessions/$id/fork {\"n\":1}"
    "POST /sessions/$id/snapshot {\"name\":\"mine\"}")
  for rt in "${routes[@]}"; do
    read -r m path body <<< "$rt"
    args=(-X "$m" "$api$path" "${B[@]}")
    if [ "$body" = TAR ]; then
      args+=(-H 'Content-Type: application/x-tar' --data-binary "@$tar")
    elif [ -n "$body" ]; then
      args+=(-d "$body")
    elif [ "$m" = DELETE ]; then
      args+=(-H 'Content-Type: application/json')
    fi
    expect 404 "${args[@]}"
    grep -q 'unknown session' "$tmp/body" || fail "$m $path: $(cat "$tmp/body")"
    grep -q secret-output "$tmp/body" && fail "$m $path: bob read alice's output"
  done
  [ "$(R llen "$P:$id:req")" = 0 ] && [ "$(R llen "$P:$id:sig")" = 0 ] &&
    [ "$(R llen "$P:host:h1:ctl")" = 0 ] || fail "bob's requests were queued"
  [ "$(R hget "$P:$id" state)" = alive ] || fail "bob changed the session"
  lst() { curl -s "$api/sessions" "$@" | jq -r '[.sessions[].id] | join(" ")'; }
  [ -z "$(lst "${B[@]}")" ] || fail "bob lists: $(lst "${B[@]}")"
  [ "$(lst "${A[@]}")" = "$id" ] || fail "alice does not list hers"
  [ "$(lst "${O[@]}")" = "$id" ] || fail "the operator does not list it"
  expect 200 "$api/sessions/$id" "${A[@]}"
  [ "$(jq -r .owner "$tmp/body")" = alice ] || fail "owner: $(cat "$tmp/body")"
  expect 200 "$api/sessions/$id" "${O[@]}"
  expect 200 "$api/sessions/$id/exec/1" "${A[@]}"
  jq -e '.stream.stdout == "secret-output"' "$tmp/body" >/dev/null || fail "alice's output"
  expect 409 -X DELETE "$api/sessions/$id/exec/1" "${A[@]}" \
    -H 'Content-Type: application/json' # done: owned, not refused
  # an id we never make: 404 unknown session, not 400 bad job id
  expect 404 "$api/sessions/s-zz" "${A[@]}"
  grep -q 'unknown session' "$tmp/body" || fail "bad id: $(cat "$tmp/body")"
  # fork_of is the host's alone
  expect 422 -X POST "$api/sessions" "${A[@]}" -d "{\"template\":\"python\",\"fork_of\":\"$id\"}"
  grep -q 'fork_of' "$tmp/body" || fail "fork_of: $(cat "$tmp/body")"
  # ttl_s as a string: said to be an integer; not a failed session
  expect 422 -X POST "$api/sessions" "${A[@]}" -d '{"template":"python","ttl_s":"600"}'
  grep -q 'ttl_s: must be an integer' "$tmp/body" || fail "ttl_s: $(cat "$tmp/body")"
  # a raw Redis create under alice's live id: the host refuses it, the
  # session stays on its host (no second process serves it)
  R rpush "$P:create" "{\"id\":\"$id\",\"rid\":\"r-0123456789abcdef01234567\",\"body\":{\"template\":\"python\"}}" >/dev/null
  rep=$(R blpop "$P:reply:r-0123456789abcdef01234567" 10 | tail -1)
  [[ $rep = *"id is taken"* ]] || fail "raw create of a live id: $rep"
  [ "$(R hget "$P:$id" host)" = h1 ] && [ "$(R hget "$P:$id" state)" = alive ] ||
    fail "raw create took over the session"
  curl -s "${O[@]}" "$api/metrics" > "$tmp/metrics"
  grep -qx 'airlock_sessions_ended_total{reason="failed"} 0' "$tmp/metrics" ||
    fail "refused creates counted failed: $(grep ended_total "$tmp/metrics")"
  log "bob refused on ${#routes[@]} routes and absent from his list; refusals said"
  ;;

e2e)
  [ -d "$state/images" ] || { log "SKIP: no images in $state"; exit 77; }
  conf ""
  serve_start
  # generous limits: under TCG on a loaded CI host python starts slowly
  job='{"id":"h-e2e","steps":[{"cmd":["python3","-c","print(6*7)"],"timeout_ms":200000}],"limits":{"wall_ms":240000}}'
  expect 200 -X POST "$api/jobs?wait=280" -d "$job"
  cp "$tmp/body" "$tmp/http.json"
  [ "$(jq -r '.steps[0].stdout' "$tmp/http.json")" = 42 ] ||
    fail "stdout: $(cat "$tmp/http.json")"
  "$bin" result --redis "$url" --json h-e2e > "$tmp/cli.json"
  diff <(jq -S . "$tmp/http.json") <(jq -S . "$tmp/cli.json") ||
    fail "curl and airlock result differ"
  expect 200 "$api/jobs/h-e2e"
  diff <(jq -S . "$tmp/body") <(jq -S . "$tmp/cli.json") ||
    fail "GET /jobs/ID differs"
  # the same job through the CLI: same status and output
  printf '%s\n' "${job/h-e2e/c-e2e}" |
    AIRLOCK_CONFIG=$tmp/airlock.conf "$bin" submit --redis "$url" - > /dev/null
  AIRLOCK_CONFIG=$tmp/airlock.conf "$bin" wait --redis "$url" --timeout 280 c-e2e
  "$bin" result --redis "$url" --json c-e2e > "$tmp/cli2.json"
  pick='{status, out: [.steps[] | {status, stdout, stderr, exit_code}]}'
  diff <(jq -S "$pick" "$tmp/http.json") <(jq -S "$pick" "$tmp/cli2.json") ||
    fail "the CLI's run differs"
  ;;

*) fail "unknown case" ;;
esac
log ok
