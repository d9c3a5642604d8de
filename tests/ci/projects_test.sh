#!/bin/bash
# projects_test.sh: real third-party projects built and tested in Airlock
# and on the host, verdicts and test counts equal (issue 38).
#
# Each project is a Debian source package's upstream tarball, fetched
# through this machine's own apt sources (their `deb` entries read as
# `deb-src`, with a private apt state: the machine's apt config is not
# touched and no mirror's name is in this repository) and cached in
# $AIRLOCK_TEST_STATE/ci-src. Each runs twice: as it is, and a copy with
# a bug put in whose tests must fail. On the host the same steps run in a
# temp dir with the same toolchain versions (Debian 12's, as in the
# guest); in Airlock one job a copy, through `airlock batch --workers 2
# --exit-code` (embedded Redis and workers, real VMs), the tarball as a
# `files` entry. Equal means: the same verdict (every step exited 0, or
# not) and the same count of the project's own "test passed" lines.
#
# CI runs zlib (configure, make, make test: 3 tests; the bug flips a byte
# of uncompress()'s output). AIRLOCK_FULL=1 is for more projects later.
# Measured 2026-11-28 on the 2-core TCG host at load ~2: see
# tests/ci/CMakeLists.txt.
# usage: projects_test.sh AIRLOCK_BIN
set -euo pipefail

bin=$1
state=${AIRLOCK_TEST_STATE:-/var/tmp/airlock-test}
cache=$state/ci-src
tmp=$(mktemp -d /tmp/al-ciproj-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "projects: FAIL: $*" >&2; exit 1; }
log() { echo "projects: $*" >&2; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }

# The machine's apt sources as deb-src, in a private apt state dir.
apt_src() {
  local a=$tmp/apt f
  mkdir -p "$a/parts" "$a/lists/partial"
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f"
  done > "$a/parts/src.list"
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    sed 's/^Types:.*/Types: deb-src/' "$f" > "$a/parts/${f##*/}"
  done
  APT=(apt-get -q -o Dir::Etc::sourcelist=/dev/null
    -o Dir::Etc::sourceparts="$a/parts" -o Dir::State::Lists="$a/lists"
    -o APT::Sandbox::User=root)
  "${APT[@]}" update > "$a/update.log" 2>&1 ||
    { cat "$a/update.log" >&2; fail "apt-get update of the deb-src lists"; }
}

# fetch PKG: its upstream tarball's path in the cache (fetched once).
fetch() {
  local pkg=$1 t
  t=$(ls "$cache/$pkg"/*.orig.tar.* 2>/dev/null | head -1 || true)
  if [ -z "$t" ]; then
    [ -n "${APT:-}" ] || apt_src
    mkdir -p "$cache/$pkg.part"
    (cd "$cache/$pkg.part" && "${APT[@]}" source --download-only "$pkg") \
      > "$tmp/fetch-$pkg.log" 2>&1 ||
      { cat "$tmp/fetch-$pkg.log" >&2; fail "apt-get source $pkg"; }
    rm -rf "${cache:?}/$pkg"
    mv "$cache/$pkg.part" "$cache/$pkg"
    t=$(ls "$cache/$pkg"/*.orig.tar.* | head -1)
  fi
  # gzip, whatever upstream used: the guests' tar has gzip at hand, not
  # always bzip2 or xz
  if [ ! -f "$cache/$pkg.tar.gz" ]; then
    case $t in
      *.gz) cp "$t" "$cache/$pkg.tar.gz.part" ;;
      *.bz2) bzip2 -dc "$t" | gzip -n > "$cache/$pkg.tar.gz.part" ;;
      *.xz) xz -dc "$t" | gzip -n > "$cache/$pkg.tar.gz.part" ;;
      *) fail "$pkg: what compression is $t?" ;;
    esac
    mv "$cache/$pkg.tar.gz.part" "$cache/$pkg.tar.gz"
  fi
  echo "$cache/$pkg.tar.gz"
}

# The projects: name, Debian source package, template, the shell steps
# (run in the unpacked tree; the tarball is src.tar.* in the work dir),
# the bug (a command run in the tree), the grep -c pattern of a passed
# test in the steps' output.
zlib_steps=('./configure --static' 'make -j1' 'make test')
zlib_bug='sed -i "s/^    return err == Z_STREAM_END ? Z_OK :/    if (err == Z_STREAM_END \&\& *destLen) dest[0] ^= 1;\n&/" uncompr.c && grep -q "dest.0. ^= 1" uncompr.c'
zlib_pass='\*\*\* zlib .*test OK \*\*\*'
projects=(zlib)

# The unpack step, the same on the host and in the VM: the tree is
# renamed `src` whatever the tarball calls it.
unpack='mkdir x && tar -xf src.tar -C x && mv x/* src && rmdir x'

# host NAME TARBALL BUG(0|1): "VERDICT COUNT" of the host's run.
host_run() {
  local name=$1 tarball=$2 bug=$3 d rc=0 s steps pass
  d=$tmp/host-$name-$bug
  mkdir -p "$d"
  cp "$tarball" "$d/src.tar"
  eval "steps=(\"\${${name}_steps[@]}\")"
  eval "pass=\$${name}_pass"
  (cd "$d" && eval "$unpack") || fail "host: unpack $name"
  if [ "$bug" = 1 ]; then
    (cd "$d/src" && eval "sh -c \"\$${name}_bug\"") || fail "host: the bug in $name"
  fi
  for s in "${steps[@]}"; do
    (cd "$d/src" && eval "$s") >> "$d/out.log" 2>&1 || { rc=$?; break; }
  done
  echo "$([ $rc = 0 ] && echo pass || echo fail) $(grep -c "$pass" "$d/out.log" || true)"
}

# The job of NAME (a copy with the bug when BUG=1), as one JSONL line.
job_of() {
  local name=$1 tarball=$2 bug=$3 steps s bugcmd=true
  eval "steps=(\"\${${name}_steps[@]}\")"
  [ "$bug" = 1 ] && eval "bugcmd=\$${name}_bug"
  {
    printf '%s\n' "$unpack" "cd src && $bugcmd"
    for s in "${steps[@]}"; do printf 'cd src && %s\n' "$s"; done
  } | jq -R . | jq -sc --arg id "$name-$bug" --rawfile b <(base64 -w0 "$tarball") '
    {id: $id, template: "c", files: {"src.tar": {base64: $b}},
     limits: {memory_mb: 512},
     steps: [.[] | {sh: ., timeout_ms: 600000}]}'
}

cat > "$tmp/airlock.conf" <<CONF
[sandbox]
state_dir = $state
[limits]
wall_ms_max = 3600000
CONF
export AIRLOCK_CONFIG=$tmp/airlock.conf
unset AIRLOCK_REDIS

declare -A want
: > "$tmp/jobs.jsonl"
for p in "${projects[@]}"; do
  pkg=$p
  t=$(fetch "$pkg")
  for bug in 0 1; do
    want[$p-$bug]=$(host_run "$p" "$t" "$bug")
    log "host: $p$([ "$bug" = 1 ] && echo ' (bug)'): ${want[$p-$bug]}"
    job_of "$p" "$t" "$bug" >> "$tmp/jobs.jsonl"
  done
done
t0=$(date +%s)
rc=0
"$bin" batch --workers 2 --exit-code -o "$tmp/out.jsonl" "$tmp/jobs.jsonl" \
  > "$tmp/batch.log" 2>&1 || rc=$?
log "airlock batch: exit $rc in $(( $(date +%s) - t0 )) s"
[ "$rc" = 3 ] || { cat "$tmp/batch.log" >&2
  jq -c '{id, status, error}' "$tmp/out.jsonl" >&2; fail "batch --exit-code gave $rc, want 3 (the bug copies fail)"; }
for p in "${projects[@]}"; do
  eval "pass=\$${p}_pass"
  for bug in 0 1; do
    r=$(jq -c --arg id "$p-$bug" 'select(.id == $id)' "$tmp/out.jsonl")
    [ -n "$r" ] || fail "no result for $p-$bug"
    st=$(echo "$r" | jq -r .status)
    case $st in OK | RE) ;; *) fail "$p-$bug: status $st: $(echo "$r" | jq -c '{error, steps: [.steps[]? | {status, exit_code}]}')" ;; esac
    n=$(echo "$r" | jq -r '.steps[]? | (.stdout, .stderr) |
      if type == "object" then (.base64 | @base64d) else (. // "") end' |
      grep -c "$pass" || true)
    got="$([ "$st" = OK ] && echo pass || echo fail) $n"
    log "airlock: $p$([ "$bug" = 1 ] && echo ' (bug)'): $got (status $st)"
    [ "$got" = "${want[$p-$bug]}" ] ||
      fail "$p-$bug: airlock says '$got', the host '${want[$p-$bug]}'"
  done
  [ "${want[$p-0]%% *}" = pass ] && [ "${want[$p-1]%% *}" = fail ] ||
    fail "$p: the host's verdicts are not pass, then fail: ${want[$p-0]} / ${want[$p-1]}"
done
log "ok: ${#projects[@]} project(s), each as it is and with a bug, the host's verdicts and counts"
