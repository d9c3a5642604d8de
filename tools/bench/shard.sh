#!/usr/bin/env bash
# shard.sh BUILD_DIR [JOBS [BENCH-ARGS...]]: airlock-bench-shard on a standalone Redis and
# on a local Redis Cluster (3 masters, 3 replicas), all started here on
# ports of 127.0.0.1 and stopped at the end (docs/performance.md, "Queue
# shards"). Prints the bench's lines for: one queue on one Redis; one
# queue on the cluster (one shard); three queues on the cluster, run at
# once (three shards, where their slots fall); one queue of 4 partitions
# on the cluster (queue.partitions: 4 slots, spread over the masters);
# one queue of 6 partitions (2 a master, where the slots fall evenly).
set -euo pipefail
build=$(readlink -f "$1") jobs=${2:-2000}
shift $(($# < 2 ? $# : 2))
extra_args=("$@") # e.g. --host-rate 16
bench=$build/tools/airlock-bench-shard
tmp=$(mktemp -d /tmp/al-shard-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
start() { # PORT [cluster]: 0 once a redis-server of ours answers there
  local extra=() pid
  [ "${2:-}" ] && extra=(--cluster-enabled yes --cluster-config-file "$tmp/n$1.conf")
  redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$tmp" --logfile "$tmp/$1.log" "${extra[@]}" &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do
    redis-cli -p "$1" info server 2>/dev/null | grep -q "^process_id:$pid" && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "redis on $1 did not start (port taken?)" >&2
  return 1
}
# Ports (and cluster bus ports, +10000) below the kernel's ephemeral range
# (32768-), where an outgoing connection cannot hold one; another range
# when a port is taken anyway (another test's server).
up=false
for _ in 1 2 3; do
  base=$((11000 + RANDOM % 9000))
  n0=${#pids[@]}
  ok=true
  for i in 0 1 2 3 4 5 6; do
    start $((base + i)) $([ $i -gt 0 ] && echo c) || { ok=false; break; }
  done
  $ok && { up=true; break; }
  for p in "${pids[@]:$n0}"; do kill "$p" 2>/dev/null || true; done
done
$up || { echo "no free ports" >&2; exit 1; }
"$bench" --url "redis://127.0.0.1:$base" --jobs "$jobs" "${extra_args[@]}"
nodes=()
for i in 1 2 3 4 5 6; do nodes+=("127.0.0.1:$((base + i))"); done
redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes > "$tmp/create.log"
for _ in $(seq 100); do
  redis-cli -p $((base + 1)) cluster info | grep -q cluster_state:ok && break
  sleep 0.1
done
sleep 1
"$bench" --url "redis://127.0.0.1:$((base + 1))" --cluster --jobs "$jobs" "${extra_args[@]}"
"$bench" --url "redis://127.0.0.1:$((base + 1))" --cluster --queues 3 --jobs "$jobs" "${extra_args[@]}"
"$bench" --url "redis://127.0.0.1:$((base + 1))" --cluster --partitions 4 --jobs "$jobs" "${extra_args[@]}"
"$bench" --url "redis://127.0.0.1:$((base + 1))" --cluster --partitions 6 --jobs "$jobs" "${extra_args[@]}"
