#!/usr/bin/env bash
# image_test.sh BUILD_DIR SOURCE_DIR: deploy/image/build.sh really builds
# the container image, offline in the sense docs/deploy.md gives ("The
# image"): no container registry, nothing downloaded but Debian packages
# from this machine's apt sources. Then the result is checked:
#   - the tarball is there, a root filesystem (usr/bin/airlock, redis-server,
#     qemu-system-x86_64, mmdebstrap, the templates);
#   - its apt sources are this machine's (what mmdebstrap fetched from);
#   - `airlock --version` runs inside it (chroot), and says what the
#     build's binary says; so does `redis-server --version`.
# Prints the build's time and the tarball's size.
#
# About a minute here (58-108 s on the shared 2-core machine, 2026-11-28:
# the packages from the mirror, an unpack, a tar), so CI runs it. Needs
# root (mmdebstrap's root mode, chroot) and the mirror of the apt sources.
set -euo pipefail
build=$(readlink -f "$1") src=$(readlink -f "$2")
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (mmdebstrap, chroot)"; exit 77; }
command -v mmdebstrap >/dev/null || { echo "SKIP: no mmdebstrap"; exit 77; }
tmp=$(mktemp -d /var/tmp/al-imagetest-XXXXXX)
cleanup() {
  set +e
  for m in proc dev; do mountpoint -q "$tmp/root/$m" && umount -l "$tmp/root/$m"; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/build.log" ] && tail -20 "$tmp/build.log" >&2; exit 1; }

# no registry, no Dockerfile, no URL of its own: only mmdebstrap with
# the host's sources (no mirror argument)
grep -Eq 'docker (pull|build)|podman (pull|build)|^FROM |https?://' \
  <(grep -v '^#' "$src/deploy/image/build.sh") && fail "build.sh fetches something else"

t0=$SECONDS
(cd "$src" && deploy/image/build.sh "$build" "$tmp/airlock-image.tar") \
  > "$tmp/build.log" 2>&1 || fail "build.sh: exit $?"
secs=$((SECONDS - t0))
[ -s "$tmp/airlock-image.tar" ] || fail "no tarball"
size=$(du -m "$tmp/airlock-image.tar" | cut -f1)

mkdir "$tmp/root"
tar -C "$tmp/root" -xf "$tmp/airlock-image.tar" || fail "tarball does not extract"
for f in usr/bin/airlock usr/bin/redis-server usr/bin/qemu-system-x86_64 \
         usr/bin/mmdebstrap usr/share/airlock/templates/python.conf; do
  [ -e "$tmp/root/$f" ] || fail "not in the image: $f"
done
# the packages came from the sources this machine's apt is configured with
uris() { # ROOT: the URIs of ROOT's apt sources, one-line and deb822 formats
  local f
  for f in "$1/etc/apt/sources.list" "$1"/etc/apt/sources.list.d/*.list \
           "$1"/etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && cat "$f"
  done | sed -n -e 's/^deb \(\[[^]]*\] \)\?\([^ ]*\).*/\2/p' \
                -e 's/^URIs: *//p' | tr ' ' '\n' | sed 's|/*$||' | sort -u |
    grep . || true
}
host_src=$(uris /)
img_src=$(uris "$tmp/root")
[ -n "$img_src" ] || fail "the image names no apt source"
for u in $img_src; do
  grep -qxF "$u" <<<"$host_src" || fail "image's apt source $u is not this machine's ($host_src)"
done

want=$("$build/tools/airlock" --version)
got=$(chroot "$tmp/root" /usr/bin/airlock --version) || fail "airlock --version in the image: exit $?"
[ "$got" = "$want" ] || fail "image says '$got', the build '$want'"
chroot "$tmp/root" /usr/bin/redis-server --version > /dev/null ||
  fail "redis-server --version in the image"
echo "image: ok: built in ${secs} s, ${size} MiB; apt sources: $(echo $img_src); $got"
