#!/usr/bin/env bash
# test.sh: the whole test suite, from a fresh Debian 12 machine.
#
#   1. install dependencies (tools/deps.sh; idempotent)
#   2. ASan+UBSan build (leak checks on), unit and Redis tests under it
#      (not the VM ones: QEMU under TCG is too slow for that build)
#   3. clang libFuzzer build, every fuzz target for FUZZ_SECONDS (60)
#   4. the normal build with -Werror, then every CTest test (all labels);
#      its summary is the last thing printed
#
# Environment: BUILD_DIR (build), FUZZ_SECONDS (60; 0 skips fuzzing),
# CTEST_LABELS (a ctest -L regex; default: every test).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$src/build}
fuzz_secs=${FUZZ_SECONDS:-60}
jobs=$(nproc)
cd "$src"

step() { printf '\n== %s\n' "$*"; }

step "dependencies"
tools/deps.sh

step "ASan+UBSan build, unit and Redis tests"
cmake -S . -B "$build-asan" -DAIRLOCK_SANITIZE=ON -DAIRLOCK_AGENT=OFF \
  -DCMAKE_BUILD_TYPE=Debug > /dev/null
cmake --build "$build-asan" -j "$jobs" > /dev/null
if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest --test-dir "$build-asan" -L 'unit|redis' -LE vm --output-on-failure \
       -j "$jobs" \
       > "$build-asan/ctest.log" 2>&1; then
  cat "$build-asan/ctest.log"
  exit 1
fi
grep -E 'tests passed|tests failed' "$build-asan/ctest.log"

if [ "$fuzz_secs" -gt 0 ]; then
  step "fuzzing, ${fuzz_secs}s per target"
  CC=clang cmake -S . -B "$build-fuzz" -DAIRLOCK_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
  cmake --build "$build-fuzz" -j "$jobs" > /dev/null
  tests/fuzz/run.sh "$build-fuzz" "$fuzz_secs"
fi

step "build (-Werror) and every test"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build "$build" -j "$jobs" > /dev/null
args=(--test-dir "$build" --output-on-failure)
[ -n "${CTEST_LABELS:-}" ] && args+=(-L "$CTEST_LABELS")
ctest "${args[@]}"
