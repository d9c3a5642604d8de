#!/usr/bin/env bash
# build-npm-image.sh AGENT SRC: the `nodenpm` guest image gateway_vm_npm
# needs (configs/templates/nodenpm.conf), built into $AIRLOCK_TEST_STATE
# (default /var/tmp/airlock-test) beside the python and c ones that
# tests/vm/build-images.sh builds. Content-addressed: unchanged inputs
# make this a no-op (a few seconds).
set -euo pipefail
agent=$1 src=$2
state=${AIRLOCK_TEST_STATE:-/var/tmp/airlock-test}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
mkdir -p "$state"
"$src/sandbox/image/build-image.sh" --template nodenpm --agent "$agent" \
  --state-dir "$state" --templates-dir "$src/configs/templates"
