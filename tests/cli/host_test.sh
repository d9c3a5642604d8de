#!/usr/bin/env bash
# host_test.sh AIRLOCK: the host-facing commands: doctor and image.
# `doctor` must name every check, end on its summary line and exit 1 when
# jobs cannot run; its lines must say what is really wrong (a wrong
# sandbox.qemu path, a Redis that does not answer, a missing
# redis-server) and what each image really gets. `image` must refuse bad
# usage, list what a state dir holds with real sizes and follow the jobs'
# template-name rule; Redis errors name the endpoint and the setting.
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# doctor on an empty state dir: no image, so jobs cannot run: exit 1
printf '[sandbox]\nstate_dir = %s\n' "$tmp/state" > "$tmp/a.conf"
out=$("$bin" doctor --config "$tmp/a.conf") && rc=0 || rc=$?
[ "$rc" -eq 1 ] || fail "doctor with no image: exit $rc, want 1: $out"
for check in user kvm channel cgroup jail network qemu redis state run image; do
  grep -qE "^(ok|warn|FAIL) +$check " <<<"$out" || fail "doctor: no $check line: $out"
done
grep -qE '^[0-9]+ problem\(s\), [0-9]+ warning\(s\)$' <<<"$out" || fail "doctor: no summary"
grep -q "^[1-9][0-9]* problem(s)" <<<"$out" || fail "doctor: no image but no problem: $out"
grep -q "python: not built.*fix: airlock image build python" <<<"$out" ||
  fail "doctor: empty state dir should say how to build images"
[ ! -e "$tmp/state" ] || fail "doctor created the state dir"

# --json: the same checks as one object
"$bin" doctor --json --config "$tmp/a.conf" > "$tmp/d.json" && rc=0 || rc=$?
[ "$rc" -eq 1 ] || fail "doctor --json: exit $rc"
jq -e '.ok == false and .problems >= 1 and
       ([.checks[] | select(.check == "image" and .level == "FAIL")] | length) >= 1' \
  "$tmp/d.json" >/dev/null || fail "doctor --json: $(cat "$tmp/d.json")"

# a built image (a fake one: doctor reads only its manifest) with its
# accelerator: sandbox.accel = tcg is what its jobs will get
mkdir -p "$tmp/state2/images/python-0123456789abcdef" "$tmp/tpl"
echo '{"hash": "0123456789abcdef", "kernel_cmdline": "x",
       "initramfs": {"file": "initrd.cpio"}}' \
  > "$tmp/state2/images/python-0123456789abcdef/manifest.json"
head -c 3145728 /dev/zero > "$tmp/state2/images/python-0123456789abcdef/rootfs.ext4"
ln -s python-0123456789abcdef "$tmp/state2/images/python"
touch "$tmp/tpl/python.conf"
printf '[sandbox]\nstate_dir = %s\naccel = tcg\n[templates]\ndir = %s\nallowed = python\n' \
  "$tmp/state2" "$tmp/tpl" > "$tmp/b.conf"
out=$("$bin" doctor --config "$tmp/b.conf") || true
grep -qE "^ok +image +python: .*accel tcg" <<<"$out" || fail "doctor: image accel: $out"
grep -qE "^FAIL +image" <<<"$out" && fail "doctor: built image still FAIL: $out"

# a wrong sandbox.qemu path is the config's fault, not a missing package
printf '[sandbox]\nstate_dir = %s\nqemu = %s\n' "$tmp/state" "$tmp/no/qemu" > "$tmp/q.conf"
out=$("$bin" doctor --config "$tmp/q.conf") || true
grep -qE "^FAIL +qemu +sandbox.qemu = $tmp/no/qemu: No such file" <<<"$out" ||
  fail "doctor: wrong qemu path: $out"
grep -q "apt-get" <<<"$(grep qemu <<<"$out")" && fail "doctor: apt-get for a wrong path"

# a configured Redis that does not answer; no redis-server on $PATH
out=$("$bin" doctor --config "$tmp/a.conf" --redis "unix://$tmp/none.sock") || true
grep -qE "^FAIL +redis +redis unix:$tmp/none.sock \(--redis\): " <<<"$out" ||
  fail "doctor: dead redis: $out"
printf '[redis]\nurl = unix://%s/none.sock\n' "$tmp" > "$tmp/r.conf"
"$bin" status --config "$tmp/r.conf" 2> "$tmp/err" && fail "status with a dead redis"
grep -q "redis unix:$tmp/none.sock (redis.url): " "$tmp/err" ||
  fail "redis error names no endpoint/setting: $(cat "$tmp/err")"
out=$(PATH=/nonexistent "$bin" doctor --config "$tmp/a.conf") || true
grep -qE "^FAIL +redis +no redis.url and no redis-server" <<<"$out" ||
  fail "doctor: no redis-server: $out"
"$bin" status --redis rediss://localhost 2> "$tmp/err" && fail "rediss accepted"
grep -q "rediss:// is not supported: .*no TLS" "$tmp/err" || fail "rediss: $(cat "$tmp/err")"

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
# real sizes: the 3 MiB rootfs counts
out=$("$bin" image list --config "$tmp/b.conf")
grep -qE "^python +0123456789abcdef +3 MiB " <<<"$out" || fail "image list size: $out"
"$bin" image list --json --config "$tmp/b.conf" |
  jq -e '.images[0].template == "python" and .images[0].bytes >= 3145728' >/dev/null ||
  fail "image list --json"
# one template-name rule: python3.11 is a job's valid name, so build gets
# as far as the missing definition; Bad is refused by the rule
# any readable file stands in for the agent (sanitizer builds have none)
AIRLOCK_AGENT=/bin/true "$bin" image build python3.11 --config "$tmp/b.conf" > /dev/null 2> "$tmp/err" || true
grep -q "python3.11.conf" "$tmp/err" || fail "image build python3.11: $(cat "$tmp/err")"
"$bin" image build Bad --config "$tmp/b.conf" 2> "$tmp/err" && fail "image build Bad"
grep -q "template names are \[a-z0-9\]\[a-z0-9_.-\]\*" "$tmp/err" || fail "image build Bad: $(cat "$tmp/err")"

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
