#!/usr/bin/env bash
# notify_test.sh AIRLOCK: `airlock serve` speaks systemd's notify protocol
# (Type=notify in airlock.service): READY=1 once its workers are spawned,
# STOPPING=1 when SIGTERM starts the drain, then exit 0. A real
# redis-server; $NOTIFY_SOCKET is a datagram socket this test reads.
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
redis= serve= listener=
cleanup()
{
  for p in $serve $listener $redis; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

redis-server --port 0 --unixsocket "$tmp/r.sock" --save '' --appendonly no \
  --daemonize no --logfile "$tmp/r.log" & redis=$!
python3 -u -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(120)
while True:
    print(s.recv(4096).decode().replace("\n", " "), flush=True)
' "$tmp/notify" > "$tmp/messages" & listener=$!
for _ in $(seq 100); do [ -S "$tmp/r.sock" ] && [ -S "$tmp/notify" ] && break; sleep 0.05; done

printf '[workers]\ncount = 1\n' > "$tmp/a.conf"
NOTIFY_SOCKET=$tmp/notify "$bin" serve --config "$tmp/a.conf" \
  --redis "unix://$tmp/r.sock" --queue nt 2> "$tmp/serve.log" & serve=$!
for _ in $(seq 200); do grep -q "READY=1" "$tmp/messages" && break; sleep 0.1; done
grep -q "READY=1 STATUS=serving queue nt on unix:$tmp/r.sock, 1 workers" "$tmp/messages" ||
  fail "no READY=1: $(cat "$tmp/messages") / $(tail -3 "$tmp/serve.log")"
grep -q "STOPPING=1" "$tmp/messages" && fail "STOPPING before SIGTERM"
kill -TERM "$serve"
rc=0; wait "$serve" || rc=$?
serve=
[ "$rc" -eq 0 ] || fail "serve after SIGTERM: exit $rc: $(tail -3 "$tmp/serve.log")"
sleep 0.2
grep -q "STOPPING=1" "$tmp/messages" || fail "no STOPPING=1: $(cat "$tmp/messages")"
echo "notify: ok"
