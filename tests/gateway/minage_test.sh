#!/usr/bin/env bash
# minage_test.sh AIRLOCK GATEWAY SRC: option min-age-days with the real pip
# (on the host against 127.0.0.1, never a registry). A file released less
# than N days ago (the mirror file's mtime: the upstream's upload time
# after `fetch`, the time of `add` otherwise) is absent from the listings;
# pip is refused with the reason, its URL is refused (403) too, npm's
# document is refused with the reason in its body, and each refusal is an
# audit record whose reason starts with "too_new". An old enough file of
# the same allowlist installs; aging the file lets it through.
set -euo pipefail
bin=$1 gw=$2 src=$3
py=/usr/bin/python3
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
$py -m pip --version >/dev/null 2>&1 || { echo "SKIP: no python3-pip"; exit 77; }
tmp=$(mktemp -d)
chmod 755 "$tmp"
gwpid=
cleanup() {
  if [ -n "$gwpid" ]; then kill "$gwpid" 2>/dev/null; wait "$gwpid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/gw.err" ] && tail -20 "$tmp/gw.err" >&2; exit 1; }

python3 "$src/tests/gateway/mkpkg.py" "$tmp/pk"
dir=$tmp/packages
"$bin" packages add --dir "$dir" --pin "$tmp/pk/tinypkg-1.0-py3-none-any.whl" \
  "$tmp/pk/tiny_dep-0.1-py3-none-any.whl" "$tmp/pk/tiny-npm-1.0.0.tgz" > /dev/null
echo "option min-age-days=7" >> "$dir/packages.allow"
# tiny_dep was released long ago; the others just now (added)
touch -d '30 days ago' "$dir/mirror/python/tiny_dep-0.1-py3-none-any.whl"

"$gw" --dir "$dir" --listen 127.0.0.1:0 --uid 1199999 > "$tmp/gw.out" 2> "$tmp/gw.err" &
gwpid=$!
for _ in $(seq 50); do grep -qs listening "$tmp/gw.out" && break; sleep 0.1; done
port=$(sed -n 's/^listening on 127.0.0.1://p' "$tmp/gw.out")
[ -n "$port" ] || fail "gateway did not start"
url=http://127.0.0.1:$port
pip() { $py -m pip --isolated install --no-cache-dir --disable-pip-version-check \
          --index-url "$url/pypi/simple/" "$@"; }

# too new: pip says why, the file's URL is refused, npm's document too
pip --target "$tmp/t1" tinypkg==1.0 > "$tmp/p1" 2>&1 && fail "pip installed a too new release"
grep -q "too_new: released $(date -u +%Y-%m-%d)T.*, younger than 7 days (option min-age-days=7)" "$tmp/p1" ||
  fail "pip does not say why: $(cat "$tmp/p1")"
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/pypi/files/tinypkg-1.0-py3-none-any.whl")
[ "$code" = 403 ] || fail "direct GET of a too new file: $code"
curl -s "$url/tiny-npm" > "$tmp/npm"
grep -q '"error".*too_new: released' "$tmp/npm" || fail "npm document: $(cat "$tmp/npm")"
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/tiny-npm/-/tiny-npm-1.0.0.tgz")
[ "$code" = 403 ] || fail "direct GET of a too new tarball: $code"
# old enough: installs
pip --target "$tmp/t2" tiny-dep==0.1 > "$tmp/p2" 2>&1 || fail "pip old enough: $(cat "$tmp/p2")"
[ -d "$tmp/t2/tiny_dep" ] || fail "tiny_dep not installed"
# the audit: every refusal a too_new record
jq -e -s '[.[] | select(.decision == "deny")] | length >= 4 and
  all(.reason | startswith("too_new: released"))' "$dir/audit.jsonl" > /dev/null ||
  fail "audit: $(jq -c 'select(.decision == "deny") | [.route, .file, .reason]' "$dir/audit.jsonl")"
jq -e -s 'any(.route == "file" and .file == "tinypkg-1.0-py3-none-any.whl" and
  .decision == "deny" and .name == "tinypkg" and .version == "1.0")' "$dir/audit.jsonl" > /dev/null ||
  fail "no file record for tinypkg"
# the clock is the mirror file's mtime: aged 8 days, it is served
touch -d '8 days ago' "$dir/mirror/python/tinypkg-1.0-py3-none-any.whl"
pip --target "$tmp/t3" tinypkg==1.0 > "$tmp/p3" 2>&1 || fail "pip after 8 days: $(cat "$tmp/p3")"
"$bin" packages log --dir "$dir" --denied | grep -q "too_new" || fail "packages log shows no too_new"
echo ok
