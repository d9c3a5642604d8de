#!/usr/bin/env bash
# fetch_real_test.sh AIRLOCK: `airlock packages fetch` from a real upstream,
# optional. It runs only when the environment names the upstream (this
# repository never names a registry's host):
#   AIRLOCK_TEST_PYPI_UPSTREAM  a PEP 503/691 simple index URL (.../simple/)
#   AIRLOCK_TEST_NPM_UPSTREAM   an npm registry URL
#   AIRLOCK_TEST_PYPI_PKG       what to fetch (default six==1.16.0)
#   AIRLOCK_TEST_NPM_PKG        likewise (default npm:is-number@7.0.0)
# and skips (77) when neither is set or the one set does not answer.
# Each package is fetched with --pin into a fresh packages dir: every
# file lands in the mirror, hash-checked, pinned, with a past mtime.
set -euo pipefail
bin=$1
py=${AIRLOCK_TEST_PYPI_UPSTREAM:-} npm=${AIRLOCK_TEST_NPM_UPSTREAM:-}
[ -n "$py$npm" ] || { echo "SKIP: set AIRLOCK_TEST_PYPI_UPSTREAM or AIRLOCK_TEST_NPM_UPSTREAM"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl"; exit 77; }
for u in $py $npm; do
  curl -s -o /dev/null --max-time 15 "$u" || { echo "SKIP: $u unreachable"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
printf '[packages]\npypi_upstream = %s\nnpm_upstream = %s\n' "$py" "$npm" > "$tmp/c.conf"
check() { # SPEC ECO
  AIRLOCK_CONFIG=$tmp/c.conf "$bin" packages fetch --pin --dir "$tmp/p" "$1" > "$tmp/out" ||
    fail "fetch $1"
  cat "$tmp/out"
  [ -s "$tmp/out" ] || fail "$1: nothing fetched"
  while read -r _ _ _ file sha; do
    f=$tmp/p/mirror/$2/$file
    [ "sha256=$(sha256sum "$f" | cut -c1-64)" = "$sha" ] || fail "$file: sha256"
    grep -q " $file ${sha#sha256=}" "$tmp/p/packages.allow" || fail "$file not pinned"
    [ "$(stat -c %Y "$f")" -lt "$(($(date +%s) - 86400))" ] || fail "$file: mtime not its upload time"
  done < "$tmp/out"
}
[ -z "$py" ] || check "${AIRLOCK_TEST_PYPI_PKG:-six==1.16.0}" python
[ -z "$npm" ] || check "${AIRLOCK_TEST_NPM_PKG:-npm:is-number@7.0.0}" npm
echo ok
