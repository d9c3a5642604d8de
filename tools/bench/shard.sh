#!/usr/bin/env bash
# shard.sh BUILD_DIR [JOBS]: airlock-bench-shard on a standalone Redis and
# on a local Redis Cluster (3 masters, 3 replicas), all started here on
# ports of 127.0.0.1 and stopped at the end (docs/performance.md, "Queue
# shards"). Prints the bench's lines for: one queue on one Redis; one
# queue on the cluster (one shard); three queues on the cluster, run at
# once (three shards, where their slots fall); one queue of 4 partitions
# on the cluster (queue.partitions: 4 slots, spread over the masters).
set -euo pipefail
build=$(readlink -f "$1") jobs=${2:-2000}
bench=$build/tools/airlock-bench-shard
tmp=$(mktemp -d /tmp/al-shard-XXXXXX)
base=$((21000 + RANDOM % 4000))
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
start() { # PORT [cluster]
  local extra=()
  [ "${2:-}" ] && extra=(--cluster-enabled yes --cluster-config-file "$tmp/n$1.conf")
  redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$tmp" --logfile "$tmp/$1.log" "${extra[@]}" &
  pids+=($!)
  for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return; sleep 0.05; done
  echo "redis on $1 did not start" >&2; exit 1
}
start "$base"
"$bench" --url "redis://127.0.0.1:$base" --jobs "$jobs"
nodes=()
for i in 1 2 3 4 5 6; do start $((base + i)) c; nodes+=("127.0.0.1:$((base + i))"); done
redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes > "$tmp/create.log"
for _ in $(seq 100); do
  redis-cli -p $((base + 1)) cluster info | grep -q cluster_state:ok && break
  sleep 0.1
done
sleep 1
"$bench" --url "redis://127.0.0.1:$((base + 1))" --cluster --jobs "$jobs"
"$bench" --url "redis://127.0.0.1:$((base + 1))" --cluster --queues 3 --jobs "$jobs"
"$bench" --url "redis://127.0.0.1:$((base + 1))" --cluster --partitions 4 --jobs "$jobs"
