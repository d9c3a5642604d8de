#!/bin/bash
# pyinstall_test.sh: the Python client installs as clients/python/README.md
# says, offline on Debian 12 (issue 37, item 7): `pip install
# ./clients/python` alone fails there (PEP 668: an externally managed
# python; in a venv, build isolation fetches setuptools from an index).
# The README's command, read from the README itself, run in a fresh venv
# with the system's packages and no index; then the installed package
# imports and picks its HTTP mode from the URL. 77 (skip) without
# python3-venv.
#
# usage: pyinstall_test.sh SOURCE_DIR WORK_DIR
set -u
src=$1
work=$2
rm -rf "$work" && mkdir -p "$work" || exit 1
/usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null || exit 77
# the line of the README that installs into a venv
cmd=$(grep -m1 -o 'VENV/bin/pip install [^`]*' "$src/clients/python/README.md")
[ -n "$cmd" ] || { echo "FAIL: no 'VENV/bin/pip install' line in the README"; exit 1; }
/usr/bin/python3 -m venv --system-site-packages "$work/venv" || exit 1
cd "$src" || exit 1
# shellcheck disable=SC2086 # the README's words
env PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 ${cmd//VENV/$work/venv} \
	>"$work/pip.log" 2>&1 || { echo "FAIL: $cmd"; cat "$work/pip.log"; exit 1; }
cd "$work" || exit 1
"$work/venv/bin/python" - <<'PY' || exit 1
import airlock
import airlock.http
assert "/venv/" in airlock.__file__, airlock.__file__
c = airlock.Client("http://127.0.0.1:9", token="x" * 20)
assert isinstance(c, airlock.http.HttpClient), type(c)
print("installed:", airlock.__file__)
PY
