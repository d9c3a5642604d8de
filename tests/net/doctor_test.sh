#!/usr/bin/env bash
# doctor_test.sh: `airlock doctor` reports what dead workers left and
# `--fix` removes it, as serve's sweep does: a fabricated veth named like
# a dead worker's host link (al<PID>-<slot>), a VM cgroup and a run dir
# named after the same PID; a link of a live PID is neither reported nor
# touched. Runs in a network namespace of its own; needs root.
#
# usage: doctor_test.sh AIRLOCK_BIN
set -euo pipefail

bin=$1
[ "$(id -u)" = 0 ] || { echo "skip: needs root"; exit 77; }
if [ -z "${AL_DOCTOR_NETNS:-}" ]; then
  exec env AL_DOCTOR_NETNS=1 unshare --net bash "$0" "$@"
fi

dead=1073741823 # the largest PID a name may carry, above any pid_max
vm=$dead-vm-dOc7or
tmp=$(mktemp -d /tmp/al-doctor-XXXXXX)
cgs=()
for p in /sys/fs/cgroup/airlock /sys/fs/cgroup/{memory,cpu,pids}/airlock; do
  [ -d "$p" ] && cgs+=("$p/$vm")
done
cleanup() {
  set +e
  ip link del "al$dead-7" 2>/dev/null
  ip link del "al$$-3" 2>/dev/null
  for c in "${cgs[@]}"; do rmdir "$c" 2>/dev/null; done
  rm -rf "$tmp" "/run/airlock/$vm"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$tmp/airlock.conf" <<CONF
[sandbox]
state_dir = $tmp/state
CONF
export AIRLOCK_CONFIG=$tmp/airlock.conf
unset AIRLOCK_REDIS

leftovers() { # [--fix]: doctor's leftovers line as "LEVEL MESSAGE"
  local out
  out=$("$bin" doctor --json "$@" || true)
  jq -r '.checks[] | select(.check == "leftovers") |
         "\(.level) \(.message)"' <<<"$out"
}

ip link set lo up
l=$(leftovers)
echo "before: $l"
# no link in a fresh namespace (cgroups and run dirs are the host's)
[[ $l == "ok none:"* || $l == "warn of dead workers: 0 network links,"* ]] ||
  fail "links in a fresh namespace: $l"

# what a SIGKILLed worker's job could leave
ip link add "al$dead-7" type veth peer name "alpeer$$"
ip link add "al$$-3" type veth peer name "alpeerl$$" # ours: alive
for c in "${cgs[@]}"; do mkdir "$c"; done
mkdir -p -m 700 /run/airlock
mkdir "/run/airlock/$vm"

l=$(leftovers)
echo "found: $l"
[[ $l == "warn of dead workers: 1 network links, "* ]] ||
  fail "the dead worker's link not reported: $l"
[[ $l == *"fix now: airlock doctor --fix"* ]] || fail "no fix named: $l"
if [ ${#cgs[@]} -gt 0 ] && [[ $l == *" 0 VM cgroups"* ]]; then
  fail "the dead worker's cgroup not reported: $l"
fi
[[ $l != *" 0 run dirs"* ]] || fail "the dead worker's run dir not reported: $l"

l=$(leftovers --fix)
echo "fix: $l"
[[ $l == "ok swept: removed 1 network links, "* ]] || fail "--fix: $l"
! ip link show "al$dead-7" >/dev/null 2>&1 || fail "the dead link stayed"
ip link show "al$$-3" >/dev/null 2>&1 || fail "a live owner's link went"
for c in "${cgs[@]}"; do [ ! -d "$c" ] || fail "$c stayed"; done
[ ! -d "/run/airlock/$vm" ] || fail "the run dir stayed"

l=$(leftovers)
echo "after: $l"
[[ $l == "ok none:"* || $l == *" 0 network links,"* ]] ||
  fail "leftovers after --fix: $l"
echo "ok"
