#!/usr/bin/env bash
# build.sh BUILD_DIR OUT.tar: the container image of deploy/ (Kubernetes,
# Nomad) as a root filesystem tarball, built from Debian packages the way
# guest images are (mmdebstrap, sandbox/image/build-image.sh): no
# container registry, no Dockerfile, no base image pulled. Then
#
#   docker import OUT.tar airlock:local            (Nomad's docker driver)
#   podman import OUT.tar airlock:local &&
#     podman save --format oci-archive airlock:local > airlock-oci.tar &&
#     ctr -n k8s.io images import airlock-oci.tar  (Kubernetes, containerd)
#
# What goes in: Debian bookworm minbase; the packages whose libraries the
# built `airlock` links (found with ldd + dpkg -S, so the list follows the
# build); redis-server (the Redis of deploy/kubernetes, and redis-cli);
# qemu-system-x86 and what `airlock image build` needs on the node
# (mmdebstrap, e2fsprogs, cpio, kmod, jq); and `cmake --install BUILD_DIR
# --prefix /usr` (the binary, the guest agent, the image builder, the
# templates). Guest images are built on each node into the state dir
# (`airlock image build`), not baked in: they are per-node and large.
#
# Where the packages come from: this machine's apt sources (apt-config's
# sources.list and sources.list.d/*.list|*.sources, as for guest images),
# given to mmdebstrap as its mirrors; nothing else is fetched. Without
# them mmdebstrap would pick its own defaults (deb.debian.org and
# security.debian.org), which a machine with its own mirror or apt proxy
# may not reach. AIRLOCK_APT_SOURCES="FILE..." names other files.
#
# Needs root (mmdebstrap's root mode) and apt sources for bookworm; run
# from the source tree: deploy/image/build.sh build airlock-image.tar
set -euo pipefail
build=$(readlink -f "${1:?usage: build.sh BUILD_DIR OUT.tar}")
out=$(readlink -f "${2:?usage: build.sh BUILD_DIR OUT.tar}")
bin=$build/tools/airlock
[ -x "$bin" ] || { echo "build.sh: no $bin: build first" >&2; exit 2; }
tmp=$(mktemp -d /var/tmp/airlock-image.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# the runtime packages of the binary's shared libraries
pkgs=$(ldd "$bin" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
         dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib"
       done | cut -d: -f1 | sort -u | paste -sd, -)
[ -n "$pkgs" ] || { echo "build.sh: no packages found for $bin" >&2; exit 1; }
extra=redis-server,redis-tools,qemu-system-x86,qemu-utils,mmdebstrap,e2fsprogs,cpio,kmod,jq,ca-certificates

# the apt sources: this machine's (see the top)
read -r -a sources <<< "${AIRLOCK_APT_SOURCES:-}"
if [ ${#sources[@]} -eq 0 ]; then
  SL="" SP=""
  eval "$(apt-config shell SL Dir::Etc::sourcelist/f SP Dir::Etc::sourceparts/d)"
  if [ -n "$SL" ] && [ -s "$SL" ]; then sources+=("$SL"); fi
  if [ -n "$SP" ] && [ -d "$SP" ]; then
    for f in "$SP"/*.list "$SP"/*.sources; do
      if [ -s "$f" ]; then sources+=("$f"); fi
    done
  fi
fi
[ ${#sources[@]} -gt 0 ] || { echo "build.sh: no apt sources configured" >&2; exit 1; }

DESTDIR=$tmp/root cmake --install "$build" --prefix /usr > "$tmp/install.log"
mmdebstrap --variant=minbase --include="$pkgs,$extra" \
  --customize-hook="copy-in $tmp/root/usr /" \
  --customize-hook="copy-in $tmp/root/etc /" \
  --customize-hook='chroot "$1" /usr/bin/airlock --version' \
  bookworm "$out" "${sources[@]}"
echo "$out"
