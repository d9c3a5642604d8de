#!/usr/bin/env bash
# nonroot_test.sh AIRLOCK: a user who is not root runs jobs on a host where
# root built the images (tools/quickstart.sh into /var/lib/airlock): a
# temporary user, created here and removed after, gets `42` from
# `airlock run -- python3 -c 'print(6*7)'`, and `airlock doctor` exits 0
# for them, saying what a non-root user gets.
set -euo pipefail
bin=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -e /var/lib/airlock/images/python ] || { echo "SKIP: no images in /var/lib/airlock"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to add a user"; exit 77; }
user=al-nonroot-$$
useradd --create-home --shell /bin/bash "$user"
trap 'userdel --remove "$user" 2>/dev/null || echo "warning: userdel $user failed" >&2' EXIT
home=$(getent passwd "$user" | cut -d: -f6)
as_user() { (cd / && runuser -u "$user" -- env -i HOME="$home" PATH=/usr/bin:/bin "$@"); }

as_user "$bin" doctor > /tmp/$user.doctor && rc=0 || rc=$?
out=$(cat /tmp/$user.doctor); rm -f /tmp/$user.doctor
[ "$rc" -eq 0 ] || fail "doctor as $user: exit $rc: $out"
grep -qE "^warn +user +uid [0-9]+, not root: own state in $home/.local/state/airlock, images read-only from /var/lib/airlock" <<<"$out" ||
  fail "doctor: no non-root user line: $out"
grep -qE "^(ok|warn) +image +python: /var/lib/airlock/images/" <<<"$out" ||
  fail "doctor: python image not from the system dir: $out"

out=$(as_user "$bin" run -- python3 -c 'print(6*7)') || fail "run as $user: exit $?"
[ "$out" = 42 ] || fail "run as $user printed '$out'"
[ -d "$home/.local/state/airlock/templates" ] || fail "no per-user templates dir"
# not silent (issue 23): a warning before the job, "jailed": false after
as_user "$bin" run --json -- true > /tmp/$user.json 2> /tmp/$user.err || true
grep -q 'not root: VMs run unjailed' /tmp/$user.err || fail "run: no warning: $(cat /tmp/$user.err)"
jq -e '.vm.jailed == false' /tmp/$user.json > /dev/null || fail "run: jailed: $(cat /tmp/$user.json)"
rm -f /tmp/$user.json /tmp/$user.err
echo "non-root run: ok"
