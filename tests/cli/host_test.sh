#!/usr/bin/env bash
# host_test.sh AIRLOCK: the host-facing commands: doctor and image.
# `doctor` must name every check and end on its summary line; `image`
# must refuse bad usage and list what a state dir holds.
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

printf '[sandbox]\nstate_dir = %s\n' "$tmp/state" > "$tmp/a.conf"
out=$("$bin" doctor --config "$tmp/a.conf") && rc=0 || rc=$?
[ "$rc" -le 1 ] || fail "doctor exit $rc"
for check in kvm channel cgroup jail network qemu state run image; do
  grep -qE "^(ok|warn|FAIL) +$check " <<<"$out" || fail "doctor: no $check line: $out"
done
grep -qE '^[0-9]+ problem\(s\), [0-9]+ warning\(s\)$' <<<"$out" || fail "doctor: no summary"
grep -q "python: not built; fix: airlock image build python" <<<"$out" ||
  fail "doctor: empty state dir should say how to build images"

# networking: a missing tap device is a FAIL once a policy is defined
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  printf '[network.t]\nallow = a.test\nports = tcp/80\n' >> "$tmp/a.conf"
  out=$(unshare -m sh -c 'mount --bind /dev/null /dev/net/tun && "$0" doctor --config "$1"' \
    "$bin" "$tmp/a.conf") && rc=0 || rc=$?
  [ "$rc" = 1 ] || fail "doctor without a tap device: exit $rc"
  grep -q '^FAIL  network    /dev/net/tun: no tap device' <<<"$out" ||
    fail "doctor without a tap device: $out"
fi

"$bin" image >/dev/null 2>&1 && fail "image with no verb succeeded"
"$bin" image build --config "$tmp/a.conf" >/dev/null 2>&1 && fail "image build with no template succeeded"
"$bin" image list --config "$tmp/a.conf" | grep -q "no images" || fail "image list on an empty state dir"
"$bin" image --help | grep -q "airlock image build TEMPLATE" || fail "image --help"

# snapshot: usage, an empty list, rm of a missing one, a setup that names
# no built image (nothing created), and an invalid setup file
"$bin" snapshot --help | grep -q "airlock snapshot create NAME SETUP.json" ||
  fail "snapshot --help"
"$bin" snapshot >/dev/null 2>&1 && fail "snapshot with no verb succeeded"
"$bin" snapshot create x --config "$tmp/a.conf" >/dev/null 2>&1 &&
  fail "snapshot create without a setup succeeded"
"$bin" snapshot frob --config "$tmp/a.conf" >/dev/null 2>&1 && fail "snapshot frob"
"$bin" snapshot list --config "$tmp/a.conf" | grep -q "no snapshots" ||
  fail "snapshot list on an empty state dir"
rc=0; "$bin" snapshot rm nope --config "$tmp/a.conf" 2>/dev/null || rc=$?
[ "$rc" = 1 ] || fail "snapshot rm of a missing one: exit $rc"
echo '{"template": "python", "sh": "true"}' > "$tmp/setup.json"
rc=0; "$bin" snapshot create s1 "$tmp/setup.json" --config "$tmp/a.conf" \
  2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] || fail "snapshot create with no image: exit $rc"
grep -q "s1 not created: XX" "$tmp/err" || fail "create error: $(cat "$tmp/err")"
"$bin" snapshot list --config "$tmp/a.conf" | grep -q "no snapshots" ||
  fail "a failed create left a snapshot"
echo '{"steps": 3}' > "$tmp/bad.json"
rc=0; "$bin" snapshot create s1 "$tmp/bad.json" --config "$tmp/a.conf" \
  2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "snapshot create of an invalid job: exit $rc"
echo "host commands: ok"
