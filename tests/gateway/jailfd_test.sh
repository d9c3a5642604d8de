#!/usr/bin/env bash
# jailfd_test.sh GATEWAY FDWALK: the jailed gateway holds no fd that leads
# out of its root. The gateway (as root: jail, drop, seccomp) serves a
# few requests and keeps a connection open; fdwalk copies every fd it
# holds and walks ".." from each, from the gateway's own root, and opens
# ../../../../etc/passwd and ../../../../proc/1 from each.
set -euo pipefail
gw=$1 fdwalk=$2
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the jail)"; exit 77; }
tmp=$(mktemp -d)
chmod 755 "$tmp"
gwpid= cpid=
cleanup() {
  [ -n "$cpid" ] && kill "$cpid" 2>/dev/null
  [ -n "$gwpid" ] && kill "$gwpid" 2>/dev/null && wait "$gwpid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

dir=$tmp/packages
"$gw" --dir "$dir" --listen 127.0.0.1:0 > "$tmp/gw.out" 2> "$tmp/gw.err" &
gwpid=$!
for _ in $(seq 50); do grep -qs listening "$tmp/gw.out" && break; sleep 0.1; done
port=$(sed -n 's/^listening on 127.0.0.1://p' "$tmp/gw.out")
[ -n "$port" ] || fail "gateway did not start: $(cat "$tmp/gw.err")"
for n in one two; do curl -s -o /dev/null "http://127.0.0.1:$port/pypi/simple/$n/"; done
# a connection held open while the fds are walked
python3 -c 'import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); time.sleep(30)' "$port" &
cpid=$!
sleep 0.3
grep -Eq '^Seccomp:\s+2$' "/proc/$gwpid/status" || fail "the gateway is not jailed"
"$fdwalk" "$gwpid" > "$tmp/walk" || fail "$(cat "$tmp/walk")"
cat "$tmp/walk"
grep -q '(/packages/mirror): inside' "$tmp/walk" || fail "no mirror fd walked: $(cat "$tmp/walk")"
echo ok
