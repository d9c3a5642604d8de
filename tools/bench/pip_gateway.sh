#!/usr/bin/env bash
# pip_gateway.sh AIRLOCK GATEWAY SRC [ROUNDS]: `pip install` of a 5-file
# dependency set (bench-a 1.0 requiring bench-b..e, tiny wheels made by
# tests/gateway/mkpkg.py) inside one job VM, through the package gateway
# (the python template's /etc/pip.conf) against `--no-index --find-links`
# from the same wheels placed in the job's work dir. One VM, ROUNDS
# (default 3) of each, alternating, each into a fresh --target; a first
# `pip --version` warms pip's own files. Prints each step's wall_ms and
# the medians (docs/performance.md, "pip through the gateway").
# Root; in a network namespace of its own (unshare -n); the embedded mode
# starts the gateway. AIRLOCK_TEST_STATE names the state dir (the python
# image must be built there: tests/gateway/vm_test.sh does it).
set -euo pipefail
bin=$(realpath "$1") gw=$(realpath "$2") src=$(realpath "$3") rounds=${4:-3}
state=${AIRLOCK_TEST_STATE:-/var/tmp/airlock-test}
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
if [ -z "${IN_NETNS:-}" ]; then
  exec unshare -n env IN_NETNS=1 bash "$0" "$@"
fi
ip link set lo up
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dir=$state/packages
rm -rf "$dir"
mkdir -p "$dir" "$tmp/wh"
python3 - "$src/tests/gateway" "$tmp/wh" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import mkpkg
out = sys.argv[2]
mkpkg.wheel(out, "bench-a", "1.0", requires=("bench-b==1.0", "bench-c==1.0", "bench-d==1.0", "bench-e==1.0"))
for n in "bcde":
    mkpkg.wheel(out, "bench-" + n, "1.0")
PY
"$bin" packages add --dir "$dir" --pin "$tmp"/wh/*.whl > /dev/null
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
steps='[{"sh": "pip --version", "timeout_ms": 120000}'
for i in $(seq "$rounds"); do
  steps+=", {\"sh\": \"pip install -q --no-cache-dir --no-index --find-links wh --target /tmp/l$i bench-a==1.0\", \"timeout_ms\": 90000}"
  steps+=", {\"sh\": \"pip install -q --no-cache-dir --target /tmp/g$i bench-a==1.0\", \"timeout_ms\": 90000}"
done
# python's start-up with setuptools' .pth (docs/packages.md, "pip in the
# python template"), three warm runs
steps+=', {"sh": "for i in 1 2 3; do python3 -X importtime -c pass 2>&1 | grep -E \"_distutils_hack|[|] site$\"; done", "timeout_ms": 120000}'
steps+=']'
files=$(cd "$tmp" && for f in wh/*.whl; do jq -n --arg p "$f" --arg b "$(base64 -w0 "$f")" '{($p): {base64: $b}}'; done | jq -s add)
jq -nc --argjson s "$steps" --argjson f "$files" \
  '{id: "bench-pip", template: "python", network: "packages", files: $f,
    limits: {wall_ms: 600000}, steps: $s}' > "$tmp/jobs.jsonl"
AIRLOCK_GATEWAY=$gw "$bin" batch --config "$tmp/airlock.conf" --workers 1 "$tmp/jobs.jsonl" \
  > "$tmp/res.jsonl" 2> "$tmp/batch.err" || true
jq -e '(.steps | length) > 0 and all(.steps[]; .status == "OK")' "$tmp/res.jsonl" > /dev/null ||
  { echo "FAIL: $(head -c 3000 "$tmp/res.jsonl") $(tail -3 "$tmp/batch.err")" >&2; exit 1; }
jq -r '.steps | to_entries[] | "step \(.key): \(.value.wall_ms) ms"' "$tmp/res.jsonl"
jq -r '.steps[-1].stdout' "$tmp/res.jsonl"
jq -r '.steps[1:-1] as $s
  | [range(0; $s | length; 2) | $s[.].wall_ms] | sort as $l
  | [range(1; $s | length; 2) | $s[.].wall_ms] | sort as $g
  | "find-links median \($l[($l | length) / 2 | floor]) ms \($l), gateway median \($g[($g | length) / 2 | floor]) ms \($g)"' "$tmp/res.jsonl"
jq -r '"network.packages: \(.network.packages | join(" "))"' "$tmp/res.jsonl"
grep -c '"job":"bench-pip"' "$dir/audit.jsonl" | sed 's/^/audit records of the job: /'
