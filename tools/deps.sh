#!/usr/bin/env bash
# deps.sh: install what Airlock needs to build, test and run, from Debian's
# packages through the machine's configured apt sources. Idempotent: when
# everything is present it does nothing (no apt-get update).
set -euo pipefail

pkgs=(
  build-essential cmake pkg-config clang      # toolchain, clang for fuzzing
  ccache                                      # tools/test.sh: rebuilds of a clone
  libmsgpack-dev libjansson-dev libcmocka-dev # results/, tests
  libhiredis-dev libuv1-dev libinih-dev       # dispatcher, config
  libsystemd-dev                              # serve's sd_notify
  zlib1g-dev                                  # eval: gzipped problems
  libexpat1-dev                               # worker: JUnit XML test reports
  python3-pytest                              # ci_reports: pytest on the host
  libnftables-dev libmicrohttpd-dev           # network policy, HTTP API
  libcurl4-openssl-dev                        # HTTP API result callbacks
  libzip-dev                                  # Judge0's additional_files
  prometheus                                  # promtool, in the HTTP tests
  redis-server                                # queue (tests, embedded mode)
  redis-sentinel                              # Sentinel HA (test_sentinel)
  python3-redis python3-msgpack               # clients/python
  python3-yaml                                # deploy_files: the k8s YAML
  runsc bubblewrap                            # peers in airlock-bench-queue
  qemu-system-x86 qemu-utils                  # the VMM
  mmdebstrap e2fsprogs cpio kmod jq util-linux # guest image builder
  libssl-dev python3-pip npm curl             # package gateway, its tests
  # headless Chromium: grade_class and grade_report screenshot the HTML
  # report (tests/grade/screenshot.py). 23 packages, 122 MB fetched, 412 MB
  # on disk, 22 s to install here (2026-11-28, without Recommends)
  chromium
)

missing=()
for p in "${pkgs[@]}"; do
  # npm: a machine whose nodejs bundles it (NodeSource's packages do, and
  # conflict with Debian's npm, which wants Debian's nodejs) has it already
  [ "$p" = npm ] && command -v npm >/dev/null && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
    missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "deps: installing ${missing[*]}" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
  --no-install-recommends "${missing[@]}" >/dev/null
