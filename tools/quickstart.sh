#!/usr/bin/env bash
# quickstart.sh: from a fresh Debian 12 machine to a real batch of jobs.
#
#   1. install the dependencies (tools/deps.sh; idempotent)
#   2. build Airlock (build/)
#   3. build the python and c guest images from this machine's apt sources
#      (content-addressed: a second run finds them and does nothing)
#   4. run examples/batch.jsonl through an embedded Redis and local workers;
#      results go to build/quickstart-results.jsonl, the summary table to
#      the terminal
#
# Needs root (package install, image build); re-runs itself with sudo.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
  exec sudo -- "$0" "$@"
fi
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"

step() { printf '\n== %s\n' "$*"; }

step "dependencies"
tools/deps.sh

step "build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build -j "$(nproc)" > /dev/null
echo "built build/tools/airlock"

step "guest images (about a minute each the first time)"
build/tools/airlock image build python c

step "host check"
build/tools/airlock doctor || true

step "a batch of real jobs: examples/batch.jsonl"
build/tools/airlock batch examples/batch.jsonl -o build/quickstart-results.jsonl
echo "results: build/quickstart-results.jsonl"
