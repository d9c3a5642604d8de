#!/usr/bin/env bash
# pip_test.sh AIRLOCK GATEWAY SRC: the package gateway with the real pip
# (Debian's python3-pip) on the host against 127.0.0.1, never a registry:
# packages made by mkpkg.py, added and pinned with `airlock packages add`,
# served by airlock-gateway under its own uid. Checks every refusal pip
# can meet (name not listed, look-alike, version not pinned, direct GET of
# a refused file, sdist under wheels-only, a tampered mirror file) is
# refused with a reason pip prints or the audit log records; the simple
# API's formats; hostile requests; what the gateway's uid can touch.
set -euo pipefail
bin=$1 gw=$2 src=$3
py=/usr/bin/python3
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
$py -m pip --version >/dev/null 2>&1 || { echo "SKIP: no python3-pip"; exit 77; }
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
# everything into the mirror; only some of it pinned
"$bin" packages add --dir "$dir" "$tmp"/pk/* > "$tmp/add.out"
grep -q "^wheel tinypkg 1.0 tinypkg-1.0-py3-none-any.whl sha256=$(sha256sum "$tmp/pk/tinypkg-1.0-py3-none-any.whl" | cut -c1-64)\$" "$tmp/add.out" ||
  fail "add: $(cat "$tmp/add.out")"
grep -q "^npm tiny-hook 1.0.0 .* install-script\$" "$tmp/add.out" || fail "add: no install-script"
[ ! -e "$dir/packages.allow" ] || fail "add without --pin pinned"
"$bin" packages add --dir "$dir" --pin "$tmp/pk/tinypkg-1.0-py3-none-any.whl" \
  "$tmp/pk/onlysdist-1.0.tar.gz" >/dev/null
# tiny_dep from a pip-compile style lockfile: pinned by its hash
dep_sha=$(sha256sum "$tmp/pk/tiny_dep-0.1-py3-none-any.whl" | cut -c1-64)
printf '# generated\ntiny-dep==0.1 \\\n    --hash=sha256:%s\n' "$dep_sha" > "$tmp/req.txt"
printf 'tinypkg==2.0 --hash=sha256:%064d\nnohash==1.0\n' 0 > "$tmp/bad.txt"
"$bin" packages import --dir "$dir" "$tmp/req.txt" > "$tmp/imp" || fail "import: $(cat "$tmp/imp")"
grep -q "^pinned python tiny_dep-0.1-py3-none-any.whl sha256=$dep_sha" "$tmp/imp" || fail "import: $(cat "$tmp/imp")"
"$bin" packages import --dir "$dir" "$tmp/bad.txt" > "$tmp/imp" 2> "$tmp/e" && fail "bad lockfile imported"
grep -q "no mirror file with sha256 0000" "$tmp/e" && grep -q "nohash==1.0 has no --hash" "$tmp/e" ||
  fail "bad import: $(cat "$tmp/e")"
grep -q "tinypkg-2.0" "$dir/packages.allow" && fail "imported a hash no file has"
grep -qx "option python.wheels-only" "$dir/packages.allow" || fail "new allowlist not wheels-only"
# a file whose metadata disagrees with its name is refused
cp "$tmp/pk/tinypkg-1.0-py3-none-any.whl" "$tmp/requests-1.0-py3-none-any.whl"
"$bin" packages add --dir "$dir" "$tmp/requests-1.0-py3-none-any.whl" 2>"$tmp/e" && fail "renamed wheel added"
grep -q "metadata disagrees" "$tmp/e" || fail "renamed wheel: $(cat "$tmp/e")"

"$gw" --dir "$dir" --listen 127.0.0.1:0 --uid 1199999 > "$tmp/gw.out" 2> "$tmp/gw.err" &
gwpid=$!
for _ in $(seq 50); do grep -qs listening "$tmp/gw.out" && break; sleep 0.1; done
port=$(sed -n 's/^listening on 127.0.0.1://p' "$tmp/gw.out")
[ -n "$port" ] || fail "gateway did not start"
url=http://127.0.0.1:$port
pip() { $py -m pip --isolated install --no-cache-dir --disable-pip-version-check \
          --index-url "$url/pypi/simple/" "$@"; }

# the second wall: the gateway runs as its own uid and cannot change the
# mirror, the allowlist or anything root owns
grep -q "^Uid:[[:space:]]*1199999[[:space:]]1199999" "/proc/$gwpid/status" || fail "gateway uid: $(grep Uid /proc/$gwpid/status)"
grep -q "^CapEff:[[:space:]]*0000000000000000" "/proc/$gwpid/status" || fail "gateway has capabilities"
grep -q "^NoNewPrivs:[[:space:]]*1" "/proc/$gwpid/status" || fail "gateway without no_new_privs"
if command -v setpriv >/dev/null; then
  sp="setpriv --reuid 1199999 --regid 1199999 --clear-groups"
  $sp touch "$dir/mirror/python/x" 2>/dev/null && fail "gateway uid writes the mirror"
  $sp sh -c "echo >> '$dir/packages.allow'" 2>/dev/null && fail "gateway uid writes the allowlist"
  $sp cat "$dir/mirror/python/tinypkg-1.0-py3-none-any.whl" >/dev/null || fail "gateway uid cannot read the mirror"
fi

# 1. an allowed, pinned wheel installs and imports
pip --target "$tmp/t1" tinypkg==1.0 > "$tmp/p1" 2>&1 || fail "pip allowed: $(cat "$tmp/p1")"
[ "$(PYTHONPATH=$tmp/t1 $py -c 'import tinypkg; print(tinypkg.VALUE)')" = "tinypkg 1.0" ] || fail "import"

# and with pip's own hash checking, from the lockfile
pip --target "$tmp/t1r" --require-hashes -r "$tmp/req.txt" > "$tmp/p1r" 2>&1 || fail "pip -r: $(cat "$tmp/p1r")"
[ -d "$tmp/t1r/tiny_dep" ] || fail "pip -r installed nothing"

# 2. a name not on the list, a look-alike: pip prints the reason
pip --target "$tmp/t2" reqeusts > "$tmp/p2" 2>&1 && fail "reqeusts installed"
grep -q 'reqeusts is not on the allowlist (pending approval); suspected look-alike of requests' "$tmp/p2" ||
  fail "look-alike refusal not shown by pip: $(cat "$tmp/p2")"
# 3. a version not pinned (in the mirror, not pinned): not offered
pip --target "$tmp/t3" tinypkg==2.0 > "$tmp/p3" 2>&1 && fail "unpinned version installed"
grep -q "from versions: 1.0)" "$tmp/p3" || fail "unpinned: $(cat "$tmp/p3")"
# 4. its file's URL, asked for directly: refused on the file route too
pip --target "$tmp/t4" "$url/pypi/files/tinypkg-2.0-py3-none-any.whl" > "$tmp/p4" 2>&1 && fail "direct GET installed"
grep -q "HTTP error 403" "$tmp/p4" || fail "direct: $(cat "$tmp/p4")"
# 5. an sdist under wheels-only: refused on the page and on its URL
pip --target "$tmp/t5" onlysdist > "$tmp/p5" 2>&1 && fail "sdist installed"
grep -q "an sdist, and only wheels are allowed" "$tmp/p5" || fail "sdist: $(cat "$tmp/p5")"
pip --target "$tmp/t5" "$url/pypi/files/onlysdist-1.0.tar.gz" > "$tmp/p5b" 2>&1 && fail "sdist URL installed"
[ ! -e "$tmp/t5" ] || fail "sdist build ran"
# 6. a mirror file whose bytes changed: refused, loudly
whl=$dir/mirror/python/tinypkg-1.0-py3-none-any.whl
cp "$whl" "$tmp/good.whl"
printf 'x' >> "$whl"
pip --target "$tmp/t6" tinypkg==1.0 > "$tmp/p6" 2>&1 && fail "tampered file installed"
grep -q "HTTP error 502" "$tmp/p6" || fail "tampered: $(cat "$tmp/p6")"
grep -q "INCIDENT job=@host mirror file python/tinypkg-1.0-py3-none-any.whl" "$tmp/gw.err" || fail "no INCIDENT line"
cp "$tmp/good.whl" "$whl"

# the audit log: one record per request, with the reasons
audit=$dir/audit.jsonl
jq -e -s '
  any(.[]; .route == "file" and .name == "tinypkg" and .decision == "allow" and
           .sha256 == "'"$(sha256sum "$whl" | cut -c1-64)"'" and .job == "@host") and
  any(.[]; .name == "reqeusts" and .decision == "deny" and .pending and .lookalike == "requests") and
  any(.[]; .file == "tinypkg-2.0-py3-none-any.whl" and .decision == "deny" and .version == "2.0") and
  any(.[]; .file == "onlysdist-1.0.tar.gz" and .decision == "deny") and
  any(.[]; .route == "project" and .name == "tinypkg" and .decision == "allow" and
           (.reason | contains("; not pinned, withheld: 2.0"))) and
  any(.[]; .reason | startswith("integrity:"))' "$audit" >/dev/null || fail "audit: $(cat "$audit")"

# the simple API: negotiation, Vary, PEP 700 fields, PEP 658/714 metadata
h=$tmp/h
curl -s -D "$h" -H 'Accept: application/vnd.pypi.simple.v1+json' "$url/pypi/simple/TinyPkg/" > "$tmp/j"
grep -qi '^Content-Type: application/vnd.pypi.simple.v1+json' "$h" || fail "json type: $(cat "$h")"
grep -qi '^Vary: Accept' "$h" || fail "no Vary: Accept"
jq -e '.meta."api-version" == "1.1" and .name == "tinypkg" and .versions == ["1.0"] and
       (.files | length) == 1 and .files[0].size > 0 and .files[0]."upload-time" and
       .files[0]."requires-python" == ">=3.7" and .files[0].yanked == false and
       .files[0]."core-metadata".sha256' "$tmp/j" >/dev/null || fail "json page: $(cat "$tmp/j")"
msha=$(jq -r '.files[0]."core-metadata".sha256' "$tmp/j")
[ "$(curl -s "$url/pypi/files/tinypkg-1.0-py3-none-any.whl.metadata" | sha256sum | cut -c1-64)" = "$msha" ] ||
  fail "metadata hash"
curl -s -D "$h" -H 'Accept: text/html' "$url/pypi/simple/tiny_dep/" > "$tmp/html"
grep -qi '^Content-Type: application/vnd.pypi.simple.v1+html' "$h" || fail "html type"
grep -q 'href="../../files/tiny_dep-0.1-py3-none-any.whl#sha256=[0-9a-f]\{64\}" data-requires-python="&gt;=3.7" data-dist-info-metadata="sha256=[0-9a-f]\{64\}" data-core-metadata="sha256=' "$tmp/html" ||
  fail "html page: $(cat "$tmp/html")"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Accept: image/png' "$url/pypi/simple/tinypkg/")" = 406 ] || fail "406"
curl -s -H 'Accept: application/vnd.pypi.simple.v1+html;q=0.2, application/vnd.pypi.simple.v1+json;q=0.9' \
  "$url/pypi/simple/" | jq -e '.projects | length == 3' >/dev/null || fail "index json"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/pypi/files/tinypkg-2.0-py3-none-any.whl.metadata")" = 403 ] ||
  fail "metadata of an unpinned file"

# hostile requests: errors, never a crash, never a file outside the pins
code() { curl -s -o /dev/null -w '%{http_code}' --path-as-is "$@"; }
[ "$(code "$url/pypi/files/../../../etc/passwd")" = 400 ] || fail ".."
[ "$(code "$url/pypi/files/%2e%2e%2fpackages.allow")" = 400 ] || fail "%2e%2e"
[ "$(code "$url/pypi/simple/a%00b/")" = 400 ] || fail "%00"
[ "$(code "$url/pypi/simple/%ff%fe/")" = 400 ] || fail "bad utf-8"
[ "$(code "$url/pypi/simple/%zz/")" = 400 ] || fail "bad escape"
[ "$(code "$url/pypi/files/tinypkg-1.0-py3-none-any.whl.metadata.metadata")" = 403 ] || fail "double metadata"
[ "$(code "$url/$(head -c 3000 /dev/zero | tr '\0' a)")" = 414 ] || fail "long path"
[ "$(code -X POST "$url/pypi/simple/")" = 405 ] || fail "POST"
[ "$(code -X POST -d x=1 "$url/pypi/simple/")" = 413 ] || fail "POST with a body"
c=$(code -H "X-Big: $(head -c 70000 /dev/zero | tr '\0' a)" "$url/pypi/simple/") || true
[ "$c" = 431 ] || [ "$c" = 413 ] || [ "$c" = 000 ] || fail "huge header: $c"
# slow clients and many connections: 1000 half-sent requests from one
# address (over the per-address cap) do not stop the gateway answering
$py - "$port" <<'PY' &
import socket, sys, time
socks = []
for _ in range(1000):
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)
        s.send(b"GET /pypi/simple/ HTTP/1.1\r\nHost: x\r\n")  # never finished
        socks.append(s)
    except OSError:
        pass
time.sleep(3)
PY
slow=$!
sleep 1
kill -0 "$gwpid" || fail "gateway died"
wait "$slow"
sleep 0.2
[ "$(code "$url/pypi/simple/tinypkg/")" = 200 ] || fail "gateway stalled after slow clients"

# a flood from one address: answered 429 past the rate, and audited as
# summaries, not a line per request (the audit log cannot fill the disk)
before=$(wc -l < "$dir/audit.jsonl")
$py - "$port" > "$tmp/flood" <<'PY'
import http.client, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=5)
codes = {}
t = time.time()
while time.time() - t < 1.5:
    c.request("GET", "/pypi/simple/tinypkg/")
    r = c.getresponse(); r.read()
    codes[r.status] = codes.get(r.status, 0) + 1
print(codes.get(200, 0), codes.get(429, 0))
PY
read -r ok429 n429 < "$tmp/flood"
[ "$n429" -gt 0 ] || fail "no 429 in a flood: $ok429 answered"
after=$(wc -l < "$dir/audit.jsonl")
[ $((after - before)) -le $((ok429 + 3)) ] || fail "flood audited per request: $((after - before)) lines for $ok429 answered, $n429 refused"
grep -q '"reason":"rate limited: [0-9]* requests refused' "$dir/audit.jsonl" || fail "no rate summary"
sleep 1.1
[ "$(code "$url/pypi/simple/tinypkg/")" = 200 ] || fail "not served after the flood"

# pending: each refused name and version once, with the job and the
# near name; approve pins from the mirror; deny drops it
pip --target "$tmp/t2" reqeusts > /dev/null 2>&1 && fail "reqeusts installed"
"$bin" packages pending --dir "$dir" > "$tmp/pend"
[ "$(grep -c 'reqeusts==\*' "$tmp/pend")" = 1 ] || fail "pending: $(cat "$tmp/pend")"
grep -q "^python	reqeusts==\*	job=@host	asks=2	SUSPECTED LOOK-ALIKE of requests\$" "$tmp/pend" || fail "pending: $(cat "$tmp/pend")"
grep -q "^python	tinypkg==2.0	job=@host" "$tmp/pend" || fail "pending 2.0: $(cat "$tmp/pend")"
"$bin" packages log --dir "$dir" --denied --job @host | grep -q "	deny	python	reqeusts	" || fail "log --denied"
"$bin" packages log --dir "$dir" --job nosuchjob | grep -q . && fail "log --job"
"$bin" packages approve --dir "$dir" nosuch==1.0 2>/dev/null && fail "approved a file not in the mirror"
"$bin" packages approve --dir "$dir" reqeusts==1.0 > "$tmp/ap1"
grep -q "depends on colourama>=0.1: not allowed yet" "$tmp/ap1" || fail "approve deps: $(cat "$tmp/ap1")"
"$bin" packages approve --dir "$dir" tinypkg==2.0 > "$tmp/ap2"
grep -q "^pinned python tinypkg-2.0-py3-none-any.whl sha256=" "$tmp/ap2" || fail "approve: $(cat "$tmp/ap2")"
"$bin" packages pending --dir "$dir" > "$tmp/pend"
[ ! -s "$tmp/pend" ] || fail "pending after approve: $(cat "$tmp/pend")"
pip --target "$tmp/t8" colourama > /dev/null 2>&1 && fail "colourama installed"
"$bin" packages pending --dir "$dir" | grep -q "colourama==\*.*LOOK-ALIKE of colorama" || fail "colourama pending"
"$bin" packages deny --dir "$dir" 'colourama==*' > /dev/null
"$bin" packages pending --dir "$dir" | grep -q . && fail "pending after deny"
# approval takes effect for new requests without a restart
sleep 1.1
pip --target "$tmp/t7" tinypkg==2.0 > "$tmp/p7" 2>&1 || fail "after pinning 2.0: $(cat "$tmp/p7")"
[ -d "$tmp/t7/tiny_dep" ] || fail "dependency tiny_dep not installed"
kill "$gwpid"; wait "$gwpid" 2>/dev/null || true; gwpid=
echo "ok"
