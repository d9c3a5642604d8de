"""session_files.py: the Python Session's upload_dir / download_dir
(clients/python/airlock/tarfiles.py) against a real serve: a tree with a
symlink round-trips with identical bytes; a hostile tar (..) and a guest's
symlink out are refused with nothing written.
usage: session_files.py REDIS_URL WORKDIR HOSTILE_TAR"""
import hashlib
import os
import sys

import airlock
from airlock.tarfiles import TarRefused

url, work, hostile = sys.argv[1:4]
src = os.path.join(work, "pysrc")
os.makedirs(os.path.join(src, "a", "b"))
blobs = {"top.bin": os.urandom(3 << 20), "a/b/c.txt": b"hello\n",
         "a/x.bin": os.urandom(70000)}
for k, v in blobs.items():
    with open(os.path.join(src, k), "wb") as f:
        f.write(v)
os.symlink("b/c.txt", os.path.join(src, "a", "link"))


def digests(root):
    out = {}
    for d, _, files in os.walk(root):
        for n in files:
            p = os.path.join(d, n)
            if not os.path.islink(p):
                with open(p, "rb") as f:
                    out[os.path.relpath(p, root)] = hashlib.sha256(
                        f.read()).hexdigest()
    return out


c = airlock.Client(url)
with c.session(template="python", ttl_s=120) as s:
    s.upload_dir(src, "py/in")
    r = s.exec("sha256sum < py/in/a/x.bin")
    assert r.stdout.split()[0].decode() == hashlib.sha256(
        blobs["a/x.bin"]).hexdigest(), r.stdout
    back = os.path.join(work, "pyback")
    s.download_dir("py/in", back)
    assert digests(back) == digests(src), (digests(back), digests(src))
    assert os.readlink(os.path.join(back, "a", "link")) == "b/c.txt"
    with open(hostile, "rb") as f:
        try:
            s.upload_dir(None, "py/evil", tar=f.read())
            raise AssertionError("a tar with .. was not refused")
        except TarRefused as e:
            assert ". or .. part" in str(e), e
    assert s.exec("test -e py/evil").exit_code == 1
    s.exec("mkdir -p g && ln -s /etc g/out")
    try:
        s.download_dir("g", os.path.join(work, "pyg"))
        raise AssertionError("a symlink out was not refused")
    except TarRefused as e:
        assert "point down" in str(e), e
    assert not os.path.exists(os.path.join(work, "pyg"))
print("python upload_dir/download_dir: ok")
