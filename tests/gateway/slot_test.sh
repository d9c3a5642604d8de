#!/usr/bin/env bash
# slot_test.sh GATEWAY AIRLOCK SRC: the gateway knows who asks from the client's
# source address only. In a network namespace of its own (unshare -n: the
# host's tables are never touched), addresses stand in for network slots'
# host links: a request from an address with a slots/ADDR file is the
# job named there, from any other address "unknown ADDR"; headers that
# claim another identity change nothing. An approval never changes a
# running job: a job keeps the allowlist its first request got, while a
# new job (and the host) get the new one.
set -euo pipefail
gw=$1 bin=$2 src=$3
if [ -z "${IN_NETNS:-}" ]; then
  command -v unshare >/dev/null && command -v curl >/dev/null || { echo "SKIP: unshare, curl"; exit 77; }
  unshare -n true 2>/dev/null || { echo "SKIP: cannot unshare -n"; exit 77; }
  exec unshare -n env IN_NETNS=1 bash "$0" "$@"
fi
tmp=$(mktemp -d)
chmod 755 "$tmp"
gwpid=
cleanup() {
  [ -n "$gwpid" ] && kill "$gwpid" 2>/dev/null && wait "$gwpid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

ip link set lo up
for a in 10.201.0.1 10.201.0.6 10.201.0.10; do ip addr add $a/32 dev lo; done
dir=$tmp/packages
mkdir -p "$dir/slots"
echo "job-42" > "$dir/slots/10.201.0.6"
"$gw" --dir "$dir" --listen 10.201.0.1:0 --uid 1199999 > "$tmp/gw.out" 2> "$tmp/gw.err" &
gwpid=$!
for _ in $(seq 50); do grep -qs listening "$tmp/gw.out" && break; sleep 0.1; done
port=$(sed -n 's/^listening on 10.201.0.1://p' "$tmp/gw.out")
[ -n "$port" ] || fail "gateway did not start: $(cat "$tmp/gw.err")"
curl -s -o /dev/null --interface 10.201.0.6 -H 'X-Airlock-Job: job-1' \
  -H 'X-Forwarded-For: 127.0.0.1' "http://10.201.0.1:$port/pypi/simple/anything/"
curl -s -o /dev/null --interface 10.201.0.10 -H 'X-Airlock-Job: job-42' \
  "http://10.201.0.1:$port/pypi/simple/other/"
jq -e -s '.[0].job == "job-42" and .[0].peer == "10.201.0.6" and .[0].name == "anything"
  and .[1].job == "unknown 10.201.0.10" and .[1].name == "other"' "$dir/audit.jsonl" >/dev/null ||
  fail "identity: $(cat "$dir/audit.jsonl")"

# approval and running jobs
python3 "$src/tests/gateway/mkpkg.py" "$tmp/pk"
"$bin" packages add --dir "$dir" "$tmp/pk/tinypkg-1.0-py3-none-any.whl" > /dev/null
get() { curl -s -o /dev/null -w '%{http_code}' --interface "$1" "http://10.201.0.1:$port/pypi/simple/tinypkg/"; }
[ "$(get 10.201.0.6)" = 404 ] || fail "job-42 got tinypkg before approval"
"$bin" packages approve --dir "$dir" tinypkg==1.0 > /dev/null
sleep 1.2
[ "$(get 10.201.0.1)" = 200 ] || fail "unknown client: the approval not in effect"
[ "$(get 10.201.0.6)" = 404 ] || fail "approval changed running job-42"
echo "job-43" > "$dir/slots/10.201.0.10"
[ "$(get 10.201.0.10)" = 200 ] || fail "new job-43 does not see the approval"
[ "$(get 10.201.0.6)" = 404 ] || fail "job-42 changed later"
echo ok
