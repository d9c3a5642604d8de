#!/usr/bin/env bash
# crafted_test.sh AIRLOCK GATEWAY SRC: an npm tarball npm reads otherwise
# than a first-match reader (a clean first package.json, a second one
# with a postinstall: mkpkg.py --crafted) is refused at every door:
# `packages add`; `approve` and `import` of one already in the mirror (a
# file added before the rules); and the gateway's serve of one pinned by
# hand, under npm.no-install-scripts.
set -euo pipefail
bin=$1 gw=$2 src=$3
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
tmp=$(mktemp -d)
chmod 755 "$tmp"
gwpid=
cleanup() {
  [ -n "$gwpid" ] && kill "$gwpid" 2>/dev/null && wait "$gwpid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
python3 "$src/tests/gateway/mkpkg.py" --crafted "$tmp/evil"
dir=$tmp/packages
evil=$tmp/evil/evil-dup-1.0.0.tgz
# add
if "$bin" packages add --dir "$dir" "$evil" > "$tmp/out" 2>&1; then
  fail "add took it: $(cat "$tmp/out")"
fi
# approve and import: the clean tarball added, then its bytes swapped
"$bin" packages add --dir "$dir" "$tmp/evil/clean/evil-dup-1.0.0.tgz" > /dev/null
cp "$evil" "$dir/mirror/npm/evil-dup-1.0.0.tgz"
if "$bin" packages approve --dir "$dir" --npm evil==1.0.0 > "$tmp/out" 2>&1; then
  fail "approve pinned it: $(cat "$tmp/out")"
fi
grep -q 'not a well-formed package' "$tmp/out" || fail "approve: $(cat "$tmp/out")"
sha512=$(python3 -c 'import base64, hashlib, sys
print(base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$evil")
cat > "$tmp/package-lock.json" <<JSON
{"lockfileVersion": 3, "packages": {"": {}, "node_modules/evil": {"version": "1.0.0",
 "integrity": "sha512-$sha512"}}}
JSON
if "$bin" packages import --dir "$dir" "$tmp/package-lock.json" > "$tmp/out" 2>&1; then
  fail "import pinned it: $(cat "$tmp/out")"
fi
! grep -q '^npm' "$dir/packages.allow" || fail "pinned: $(cat "$dir/packages.allow")"
# serve: pinned by hand, never served as scriptless
printf 'option npm.no-install-scripts\nnpm evil 1.0.0 evil-dup-1.0.0.tgz %s\n' \
  "$(sha256sum "$evil" | cut -c1-64)" >> "$dir/packages.allow"
"$gw" --dir "$dir" --listen 127.0.0.1:0 > "$tmp/gw.out" 2> "$tmp/gw.err" &
gwpid=$!
for _ in $(seq 50); do grep -qs listening "$tmp/gw.out" && break; sleep 0.1; done
port=$(sed -n 's/^listening on 127.0.0.1://p' "$tmp/gw.out")
[ -n "$port" ] || fail "gateway did not start: $(cat "$tmp/gw.err")"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/evil/-/evil-dup-1.0.0.tgz")
[ "$code" = 502 ] || fail "the gateway answered $code"
grep -q "evil-dup-1.0.0.tgz is not a readable npm tarball" "$dir/audit.jsonl" || fail "audit: $(tail -1 "$dir/audit.jsonl")"
echo ok
