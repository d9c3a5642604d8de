"""test_tarfiles.py: the Python client's tar check agrees with
results/tar.c on extension headers: a GNU long name or long link (which
tarfile folds into the next member) and a pax header are refused, a
plain ustar tar of the same files is taken. No server needed."""
import io
import os
import sys
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from airlock import tarfiles  # noqa: E402


def tar(fmt, name, link=None):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        i = tarfile.TarInfo(name)
        if link:
            i.type, i.linkname = tarfile.SYMTYPE, link
        else:
            i.size = 2
        t.addfile(i, None if link else io.BytesIO(b"hi"))
    return buf.getvalue()


def refused(data):
    try:
        tarfiles.check(data)
    except tarfiles.TarRefused as e:
        return str(e)
    return None


long_name = "d/" + "n" * 120
assert refused(tar(tarfile.USTAR_FORMAT, "d/short")) is None
assert refused(tar(tarfile.USTAR_FORMAT, "d/" + "a" * 90 + "/" + "b" * 90)) is None
why = refused(tar(tarfile.GNU_FORMAT, long_name))
assert why and "GNU" in why, why
why = refused(tar(tarfile.GNU_FORMAT, "l", link="x/" + "y" * 120))
assert why and "GNU" in why, why
assert refused(tar(tarfile.PAX_FORMAT, "p", link="z" * 200))
print("tarfiles: GNU long name, GNU long link and pax refused; ustar taken")
