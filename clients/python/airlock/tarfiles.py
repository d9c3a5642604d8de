"""Directories in and out of a session as ustar streams (docs/sessions.md
"Files"), the rules results/tar.c keeps for the CLI and HTTP API:

- every path relative, with no empty, "." or ".." part (a leading "./" is
  dropped), at most 512 bytes; a symlink's target relative with no ".."
  (it points down from its directory); a hard link's target a path of the
  same kind; no device nodes, fifos, pax or GNU extension headers;
- caps on the contents' bytes and the entries' count;
- a tar that breaks a rule is refused whole (TarRefused) before anything
  is written: in the VM on upload, on this machine on download, where
  extraction opens each directory with O_NOFOLLOW and creates each file
  with O_EXCL, so nothing the guest names is followed here.
"""
import io
import os
import random
import tarfile

BYTES_DEFAULT = 256 << 20
FILES_DEFAULT = 10000
CHUNK = 4 << 20
_TIMEOUT_MS = 600000


class TarRefused(Exception):
    pass


def _relpath_ok(p):
    return (0 < len(p.encode()) <= 512 and not p.startswith("/")
            and "\0" not in p
            and all(c not in ("", ".", "..") for c in p.split("/")))


def _tidy(name, is_dir):
    while name.startswith("./"):
        name = name[2:]
    if is_dir and name.endswith("/"):
        name = name[:-1]
    return "" if is_dir and name == "." else name


def check(data, max_bytes=BYTES_DEFAULT, max_files=FILES_DEFAULT):
    """The members of ustar bytes `data`, checked; TarRefused says why."""
    try:
        t = tarfile.open(fileobj=io.BytesIO(data), mode="r:",
                         format=tarfile.USTAR_FORMAT)
        members = t.getmembers()
    except (tarfile.TarError, EOFError) as e:
        raise TarRefused("not a readable tar: %s" % e)
    out, total = [], 0
    for m in members:
        # tarfile folds a GNU long name or link ('L', 'K') into the next
        # member, whose offset is the extension's header: refused, as
        # results/tar.c refuses it (their meaning differs between tars)
        kind = data[m.offset + 156:m.offset + 157]
        if m.pax_headers or kind in (b"L", b"K", b"x", b"g", b"X"):
            raise TarRefused("%s: refused: entry type %r (pax or GNU "
                             "extension headers are not allowed)"
                             % (m.name[:60], kind.decode("latin-1")))
        name = _tidy(m.name, m.isdir())
        if m.isdir() and not name:
            continue
        if not _relpath_ok(name):
            raise TarRefused("%s: refused: a path must be relative, with "
                             "no empty, . or .. part" % m.name[:60])
        if m.issym() and not _relpath_ok(m.linkname):
            raise TarRefused("%s: refused: a symlink must point down from "
                             "its directory (relative, no ..)" % name)
        if m.islnk() and not _relpath_ok(_tidy(m.linkname, False)):
            raise TarRefused("%s: refused: a hard link must name a file "
                             "inside the archive" % name)
        if not (m.isfile() or m.isdir() or m.issym() or m.islnk()):
            raise TarRefused("%s: refused: device nodes and fifos are not "
                             "allowed" % name)
        if len(out) + 1 > max_files:
            raise TarRefused("over the cap of %d entries" % max_files)
        total += m.size if m.isfile() else 0
        if total > max_bytes:
            raise TarRefused("over the cap of %d bytes of file contents"
                             % max_bytes)
        out.append((name, m))
    return t, out


def tar_dir(path, max_bytes=BYTES_DEFAULT, max_files=FILES_DEFAULT):
    """A ustar tar of local directory `path` (symlinks kept as links)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT,
                      dereference=False) as t:
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for n in sorted(dirs) + sorted(files):
                full = os.path.join(root, n)
                t.add(full, arcname=os.path.relpath(full, path),
                      recursive=False)
    data = buf.getvalue()
    check(data, max_bytes, max_files)
    return data


def _parent(root_fd, name):
    fd = os.dup(root_fd)
    parts = name.split("/")
    try:
        for p in parts[:-1]:
            try:
                os.mkdir(p, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            nfd = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW,
                          dir_fd=fd)
            os.close(fd)
            fd = nfd
    except OSError:
        os.close(fd)
        raise
    return fd, parts[-1]


def untar(data, dest, max_bytes=BYTES_DEFAULT, max_files=FILES_DEFAULT):
    """Write checked ustar bytes under local directory `dest`."""
    t, members = check(data, max_bytes, max_files)
    os.makedirs(dest, exist_ok=True)
    root = os.open(dest, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name, m in members:
            pfd, leaf = _parent(root, name)
            try:
                if m.isdir():
                    try:
                        os.mkdir(leaf, 0o755, dir_fd=pfd)
                    except FileExistsError:
                        pass
                elif m.issym():
                    os.symlink(m.linkname, leaf, dir_fd=pfd)
                elif m.islnk():
                    lfd, lleaf = _parent(root, _tidy(m.linkname, False))
                    try:
                        os.link(lleaf, leaf, src_dir_fd=lfd, dst_dir_fd=pfd,
                                follow_symlinks=False)
                    finally:
                        os.close(lfd)
                else:
                    fd = os.open(leaf, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                                 | os.O_NOFOLLOW, (m.mode & 0o755) | 0o600,
                                 dir_fd=pfd)
                    with os.fdopen(fd, "wb") as f:
                        f.write(t.extractfile(m).read())
            finally:
                os.close(pfd)
    finally:
        os.close(root)


def _run(s, script, *args, stdin=None):
    r = s.exec(["sh", "-c", script, "airlock"] + list(args), stdin=stdin,
               timeout_ms=_TIMEOUT_MS)
    if r.status != "OK" or r.exit_code != 0:
        raise TarRefused("the guest's command failed (%s %s): %s" % (
            r.status, r.exit_code, r.stderr[-160:].decode(errors="replace")))
    return r


def _remote_ok(remote):
    if remote != "." and not _relpath_ok(remote):
        raise TarRefused("%s: the directory must be . or a relative path "
                         "with no empty, . or .. part" % remote)


def put(s, data, remote, max_bytes=BYTES_DEFAULT, max_files=FILES_DEFAULT):
    """Check ustar bytes, then extract them into `remote` in the VM."""
    _remote_ok(remote)
    check(data, max_bytes, max_files)
    tmp = ".airlock-tar-py%08x" % random.getrandbits(32)
    try:
        off = 0
        while True:
            _run(s, 'mkdir -p -- "$1" && cat > "$2"' if off == 0
                 else 'cat >> "$2"', remote, tmp,
                 stdin=data[off:off + CHUNK])
            off += CHUNK
            if off >= len(data):
                break
        _run(s, 'tar -x --no-same-owner --no-same-permissions -f "$2" '
             '-C "$1"', remote, tmp)
    finally:
        s.exec(["rm", "-f", "--", tmp])


def get(s, remote, max_bytes=BYTES_DEFAULT, max_files=FILES_DEFAULT):
    """Directory `remote` of the VM as checked ustar bytes."""
    _remote_ok(remote)
    tmp = ".airlock-tar-py%08x" % random.getrandbits(32)
    cap = max_bytes + (max_files + 2) * 1024 + 10240
    try:
        r = _run(s, 'tar -c --format=ustar --exclude="./$2" -f "$2" '
                 '-C "$1" . && wc -c < "$2"', remote, tmp)
        total = int(r.stdout.strip() or b"-1")
        if total < 0 or total > cap:
            raise TarRefused("the tar is %d bytes, over the caps" % total)
        parts, got = [], 0
        while got < total:
            r = _run(s, 'tail -c +"$2" -- "$1" | head -c "$3"', tmp,
                     str(got + 1), str(min(CHUNK, total - got)))
            if not r.stdout or len(r.stdout) > total - got:
                raise TarRefused("the guest's tar changed")
            parts.append(r.stdout)
            got += len(r.stdout)
    finally:
        s.exec(["rm", "-f", "--", tmp])
    data = b"".join(parts)
    check(data, max_bytes, max_files)
    return data
