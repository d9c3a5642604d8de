#!/usr/bin/env bash
# redis_test.sh GATEWAY: the audit records go to the JSONL file and to the
# Redis stream airlock:packages:audit (a real redis-server on a unix
# socket), and both keep every record across a gateway restart.
set -euo pipefail
gw=$1
command -v redis-server >/dev/null && command -v redis-cli >/dev/null || { echo "SKIP: no redis"; exit 77; }
tmp=$(mktemp -d)
chmod 755 "$tmp"
gwpid= rpid=
cleanup() {
  [ -n "$gwpid" ] && kill "$gwpid" 2>/dev/null && wait "$gwpid" 2>/dev/null
  [ -n "$rpid" ] && kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

sock=$tmp/redis.sock
redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --save '' \
  --appendonly no --dir "$tmp" > "$tmp/redis.log" 2>&1 &
rpid=$!
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
rc() { redis-cli -s "$sock" "$@"; }
dir=$tmp/packages
start() {
  : > "$tmp/gw.out"
  "$gw" --dir "$dir" --listen 127.0.0.1:0 --uid 1199999 --redis "unix:$sock" \
    > "$tmp/gw.out" 2> "$tmp/gw.err" &
  gwpid=$!
  for _ in $(seq 50); do grep -qs listening "$tmp/gw.out" && break; sleep 0.1; done
  port=$(sed -n 's/^listening on 127.0.0.1://p' "$tmp/gw.out")
  [ -n "$port" ] || fail "gateway did not start: $(cat "$tmp/gw.err")"
}
start
# the socket is root's (0700): only the connection made before the drop works
for n in one two three; do curl -s -o /dev/null "http://127.0.0.1:$port/pypi/simple/$n/"; done
[ "$(rc XLEN airlock:packages:audit)" = 3 ] || fail "stream: $(rc XLEN airlock:packages:audit)"
kill "$gwpid"; wait "$gwpid" 2>/dev/null || true; gwpid=
start
curl -s -o /dev/null "http://127.0.0.1:$port/pypi/simple/four/"
[ "$(rc XLEN airlock:packages:audit)" = 4 ] || fail "stream after restart"
[ "$(wc -l < "$dir/audit.jsonl")" = 4 ] || fail "jsonl after restart"
rc XRANGE airlock:packages:audit - + > "$tmp/x"
for n in one two three four; do grep -q "\"name\":\"$n\"" "$tmp/x" || fail "stream lacks $n"; done
grep -q '^deny$' "$tmp/x" && grep -q '^host$' "$tmp/x" || fail "stream fields: $(cat "$tmp/x")"
echo ok
