#!/usr/bin/env bash
# build-image.sh - build an Airlock guest image (kernel + initramfs + rootfs)
# for one template.  See sandbox/image/README.md for the full description.
#
# Output: STATE_DIR/images/NAME-HASH/{vmlinuz,initrd.cpio,rootfs.ext4,manifest.json}
#         STATE_DIR/images/NAME -> NAME-HASH   (symlink, replaced atomically)
# The image directory path is printed as the last line of stdout; all progress
# and diagnostics go to stderr.

set -euo pipefail
shopt -s nullglob

readonly PROG="${0##*/}"
SCRIPT_PATH="$(readlink -f -- "${BASH_SOURCE[0]}")"
readonly SCRIPT_PATH
SCRIPT_DIR="$(dirname -- "$SCRIPT_PATH")"
readonly SCRIPT_DIR

# ---------------------------------------------------------------------------
# Fixed build parameters.  They are part of this script, and this script's
# contents are part of the image hash, so changing any of them rebuilds.
# ---------------------------------------------------------------------------
readonly SUITE="bookworm"
readonly ARCH="amd64"
readonly KERNEL_META_PKG="linux-image-cloud-amd64"
readonly GUEST_UID=1000
readonly GUEST_GID=1000
readonly GUEST_USER="job"
readonly GUEST_HOME="/work"
readonly AGENT_PORT_NAME="org.airlock.agent"
# Modules the init must load, in the order given (dependencies are resolved
# and prepended by modprobe --show-depends).  virtio_pci: the transport for
# every other virtio device; virtio_blk: /dev/vda (root disk);
# virtio_console: the org.airlock.agent virtio-serial port;
# vmw_vsock_virtio_transport: AF_VSOCK; virtio_rng: entropy from the host;
# qemu_fw_cfg: the vsock token under /sys/firmware/qemu_fw_cfg (agent/serve.c);
# virtio_net: the NIC of a networked template (docs/network.md; a VM without
# one never probes it).
readonly GUEST_MODULES=(virtio_pci virtio_blk virtio_console vmw_vsock_virtio_transport virtio_rng qemu_fw_cfg virtio_net)
# The initramfs is an uncompressed newc cpio: measured faster to boot under
# TCG than gzip (see README.md), and the kernel is lz4 compressed anyway.
readonly INITRD_NAME="initrd.cpio"
# Recommended kernel command line (measured under TCG, see README.md).
# mitigations=off: no retpolines, RSB filling or swapgs barriers; under TCG
# each indirect branch through a retpoline is a TB lookup. A VM runs one
# job: the guest kernel/user line is not the boundary, the VM is
# (docs/architecture.md, trust table; docs/performance.md, "Warm clones").
readonly KERNEL_CMDLINE="console=ttyS0 panic=-1 quiet loglevel=3 tsc=reliable no_timer_check random.trust_cpu=on i8042.noaux i8042.nokbd i8042.nopnp i8042.dumbkbd 8250.nr_uarts=1 pci=lastbus=0 cryptomgr.notests mitigations=off"
# Packages every template gets on top of Debian's minbase variant.
readonly BASE_PACKAGES=()
# Paths dropped from the rootfs (dpkg path-exclude + a final sweep).
readonly DPKG_PATH_EXCLUDES=(
    "/usr/share/doc/*"
    "/usr/share/man/*"
    "/usr/share/info/*"
    "/usr/share/locale/*"
    "/usr/share/lintian/*"
    "/usr/share/linda/*"
    "/usr/share/bug/*"
    "/usr/share/menu/*"
)
# Licence texts stay (they are tiny and we redistribute the image).
readonly DPKG_PATH_INCLUDES=("/usr/share/doc/*/copyright")

# ---------------------------------------------------------------------------
log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

usage() {
    cat <<EOF
Usage: $PROG --template NAME --agent PATH --state-dir DIR [options]

Build a bootable Airlock guest image for template NAME: a Debian $SUITE
rootfs (rootfs.ext4, mounted read-only by the guest), Debian's cloud kernel
(vmlinuz) and an initramfs ($INITRD_NAME) whose /init is the agent binary.

Required:
  --template NAME       template to build; read from TEMPLATES_DIR/NAME.conf
  --agent PATH          static init binary, installed as /init in the initramfs
  --state-dir DIR       images go to DIR/images/NAME-HASH, DIR/images/NAME is
                        a symlink to the newest build

Options:
  --force               rebuild even if DIR/images/NAME-HASH already exists
  --templates-dir DIR   where NAME.conf lives
                        (default: <repo>/configs/templates)
  --sources FILE        apt sources file (one-line .list or deb822 .sources)
                        to build the rootfs from; repeatable.  Default: the
                        host's configured apt sources.
  -h, --help            show this help

The image is rebuilt only when one of its inputs changes: this script, the
template file, the agent binary, the kernel package version (as resolved by
apt-cache for $KERNEL_META_PKG) and the apt sources.  The last line printed
on stdout is the image directory.  Must run as root (the rootfs is built
with mmdebstrap in root mode so that file ownership is real).
EOF
}

# ---------------------------------------------------------------------------
# Argument parsing
# ---------------------------------------------------------------------------
TEMPLATE=""
AGENT=""
STATE_DIR=""
FORCE=0
TEMPLATES_DIR="$(readlink -m -- "$SCRIPT_DIR/../../configs/templates")"
SOURCES=()

need_arg() { [[ $# -ge 2 && -n "$2" ]] || die "option $1 needs a value (see --help)"; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        --template)      need_arg "$@"; TEMPLATE="$2"; shift 2 ;;
        --template=*)    TEMPLATE="${1#*=}"; shift ;;
        --agent)         need_arg "$@"; AGENT="$2"; shift 2 ;;
        --agent=*)       AGENT="${1#*=}"; shift ;;
        --state-dir)     need_arg "$@"; STATE_DIR="$2"; shift 2 ;;
        --state-dir=*)   STATE_DIR="${1#*=}"; shift ;;
        --templates-dir) need_arg "$@"; TEMPLATES_DIR="$2"; shift 2 ;;
        --templates-dir=*) TEMPLATES_DIR="${1#*=}"; shift ;;
        --sources)       need_arg "$@"; SOURCES+=("$2"); shift 2 ;;
        --sources=*)     SOURCES+=("${1#*=}"); shift ;;
        --force)         FORCE=1; shift ;;
        -h|--help)       usage; exit 0 ;;
        --)              shift; break ;;
        *)               die "unknown argument: '$1' (see --help)" ;;
    esac
done
[[ $# -eq 0 ]] || die "unexpected argument: '$1' (see --help)"

[[ -n "$TEMPLATE" ]]  || die "--template is required (see --help)"
[[ -n "$AGENT" ]]     || die "--agent is required (see --help)"
[[ -n "$STATE_DIR" ]] || die "--state-dir is required (see --help)"
[[ "$TEMPLATE" =~ ^[a-z0-9][a-z0-9_.-]{0,63}$ ]] \
    || die "invalid template name '$TEMPLATE' (allowed: [a-z0-9][a-z0-9_.-]*, at most 64 chars, as for jobs)"

# the template first: a user's mistake is named before the host's
CONF="$TEMPLATES_DIR/$TEMPLATE.conf"
[[ -f "$CONF" && -r "$CONF" ]] || die "template '$TEMPLATE' not found: no readable $CONF"

[[ "$(id -u)" -eq 0 ]] || die "must run as root (mmdebstrap root mode, mkfs.ext4 -d with real ownership)"

for cmd in mmdebstrap apt-get apt-cache apt-config dpkg-deb dpkg-query depmod modprobe \
           mkfs.ext4 cpio sha256sum flock jq findmnt mknod; do
    command -v "$cmd" >/dev/null 2>&1 \
        || die "required command '$cmd' not found (apt-get install mmdebstrap e2fsprogs cpio kmod jq util-linux)"
done

AGENT="$(readlink -f -- "$AGENT")" || die "cannot resolve --agent path"
[[ -f "$AGENT" && -r "$AGENT" ]] || die "agent binary '$AGENT' is not a readable file"
[[ -s "$AGENT" ]] || die "agent binary '$AGENT' is empty"
# The guest has no dynamic loader in the initramfs: the agent must be static.
if [[ "$(head -c 4 -- "$AGENT" | od -An -tx1 | tr -d ' \n')" != "7f454c46" ]]; then
    die "agent '$AGENT' is not an ELF binary"
fi
if command -v readelf >/dev/null 2>&1 && readelf -lW -- "$AGENT" 2>/dev/null | grep -q 'INTERP'; then
    die "agent '$AGENT' is dynamically linked; /init must be a static binary"
fi

# findmnt escapes whitespace in mount points; keep the mount-safety checks exact.
[[ "$(readlink -m -- "$STATE_DIR")" != *[[:space:]\\]* ]] || die "state dir '$STATE_DIR' must not contain whitespace or backslashes"
mkdir -p -- "$STATE_DIR" || die "cannot create state dir '$STATE_DIR'"
STATE_DIR="$(readlink -f -- "$STATE_DIR")"
IMAGES_DIR="$STATE_DIR/images"
mkdir -p -- "$IMAGES_DIR"

# ---------------------------------------------------------------------------
# Template file: "key = value" lines, '#' starts a comment line.
# ---------------------------------------------------------------------------
T_DESCRIPTION=""
T_PACKAGES=""
T_WARMUP=""
T_CLONE_WARMUP=""
T_ZYGOTE=""
T_GATEWAY=""
lineno=0
while IFS= read -r line || [[ -n "$line" ]]; do
    lineno=$((lineno + 1))
    line="${line%$'\r'}"
    # strip leading/trailing whitespace
    line="${line#"${line%%[![:space:]]*}"}"
    line="${line%"${line##*[![:space:]]}"}"
    [[ -z "$line" || "$line" == \#* || "$line" == \;* ]] && continue
    [[ "$line" == \[*\] ]] && continue   # tolerate an INI section header
    [[ "$line" == *=* ]] || die "$CONF:$lineno: expected 'key = value'"
    key="${line%%=*}"; val="${line#*=}"
    key="${key%"${key##*[![:space:]]}"}"
    val="${val#"${val%%[![:space:]]*}"}"
    case "$key" in
        description) T_DESCRIPTION="$val" ;;
        packages)    T_PACKAGES="$val" ;;
        warmup)      T_WARMUP="$val" ;;
        clone_warmup) T_CLONE_WARMUP="$val" ;;
        zygote)      T_ZYGOTE="$val" ;;
        gateway)     T_GATEWAY="$val" ;;
        language)    ;;   # read by the host (docs/languages.md), not the build
        *) die "$CONF:$lineno: unknown key '$key' (known: description, packages, warmup, clone_warmup, zygote, gateway, language)" ;;
    esac
done < "$CONF"
[[ -n "$T_DESCRIPTION" ]] || die "$CONF: missing 'description = ...'"
[[ -n "$T_PACKAGES" ]]    || die "$CONF: missing 'packages = ...'"
read -r -a PKGS <<< "$T_PACKAGES"
# gateway: the package gateway's address (docs/packages.md), http://IPv4:PORT
if [[ -n "$T_GATEWAY" ]]; then
    [[ "$T_GATEWAY" =~ ^http://([0-9]{1,3}(\.[0-9]{1,3}){3}):[0-9]{1,5}$ ]] ||
        die "$CONF: gateway: not http://IPv4:PORT: $T_GATEWAY"
    GW_HOST="${BASH_REMATCH[1]}"
fi
for p in "${PKGS[@]}"; do
    [[ "$p" =~ ^[a-z0-9][a-z0-9+.-]+$ ]] || die "$CONF: invalid Debian package name '$p'"
done
PKGS=("${BASE_PACKAGES[@]}" "${PKGS[@]}")

# ---------------------------------------------------------------------------
# Apt sources: the host's configuration unless --sources was given.
# ---------------------------------------------------------------------------
if [[ ${#SOURCES[@]} -eq 0 ]]; then
    SL="" SP=""
    eval "$(apt-config shell SL Dir::Etc::sourcelist/f SP Dir::Etc::sourceparts/d)"
    if [[ -n "$SL" && -s "$SL" ]]; then SOURCES+=("$SL"); fi
    if [[ -n "$SP" && -d "$SP" ]]; then
        for f in "$SP"/*.list "$SP"/*.sources; do
            if [[ -s "$f" ]]; then SOURCES+=("$f"); fi
        done
    fi
    [[ ${#SOURCES[@]} -gt 0 ]] || die "no apt sources configured on this host (and no --sources given)"
fi
for f in "${SOURCES[@]}"; do
    [[ -f "$f" && -r "$f" ]] || die "apt sources file '$f' is not readable"
    case "$f" in *.list|*.sources) ;; *) die "apt sources file '$f' must end in .list or .sources" ;; esac
done

# ---------------------------------------------------------------------------
# Kernel: the version apt-cache resolves for the cloud kernel meta package.
# ---------------------------------------------------------------------------
KPKG="$(apt-cache depends --important "$KERNEL_META_PKG" 2>/dev/null \
        | awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')" || true
[[ -n "$KPKG" ]] || die "apt-cache cannot resolve $KERNEL_META_PKG (run 'apt-get update' first?)"
KVER="${KPKG#linux-image-}"
KPKG_VERSION="$(apt-cache policy "$KPKG" | awk '$1 == "Candidate:" { print $2; exit }')"
[[ -n "$KPKG_VERSION" && "$KPKG_VERSION" != "(none)" ]] \
    || die "no installable candidate for $KPKG (run 'apt-get update' first?)"

# ---------------------------------------------------------------------------
# Image hash
# ---------------------------------------------------------------------------
sha_of() { sha256sum -- "$1" | awk '{ print $1 }'; }
SCRIPT_SHA="$(sha_of "$SCRIPT_PATH")"
CONF_SHA="$(sha_of "$CONF")"
AGENT_SHA="$(sha_of "$AGENT")"
SOURCES_SHA="$(for f in "${SOURCES[@]}"; do printf 'file %s\n' "${f##*/}"; cat -- "$f"; done | sha256sum | awk '{ print $1 }')"
HASH="$(printf 'airlock-image-v1\nscript %s\ntemplate %s\nconf %s\nagent %s\nkernel %s=%s\nsources %s\n' \
        "$SCRIPT_SHA" "$TEMPLATE" "$CONF_SHA" "$AGENT_SHA" "$KPKG" "$KPKG_VERSION" "$SOURCES_SHA" \
        | sha256sum | cut -c1-16)"
IMAGE_NAME="$TEMPLATE-$HASH"
IMAGE_DIR="$IMAGES_DIR/$IMAGE_NAME"
LINK="$IMAGES_DIR/$TEMPLATE"

image_complete() {
    local d="$1" f
    [[ -d "$d" && ! -L "$d" ]] || return 1
    for f in vmlinuz "$INITRD_NAME" rootfs.ext4 manifest.json; do
        [[ -f "$d/$f" && -s "$d/$f" ]] || return 1
    done
    jq -e --arg h "$HASH" '.hash == $h' "$d/manifest.json" >/dev/null 2>&1
}

update_link() {
    local tmp_link="$IMAGES_DIR/.$TEMPLATE.link.$$"
    rm -f -- "$tmp_link"
    ln -s -- "$IMAGE_NAME" "$tmp_link"
    mv -T -f -- "$tmp_link" "$LINK"   # rename(2): atomic replacement
}

# ---------------------------------------------------------------------------
# Lock: one build per template at a time.
# ---------------------------------------------------------------------------
LOCK_FILE="$IMAGES_DIR/.$TEMPLATE.lock"
exec {LOCK_FD}>>"$LOCK_FILE" || die "cannot open lock file $LOCK_FILE"
if ! flock -n "$LOCK_FD"; then
    log "another build of '$TEMPLATE' holds $LOCK_FILE; waiting"
    flock "$LOCK_FD" || die "cannot lock $LOCK_FILE"
fi

mounts_under() {   # prints mount points below $1, deepest first
    findmnt -rn -o TARGET | awk -v w="$1/" 'index($0, w) == 1' | sort -r
}
remove_tree() {    # unmount anything left below $1, then delete it
    local dir="$1" mp
    while IFS= read -r mp; do
        [[ -n "$mp" ]] || continue
        umount -l -- "$mp" 2>/dev/null || log "warning: cannot unmount $mp"
    done < <(mounts_under "$dir")
    if [[ -n "$(mounts_under "$dir")" ]]; then
        log "warning: mounts remain under $dir; not deleting it"
        return 1
    fi
    rm -rf --one-file-system -- "$dir"
}

# Leftovers of a build of this template that was killed (SIGKILL, power
# loss): safe to remove, we hold the template's lock.
for stale in "$IMAGES_DIR/.build-$TEMPLATE-"*; do
    [[ -d "$stale" && ! -L "$stale" ]] || continue
    log "removing stale build directory $stale"
    remove_tree "$stale" || die "cannot remove stale build directory $stale"
done

if [[ $FORCE -eq 0 ]] && image_complete "$IMAGE_DIR"; then
    log "image $IMAGE_NAME is up to date"
    [[ "$(readlink -- "$LINK" 2>/dev/null || true)" == "$IMAGE_NAME" ]] || update_link
    printf '%s\n' "$IMAGE_DIR"
    exit 0
fi

# ---------------------------------------------------------------------------
# Temp dir next to the output; removed on any exit.  mmdebstrap (root mode)
# mounts /proc, /sys and /dev inside the chroot: if we are interrupted while
# they are mounted, unmount them before deleting anything, and never let rm
# cross a filesystem boundary.
# ---------------------------------------------------------------------------
WORK="$(mktemp -d -- "$IMAGES_DIR/.build-$TEMPLATE-XXXXXX")"
# apt drops privileges to _apt while downloading: let it traverse (the
# finished image is world-readable anyway).
chmod 0755 -- "$WORK"
OLD_IMAGE=""
cleanup() {
    local rc=$?
    set +e
    trap - INT TERM HUP
    if [[ -n "${WORK:-}" && -d "$WORK" ]]; then
        remove_tree "$WORK"
    fi
    if [[ $rc -ne 0 ]]; then log "build of '$TEMPLATE' FAILED (exit $rc)"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

START_TS="$(date +%s)"
log "building $IMAGE_NAME (kernel $KPKG $KPKG_VERSION; packages: ${PKGS[*]})"
OUT="$WORK/out"
mkdir -p -- "$OUT"

# ---------------------------------------------------------------------------
# 1. Kernel package: download (not install) and unpack.
# ---------------------------------------------------------------------------
log "[1/5] downloading $KPKG=$KPKG_VERSION"
mkdir -p -- "$WORK/kdeb" "$WORK/kroot"
# apt drops privileges to _apt while downloading; let it write the dir.
if getent passwd _apt >/dev/null 2>&1; then chown _apt -- "$WORK/kdeb"; fi
( cd -- "$WORK/kdeb" && apt-get -q download "$KPKG=$KPKG_VERSION" ) >&2 \
    || die "apt-get download $KPKG=$KPKG_VERSION failed"
kdebs=("$WORK/kdeb"/*.deb)
[[ ${#kdebs[@]} -eq 1 ]] || die "expected one kernel .deb, found ${#kdebs[@]}"
dpkg-deb -x "${kdebs[0]}" "$WORK/kroot"
KROOT="$WORK/kroot"
KMODDIR="$KROOT/lib/modules/$KVER"
[[ -f "$KROOT/boot/vmlinuz-$KVER" ]] || die "kernel package has no boot/vmlinuz-$KVER"
[[ -d "$KMODDIR" ]] || die "kernel package has no lib/modules/$KVER"
cp -- "$KROOT/boot/vmlinuz-$KVER" "$OUT/vmlinuz"
chmod 0644 -- "$OUT/vmlinuz"

# ---------------------------------------------------------------------------
# 2. initramfs: /init (agent), modules + load order, mount points.
# ---------------------------------------------------------------------------
log "[2/5] initramfs"
depmod -b "$KROOT" "$KVER" || die "depmod failed for $KVER"
IR="$WORK/initramfs"
mkdir -p -- "$IR/dev" "$IR/proc" "$IR/sys" "$IR/newroot" "$IR/etc/airlock" "$IR/lib/modules/$KVER"
install -m 0755 -- "$AGENT" "$IR/init"
mknod -m 0600 "$IR/dev/console" c 5 1
declare -A SEEN=()
MODULE_PATHS=()
for m in "${GUEST_MODULES[@]}"; do
    deps="$(modprobe -d "$KROOT" -S "$KVER" --show-depends "$m")" \
        || die "kernel $KVER: cannot resolve module '$m'"
    while read -r kind path rest; do
        case "$kind" in
            builtin) continue ;;   # compiled into the kernel: nothing to load
            insmod) ;;
            *) die "unexpected modprobe output for '$m': $kind $path $rest" ;;
        esac
        [[ -z "$rest" ]] || die "module '$m' has modprobe options '$rest'; not supported"
        [[ "$path" == "$KMODDIR/"* ]] || die "module path '$path' outside $KMODDIR"
        rel="${path#"$KROOT"}"            # /lib/modules/KVER/kernel/...
        [[ -z "${SEEN[$rel]:-}" ]] || continue
        SEEN[$rel]=1
        case "$rel" in
            *.ko)     dst="$rel";       mkdir -p -- "$IR${dst%/*}"; cp -- "$path" "$IR$dst" ;;
            *.ko.xz)  dst="${rel%.xz}"; mkdir -p -- "$IR${dst%/*}"; xz -dc -- "$path" > "$IR$dst" ;;
            *.ko.zst) dst="${rel%.zst}"; mkdir -p -- "$IR${dst%/*}"; zstd -qdc -- "$path" > "$IR$dst" ;;
            *.ko.gz)  dst="${rel%.gz}"; mkdir -p -- "$IR${dst%/*}"; gzip -dc -- "$path" > "$IR$dst" ;;
            *) die "unknown module file type: $rel" ;;
        esac
        chmod 0644 -- "$IR$dst"
        MODULE_PATHS+=("$dst")
    done <<< "$deps"
done
[[ ${#MODULE_PATHS[@]} -gt 0 ]] || die "no modules resolved"
printf '%s\n' "${MODULE_PATHS[@]}" > "$IR/etc/airlock/modules"
# Reproducible archive: fixed mtimes, sorted names, root ownership.
find "$IR" -mindepth 1 -exec touch -h -d @0 -- {} +
( cd -- "$IR" && find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort \
    | cpio --quiet -o -H newc -R 0:0 --reproducible ) > "$OUT/$INITRD_NAME" \
    || die "cpio failed"
log "      ${#MODULE_PATHS[@]} modules: ${MODULE_PATHS[*]##*/}"

# ---------------------------------------------------------------------------
# 3. Root filesystem with mmdebstrap (root mode: real uid/gid on disk).
# ---------------------------------------------------------------------------
log "[3/5] rootfs: mmdebstrap $SUITE minbase + ${PKGS[*]}"
ROOT="$WORK/rootfs"
mm_args=(
    --mode=root
    --variant=minbase
    --architectures="$ARCH"
    --aptopt='APT::Install-Recommends "false"'
    --aptopt='APT::Install-Suggests "false"'
    --aptopt='Acquire::Languages "none"'
    # merged /usr via symlinks, without the usrmerge package (which drags perl in)
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
    # man pages are path-excluded, but openjdk's postinst makes a man1
    # alternative and fails without the directory (Debian #863199)
    --essential-hook='mkdir -p "$1/usr/share/man/man1"'
    --include="$(IFS=,; printf '%s' "${PKGS[*]}")"
)
for p in "${DPKG_PATH_EXCLUDES[@]}"; do mm_args+=(--dpkgopt="path-exclude=$p"); done
for p in "${DPKG_PATH_INCLUDES[@]}"; do mm_args+=(--dpkgopt="path-include=$p"); done
[[ -d /usr/share/mmdebstrap/hooks/merged-usr ]] || die "mmdebstrap merged-usr hook missing (mmdebstrap too old?)"
mmdebstrap "${mm_args[@]}" "$SUITE" "$ROOT" "${SOURCES[@]}" >&2 \
    || die "mmdebstrap failed"
# Belt and braces: mmdebstrap unmounts on success, but check.
if findmnt -rn -o TARGET | awk -v w="$ROOT/" 'index($0, w) == 1 { f = 1 } END { exit !f }'; then
    die "mounts left under $ROOT after mmdebstrap"
fi

log "[4/5] rootfs: users, mount points, cleanup"
# Unprivileged job user.
if awk -F: -v u="$GUEST_USER" -v id="$GUEST_UID" '$1 == u || $3 == id { f = 1 } END { exit !f }' "$ROOT/etc/passwd"; then
    die "rootfs already has user '$GUEST_USER' or uid $GUEST_UID"
fi
if awk -F: -v g="$GUEST_USER" -v id="$GUEST_GID" '$1 == g || $3 == id { f = 1 } END { exit !f }' "$ROOT/etc/group"; then
    die "rootfs already has group '$GUEST_USER' or gid $GUEST_GID"
fi
printf '%s:x:%d:%d:Airlock job:%s:/bin/sh\n' "$GUEST_USER" "$GUEST_UID" "$GUEST_GID" "$GUEST_HOME" >> "$ROOT/etc/passwd"
printf '%s:x:%d:\n' "$GUEST_USER" "$GUEST_GID" >> "$ROOT/etc/group"
if [[ -f "$ROOT/etc/shadow" ]]; then
    printf '%s:!:19000:0:99999:7:::\n' "$GUEST_USER" >> "$ROOT/etc/shadow"
fi
if [[ -f "$ROOT/etc/gshadow" ]]; then
    printf '%s:!::\n' "$GUEST_USER" >> "$ROOT/etc/gshadow"
fi
# Mount points (the rootfs is read-only in the guest).
for d in proc sys dev run sys/fs/cgroup; do
    mkdir -p -- "$ROOT/$d"; chmod 0755 -- "$ROOT/$d"
done
rm -rf --one-file-system -- "${ROOT:?}/tmp" && mkdir -m 1777 -- "$ROOT/tmp"
chmod 1777 -- "$ROOT/tmp"
rm -rf --one-file-system -- "${ROOT:?}${GUEST_HOME:?}" && mkdir -p -- "$ROOT$GUEST_HOME"
chown "$GUEST_UID:$GUEST_GID" -- "$ROOT$GUEST_HOME"
chmod 0755 -- "$ROOT$GUEST_HOME"
# Nothing of the build host may leak into the guest.
printf 'airlock\n' > "$ROOT/etc/hostname"
printf '127.0.0.1\tlocalhost airlock\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$ROOT/etc/hosts"
: > "$ROOT/etc/resolv.conf"
: > "$ROOT/etc/machine-id"
rm -f -- "$ROOT"/etc/apt/sources.list "$ROOT"/etc/apt/sources.list.d/*
rm -f -- "$ROOT"/etc/apt/apt.conf.d/99mmdebstrap "$ROOT"/etc/dpkg/dpkg.cfg.d/99mmdebstrap
# pip and npm ask the package gateway, and nothing else, with no option
# in the job: pip's index (plain HTTP to that one host; installs go to the
# job user's ~/.local, the root being read-only), npm's registry.
if [[ -n "$T_GATEWAY" ]]; then
    printf '[global]\nindex-url = %s/pypi/simple/\ntrusted-host = %s\ndisable-pip-version-check = true\nbreak-system-packages = true\n' \
        "$T_GATEWAY" "$GW_HOST" > "$ROOT/etc/pip.conf"
    printf 'registry=%s/\nfund=false\naudit=false\nupdate-notifier=false\n' "$T_GATEWAY" > "$ROOT/etc/npmrc"
    chmod 0644 -- "$ROOT/etc/pip.conf" "$ROOT/etc/npmrc"
fi
# Docs, manuals, locales, caches and logs.
find "$ROOT/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete 2>/dev/null || true
find "$ROOT/usr/share/doc" -mindepth 1 -depth -type d -empty -delete 2>/dev/null || true
for d in usr/share/man usr/share/info usr/share/locale usr/share/lintian usr/share/linda \
         usr/share/bug usr/share/menu var/cache/apt var/lib/apt/lists var/cache/debconf var/log; do
    if [[ -d "$ROOT/$d" ]]; then find "$ROOT/$d" -mindepth 1 ! -type d -delete; fi
done
rm -f -- "$ROOT"/var/lib/dpkg/*-old "$ROOT"/var/cache/debconf/*-old
mkdir -p -- "$ROOT/var/lib/apt/lists/partial"

# Package list with the versions actually installed.
PKG_TSV="$WORK/packages.tsv"
dpkg-query --admindir="$ROOT/var/lib/dpkg" -W \
    -f='${db:Status-Abbrev}\t${Package}\t${Version}\t${Architecture}\n' \
    | awk -F'\t' '$1 ~ /^ii/ { print $2 "\t" $3 "\t" $4 }' | LC_ALL=C sort > "$PKG_TSV"
for p in "${PKGS[@]}"; do
    awk -F'\t' -v p="$p" '$1 == p { f = 1 } END { exit !f }' "$PKG_TSV" \
        || die "package '$p' is not installed in the rootfs"
done

# ---------------------------------------------------------------------------
# 5. ext4 image: contents + ~10% + 16 MiB slack, no journal (read-only).
# ---------------------------------------------------------------------------
log "[5/5] rootfs.ext4"
USED_KB="$(du -sxk -- "$ROOT" | awk '{ print $1 }')"
NFILES="$(find "$ROOT" -xdev | wc -l)"
INODES=$(( NFILES + NFILES / 10 + 1024 ))
SIZE_MB=$(( (USED_KB + USED_KB / 20 + INODES / 4) / 1024 + 8 ))
FS_UUID="$(printf '%s' "$HASH" | sha256sum | sed -E 's/^(.{8})(.{4}).(.{3}).(.{3})(.{12}).*/\1-\2-4\3-8\4-\5/')"
for attempt in 1 2 3; do
    rm -f -- "$OUT/rootfs.ext4"
    if E2FSPROGS_FAKE_TIME="$START_TS" mkfs.ext4 -q -F -t ext4 -b 4096 -m 0 -N "$INODES" \
           -O ^has_journal -L "airlock-root" -U "$FS_UUID" \
           -E "root_owner=0:0,hash_seed=$FS_UUID" \
           -d "$ROOT" "$OUT/rootfs.ext4" "${SIZE_MB}M" >&2; then
        break
    fi
    [[ $attempt -lt 3 ]] || die "mkfs.ext4 failed"
    SIZE_MB=$(( SIZE_MB + SIZE_MB / 4 ))
    log "      mkfs.ext4 failed; retrying with ${SIZE_MB} MiB"
done
chmod 0644 -- "$OUT/rootfs.ext4"
if command -v e2fsck >/dev/null 2>&1; then
    e2fsck -fn -- "$OUT/rootfs.ext4" >/dev/null 2>&1 || die "e2fsck reports errors in rootfs.ext4"
fi

# ---------------------------------------------------------------------------
# Manifest (written last: its presence marks a complete image).
# ---------------------------------------------------------------------------
END_TS="$(date +%s)"
fsize() { stat -c %s -- "$1"; }
jq -n \
    --arg template "$TEMPLATE" \
    --arg description "$T_DESCRIPTION" \
    --arg warmup "${T_WARMUP:-}" \
    --arg clone_warmup "${T_CLONE_WARMUP:-}" \
    --arg zygote "${T_ZYGOTE:-}" \
    --arg hash "$HASH" \
    --arg suite "$SUITE" \
    --arg arch "$ARCH" \
    --arg built_at "$(date -u -d "@$END_TS" +%Y-%m-%dT%H:%M:%SZ)" \
    --argjson build_seconds "$(( END_TS - START_TS ))" \
    --arg script_sha "$SCRIPT_SHA" --arg conf_sha "$CONF_SHA" \
    --arg agent_sha "$AGENT_SHA" --arg sources_sha "$SOURCES_SHA" \
    --arg kpkg "$KPKG" --arg kpkg_version "$KPKG_VERSION" --arg kver "$KVER" \
    --arg initrd "$INITRD_NAME" \
    --arg cmdline "$KERNEL_CMDLINE" \
    --arg port "$AGENT_PORT_NAME" \
    --argjson vmlinuz_size "$(fsize "$OUT/vmlinuz")" \
    --argjson initrd_size "$(fsize "$OUT/$INITRD_NAME")" \
    --argjson rootfs_size "$(fsize "$OUT/rootfs.ext4")" \
    --argjson rootfs_used_kb "$USED_KB" \
    --argjson rootfs_files "$NFILES" \
    --argjson uid "$GUEST_UID" --argjson gid "$GUEST_GID" \
    --arg user "$GUEST_USER" --arg home "$GUEST_HOME" \
    --rawfile modules "$IR/etc/airlock/modules" \
    --rawfile packages "$PKG_TSV" \
    --argjson requested "$(printf '%s\n' "${PKGS[@]}" | jq -R . | jq -s .)" \
    '{
       format: 1,
       template: $template,
       description: $description,
       warmup: $warmup,
       clone_warmup: $clone_warmup,
       zygote: $zygote,
       hash: $hash,
       built_at: $built_at,
       build_seconds: $build_seconds,
       hash_inputs: {
         script_sha256: $script_sha, template_conf_sha256: $conf_sha,
         agent_sha256: $agent_sha, apt_sources_sha256: $sources_sha,
         kernel_package: ($kpkg + "=" + $kpkg_version)
       },
       distribution: { suite: $suite, arch: $arch, variant: "minbase" },
       kernel: { package: $kpkg, version: $kpkg_version, release: $kver, file: "vmlinuz" },
       initramfs: {
         file: $initrd, compression: "none", init: "/init",
         modules_list: "/etc/airlock/modules",
         modules: ($modules | split("\n") | map(select(length > 0)))
       },
       rootfs: {
         file: "rootfs.ext4", fstype: "ext4", device: "/dev/vda", read_only: true,
         used_kb: $rootfs_used_kb, files: $rootfs_files
       },
       guest: { user: $user, uid: $uid, gid: $gid, home: $home, agent_port: $port },
       sizes: { vmlinuz: $vmlinuz_size, initramfs: $initrd_size, rootfs: $rootfs_size },
       kernel_cmdline: $cmdline,
       packages_requested: $requested,
       packages: ($packages | split("\n") | map(select(length > 0) | split("\t")
                  | { name: .[0], version: .[1], arch: .[2] }))
     }' > "$OUT/manifest.json"

# ---------------------------------------------------------------------------
# Publish: rename into place, then repoint the symlink.
# ---------------------------------------------------------------------------
if [[ -e "$IMAGE_DIR" || -L "$IMAGE_DIR" ]]; then
    # --force, or an incomplete leftover: move it aside, delete after publish.
    OLD_IMAGE="$WORK/old"
    mv -T -- "$IMAGE_DIR" "$OLD_IMAGE"
fi
mv -T -- "$OUT" "$IMAGE_DIR"
update_link
log "done in $(( END_TS - START_TS ))s: rootfs $(( $(fsize "$IMAGE_DIR/rootfs.ext4") / 1048576 )) MiB," \
    "initramfs $(( $(fsize "$IMAGE_DIR/$INITRD_NAME") / 1024 )) KiB, ${#MODULE_PATHS[@]} modules"
printf '%s\n' "$IMAGE_DIR"
