#!/usr/bin/env bash
# boot-test.sh - cold-boot an Airlock image under QEMU TCG with the recommended
# command line (the reference for the dispatcher), for smoke tests and timing.
set -euo pipefail

readonly PROG="${0##*/}"
log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

usage() {
    cat <<EOF
Usage: $PROG [options] IMAGE_DIR [-- EXTRA_QEMU_ARGS...]

Boot IMAGE_DIR (a build-image.sh output directory, or the STATE_DIR/images/NAME
symlink) under QEMU TCG with the recommended command line.  The guest's
virtio-serial port org.airlock.agent is a Unix socket (QEMU is the server,
so connect to it after the guest starts; data the guest writes while nobody
is connected is dropped).  The serial console is written to a log file and
printed to stderr when QEMU exits.

Options:
  --socket PATH     agent socket path (default: TMPDIR/agent.sock)
  --console PATH    console log path (default: TMPDIR/console.log)
  --timeout SEC     kill QEMU after SEC seconds (default: 60; 0 = never)
  --mem MIB         guest memory (default: 512)
  --read-agent      connect to the agent socket (needs python3) and copy
                    whatever the guest writes to stdout; without a reader,
                    guest writes to the port block until someone connects
  --print-cmd       print the QEMU command (one argument per line) and exit
  -h, --help        show this help

Exit status: QEMU's (0 when the guest reboots/powers off, as -no-reboot
turns a reboot into an exit), 124 on timeout.
EOF
}

SOCK="" CONSOLE="" TIMEOUT=60 MEM=512 PRINT=0 READ=0 IMAGE=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --socket)   [[ $# -ge 2 ]] || die "--socket needs a value"; SOCK="$2"; shift 2 ;;
        --console)  [[ $# -ge 2 ]] || die "--console needs a value"; CONSOLE="$2"; shift 2 ;;
        --timeout)  [[ $# -ge 2 ]] || die "--timeout needs a value"; TIMEOUT="$2"; shift 2 ;;
        --mem)      [[ $# -ge 2 ]] || die "--mem needs a value"; MEM="$2"; shift 2 ;;
        --print-cmd) PRINT=1; shift ;;
        --read-agent) READ=1; shift ;;
        -h|--help)  usage; exit 0 ;;
        --)         shift; break ;;
        -*)         die "unknown option '$1' (see --help)" ;;
        *)          [[ -z "$IMAGE" ]] || die "more than one IMAGE_DIR given"; IMAGE="$1"; shift ;;
    esac
done
[[ -n "$IMAGE" ]] || die "IMAGE_DIR is required (see --help)"
[[ "$TIMEOUT" =~ ^[0-9]+$ ]] || die "--timeout must be a number of seconds"
[[ "$MEM" =~ ^[0-9]+$ ]] || die "--mem must be a number of MiB"
command -v jq >/dev/null 2>&1 || die "jq is required"
if [[ $READ -eq 1 ]]; then command -v python3 >/dev/null 2>&1 || die "--read-agent needs python3"; fi
command -v qemu-system-x86_64 >/dev/null 2>&1 || die "qemu-system-x86_64 is required (apt-get install qemu-system-x86)"

IMAGE="$(readlink -f -- "$IMAGE")"
MANIFEST="$IMAGE/manifest.json"
[[ -f "$MANIFEST" ]] || die "$IMAGE is not an image directory (no manifest.json)"
INITRD="$(jq -r '.initramfs.file' "$MANIFEST")"
CMDLINE="$(jq -r '.kernel_cmdline' "$MANIFEST")"
PORT="$(jq -r '.guest.agent_port' "$MANIFEST")"
for f in vmlinuz "$INITRD" rootfs.ext4; do
    [[ -f "$IMAGE/$f" ]] || die "$IMAGE/$f is missing"
done

TMP=""
if [[ -z "$SOCK" || -z "$CONSOLE" ]]; then
    TMP="$(mktemp -d "${TMPDIR:-/tmp}/airlock-boot.XXXXXX")"
    trap 'rm -rf -- "$TMP"' EXIT
fi
SOCK="${SOCK:-$TMP/agent.sock}"
CONSOLE="${CONSOLE:-$TMP/console.log}"

# The recommended command line; see README.md for why each flag is there.
QEMU=(
    qemu-system-x86_64
    -M pc -accel tcg -cpu max -m "$MEM" -smp 1
    -nodefaults -no-user-config -display none
    -serial "file:$CONSOLE"
    -kernel "$IMAGE/vmlinuz"
    -initrd "$IMAGE/$INITRD"
    -append "$CMDLINE"
    -drive "if=none,id=root,file=$IMAGE/rootfs.ext4,format=raw,readonly=on"
    -device "virtio-blk-pci,drive=root"
    -device virtio-serial-pci
    -chardev "socket,id=agent,path=$SOCK,server=on,wait=off"
    -device "virtserialport,chardev=agent,name=$PORT"
    -device virtio-rng-pci
    -no-reboot
    "$@"
)

if [[ $PRINT -eq 1 ]]; then
    printf '%s\n' "${QEMU[@]}"
    exit 0
fi

log "agent socket: $SOCK"
log "console log:  $CONSOLE"
start="$(date +%s%N)"
rm -f -- "$SOCK"
if [[ "$TIMEOUT" -gt 0 ]]; then
    timeout -k 5 "$TIMEOUT" "${QEMU[@]}" &
else
    "${QEMU[@]}" &
fi
qpid=$!
rpid=""
if [[ $READ -eq 1 ]]; then
    python3 -u - "$SOCK" <<'PY' &
import os, socket, sys, time
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
for _ in range(3000):            # QEMU creates the socket at startup
    try:
        s.connect(path)
        break
    except (FileNotFoundError, ConnectionRefusedError):
        time.sleep(0.01)
else:
    sys.exit("boot-test.sh: cannot connect to " + path)
try:
    while True:
        d = s.recv(65536)
        if not d:
            break
        sys.stdout.buffer.write(d)
        sys.stdout.flush()
except ConnectionResetError:
    pass
PY
    rpid=$!
fi
rc=0
wait "$qpid" || rc=$?
if [[ -n "$rpid" ]]; then
    sleep 0.2
    kill "$rpid" 2>/dev/null || true
    wait "$rpid" 2>/dev/null || true
fi
end="$(date +%s%N)"
if [[ -f "$CONSOLE" ]]; then
    log "---- console ----"
    cat -- "$CONSOLE" >&2
    log "-----------------"
fi
log "qemu exited with status $rc after $(( (end - start) / 1000000 )) ms"
exit "$rc"
