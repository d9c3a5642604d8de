#!/usr/bin/env bash
# run.sh: run every fuzz target for SECONDS each, two at a time, from seeds
# made out of the repo's corpora. Usage: tests/fuzz/run.sh BUILD_DIR [SECONDS]
# BUILD_DIR must be configured with CC=clang -DAIRLOCK_FUZZ=ON and built.
# Exits non-zero on the first finding and prints the reproducer's path.
set -euo pipefail

build=${1:?usage: run.sh BUILD_DIR [SECONDS]}
secs=${2:-60}
src=$(cd "$(dirname "$0")/../.." && pwd)
work="$build/fuzz-work"
rm -rf "$work"
mkdir -p "$work"

# seeds: JSON jobs as files, and msgpack jobs/results made by mkseeds
seed() { mkdir -p "$work/seed-$1"; echo "$work/seed-$1"; }
js=$(seed job_json)
i=0
while IFS= read -r line; do
  printf '%s' "$line" > "$js/rt-$i.json"; i=$((i + 1))
done < "$src/tests/data/roundtrip/jobs.jsonl"
find "$src/tests/data/jobs" -name '*.json' -exec cp -t "$js" {} + 2>/dev/null || true
"$build/tests/fuzz/mkseeds" job "$src/tests/data/roundtrip/jobs.jsonl" "$(seed job_msgpack)"
"$build/tests/fuzz/mkseeds" result "$src/tests/data/roundtrip/results.jsonl" "$(seed result)"
# seeds for the policy parser (KEY-byte + value lines) and DNS messages
np=$(seed netpolicy)
printf 'aallowed.test *.example.org 192.0.2.0/24\nbtcp/80 udp/1000-2000\nc100\n' >"$np/ok"
printf 'a2001:db8::/32 192.0.2.1/24\nbtcp/0\n' >"$np/bad"
dn=$(seed dns)
printf '\0\11\1\0\0\1\0\0\0\0\0\0\7allowed\4test\0\0\1\0\1' >"$dn/query"
printf '\0\11\201\200\0\1\0\1\0\0\0\0\7allowed\4test\0\0\1\0\1\300\14\0\1\0\1\0\0\0\2\0\4\300\0\2\12' >"$dn/reply"
ht=$(seed http)
cp -r "$src/tests/data/http/." "$ht/"
fr=$(seed frame)
if [ -d "$src/tests/fuzz/corpus/frame" ]; then cp -r "$src/tests/fuzz/corpus/frame/." "$fr/"; fi

gs=$(seed gw)
cp -r "$src/tests/fuzz/corpus/gateway/." "$gs/"
# Redis Cluster redirections (dispatcher/queue/cluster.c): error replies
rd=$(seed redirect)
printf 'MOVED 3999 127.0.0.1:6381' >"$rd/moved"
printf 'ASK 16383 [::1]:7000' >"$rd/ask"
printf 'TRYAGAIN Multiple keys' >"$rd/tryagain"
printf "READONLY You can't write" >"$rd/readonly"
# session tars (results/tar.c): ustar archives, hostile ones among them
ts=$(seed tar)
cp -r "$src/tests/fuzz/corpus/tar/." "$ts/"
# snapshot definitions (dispatcher/serve/snapdef.c): HGETALL replies as RESP
sd=$(seed snapdef)
resp() { local a; printf '*%d\r\n' $#; for a in "$@"; do printf '$%d\r\n%s\r\n' ${#a} "$a"; done; }
resp name grader base python image "$(printf '%064d' 7)" sha "$(printf '%064d' 9)" \
  key 0123456789abcdef setup '{"steps":[{"sh":"true"}]}' > "$sd/def"
resp name x base > "$sd/odd"
[ -d "$src/tests/fuzz/corpus/snapdef" ] && cp -r "$src/tests/fuzz/corpus/snapdef/." "$sd/" # past findings

# every fuzz target the build has (a new one runs without an edit here);
# its seeds are those made above, else tests/fuzz/corpus/NAME, else none
targets=()
for f in "$build"/tests/fuzz/fuzz_*; do
  t=${f##*/}
  case $t in *_smoke | *.*) continue ;; esac
  [ -x "$f" ] && [ -f "$f" ] && targets+=("$t")
done
[ ${#targets[@]} -gt 0 ] || { echo "run.sh: no fuzz targets in $build" >&2; exit 1; }

run_one() {
  local t=$1 seeddir=$work/seed-${1#fuzz_}
  if [ ! -d "$seeddir" ]; then
    mkdir -p "$seeddir"
    if [ -d "$src/tests/fuzz/corpus/${t#fuzz_}" ]; then
      cp -r "$src/tests/fuzz/corpus/${t#fuzz_}/." "$seeddir/"
    fi
  fi
  mkdir -p "$work/corpus-$t" "$work/artifacts-$t"
  if "$build/tests/fuzz/$t" -max_total_time="$secs" -timeout=10 \
      -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$work/artifacts-$t/" \
      "$work/corpus-$t" "$seeddir" > "$work/$t.log" 2>&1; then
    echo "fuzz: $t: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$work/$t.log" | grep -o '[0-9]*$') runs in ${secs}s, no finding"
  else
    echo "fuzz: $t: FINDING" >&2
    tail -40 "$work/$t.log" >&2
    ls "$work/artifacts-$t" >&2
    return 1
  fi
}

fail=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" & pids+=($!)
  if [ ${#pids[@]} -ge 2 ]; then
    wait "${pids[0]}" || fail=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || fail=1; done
exit $fail
