#!/usr/bin/env bash
# vm_npm_test.sh AIRLOCK GATEWAY AGENT SRC: npm in a job's microVM through
# the package gateway (docs/packages.md, "The VM path"). The shipped
# `nodenpm` template (configs/templates/nodenpm.conf: node plus Debian's
# npm, its image built into $AIRLOCK_TEST_STATE, cached by its hash; its
# /etc/npmrc names the gateway from the `gateway` key), `airlock batch` in a
# network namespace of its own with the `packages` policy (the embedded
# mode starts the gateway). One job: a plain `npm install
# tiny-npm@1.0.0` installs and `require`s; `npm ci` from the lockfile it
# wrote installs again (cold cache); a version not pinned (audited as the
# document's "not pinned, withheld: 1.1.0"), a name not on the list
# (zzqx: npm prints the reason) and a package with an install script
# (npm.no-install-scripts) are refused, each audited with the job's id
# and the reason; the result's network.packages lists what it installed.
# Under TCG ~73 s (docs/packages.md, "Tests"); the image comes from the
# gateway_vm_images fixture (built here too when run alone).
set -euo pipefail
bin=$1 gw=$2 agent=$3 src=$4
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
state=${AIRLOCK_TEST_STATE:-/var/tmp/airlock-test}
tpl=$src/configs/templates
mkdir -p "$state"
if [ -z "${IN_NETNS:-}" ]; then
  unshare -n true 2>/dev/null || { echo "SKIP: cannot unshare -n"; exit 77; }
  "$src/sandbox/image/build-image.sh" --template nodenpm --agent "$agent" \
    --state-dir "$state" --templates-dir "$tpl" > "$state/gw-npm-image.log" 2>&1 ||
    { echo "FAIL: image build: $(tail -5 "$state/gw-npm-image.log")" >&2; exit 1; }
  exec unshare -n env IN_NETNS=1 bash "$0" "$@"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ip link set lo up
dir=$state/packages
rm -rf "$dir"
mkdir -p "$dir"
python3 "$src/tests/gateway/mkpkg.py" "$tmp/pk"
"$bin" packages add --dir "$dir" --pin "$tmp/pk/tiny-npm-1.0.0.tgz" "$tmp/pk/tiny-hook-1.0.0.tgz" > /dev/null
"$bin" packages add --dir "$dir" "$tmp/pk/tiny-npm-1.1.0.tgz" > /dev/null
cat > "$tmp/airlock.conf" <<CONF
[sandbox]
state_dir = $state
[templates]
dir = $tpl
allowed = nodenpm
default = nodenpm
[network.packages]
allow = 10.202.0.2/32
ports = tcp/3141
CONF
id=gw-npm-$$-$RANDOM
jq -nc --arg id "$id" \
  --arg a "mkdir -p /tmp/p && cd /tmp/p && npm install --no-progress tiny-npm@1.0.0 && node -e \"console.log(require('tiny-npm'))\"" \
  --arg b "mkdir -p /tmp/q && cd /tmp/q && npm install --no-progress tiny-npm@1.1.0 2>&1" \
  --arg c "mkdir -p /tmp/c && cp /tmp/p/package.json /tmp/p/package-lock.json /tmp/c && cd /tmp/c && npm ci --no-progress --cache /tmp/c/.cache && node -e \"console.log(require('tiny-npm'))\"" \
  --arg d "mkdir -p /tmp/h && cd /tmp/h && npm install --no-progress tiny-hook@1.0.0 2>&1; ls /tmp/h/node_modules 2>&1" \
  --arg e "mkdir -p /tmp/z && cd /tmp/z && npm install --no-progress zzqx 2>&1" \
  '{id: $id, template: "nodenpm", network: "packages", limits: {wall_ms: 600000},
    steps: [{sh: $a, timeout_ms: 240000}, {sh: $b, timeout_ms: 100000},
            {sh: $c, timeout_ms: 150000}, {sh: $d, timeout_ms: 100000},
            {sh: $e, timeout_ms: 100000}]}' > "$tmp/jobs.jsonl"
AIRLOCK_GATEWAY=$gw "$bin" batch --config "$tmp/airlock.conf" --workers 1 "$tmp/jobs.jsonl" \
  > "$tmp/res.jsonl" 2> "$tmp/batch.err" || true
res=$tmp/res.jsonl
jq -e '.steps[0].status == "OK" and (.steps[0].stdout | contains("tiny-npm 1.0.0"))' "$res" > /dev/null ||
  fail "npm install: $(head -c 3000 "$res") $(tail -3 "$tmp/batch.err")"
jq -e '.steps[1].status == "RE" and (.steps[1].stdout | contains("No matching version found for tiny-npm@1.1.0"))' \
  "$res" > /dev/null || fail "unpinned version: $(jq -c '.steps[1]' "$res")"
jq -e '.steps[4].status == "RE" and (.steps[4].stdout | contains("zzqx is not on the allowlist (pending approval)"))' \
  "$res" > /dev/null || fail "name not on the list: $(jq -c '.steps[4]' "$res")"
# npm ci from the lockfile the first step wrote (a cold cache: every
# tarball fetched again by its lockfile URL, integrity checked by npm)
jq -e '.steps[2].status == "OK" and (.steps[2].stdout | contains("tiny-npm 1.0.0"))' "$res" > /dev/null ||
  fail "npm ci: $(jq -c '.steps[2]' "$res")"
# a package with an install script under npm.no-install-scripts: refused
# with the reason npm prints, nothing installed
jq -e '.steps[3].stdout | contains("no version of tiny-hook can be served") and contains("No such file")' \
  "$res" > /dev/null || fail "install script: $(jq -c '.steps[3]' "$res")"
jq -e '.network.packages == ["npm:tiny-npm==1.0.0"]' "$res" > /dev/null ||
  fail "network.packages: $(jq -c '.network' "$res")"
jq -e -s --arg id "$id" 'any(.[]; .job == $id and .route == "tarball" and .decision == "allow")
  and any(.[]; .job == $id and .route == "doc" and .name == "tiny-npm" and .decision == "allow"
          and (.reason | contains("; not pinned, withheld: 1.1.0")))
  and any(.[]; .job == $id and .name == "zzqx" and .decision == "deny" and .pending
          and .reason == "zzqx is not on the allowlist (pending approval)")
  and any(.[]; .job == $id and .name == "tiny-hook" and .decision == "deny"
          and (.reason | contains("no version of tiny-hook can be served")))' \
  "$dir/audit.jsonl" > /dev/null || fail "audit: $(grep -F "$id" "$dir/audit.jsonl")"
echo "image: $(jq -c '{used_kb: .rootfs.used_kb, files: .rootfs.files}' "$state/images/nodenpm/manifest.json")"
echo ok
