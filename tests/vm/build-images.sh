#!/usr/bin/env bash
# build-images.sh AGENT SRC: build the python and c guest images the VM
# tests use into $AIRLOCK_TEST_STATE (default /var/tmp/airlock-test).
# Unchanged inputs make this a no-op (the builder is content-addressed).
set -euo pipefail
agent=$1 src=$2
state=${AIRLOCK_TEST_STATE:-/var/tmp/airlock-test}
mkdir -p "$state"
for t in python c; do
  "$src/sandbox/image/build-image.sh" --template "$t" --agent "$agent" \
    --state-dir "$state"
done
