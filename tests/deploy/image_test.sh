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
# About a minute or two here (58-108 s on the shared 2-core machine,
# 2026-11-28; 146 s with serve started as the manifests start it, at a
# load of 20:
# the packages from the mirror, an unpack, a tar), so CI runs it. Needs
# root (mmdebstrap's root mode, chroot) and the mirror of the apt sources.
set -euo pipefail
build=$(readlink -f "$1") src=$(readlink -f "$2")
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (mmdebstrap, chroot)"; exit 77; }
command -v mmdebstrap >/dev/null || { echo "SKIP: no mmdebstrap"; exit 77; }
tmp=$(mktemp -d /var/tmp/al-imagetest-XXXXXX)
cleanup() {
  set +e
  for m in proc dev sys; do mountpoint -q "$tmp/root/$m" && umount -l "$tmp/root/$m"; done
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
# Started the way the manifests start it (issue 37): the ConfigMap's
# config at /etc/airlock, Redis with the StatefulSet's command (a password,
# its AOF in /data), serve with the DaemonSet's command and $AIRLOCK_REDIS
# (the Service's name made 127.0.0.1); /health answers 200 through that
# Redis, which refuses a client without the password. A network namespace
# of its own: the manifests' ports cannot meet another test's.
/usr/bin/python3 - "$src/deploy/kubernetes/airlock.yaml" "$tmp" <<'PY' || fail "manifests unreadable"
import json, sys, yaml
k = {d["kind"]: d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
open(sys.argv[2] + "/airlock.conf", "w").write(k["ConfigMap"]["data"]["airlock.conf"])
ds = k["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]
rs = k["StatefulSet"]["spec"]["template"]["spec"]["containers"][0]
url = [e["value"] for e in ds["env"] if e["name"] == "AIRLOCK_REDIS"][0]
pw = "0123456789abcdef0123456789abcdef"
sub = lambda a: a.replace("$(REDIS_PASSWORD)", pw)
with open(sys.argv[2] + "/run.sh", "w") as f:
    f.write("redis=(%s)\nserve=(%s)\nurl=%s\npw=%s\n" % (
        " ".join("'%s'" % sub(a) for a in rs["command"]),
        " ".join("'%s'" % a for a in ds["command"]),
        sub(url).replace("redis.airlock.svc.cluster.local", "127.0.0.1"), pw))
PY
cat >"$tmp/health.py" <<'PY'
import urllib.request
urllib.request.urlopen("http://127.0.0.1:9464/health", timeout=2)
PY
mkdir -p "$tmp/root/etc/airlock" "$tmp/root/data" "$tmp/root/var/lib/airlock"
cp "$tmp/airlock.conf" "$tmp/root/etc/airlock/airlock.conf"
mount -t proc proc "$tmp/root/proc" && mount --rbind /dev "$tmp/root/dev" &&
  mount --rbind /sys "$tmp/root/sys" || fail "mounts"
unshare -n bash -c '
  set -u; root=$1; . "$2/run.sh"
  ip link set lo up
  chroot "$root" "${redis[@]}" >"$2/redis.log" 2>&1 & rp=$!
  sleep 1
  AIRLOCK_REDIS=$url chroot "$root" "${serve[@]}" >"$2/serve.log" 2>&1 & sp=$!
  ok=1
  for _ in $(seq 120); do
    /usr/bin/python3 "$2/health.py" 2>/dev/null && { ok=0; break; }
    sleep 0.5
  done
  chroot "$root" redis-cli -p 6379 ping 2>&1 | grep -q NOAUTH || { echo "redis without a password answers"; ok=1; }
  kill -TERM $sp; wait $sp; kill $rp; wait $rp
  exit $ok' _ "$tmp/root" "$tmp" || fail "serve as the DaemonSet starts it: no 200 on /health: $(tail -5 "$tmp/serve.log")"
echo "image: ok: built in ${secs} s, ${size} MiB; apt sources: $(echo $img_src); $got; serve and Redis as the manifests start them"
