#!/usr/bin/env bash
# json_test.sh AIRLOCK SOURCE_DIR: --json on status (a real redis-server on
# a unix socket), validate, doctor and image list: each prints JSON that
# jq reads, with the figures the text form shows.
set -euo pipefail
bin=$1 src=$2
tmp=$(mktemp -d)
redis=
cleanup() { [ -n "$redis" ] && kill "$redis" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" validate --json -v "$src/tests/data/jobs/mixed.jsonl" > "$tmp/v.json" && rc=0 || rc=$?
[ "$rc" -eq 1 ] || fail "validate --json: exit $rc"
jq -se 'length == 7 and (map(select(.ok)) | length) == 3 and
        (.[1] | .line == 3 and .field == "steps[0].timeot_ms" and .reason == "unknown field")' \
  "$tmp/v.json" > /dev/null || fail "validate --json: $(cat "$tmp/v.json")"

redis-server --port 0 --unixsocket "$tmp/r.sock" --save '' --appendonly no \
  --daemonize no --logfile "$tmp/r.log" & redis=$!
for _ in $(seq 100); do [ -S "$tmp/r.sock" ] && break; sleep 0.05; done
"$bin" submit --redis "unix://$tmp/r.sock" --queue jt "$src/tests/data/jobs/valid/cmd-shorthand.json" > /dev/null
"$bin" status --json --redis "unix://$tmp/r.sock" --queue jt > "$tmp/s.json" || fail "status --json"
jq -e '.queue == "jt" and .waiting == 1 and .running == 0 and .dead_letters == 0 and
       (.serves | length) == 0' "$tmp/s.json" > /dev/null || fail "status --json: $(cat "$tmp/s.json")"

printf '[sandbox]\nstate_dir = %s\n' "$tmp/state" > "$tmp/a.conf"
"$bin" doctor --json --config "$tmp/a.conf" > "$tmp/d.json" || true # 1: no image
jq -e '(.checks | length) > 5 and .ok == false' "$tmp/d.json" > /dev/null ||
  fail "doctor --json: $(cat "$tmp/d.json")"
"$bin" image list --json --config "$tmp/a.conf" | jq -e '.images == []' > /dev/null ||
  fail "image list --json"
echo "json: ok"
