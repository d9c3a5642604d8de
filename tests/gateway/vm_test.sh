#!/usr/bin/env bash
# vm_test.sh AIRLOCK GATEWAY AGENT SRC: pip in a job's microVM through the
# package gateway (docs/packages.md, "The VM path"). In a network
# namespace of its own (unshare -n: the host's tables are never touched),
# `airlock batch` with a config defining the `packages` policy: its
# embedded mode starts the gateway itself (tools/cli/gwrun.c: a namespace
# of its own behind agw0, 10.202.0.2:3141, its own uid), and the python
# template (built into $AIRLOCK_TEST_STATE, cached by its hash) has pip
# with /etc/pip.conf naming the gateway. One job: a plain `pip install
# tinypkg==1.0` (no option) installs an allowed wheel and imports it;
# `pip install -r` of a lockfile with hashes installs; a look-alike name,
# a version not pinned, a not-allowed file's URL asked for directly and an
# sdist under wheels-only are refused with the reason in the step's output
# and audited with the job's id and the reason; so is a name not on the
# list and no look-alike (zzqx, once in `pending` though asked twice); a
# version not pinned shows in the audit as the listing's "not pinned,
# withheld: 2.0" (pip never says which version it wanted); the host's
# end and another port are refused, in the result's network.dropped and
# as deny records of the job (ecosystem "net", written by the worker); a
# second job after a pinned file's bytes changed in the mirror is refused
# (integrity). Approval: tinypkg 2.0 is approved while the first job
# runs: its last step, after the approval, is still refused (a running
# job keeps its allowlist), and the second job installs it. The result's
# network.packages lists what it installed; the audit records carry the
# job's id (the worker names the slot's address in STATE/packages/slots,
# the gateway reads it from there, never from the guest), and the slot's
# file is gone after the job, the gateway and agw0 after the command.
# Under TCG ~72 s (docs/packages.md, "Tests"); the images come from the
# vm_images fixture (built here too when run alone).
set -euo pipefail
bin=$1 gw=$2 agent=$3 src=$4
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
state=${AIRLOCK_TEST_STATE:-/var/tmp/airlock-test}
if [ -z "${IN_NETNS:-}" ]; then
  unshare -n true 2>/dev/null || { echo "SKIP: cannot unshare -n"; exit 77; }
  # the python template (the build reads the host's apt sources: before
  # the namespace)
  "$src/sandbox/image/build-image.sh" --template python --agent "$agent" \
    --state-dir "$state" --templates-dir "$src/configs/templates" > "$state/gw-image.log" 2>&1 ||
    { echo "FAIL: image build: $(tail -5 "$state/gw-image.log")" >&2; exit 1; }
  exec unshare -n env IN_NETNS=1 bash "$0" "$@"
fi
tmp=$(mktemp -d)
watcher=
cleanup() {
  [ -n "$watcher" ] && kill "$watcher" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

ip link set lo up
dir=$state/packages
rm -rf "$dir"
mkdir -p "$dir"
python3 "$src/tests/gateway/mkpkg.py" "$tmp/pk"
# everything into the mirror; pinned: tinypkg 1.0, onlysdist (an sdist,
# refused under wheels-only), and tiny_dep from a lockfile with its hash
"$bin" packages add --dir "$dir" "$tmp"/pk/*.whl "$tmp"/pk/*.tar.gz > /dev/null
"$bin" packages add --dir "$dir" --pin "$tmp/pk/tinypkg-1.0-py3-none-any.whl" \
  "$tmp/pk/onlysdist-1.0.tar.gz" > /dev/null
dep_sha=$(sha256sum "$tmp/pk/tiny_dep-0.1-py3-none-any.whl" | cut -c1-64)
printf 'tiny-dep==0.1 \\\n    --hash=sha256:%s\n' "$dep_sha" > "$tmp/req.txt"
"$bin" packages import --dir "$dir" "$tmp/req.txt" > /dev/null
grep -qx "option python.wheels-only" "$dir/packages.allow" || fail "allowlist not wheels-only"

cat > "$tmp/airlock.conf" <<CONF
[sandbox]
state_dir = $state
[templates]
dir = $src/configs/templates
allowed = python
default = python
[network.packages]
allow = 10.202.0.2/32
ports = tcp/3141
CONF
id=gw-vm-$$-$RANDOM
probe='import socket, sys
for a, p in (("10.202.0.1", 3141), ("10.202.0.2", 22)):
    s = socket.socket(); s.settimeout(10)
    try:
        s.connect((a, p)); print("connected", a, p)
    except OSError as e:
        print("refused", a, p, e.errno)'
gwurl=http://10.202.0.2:3141
jq -nc --arg id "$id" --arg a "pip install tinypkg==1.0 && python3 -c 'import tinypkg; print(tinypkg.VALUE)'" \
  --arg b "pip install reqeusts" --arg c "$probe" \
  --arg d "python3 -X importtime -c pass 2>&1 | grep -E 'distutils_hack|site\$'" \
  --arg e "pip install --target /tmp/r --require-hashes -r req.txt && ls /tmp/r" \
  --arg f "pip install --target /tmp/t3 tinypkg==2.0 2>&1" \
  --arg g "pip install --target /tmp/t4 $gwurl/pypi/files/tinypkg-2.0-py3-none-any.whl 2>&1" \
  --arg h "pip install --target /tmp/t5 onlysdist 2>&1; ls /tmp/t5 2>&1" \
  --arg i "pip install --target /tmp/t6 zzqx 2>&1; pip install --target /tmp/t6 zzqx 2>&1; ls /tmp/t6 2>&1" \
  --arg j "sleep 8; pip install --target /tmp/t7 tinypkg==2.0 2>&1" \
  --rawfile req "$tmp/req.txt" \
  '{id: $id, template: "python", network: "packages", limits: {wall_ms: 600000},
    files: {"req.txt": $req},
    steps: [{sh: $a, timeout_ms: 200000}, {sh: $b, timeout_ms: 100000},
            {cmd: ["python3", "-c", $c], timeout_ms: 30000}, {sh: $d, timeout_ms: 30000},
            {sh: $e, timeout_ms: 100000}, {sh: $f, timeout_ms: 60000},
            {sh: $g, timeout_ms: 60000}, {sh: $h, timeout_ms: 60000},
            {sh: $i, timeout_ms: 100000}, {sh: $j, timeout_ms: 120000}]}' > "$tmp/jobs.jsonl"
# the approval, while the job runs: once its `pip install tinypkg==2.0`
# was refused (step 5), tinypkg 2.0 is approved; its last step waits
# (after the zzqx step and 8 s more; the audit shows it asked after the
# approval and the gateway's reread, a second) and asks again
( for _ in $(seq 600); do
    if jq -e -s --arg id "$id" 'any(.[]; .job == $id and .route == "project" and .name == "tinypkg"
         and (.reason | contains("not pinned, withheld: 2.0")))' "$dir/audit.jsonl" >/dev/null 2>&1; then
      "$bin" packages approve --dir "$dir" tinypkg==2.0 > "$tmp/approve.out" 2>&1
      date +%s%3N > "$tmp/approved_ms"
      exit 0
    fi
    sleep 0.5
  done ) &
watcher=$!
AIRLOCK_GATEWAY=$gw "$bin" batch --config "$tmp/airlock.conf" --workers 1 "$tmp/jobs.jsonl" \
  > "$tmp/res.jsonl" 2> "$tmp/batch.err" || true
wait "$watcher" || true
watcher=
grep -q "^pinned python tinypkg-2.0-py3-none-any.whl" "$tmp/approve.out" ||
  fail "approval during the job: $(cat "$tmp/approve.out" 2>&1)"
res=$tmp/res.jsonl
jq -e '.steps[0].status == "OK" and (.steps[0].stdout | contains("tinypkg 1.0"))' "$res" >/dev/null ||
  fail "allowed wheel: $(jq -c '.steps[0] // .' "$res")"
jq -e '.steps[1].status == "RE" and (.steps[1].stderr | contains("reqeusts is not on the allowlist (pending approval); suspected look-alike of requests"))' \
  "$res" >/dev/null || fail "look-alike: $(jq -c '.steps[1]' "$res")"
jq -e '(.steps[2].stdout | contains("refused 10.202.0.1 3141") and contains("refused 10.202.0.2 22"))' \
  "$res" >/dev/null || fail "other addresses: $(jq -c '.steps[2]' "$res")"
# pip -r with hashes from a lockfile; a version not pinned, its file's URL
# asked for directly, an sdist under wheels-only: each refused with pip
# printing the reason, nothing installed
jq -e '.steps[4].status == "OK" and (.steps[4].stdout | contains("tiny_dep"))' "$res" >/dev/null ||
  fail "pip -r --require-hashes: $(jq -c '.steps[4]' "$res")"
jq -e '.steps[5].status == "RE" and (.steps[5].stdout | contains("from versions: 1.0)"))' "$res" >/dev/null ||
  fail "unpinned version: $(jq -c '.steps[5]' "$res")"
jq -e '.steps[6].status == "RE" and (.steps[6].stdout | contains("HTTP error 403"))' "$res" >/dev/null ||
  fail "direct GET: $(jq -c '.steps[6]' "$res")"
jq -e '(.steps[7].stdout | contains("an sdist, and only wheels are allowed") and contains("No such file"))' \
  "$res" >/dev/null || fail "sdist: $(jq -c '.steps[7]' "$res")"
jq -e -s --arg id "$id" '
  any(.[]; .job == $id and .file == "tinypkg-2.0-py3-none-any.whl" and .decision == "deny")
  and any(.[]; .job == $id and .name == "onlysdist" and .decision == "deny" and (.reason | contains("only wheels")))
  and any(.[]; .job == $id and .route == "file" and .name == "tiny-dep" and .decision == "allow")' \
  "$dir/audit.jsonl" >/dev/null || fail "audit of the refusals: $(cat "$dir/audit.jsonl")"
jq -e -s --arg id "$id" 'any(.[]; .job == $id and .route == "file" and .name == "tinypkg" and .decision == "allow")
  and any(.[]; .job == $id and .name == "reqeusts" and .decision == "deny" and .lookalike == "requests")
  and all(.[]; .peer | startswith("10.201."))' "$dir/audit.jsonl" >/dev/null ||
  fail "audit: $(cat "$dir/audit.jsonl")"
# every refusal audited with the job's id and a reason: a name not on the
# list (no look-alike), the listing that withheld a version not pinned,
# the direct GET of a file not allowed, each dropped connection
jq -e '.steps[8].stdout | contains("zzqx is not on the allowlist (pending approval)")
  and (contains("look-alike") | not) and contains("No such file")' "$res" >/dev/null ||
  fail "name not on the list: $(jq -c '.steps[8]' "$res")"
jq -e '.network.dropped | index("10.202.0.1:3141") and index("10.202.0.2:22")' "$res" >/dev/null ||
  fail "network.dropped: $(jq -c '.network' "$res")"
jq -e -s --arg id "$id" '
  any(.[]; .job == $id and .name == "zzqx" and .decision == "deny" and .pending and (has("lookalike") | not)
           and .reason == "zzqx is not on the allowlist (pending approval)") and
  any(.[]; .job == $id and .route == "project" and .name == "tinypkg" and .decision == "allow"
           and (.reason | contains("; not pinned, withheld: 2.0"))) and
  any(.[]; .job == $id and .route == "file" and .file == "tinypkg-2.0-py3-none-any.whl" and .decision == "deny"
           and .reason == "tinypkg-2.0-py3-none-any.whl is not on the allowlist") and
  any(.[]; .job == $id and .ecosystem == "net" and .route == "net" and .decision == "deny"
           and .file == "10.202.0.2:22" and (.reason | startswith("connection to 10.202.0.2:22 dropped"))) and
  any(.[]; .job == $id and .ecosystem == "net" and .file == "10.202.0.1:3141")' \
  "$dir/audit.jsonl" >/dev/null || fail "audit of every refusal: $(grep -F "$id" "$dir/audit.jsonl")"
[ "$("$bin" packages pending --dir "$dir" | grep -c '^python	zzqx==\*	job='"$id")" = 1 ] ||
  fail "zzqx pending once: $("$bin" packages pending --dir "$dir")"
# approved while the job ran: the job still refused (its allowlist is the
# one its first request got)
jq -e '.steps[9].status == "RE" and (.steps[9].stdout | contains("from versions: 1.0)"))' "$res" >/dev/null ||
  fail "approval changed the running job: $(jq -c '.steps[9]' "$res")"
jq -e -s --arg id "$id" --argjson t "$(cat "$tmp/approved_ms")" '[.[] | select(.job == $id and .route == "project"
  and .name == "tinypkg")] | last | .time_ms > $t + 1100' "$dir/audit.jsonl" >/dev/null ||
  fail "the last step asked before the approval took effect: $(cat "$tmp/approved_ms") $(grep -F "$id" "$dir/audit.jsonl" | tail -3)"
[ -z "$(ls -A "$dir/slots")" ] || fail "slot files left: $(ls "$dir/slots")"
jq -e '.network.packages | sort == ["python:tiny-dep==0.1", "python:tinypkg==1.0"]' "$res" > /dev/null ||
  fail "network.packages: $(jq -c '.network' "$res")"
! ip link show agw0 > /dev/null 2>&1 || fail "agw0 left after the command"
echo "python startup imports (us, self/cumulative): $(jq -r '.steps[3].stdout' "$res" | tr '\n' ' ')"
"$bin" packages pending --dir "$dir" | grep -q "reqeusts==\*	job=$id" || fail "pending: $("$bin" packages pending --dir "$dir")"

# a second job after a pinned file's bytes changed in the mirror: refused
# (502 to pip, an integrity record with the job's id), never served
printf 'x' >> "$dir/mirror/python/tinypkg-1.0-py3-none-any.whl"
id2=gw-vm2-$$-$RANDOM
jq -nc --arg id "$id2" '{id: $id, template: "python", network: "packages", limits: {wall_ms: 300000},
    steps: [{sh: "pip install --target /tmp/t6 tinypkg==1.0 2>&1; ls /tmp/t6 2>&1", timeout_ms: 200000},
            {sh: "pip install --target /tmp/t7 tinypkg==2.0 && PYTHONPATH=/tmp/t7 python3 -c \"import tinypkg; print(tinypkg.VALUE)\"",
             timeout_ms: 200000}]}' > "$tmp/jobs2.jsonl"
AIRLOCK_GATEWAY=$gw "$bin" batch --config "$tmp/airlock.conf" --workers 1 "$tmp/jobs2.jsonl" \
  > "$tmp/res2.jsonl" 2> "$tmp/batch2.err" || true
jq -e '(.steps[0].stdout | contains("HTTP error 502") and contains("No such file"))' "$tmp/res2.jsonl" >/dev/null ||
  fail "tampered file: $(jq -c '.steps[0] // .' "$tmp/res2.jsonl")"
jq -e -s --arg id "$id2" 'any(.[]; .job == $id and (.reason | startswith("integrity:")))' "$dir/audit.jsonl" >/dev/null ||
  fail "tampered file's audit: $(tail -3 "$dir/audit.jsonl")"
# a new job after the approval installs it
jq -e '.steps[1].status == "OK" and (.steps[1].stdout | contains("tinypkg 2.0"))' "$tmp/res2.jsonl" >/dev/null ||
  fail "approved version in a new job: $(jq -c '.steps[1] // .' "$tmp/res2.jsonl")"
echo ok
