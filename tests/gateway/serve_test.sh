#!/usr/bin/env bash
# serve_test.sh AIRLOCK GATEWAY SRC: `airlock serve` keeps the package
# gateway when the config defines the `packages` policy (tools/cli/gwrun.c;
# docs/packages.md, "The VM path" and "The gateway as a second wall"). No
# VM; in a network namespace of its own (unshare -n: the host's tables and
# links are never touched):
#   - serve starts airlock-gateway in a namespace of its own behind the
#     veth agw0, serving STATE/packages on 10.202.0.2:3141, which answers
#     from the host's side, its audit relayed to the Redis stream by the
#     keeper, while the gateway holds no Redis connection (no unix socket,
#     no hiredis);
#   - the second wall, assuming the gateway compromised: its uid (1199999,
#     no capability, no_new_privs), its files (each open fd is the mirror,
#     the slots dir, the audit file, its log, a socket, pipe or anon inode:
#     nothing else serve had open), its network (from its namespace as its
#     uid: the host's end refused, any other address unreachable);
#   - its jail: its own mount namespace whose root holds only the
#     packages dir (read-only) and /dev/null; its seccomp filter on;
#   - killed, it is started again; serve stopped, it is gone, and agw0.
set -euo pipefail
bin=$(realpath "$1") gw=$(realpath "$2") src=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
for c in redis-server redis-cli curl setpriv nsenter python3; do
  command -v "$c" > /dev/null || { echo "SKIP: no $c"; exit 77; }
done
if [ -z "${IN_NETNS:-}" ]; then
  unshare -n true 2> /dev/null || { echo "SKIP: cannot unshare -n"; exit 77; }
  exec unshare -n env IN_NETNS=1 bash "$0" "$@"
fi
ip link set lo up
tmp=$(mktemp -d /tmp/al-gwserve-XXXXXX)
chmod 0755 "$tmp"
pids=()
spid=
cleanup() {
  [ -n "$spid" ] && kill "$spid" 2> /dev/null && wait "$spid" 2> /dev/null
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; wait "$p" 2> /dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

redis-server --port 0 --unixsocket "$tmp/redis.sock" --save '' --appendonly no \
  --dir "$tmp" > "$tmp/redis.log" 2>&1 &
pids+=("$!")
for _ in $(seq 100); do [ -S "$tmp/redis.sock" ] && break; sleep 0.05; done
python3 "$src/tests/gateway/mkpkg.py" "$tmp/pk"
dir=$tmp/state/packages
mkdir -p "$dir"
"$bin" packages add --dir "$dir" --pin "$tmp/pk/tinypkg-1.0-py3-none-any.whl" > /dev/null
cat > "$tmp/airlock.conf" <<CONF
[sandbox]
state_dir = $tmp/state
[network.packages]
allow = 10.202.0.2/32
ports = tcp/3141
CONF
AIRLOCK_GATEWAY=$gw "$bin" serve --config "$tmp/airlock.conf" \
  --redis "unix://$tmp/redis.sock" --workers 1 > "$tmp/serve.out" 2> "$tmp/serve.err" &
spid=$!
started() { sed -n 's/.*gateway: started, pid \([0-9]*\).*/\1/p' "$tmp/serve.err" | tail -1; }
answers() { curl -s -m 5 -o "$tmp/page" -w '%{http_code}' http://10.202.0.2:3141/pypi/simple/tinypkg/ 2> /dev/null; }
for _ in $(seq 100); do [ "$(answers)" = 200 ] && break; sleep 0.1; done
[ "$(answers)" = 200 ] || fail "the gateway does not answer: $(cat "$tmp/serve.err")"
grep -q 'tinypkg-1.0-py3-none-any.whl#sha256=' "$tmp/page" || fail "page: $(cat "$tmp/page")"
g=$(started)
[ -n "$g" ] || fail "no pid said: $(cat "$tmp/serve.err")"

# its uid
st=/proc/$g/status
grep -Eq '^Uid:\s+1199999\s+1199999\s+1199999\s+1199999$' "$st" || fail "uid: $(grep Uid "$st")"
grep -Eq '^Gid:\s+1199999\s' "$st" || fail "gid: $(grep Gid "$st")"
grep -Eq '^Groups:\s*$' "$st" || fail "groups: $(grep Groups "$st")"
grep -Eq '^CapEff:\s+0+$' "$st" && grep -Eq '^CapPrm:\s+0+$' "$st" || fail "capabilities: $(grep Cap "$st")"
grep -Eq '^NoNewPrivs:\s+1$' "$st" || fail "no_new_privs: $(grep NoNewPrivs "$st")"
# its files: only what it opened itself, nothing serve had
for f in /proc/"$g"/fd/*; do
  t=$(readlink "$f")
  case $t in
    /dev/null | pipe:* | socket:* | anon_inode:* | /packages/mirror | /packages/slots | \
      "$dir/audit.jsonl" | "$tmp/serve.err") ;;
    *) fail "the gateway holds $f -> $t" ;;
  esac
done
[ "$(readlink /proc/"$g"/ns/net)" != "$(readlink /proc/self/ns/net)" ] || fail "the gateway is in serve's namespace"
# its jail: a mount namespace whose root holds the packages dir, read-only
# (even to root), and /dev/null; nothing else of the host; seccomp on
# (tests/gateway/test_gw_jail.c kills what the filter forbids)
jr=/proc/$g/root
[ "$(readlink /proc/"$g"/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] || fail "the gateway is in serve's mount namespace"
[ "$(ls -A "$jr" | tr '\n' ' ')" = "dev packages " ] || fail "the gateway's root: $(ls -A "$jr")"
[ "$(ls -A "$jr/dev")" = null ] || fail "the gateway's /dev: $(ls -A "$jr/dev")"
[ -f "$jr/packages/packages.allow" ] && [ -d "$jr/packages/mirror/python" ] || fail "no packages dir in the jail"
for p in /etc/passwd /usr /proc /tmp "$tmp"; do [ ! -e "$jr$p" ] || fail "the gateway sees $p"; done
touch "$jr/packages/x" 2> /dev/null && fail "the packages dir is writable in the jail"
touch "$jr/y" 2> /dev/null && fail "the jail's root is writable"
grep -Eq '^Seccomp:\s+2$' "$st" && grep -Eq '^Seccomp_filters:\s+1$' "$st" || fail "seccomp: $(grep Seccomp "$st")"
# its network: a listener on every address here; from the gateway's
# namespace as its uid, the host's end refused, elsewhere unreachable
python3 -c 'import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 4444)); s.listen(8); time.sleep(120)' &
pids+=("$!")
probe='import socket, sys
for a in sys.argv[1:]:
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect((a, 4444)); print(a, "connected")
    except OSError as e:
        print(a, "refused", e.errno)'
sleep 0.3
python3 -c "$probe" 127.0.0.1 10.202.0.1 > "$tmp/here"
grep -q '^10.202.0.1 connected' "$tmp/here" || fail "listener (from here): $(cat "$tmp/here")"
nsenter -t "$g" -n setpriv --reuid 1199999 --regid 1199999 --clear-groups \
  /usr/bin/python3 -c "$probe" 10.202.0.1 192.0.2.1 10.201.0.1 > "$tmp/there"
grep -q '^10.202.0.1 refused' "$tmp/there" && grep -q '^192.0.2.1 refused 101' "$tmp/there" &&
  grep -q '^10.201.0.1 refused' "$tmp/there" || fail "the gateway's network: $(cat "$tmp/there")"
# the audit stream, relayed by the keeper: every record with its job and
# reason; the gateway itself holds no Redis connection: each socket it
# holds is TCP in its own namespace (its listener, its clients), none a
# unix socket, and its program does not link a Redis client
for _ in $(seq 30); do
  [ "$(redis-cli -s "$tmp/redis.sock" XLEN airlock:packages:audit)" -ge 1 ] && break; sleep 0.1
done
redis-cli -s "$tmp/redis.sock" XRANGE airlock:packages:audit - + > "$tmp/stream"
grep -qx 'unknown 10.202.0.1' "$tmp/stream" && grep -q '"reason":"' "$tmp/stream" ||
  fail "no audit records in Redis: $(cat "$tmp/stream")"
for f in /proc/"$g"/fd/*; do
  t=$(readlink "$f")
  case $t in socket:*) ;; *) continue ;; esac
  ino=${t#socket:[}; ino=${ino%]}
  ! awk -v i="$ino" '$7 == i' /proc/"$g"/net/unix | grep -q . || fail "the gateway holds a unix socket ($f)"
  awk -v i="$ino" '$10 == i' /proc/"$g"/net/tcp | grep -q . || fail "the gateway holds a socket that is not TCP ($f)"
done
! ldd "$gw" | grep -q hiredis || fail "the gateway links hiredis"
[ ! -e "$dir/audit-redis" ] || fail "a Redis address left for the gateway's dir"

# killed: started again
kill -9 "$g"
for _ in $(seq 100); do h=$(started); [ -n "$h" ] && [ "$h" != "$g" ] && [ "$(answers)" = 200 ] && break; sleep 0.1; done
h=$(started)
[ "$h" != "$g" ] && [ "$(answers)" = 200 ] || fail "not started again: $(cat "$tmp/serve.err")"
grep -q "gateway: pid $g killed by signal 9" "$tmp/serve.err" || fail "the death not said: $(cat "$tmp/serve.err")"

# serve stopped: the gateway and its link gone
kill -TERM "$spid"
wait "$spid" || fail "serve: exit $?: $(tail -5 "$tmp/serve.err")"
spid=
! kill -0 "$h" 2> /dev/null || fail "the gateway outlived serve"
! ip link show agw0 > /dev/null 2>&1 || fail "agw0 left"
echo ok
