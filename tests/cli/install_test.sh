#!/usr/bin/env bash
# install_test.sh MODE BUILD_DIR SOURCE_DIR: `cmake --install` into a temp
# prefix, then check what an installed airlock needs without the trees.
#   files: the layout, the unit passes `systemd-analyze verify`, man pages
#          and bash completion are there, and the installed binary finds
#          its templates under its own prefix, not the source tree's
#   job:   with the source and build trees hidden (a tmpfs over the source
#          tree in a mount namespace of its own), the installed binary runs
#          a job: `airlock run -- python3 -c 'print(6*7)'` prints 42
# Needs root (the mount namespace); job needs root's images (quickstart).
set -euo pipefail
mode=$1 build=$2 src=$3
tmp=$(mktemp -d /var/tmp/airlock-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pfx=$tmp/prefix
cmake --install "$build" --prefix "$pfx" > "$tmp/install.log" ||
  fail "cmake --install: $(cat "$tmp/install.log")"

if [ "$mode" = files ]; then
  for f in bin/airlock libexec/airlock/build-image.sh \
           share/airlock/templates/python.conf etc/airlock/airlock.conf \
           lib/systemd/system/airlock.service share/man/man1/airlock.1 \
           share/man/man1/airlock-doctor.1 \
           share/bash-completion/completions/airlock; do
    [ -e "$pfx/$f" ] || fail "not installed: $f"
  done
  # the unit names this install's prefix (--prefix, not the configure
  # time's) and the config the installed CLI reads by itself (issue 27)
  unit=$pfx/lib/systemd/system/airlock.service
  grep -q '^Type=notify$' "$unit" || fail "unit: not Type=notify"
  grep -q '^Restart=on-failure$' "$unit" || fail "unit: no Restart=on-failure"
  grep -qx "ExecStart=$pfx/bin/airlock serve --config $pfx/etc/airlock/airlock.conf" "$unit" ||
    fail "unit: $(grep ExecStart "$unit")"
  grep -qx "EnvironmentFile=-$pfx/etc/airlock/airlock.env" "$unit" ||
    fail "unit: $(grep EnvironmentFile "$unit")"
  MANPATH=$pfx/share/man systemd-analyze verify "$unit" ||
    fail "systemd-analyze verify"
  out=$(cd / && env -u AIRLOCK_CONFIG "$pfx/bin/airlock" config | head -1)
  [ "$out" = "# airlock effective config: $pfx/etc/airlock/airlock.conf" ] ||
    fail "installed CLI reads: $out"
  # a package: DESTDIR with the prefix /usr puts the config in /etc, and
  # unit and CLI agree on it
  DESTDIR=$tmp/pkg cmake --install "$build" --prefix /usr > "$tmp/install2.log" ||
    fail "cmake --install DESTDIR: $(cat "$tmp/install2.log")"
  [ -e "$tmp/pkg/etc/airlock/airlock.conf" ] || fail "DESTDIR: no etc/airlock"
  grep -qx "ExecStart=/usr/bin/airlock serve --config /etc/airlock/airlock.conf" \
    "$tmp/pkg/usr/lib/systemd/system/airlock.service" || fail "DESTDIR unit"
  # data relative to the prefix: the templates dir is the installed one
  out=$(cd / && env -u AIRLOCK_TEMPLATES_DIR "$pfx/bin/airlock" config --config "$pfx/etc/airlock/airlock.conf")
  grep -q "^# empty means $pfx/share/airlock/templates$" <<<"$out" ||
    fail "installed binary's templates dir: $(grep -B1 "^dir" <<<"$out")"
  # and only the installed one: with it gone, still the prefix's path,
  # never the build tree's (issue 23, finding 11)
  mv "$pfx/share/airlock/templates" "$tmp/templates.away"
  out=$(cd / && env -u AIRLOCK_TEMPLATES_DIR "$pfx/bin/airlock" config --config "$pfx/etc/airlock/airlock.conf")
  mv "$tmp/templates.away" "$pfx/share/airlock/templates"
  grep -q "^# empty means $pfx/share/airlock/templates$" <<<"$out" ||
    fail "installed binary fell back to: $(grep "^# empty means" <<<"$out")"
  # every command of the table has a page and a completion entry
  for c in $("$pfx/bin/airlock" --help | sed -n 's/^  \([a-z]\+\) .*/\1/p'); do
    [ -e "$pfx/share/man/man1/airlock-$c.1" ] || fail "no man page for $c"
    grep -q "^    $c) opts=" "$pfx/share/bash-completion/completions/airlock" ||
      fail "no completion for $c"
  done
  out=$(bash -c "source $pfx/share/bash-completion/completions/airlock
    COMP_WORDS=(airlock doctor --j); COMP_CWORD=2; _airlock; echo \${COMPREPLY[*]}")
  [ "$out" = "--json" ] || fail "completion of 'airlock doctor --j': '$out'"
  echo "install files: ok"
  exit 0
fi

[ -e /var/lib/airlock/images/python ] || { echo "SKIP: no images in /var/lib/airlock"; exit 77; }
out=$(cd / && unshare --mount --propagation private bash -c '
  mount -t tmpfs none "$1" || exit 99
  [ -e "$1/CMakeLists.txt" ] && exit 98
  env -u AIRLOCK_TEMPLATES_DIR -u AIRLOCK_CONFIG "$2/bin/airlock" run -- python3 -c "print(6*7)"
' _ "$src" "$pfx" 2> "$tmp/err") && rc=0 || rc=$?
[ "$rc" -eq 0 ] || fail "installed run: exit $rc: $(tail -5 "$tmp/err")"
[ "$out" = 42 ] || fail "installed run printed '$out'"
echo "install job: ok"
