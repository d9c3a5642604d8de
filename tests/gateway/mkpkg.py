#!/usr/bin/env python3
"""mkpkg.py: tiny package files for the gateway's tests, made here, never
downloaded: wheels, an sdist, npm tarballs with and without an install
script.

usage: mkpkg.py DIR | --crafted DIR
Writes into DIR (created):
  tinypkg-1.0-py3-none-any.whl     imports as tinypkg, VALUE = "tinypkg 1.0"
  tinypkg-2.0-py3-none-any.whl     a second version (left unpinned by tests)
  tiny_dep-0.1-py3-none-any.whl    a dependency of tinypkg 2.0
  reqeusts-1.0-py3-none-any.whl    a look-alike name
  onlysdist-1.0.tar.gz             an sdist (setup.py inside)
  tiny-npm-1.0.0.tgz               npm, no install script
  tiny-npm-1.1.0.tgz               npm, a second version
  tiny-hook-1.0.0.tgz              npm, a postinstall script
With --crafted, DIR gets evil-*-1.0.0.tgz instead: npm tarballs npm reads
otherwise than a first-match reader (crafted()).
Every file has a fixed mtime so the bytes (and hashes) are the same run to
run.
"""
import base64
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile
import zipfile

EPOCH = (2024, 1, 1, 0, 0, 0)


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return "%s,sha256=%s,%d" % (path, digest.rstrip(b"=").decode(), len(data))


def wheel(out, name, version, requires=(), requires_python=">=3.7"):
    mod = name.replace("-", "_")
    info = "%s-%s.dist-info" % (mod, version)
    meta = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)
    if requires_python:
        meta += "Requires-Python: %s\n" % requires_python
    for r in requires:
        meta += "Requires-Dist: %s\n" % r
    files = {
        "%s/__init__.py" % mod: ('VALUE = "%s %s"\n' % (name, version)).encode(),
        info + "/METADATA": meta.encode(),
        info + "/WHEEL": b"Wheel-Version: 1.0\nGenerator: mkpkg\n"
                         b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [record_line(p, d) for p, d in files.items()]
    record.append(info + "/RECORD,,")
    files[info + "/RECORD"] = ("\n".join(record) + "\n").encode()
    path = os.path.join(out, "%s-%s-py3-none-any.whl" % (mod, version))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for p, d in files.items():
            z.writestr(zipfile.ZipInfo(p, EPOCH), d, zipfile.ZIP_DEFLATED)


def tgz(path, top, files):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for p, d in files.items():
            ti = tarfile.TarInfo("%s/%s" % (top, p))
            ti.size = len(d)
            ti.mtime = 1704067200
            ti.mode = 0o644
            t.addfile(ti, io.BytesIO(d))
    with open(path, "wb") as f:
        f.write(gzip.compress(raw.getvalue(), mtime=0))


def sdist(out, name, version):
    top = "%s-%s" % (name, version)
    pkg_info = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
                % (name, version)).encode()
    tgz(os.path.join(out, top + ".tar.gz"), top, {
        "PKG-INFO": pkg_info,
        "setup.py": b"from setuptools import setup\nsetup()\n",
    })


def npm(out, name, version, script=False, deps=None):
    doc = {"name": name, "version": version, "main": "index.js",
           "license": "MIT"}
    if script:
        doc["scripts"] = {"postinstall": "node -e \"require('fs')"
                          ".writeFileSync('hook-ran','1')\""}
    if deps:
        doc["dependencies"] = deps
    tgz(os.path.join(out, "%s-%s.tgz" % (name, version)), "package", {
        "package.json": json.dumps(doc, indent=2).encode(),
        "index.js": ("module.exports = '%s %s';\n" % (name, version)).encode(),
    })


def member(name, data=b"", kind=tarfile.REGTYPE, fmt=tarfile.USTAR_FORMAT,
           pax=None, link=""):
    """One tar entry's blocks: its header(s) and its padded body."""
    ti = tarfile.TarInfo(name)
    ti.size = len(data) if kind == tarfile.REGTYPE else 0
    ti.type, ti.linkname, ti.mtime, ti.mode = kind, link, 1704067200, 0o644
    if pax:
        ti.pax_headers = pax
    body = data + b"\0" * (-len(data) % 512) if ti.size else b""
    return ti.tobuf(fmt, "utf-8", "surrogateescape") + body


def crafted(out):
    """npm tarballs npm (node-tar) reads otherwise than a first-match
    reader: each hides or swaps a package.json (docs/packages.md)."""
    os.makedirs(os.path.join(out, "clean"), exist_ok=True)
    clean = json.dumps({"name": "evil", "version": "1.0.0"}).encode()
    hook = json.dumps({"name": "evil", "version": "1.0.0", "scripts": {
        "postinstall": "node -e \"require('fs').writeFileSync("
                       "'hook-ran','1')\""}}).encode()
    first = member("package/package.json", clean)
    end = b"\0" * 1024
    bad = bytearray(member("package/package.json", hook))
    bad[148:156] = b"0000000\0"
    cases = {
        # a later entry of the same path wins in npm
        "dup": first + member("package/package.json", hook) + end,
        "duptop": first + member("other/package.json", hook) + end,
        # npm skips one zero block and reads on
        "zero": first + b"\0" * 512 + member("package/package.json", hook)
        + end,
        # anything after the end blocks
        "after": first + end + member("package/x.js", b"1"),
        # a pax header naming package.json for an entry called x.json
        "pax": first + member("package/x.json", hook, fmt=tarfile.PAX_FORMAT,
                              pax={"path": "package/package.json"}) + end,
        # a GNU long name
        "gnulong": first + member("package/" + "a" * 120 + ".js", b"1",
                                  fmt=tarfile.GNU_FORMAT) + end,
        "dotpath": first + member("package/./package.json", hook) + end,
        "symlink": member("package/package.json", kind=tarfile.SYMTYPE,
                          link="x.json") + member("package/x.json", clean)
        + end,
        # a header npm skips for its checksum
        "cksum": first + bytes(bad) + end,
    }
    for k, raw in cases.items():
        with open(os.path.join(out, "evil-%s-1.0.0.tgz" % k), "wb") as f:
            f.write(gzip.compress(raw, mtime=0))
    # the clean one alone, under a crafted one's name (a mirror file
    # added before the rules, then swapped: tests/gateway/crafted_test.sh)
    with open(os.path.join(out, "clean", "evil-dup-1.0.0.tgz"), "wb") as f:
        f.write(gzip.compress(first + end, mtime=0))
    # a second gzip member, which npm inflates too
    with open(os.path.join(out, "evil-member-1.0.0.tgz"), "wb") as f:
        f.write(gzip.compress(first + b"\0" * 512, mtime=0))
        f.write(gzip.compress(member("package/package.json", hook) + end,
                              mtime=0))


def main():
    if sys.argv[1] == "--crafted":
        crafted(sys.argv[2])
        return
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    wheel(out, "tinypkg", "1.0")
    wheel(out, "tinypkg", "2.0", requires=("tiny-dep==0.1",))
    wheel(out, "tiny_dep", "0.1")
    wheel(out, "reqeusts", "1.0", requires=("colourama>=0.1",))
    sdist(out, "onlysdist", "1.0")
    npm(out, "tiny-npm", "1.0.0")
    npm(out, "tiny-npm", "1.1.0")
    npm(out, "tiny-hook", "1.0.0", script=True)


if __name__ == "__main__":
    main()
