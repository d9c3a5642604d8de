#!/usr/bin/env bash
# fetch_test.sh AIRLOCK SRC: `airlock packages fetch` from an upstream this
# test starts (tests/gateway/upstream.py over a directory laid out as a
# PEP 503/691 index and an npm registry, packages made by mkpkg.py), in a
# network namespace of its own (unshare -n): nothing leaves the machine.
# A fetched file is exactly an added one (same line, same pin), with its
# mtime the upstream's upload time; a hash mismatch, a file over the cap,
# a missing version, a redirect to another origin and no upstream
# configured are each refused with a clear message and add nothing.
set -euo pipefail
bin=$1 src=$2
if [ -z "${IN_NETNS:-}" ]; then
  command -v unshare >/dev/null && command -v python3 >/dev/null || { echo "SKIP: unshare, python3"; exit 77; }
  unshare -n true 2>/dev/null || { echo "SKIP: cannot unshare -n"; exit 77; }
  exec unshare -n env IN_NETNS=1 bash "$0" "$@"
fi
tmp=$(mktemp -d)
uppid=
cleanup() {
  if [ -n "$uppid" ]; then kill "$uppid" 2>/dev/null; wait "$uppid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ip link set lo up

python3 "$src/tests/gateway/mkpkg.py" "$tmp/pk"
up=$tmp/up
mkdir -p "$up/files"
cp "$tmp"/pk/* "$up/files/"
# the index: tinypkg as PEP 503 HTML (2.0 with a wrong hash), tiny-dep as
# PEP 691 JSON (through a same-origin redirect, upload-time given),
# onlysdist's file behind a redirect to another origin, tiny-npm as an
# npm document (1.1.0's integrity wrong)
python3 - "$up" <<'EOF'
import base64, hashlib, json, os, sys
up = sys.argv[1]
def sha256(f): return hashlib.sha256(open(os.path.join(up, "files", f), "rb").read()).hexdigest()
def sha512(f): return base64.b64encode(hashlib.sha512(open(os.path.join(up, "files", f), "rb").read()).digest()).decode()
def page(name, body, json_body=None):
    d = os.path.join(up, "simple", name)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "index.html"), "w").write(body)
    if json_body is not None:
        open(os.path.join(d, "index.json"), "w").write(json.dumps(json_body))
w1, w2 = "tinypkg-1.0-py3-none-any.whl", "tinypkg-2.0-py3-none-any.whl"
page("tinypkg", '<!DOCTYPE html><html><body>\n'
     '<a href="../../files/%s#sha256=%s" data-requires-python="&gt;=3.7">%s</a><br/>\n'
     '<a href="../../files/%s#sha256=%s">%s</a>\n</body></html>\n'
     % (w1, sha256(w1), w1, w2, "0" * 64, w2))
d = "tiny_dep-0.1-py3-none-any.whl"
page("tiny-dep", "<html></html>", {"meta": {"api-version": "1.1"}, "name": "tiny-dep",
     "files": [{"filename": d, "url": "/same/files/" + d, "hashes": {"sha256": sha256(d)},
                "size": os.path.getsize(os.path.join(up, "files", d)),
                "upload-time": "2024-01-01T00:00:00.000000Z"}]})
s = "onlysdist-1.0.tar.gz"
page("onlysdist", '<html><a href="/away/files/%s#sha256=%s">%s</a></html>' % (s, sha256(s), s))
r = "reqeusts-1.0-py3-none-any.whl"
page("reqeusts", '<html><a href="/files/%s#sha256=%s">%s</a></html>' % (r, sha256(r), r))
os.makedirs(os.path.join(up, "npm"), exist_ok=True)
n1, n2 = "tiny-npm-1.0.0.tgz", "tiny-npm-1.1.0.tgz"
json.dump({"name": "tiny-npm", "dist-tags": {"latest": "1.1.0"},
           "versions": {"1.0.0": {"name": "tiny-npm", "version": "1.0.0",
                                  "dist": {"tarball": "/files/" + n1, "integrity": "sha512-" + sha512(n1)}},
                        "1.1.0": {"name": "tiny-npm", "version": "1.1.0",
                                  "dist": {"tarball": "/files/" + n2, "integrity": "sha512-" + sha512(n1)}}},
           "time": {"1.0.0": "2023-06-01T12:00:00.000Z", "1.1.0": "2024-02-01T00:00:00.000Z"}},
          open(os.path.join(up, "npm", "tiny-npm"), "w"))
EOF
python3 "$src/tests/gateway/upstream.py" "$up" "$tmp/port" 2> "$tmp/up.err" &
uppid=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port")
base=http://127.0.0.1:$port
dir=$tmp/packages
: > "$tmp/empty.conf"
printf '[packages]\npypi_upstream = %s/simple/\nnpm_upstream = %s/npm/\n' "$base" "$base" > "$tmp/up.conf"
fetch() { AIRLOCK_CONFIG=$tmp/up.conf "$bin" packages fetch --dir "$dir" "$@"; }
expect_refused() { # WHAT PATTERN ARGS...: exit 1, PATTERN on stderr, nothing added
  local what=$1 pat=$2 rc=0; shift 2
  fetch "$@" > "$tmp/out" 2> "$tmp/err" || rc=$?
  [ "$rc" = 1 ] || fail "$what: exit $rc, want 1: $(cat "$tmp/err")"
  grep -q -- "$pat" "$tmp/err" || fail "$what: no '$pat' in: $(cat "$tmp/err")"
  [ ! -s "$tmp/out" ] || fail "$what: added something: $(cat "$tmp/out")"
}

# no upstream configured: said, exit 2
rc=0
AIRLOCK_CONFIG=$tmp/empty.conf "$bin" packages fetch --dir "$dir" tinypkg==1.0 2> "$tmp/err" || rc=$?
[ "$rc" = 2 ] && grep -q "no upstream configured for python" "$tmp/err" ||
  fail "no upstream: exit $rc: $(cat "$tmp/err")"
AIRLOCK_CONFIG=$tmp/empty.conf "$bin" packages fetch --dir "$dir" npm:tiny-npm@1.0.0 2> "$tmp/err" && fail "npm without upstream"
grep -q "no upstream configured for npm" "$tmp/err" || fail "npm: $(cat "$tmp/err")"

# PEP 503 HTML: fetched, pinned, the same line `add` prints
fetch --pin tinypkg==1.0 > "$tmp/out" || fail "fetch tinypkg==1.0"
want=$("$bin" packages add --dir "$tmp/other" "$tmp/pk/tinypkg-1.0-py3-none-any.whl")
[ "$(cat "$tmp/out")" = "$want" ] || fail "fetch printed $(cat "$tmp/out"), add $want"
cmp -s "$dir/mirror/python/tinypkg-1.0-py3-none-any.whl" "$tmp/pk/tinypkg-1.0-py3-none-any.whl" ||
  fail "mirror file differs"
grep -Eq "^python +tinypkg 1.0 tinypkg-1.0-py3-none-any.whl $(sha256sum "$tmp/pk/tinypkg-1.0-py3-none-any.whl" | cut -c1-64)" \
  "$dir/packages.allow" || fail "not pinned: $(cat "$dir/packages.allow")"

# PEP 691 JSON through a same-origin redirect; mtime = upload-time
fetch Tiny_Dep==0.1 > "$tmp/out" || fail "fetch tiny_dep (json)"
[ "$(stat -c %Y "$dir/mirror/python/tiny_dep-0.1-py3-none-any.whl")" = 1704067200 ] ||
  fail "tiny_dep mtime is not its upload-time"
grep -q "tiny_dep-0.1" "$dir/packages.allow" && fail "pinned without --pin"

# refusals
expect_refused "hash mismatch" "HASH MISMATCH" tinypkg==2.0
[ ! -e "$dir/mirror/python/tinypkg-2.0-py3-none-any.whl" ] || fail "mismatched file in the mirror"
expect_refused "oversize" "larger than 100 bytes: refused" --max-bytes 100 reqeusts==1.0
expect_refused "declared size over cap" "the index says .* bytes, over the cap" --max-bytes 100 tiny-dep==0.1
expect_refused "missing version" "the upstream has no such version" tinypkg==9.9
expect_refused "missing project" "HTTP 404" nosuchthing==1.0
expect_refused "redirect elsewhere" "redirected to http://127.0.0.2:$port/files/onlysdist-1.0.tar.gz, another origin than the upstream's: refused" onlysdist==1.0
[ ! -e "$dir/mirror/python/onlysdist-1.0.tar.gz" ] || fail "redirected file in the mirror"

# npm: sha512 integrity checked; mtime = time[VERSION]
fetch --pin npm:tiny-npm@1.0.0 > "$tmp/out" || fail "fetch npm:tiny-npm@1.0.0"
grep -q "^npm tiny-npm 1.0.0 tiny-npm-1.0.0.tgz" "$tmp/out" || fail "npm: $(cat "$tmp/out")"
[ "$(stat -c %Y "$dir/mirror/npm/tiny-npm-1.0.0.tgz")" = 1685620800 ] || fail "npm mtime"
grep -Eq "^npm +tiny-npm 1.0.0 " "$dir/packages.allow" || fail "npm not pinned"
expect_refused "npm integrity" "HASH MISMATCH: the index says sha512" --npm tiny-npm@1.1.0
expect_refused "npm missing version" "no such version" npm:tiny-npm@3.0.0
rc=0; fetch 'not a spec' 2> "$tmp/err" || rc=$?
[ "$rc" = 2 ] || fail "bad spec: exit $rc"
# a bad config value is refused by the config parser
printf '[packages]\npypi_upstream = ftp://x/\n' > "$tmp/bad.conf"
AIRLOCK_CONFIG=$tmp/bad.conf "$bin" packages fetch --dir "$dir" tinypkg==1.0 2> "$tmp/err" && fail "ftp upstream taken"
grep -q "pypi_upstream" "$tmp/err" || fail "bad upstream: $(cat "$tmp/err")"
[ -z "$(ls -A "$dir" | grep '^\.fetch' || true)" ] || fail "temp dir left behind"
echo ok
