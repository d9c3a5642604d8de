#!/usr/bin/env bash
# npm_test.sh AIRLOCK GATEWAY SRC: the package gateway with the real npm
# (Debian's npm) on the host against 127.0.0.1, never a registry: npm
# install and npm ci of a pinned version; the documents list only pinned
# versions with dist-tags.latest the newest of them, dist.tarball at the
# gateway and dist.integrity the tarball's own sha512; refusals (a name
# not on the list, a look-alike, a package with an install script under
# npm.no-install-scripts, a lockfile URL of a file not pinned, a tampered
# tarball) with the reason npm prints; an install script approved for
# one version (approve --allow-scripts) installs, and runs.
set -euo pipefail
bin=$1 gw=$2 src=$3
command -v npm >/dev/null || { echo "SKIP: no npm"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
tmp=$(mktemp -d)
chmod 755 "$tmp"
gwpid=
cleanup() {
  [ -n "$gwpid" ] && kill "$gwpid" 2>/dev/null && wait "$gwpid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/gw.err" ] && tail -20 "$tmp/gw.err" >&2; exit 1; }

python3 "$src/tests/gateway/mkpkg.py" "$tmp/pk"
dir=$tmp/packages
"$bin" packages add --dir "$dir" "$tmp"/pk/*.tgz > /dev/null
"$bin" packages add --dir "$dir" --pin "$tmp/pk/tiny-npm-1.0.0.tgz" "$tmp/pk/tiny-hook-1.0.0.tgz" > /dev/null

"$gw" --dir "$dir" --listen 127.0.0.1:0 --uid 1199999 > "$tmp/gw.out" 2> "$tmp/gw.err" &
gwpid=$!
for _ in $(seq 50); do grep -qs listening "$tmp/gw.out" && break; sleep 0.1; done
port=$(sed -n 's/^listening on 127.0.0.1://p' "$tmp/gw.out")
[ -n "$port" ] || fail "gateway did not start"
url=http://127.0.0.1:$port
# an empty user config: nothing of this host's npm set-up applies; no
# retries (npm waits 10 s and more before retrying a 502)
npmq() { (cd "$tmp/proj" && npm --registry "$url/" --cache "$tmp/cache" --userconfig /dev/null \
            --no-audit --no-fund --no-update-notifier --fetch-retries 0 "$@"); }
mkdir "$tmp/proj"
echo '{"name":"proj","version":"1.0.0","private":true}' > "$tmp/proj/package.json"

# 1. a pinned version installs and loads; the lockfile points at us
npmq install tiny-npm@1.0.0 > "$tmp/n1" 2>&1 || fail "npm install: $(cat "$tmp/n1")"
[ "$(cd "$tmp/proj" && node -e 'process.stdout.write(require("tiny-npm"))')" = "tiny-npm 1.0.0" ] || fail "require"
want=sha512-$(openssl dgst -sha512 -binary "$tmp/pk/tiny-npm-1.0.0.tgz" | base64 -w0)
jq -e --arg i "$want" --arg u "$url/tiny-npm/-/tiny-npm-1.0.0.tgz" \
  '.packages."node_modules/tiny-npm" | .integrity == $i and .resolved == $u' \
  "$tmp/proj/package-lock.json" >/dev/null || fail "lockfile: $(cat "$tmp/proj/package-lock.json")"
# the lockfile imports into an empty allowlist: the same file, by sha512
"$bin" packages add --dir "$tmp/p2" "$tmp/pk/tiny-npm-1.0.0.tgz" > /dev/null
"$bin" packages import --dir "$tmp/p2" "$tmp/proj/package-lock.json" > "$tmp/imp" || fail "import: $(cat "$tmp/imp")"
grep -q "^npm    tiny-npm 1.0.0 tiny-npm-1.0.0.tgz $(sha256sum "$tmp/pk/tiny-npm-1.0.0.tgz" | cut -c1-64)\$" "$tmp/p2/packages.allow" ||
  fail "imported pins: $(cat "$tmp/p2/packages.allow")"
# 2. npm ci from that lockfile, cold cache
rm -rf "$tmp/proj/node_modules" "$tmp/cache"
npmq ci > "$tmp/n2" 2>&1 || fail "npm ci: $(cat "$tmp/n2")"
[ -f "$tmp/proj/node_modules/tiny-npm/index.js" ] || fail "npm ci installed nothing"

# the documents: only pinned versions, latest rewritten, Vary: Accept
curl -s "$url/tiny-npm" | jq -e '(.versions | keys) == ["1.0.0"] and ."dist-tags".latest == "1.0.0"
  and .time."1.0.0" and .versions."1.0.0".dist.tarball == "'"$url"'/tiny-npm/-/tiny-npm-1.0.0.tgz"' \
  >/dev/null || fail "full document: $(curl -s "$url/tiny-npm")"
curl -s -D "$tmp/h" -H 'Accept: application/vnd.npm.install-v1+json' "$url/tiny-npm" |
  jq -e '.versions."1.0.0".dist.integrity == "'"$want"'" and (has("time") | not)' >/dev/null || fail "abbreviated"
grep -qi '^Content-Type: application/vnd.npm.install-v1+json' "$tmp/h" || fail "abbreviated type"
grep -qi '^Vary: Accept' "$tmp/h" || fail "npm Vary"
# approving 1.1.0 makes it latest for new requests
"$bin" packages approve --npm --dir "$dir" tiny-npm==1.1.0 > /dev/null
sleep 1.1
curl -s "$url/tiny-npm" | jq -e '."dist-tags".latest == "1.1.0"' >/dev/null || fail "latest after approve"

# 3. refusals, with the reason npm prints
npmq install lodahs > "$tmp/n3" 2>&1 && fail "lodahs installed"
grep -q "404 Not Found - GET $url/lodahs - airlock package gateway refused: lodahs is not on the allowlist (pending approval); suspected look-alike of lodash" "$tmp/n3" ||
  fail "look-alike: $(cat "$tmp/n3")"
npmq install tiny-hook@1.0.0 > "$tmp/n4" 2>&1 && fail "install-script package installed"
grep -q "no version of tiny-hook can be served" "$tmp/n4" || fail "hook: $(cat "$tmp/n4")"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/tiny-hook/-/tiny-hook-1.0.0.tgz")" = 403 ] || fail "hook tarball served"
# a lockfile naming a tarball that is not pinned (npm ci fetches it directly)
cp "$tmp/proj/package-lock.json" "$tmp/lock.good"
sed -i 's/tiny-npm-1.0.0.tgz/tiny-npm-0.9.0.tgz/' "$tmp/proj/package-lock.json"
rm -rf "$tmp/proj/node_modules" "$tmp/cache"
npmq ci > "$tmp/n5" 2>&1 && fail "npm ci of an unpinned tarball"
grep -q "403 Forbidden - GET $url/tiny-npm/-/tiny-npm-0.9.0.tgz - airlock package gateway refused: tiny-npm-0.9.0.tgz is not on the allowlist" "$tmp/n5" ||
  fail "lockfile URL: $(cat "$tmp/n5")"
# a tampered tarball: gone from the document, refused on its URL
cp "$tmp/lock.good" "$tmp/proj/package-lock.json"
printf 'x' >> "$dir/mirror/npm/tiny-npm-1.0.0.tgz"
rm -rf "$tmp/proj/node_modules" "$tmp/cache"
npmq ci > "$tmp/n6" 2>&1 && fail "npm ci of a tampered tarball"
grep -q "502 Bad Gateway.*integrity" "$tmp/n6" || fail "tampered: $(cat "$tmp/n6")"
curl -s "$url/tiny-npm" | jq -e '(.versions | keys) == ["1.1.0"]' >/dev/null || fail "tampered version listed"
grep -q "INCIDENT job=@host mirror file npm/tiny-npm-1.0.0.tgz" "$tmp/gw.err" || fail "no INCIDENT"

# 4. an install script approved for one pinned version (approve
# --allow-scripts, an allow-scripts line): that version is served and
# installs, its script runs (npm's business, in a job's VM); the option
# still holds for every other version
"$bin" packages approve --dir "$dir" --allow-scripts tiny-hook@1.0.0 > "$tmp/as" ||
  fail "approve --allow-scripts: $(cat "$tmp/as")"
grep -qx "install scripts allowed: npm tiny-hook@1.0.0" "$tmp/as" || fail "approve --allow-scripts: $(cat "$tmp/as")"
grep -qx "allow-scripts tiny-hook 1.0.0" "$dir/packages.allow" || fail "no allow-scripts line: $(cat "$dir/packages.allow")"
"$bin" packages approve --dir "$dir" --allow-scripts tiny-hook@1.0.0 > /dev/null
[ "$(grep -c "^allow-scripts tiny-hook 1.0.0" "$dir/packages.allow")" = 1 ] || fail "allow-scripts twice"
grep -qx "option npm.no-install-scripts" "$dir/packages.allow" || fail "option gone"
sleep 1.1
mkdir "$tmp/proj2"
echo '{"name":"proj2","version":"1.0.0","private":true}' > "$tmp/proj2/package.json"
(cd "$tmp/proj2" && npm --registry "$url/" --cache "$tmp/cache2" --userconfig /dev/null --no-audit \
   --no-fund --no-update-notifier --fetch-retries 0 install tiny-hook@1.0.0) > "$tmp/n7" 2>&1 ||
  fail "approved install script: $(cat "$tmp/n7")"
[ -f "$tmp/proj2/node_modules/tiny-hook/hook-ran" ] || fail "the approved script did not run: $(cat "$tmp/n7")"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/tiny-hook/-/tiny-hook-1.0.0.tgz")" = 200 ] || fail "hook tarball refused"
curl -s -H 'Accept: application/vnd.npm.install-v1+json' "$url/tiny-hook" |
  jq -e '.versions."1.0.0".hasInstallScript == true' > /dev/null || fail "hasInstallScript"
# a line that is not one: the whole allowlist refused (never widened)
echo "allow-scripts tiny-hook" >> "$dir/packages.allow"
"$bin" packages approve --dir "$dir" --allow-scripts tiny-hook@1.0.0 > "$tmp/as2" 2>&1 && fail "bad line accepted"
grep -q "want allow-scripts NAME VERSION" "$tmp/as2" || fail "bad line: $(cat "$tmp/as2")"

jq -e -s 'any(.[]; .ecosystem == "npm" and .route == "tarball" and .decision == "allow" and .job == "@host")
  and any(.[]; .route == "tarball" and .name == "tiny-hook" and .decision == "allow")
  and any(.[]; .route == "doc" and .name == "tiny-npm" and (.reason | contains("; not pinned, withheld: 1.1.0")))
  and any(.[]; .name == "lodahs" and .lookalike == "lodash" and .pending)' "$dir/audit.jsonl" >/dev/null ||
  fail "audit"
echo ok
