#!/usr/bin/env bash
# test.sh: the test suite, from a fresh Debian 12 machine.
#
#   1. install dependencies (tools/deps.sh; idempotent)
#   2. ASan+UBSan build (leak checks on), unit and Redis tests under it
#      (not the VM ones: QEMU under TCG is too slow for that build)
#   3. clang libFuzzer build, every fuzz target for FUZZ_SECONDS (60)
#   4. the normal build with -Werror, then the CTest tests step 2 did not
#      run: those with no VM and no network timing two at a time, then the
#      VM and network ones (labels vm, net) one at a time; that summary is
#      printed last
#
# Two tiers. Plain `tools/test.sh` is CI's (.ci/run): every test but those
# labelled `full`, and the long tests at their CI size (fewer repetitions,
# each named in the test). `tools/test.sh --full` runs every test at full
# size (AIRLOCK_FULL=1: also the tests of every language's image, the
# 256-request door load and the repetitions); give it two to three hours
# on 2 cores under TCG.
#
# Environment: BUILD_DIR (build), FUZZ_SECONDS (60; 0 skips fuzzing),
# CTEST_LABELS (a ctest -L regex; default: every test), STRICT (1: no
# second run of a failed test). ccache is used when it is installed
# (tools/deps.sh installs it), with CCACHE_BASEDIR at the source tree so
# two clones share it.
#
# A test that fails is run once more, alone. If it passes then, it is a
# flake: it is named under "== FLAKY" and in $BUILD_DIR/flaky.txt, and the
# suite still passes; a test that fails twice fails the suite. Timing-bound
# tests on a loaded 2-core TCG machine do flake, and one flake must not
# hide the other seventy results; the list says which test to fix.
set -euo pipefail

case ${1:-} in
  --full) export AIRLOCK_FULL=1 ;;
  "") ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "usage: tools/test.sh [--full]" >&2; exit 2 ;;
esac

src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$src/build}
fuzz_secs=${FUZZ_SECONDS:-60}
jobs=$(nproc)
cd "$src"

t0=$SECONDS
step() { printf '\n== %s (%d s in)\n' "$*" $((SECONDS - t0)); }

cmake_cache=()
if command -v ccache > /dev/null; then
  export CCACHE_BASEDIR=$src
  cmake_cache=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

# ctest_once_more DIR ARGS...: ctest, and a second run of what failed
# (see the top); the first run's failures go to DIR/flaky.txt.
ctest_once_more() {
  local dir=$1
  shift
  if ctest --test-dir "$dir" "$@"; then
    return 0
  fi
  [ "${STRICT:-0}" = 1 ] && return 1
  cp "$dir/Testing/Temporary/LastTestsFailed.log" "$dir/flaky.txt"
  step "second run of the failed tests"
  ctest --test-dir "$dir" --output-on-failure --rerun-failed || return 1
  step "FLAKY: failed once, passed when run again (fix these)"
  cat "$dir/flaky.txt"
}

step "dependencies"
tools/deps.sh

step "ASan+UBSan build, unit and Redis tests"
cmake -S . -B "$build-asan" -DAIRLOCK_SANITIZE=ON -DAIRLOCK_AGENT=OFF \
  -DCMAKE_BUILD_TYPE=Debug "${cmake_cache[@]}" > /dev/null
cmake --build "$build-asan" -j "$jobs" > /dev/null
if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest_once_more "$build-asan" -L 'unit|redis' -LE vm --output-on-failure \
       -j "$jobs" \
       > "$build-asan/ctest.log" 2>&1; then
  cat "$build-asan/ctest.log"
  exit 1
fi
grep -E -A20 'tests passed|tests failed|^== FLAKY' "$build-asan/ctest.log" |
  grep -v '^ *Start\|Test *#' || true

if [ "$fuzz_secs" -gt 0 ]; then
  step "fuzzing, ${fuzz_secs}s per target"
  CC=clang cmake -S . -B "$build-fuzz" -DAIRLOCK_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cmake_cache[@]}" > /dev/null
  cmake --build "$build-fuzz" -j "$jobs" > /dev/null
  tests/fuzz/run.sh "$build-fuzz" "$fuzz_secs"
fi

step "build (-Werror) and every test"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cmake_cache[@]}" \
  > /dev/null
cmake --build "$build" -j "$jobs" > /dev/null
args=(--output-on-failure)
if [ -n "${CTEST_LABELS:-}" ]; then
  ctest_once_more "$build" "${args[@]}" -L "$CTEST_LABELS"
  exit
fi
# Tests that start no VM and time no network run $jobs at a time; those
# step 2 ran under ASan+UBSan are not run twice. VM and network tests,
# whose limits are measured in wall time on a TCG guest, run one at a
# time, and their summary is the last thing printed. Without --full the
# tests labelled `full` are left out.
names() { ctest --test-dir "$1" -N "${@:2}" | sed -n 's/^ *Test *#[0-9]*: //p'; }
names "$build-asan" -L 'unit|redis' -LE vm | sort > "$build/asan-ran.txt"
full=$(names "$build" -L full)
[ -n "${AIRLOCK_FULL:-}" ] && full=
rest=$(names "$build" -LE 'vm|net' | sort | comm -23 - "$build/asan-ran.txt" |
  grep -v -x -F -e "${full:-//none//}" | paste -sd '|' || true)
step "tests without VMs that ASan did not run, $jobs at a time"
if [ -n "$rest" ]; then
  ctest_once_more "$build" "${args[@]}" -R "^($rest)\$" -j "$jobs"
fi
step "VM and network tests, one at a time"
if [ -n "${AIRLOCK_FULL:-}" ]; then
  ctest_once_more "$build" "${args[@]}" -L 'vm|net'
else
  ctest_once_more "$build" "${args[@]}" -L 'vm|net' -LE full
fi
step "done"
