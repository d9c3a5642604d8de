#!/usr/bin/env bash
# vm_test.sh AIRLOCK GATEWAY AGENT SRC: pip in a job's microVM through the
# package gateway (docs/packages.md, "The VM path"). In a network
# namespace of its own (unshare -n: the host's tables are never touched):
# the gateway in a namespace of its own behind a veth (10.202.0.2:3141), a
# `packages` policy allowing exactly that, a python template with pip
# (built into $AIRLOCK_TEST_STATE, cached by its hash). One job: pip
# installs an allowed wheel and imports it; a look-alike name is refused
# with the reason in the step's output; the host's end and another port
# are refused; the audit records carry the job's id (the worker names the
# slot's address in STATE/packages/slots, the gateway reads it from there,
# never from the guest), and the slot's file is gone after the job.
# Slow under TCG (an image build the first time, ~80 s, and ~80 s of VM):
# runs with AIRLOCK_FULL=1 only.
set -euo pipefail
bin=$1 gw=$2 agent=$3 src=$4
[ "${AIRLOCK_FULL:-}" = 1 ] || { echo "SKIP: set AIRLOCK_FULL=1 (a VM under TCG, minutes)"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
state=${AIRLOCK_TEST_STATE:-/var/tmp/airlock-test}
tpl=$state/gw-templates
if [ -z "${IN_NETNS:-}" ]; then
  unshare -n true 2>/dev/null || { echo "SKIP: cannot unshare -n"; exit 77; }
  # a python template with pip, beside the state dir's images (the build
  # reads the host's apt sources: before the namespace)
  mkdir -p "$tpl"
  sed -e 's/^packages = \(.*\)$/packages = \1 python3-pip/' \
      -e 's/^description = .*/description = Python 3 with NumPy and pip (gateway tests)/' \
      "$src/configs/templates/python.conf" > "$tpl/pythonpip.conf"
  "$src/sandbox/image/build-image.sh" --template pythonpip --agent "$agent" \
    --state-dir "$state" --templates-dir "$tpl" > "$state/gw-image.log" 2>&1 ||
    { echo "FAIL: image build: $(tail -5 "$state/gw-image.log")" >&2; exit 1; }
  exec unshare -n env IN_NETNS=1 bash "$0" "$@"
fi
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }


ip link set lo up
dir=$state/packages
rm -rf "$dir"
python3 "$src/tests/gateway/mkpkg.py" "$tmp/pk"
"$bin" packages add --dir "$dir" --pin "$tmp/pk/tinypkg-1.0-py3-none-any.whl" > /dev/null
# the gateway's namespace, joined to this one by a veth
unshare -n sleep infinity &
gwns=$!
pids+=("$gwns")
sleep 0.2
ip link add gwh0 type veth peer name gwg0 netns "/proc/$gwns/ns/net"
ip addr add 10.202.0.1/30 dev gwh0
ip link set gwh0 up
nsenter -t "$gwns" -n sh -c 'ip link set lo up; ip addr add 10.202.0.2/30 dev gwg0;
  ip link set gwg0 up; ip route add default via 10.202.0.1'
nsenter -t "$gwns" -n "$gw" --dir "$dir" --listen 10.202.0.2:3141 > "$tmp/gw.out" 2> "$tmp/gw.err" &
pids+=("$!")
for _ in $(seq 50); do grep -qs listening "$tmp/gw.out" && break; sleep 0.1; done
grep -qs listening "$tmp/gw.out" || fail "gateway: $(cat "$tmp/gw.err")"

cat > "$tmp/airlock.conf" <<CONF
[sandbox]
state_dir = $state
[templates]
dir = $tpl
allowed = pythonpip
default = pythonpip
[network.packages]
allow = 10.202.0.2/32
ports = tcp/3141
CONF
id=gw-vm-$$-$RANDOM
pip='python3 -m pip --isolated install --no-cache-dir --disable-pip-version-check --index-url http://10.202.0.2:3141/pypi/simple/ --trusted-host 10.202.0.2'
probe='import socket, sys
for a, p in (("10.202.0.1", 3141), ("10.202.0.2", 22)):
    s = socket.socket(); s.settimeout(10)
    try:
        s.connect((a, p)); print("connected", a, p)
    except OSError as e:
        print("refused", a, p, e.errno)'
jq -nc --arg id "$id" --arg a "$pip --target /tmp/a tinypkg==1.0 && PYTHONPATH=/tmp/a python3 -c 'import tinypkg; print(tinypkg.VALUE)'" \
  --arg b "$pip --target /tmp/b reqeusts" --arg c "$probe" \
  '{id: $id, template: "pythonpip", network: "packages", limits: {wall_ms: 400000},
    steps: [{sh: $a, timeout_ms: 240000}, {sh: $b, timeout_ms: 120000},
            {cmd: ["python3", "-c", $c], timeout_ms: 60000}]}' > "$tmp/jobs.jsonl"
"$bin" batch --config "$tmp/airlock.conf" --workers 1 "$tmp/jobs.jsonl" > "$tmp/res.jsonl" 2> "$tmp/batch.err" || true
res=$tmp/res.jsonl
jq -e '.steps[0].status == "OK" and (.steps[0].stdout | contains("tinypkg 1.0"))' "$res" >/dev/null ||
  fail "allowed wheel: $(jq -c '.steps[0] // .' "$res")"
jq -e '.steps[1].status == "RE" and (.steps[1].stderr | contains("reqeusts is not on the allowlist (pending approval); suspected look-alike of requests"))' \
  "$res" >/dev/null || fail "look-alike: $(jq -c '.steps[1]' "$res")"
jq -e '(.steps[2].stdout | contains("refused 10.202.0.1 3141") and contains("refused 10.202.0.2 22"))' \
  "$res" >/dev/null || fail "other addresses: $(jq -c '.steps[2]' "$res")"
jq -e -s --arg id "$id" 'any(.[]; .job == $id and .route == "file" and .name == "tinypkg" and .decision == "allow")
  and any(.[]; .job == $id and .name == "reqeusts" and .decision == "deny" and .lookalike == "requests")
  and all(.[]; .peer | startswith("10.201."))' "$dir/audit.jsonl" >/dev/null ||
  fail "audit: $(cat "$dir/audit.jsonl")"
[ -z "$(ls -A "$dir/slots")" ] || fail "slot files left: $(ls "$dir/slots")"
"$bin" packages pending --dir "$dir" | grep -q "reqeusts==\*	job=$id" || fail "pending: $("$bin" packages pending --dir "$dir")"
echo ok
