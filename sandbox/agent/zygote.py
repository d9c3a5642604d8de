# zygote.py: the template's pre-initialized python3 (docs/zygote.md).
#
# The agent runs this as `python3 -c <this file> MODULE...`, as the job
# user, in a template before its snapshot (request `zygote`). It imports
# the modules, says it is ready (one byte on fd 3, a SOCK_SEQPACKET to the
# agent) and waits. Every clone of the template then holds it, waiting. A
# job's first `python3 FILE ARG...` or `python3 -c CODE ARG...` step runs
# in it instead of in a new interpreter: the agent moves this process into
# the step's cgroup, sets its limits and sends one message, the step's cwd
# (text) and argv, NUL-separated, with four fds (stdin, stdout, stderr and
# an O_PATH fd of the cwd). From there this process is the step's and does
# what `python3 FILE` would have done after its start-up: the same argv,
# sys.path[0], __main__, tracebacks and exit status. Anything it does not
# reproduce exactly (a directory or zip to run, a .pyc, source with NUL
# bytes) it hands to a fresh interpreter with execv, which is always right.
# Only the template's code runs here before the message: nothing of a job.


def _airlock_zygote():
    import gc
    import os
    import sys
    import _socket

    if sys.path and sys.path[0] == "":
        del sys.path[0]  # -c's cwd entry: the job's script dir goes there
    # the eval check runner's dir (results/proto.h, AL_CHECK_DIR), for
    # its module _airlock_check only while the template's modules load
    sys.path.insert(0, "/run/airlock-check")
    for name in sys.argv[1:]:
        try:
            __import__(name)
        except Exception as e:  # the template's problem: say so, go on
            sys.stderr.write("airlock zygote: import %s: %r\n" % (name, e))
    del sys.path[0]
    gc.collect()
    gc.freeze()  # start-up objects: never scanned by the job's collections

    s = _socket.socket(fileno=3)
    s.send(b"R")
    while True:
        msg, anc, _, _ = s.recvmsg(1 << 16, _socket.CMSG_SPACE(4 * 4))
        fds = []
        for level, kind, data in anc:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                fds += [
                    int.from_bytes(data[i : i + 4], sys.byteorder, signed=True)
                    for i in range(0, len(data) - len(data) % 4, 4)
                ]
        if msg != b"W" or fds:
            break
        warm = _warm(os, sys)  # the hand-over of a warm-up child, or None
        if warm:
            msg, fds = warm
            break
        s.send(b"R")
    s.close()
    if len(fds) != 4 or not msg:
        os._exit(125)  # the agent reads this as the step's own failure
    for i in range(3):
        os.dup2(fds[i], i)
    for fd in fds[:3]:
        if fd > 2:
            os.close(fd)
    parts = [os.fsdecode(p) for p in msg.split(b"\0")]
    cwd, argv = parts[0], parts[1:]
    try:
        os.fchdir(fds[3])
    except OSError as e:
        os.write(2, ("airlock: cwd %s: %s\n" % (cwd, e.strerror)).encode())
        os._exit(127)
    os.close(fds[3])

    # fresh per job: what a module drew from entropy at import
    for name in ("random", "numpy.random"):
        mod = sys.modules.get(name)
        if mod is not None and hasattr(mod, "seed"):
            mod.seed()
    tf = sys.modules.get("tempfile")
    if tf is not None:
        tf._name_sequence = None

    fallback = False
    if argv[1] == "-c":
        filename, source = "<string>", argv[2]
        path0, args = "", ["-c"] + argv[3:]
    else:
        script = argv[1]
        # CPython's run_filename: made absolute by joining, not normalized
        filename = script if script.startswith("/") else os.getcwd() + "/" + script
        path0, args = _sys_path0(os, script), argv[1:]
        source = None
        try:
            with open(filename, "rb") as f:
                source = f.read()
        except IsADirectoryError:
            fallback = True
        except OSError as e:
            os.write(
                2,
                (
                    "%s: can't open file %r: [Errno %d] %s\n"
                    % (argv[0], filename, e.errno, e.strerror)
                ).encode(errors="backslashreplace"),
            )
            os._exit(2)
        if not fallback and (
            filename.endswith(".pyc") or b"\0" in source or _is_zip(filename)
        ):
            fallback = True
    if fallback:
        os.execv(sys.executable, argv)

    import builtins

    boot = sys.modules["_frozen_importlib"]
    ext = sys.modules["_frozen_importlib_external"]
    # the keys, and their order, of the __main__ the interpreter makes
    main = type(sys)("__main__")
    if filename == "<string>":
        main.__loader__ = boot.BuiltinImporter
    else:
        main.__loader__ = ext.SourceFileLoader("__main__", filename)
    main.__annotations__ = {}
    main.__builtins__ = builtins
    if filename != "<string>":
        main.__file__ = filename
        main.__cached__ = None
    sys.modules["__main__"] = main
    sys.argv = args
    sys.orig_argv = argv
    sys.path.insert(0, path0)
    return main, filename, source


# A warm clone's warm-up (request `zygote {warm: true}`, docs/zygote.md):
# what a job does in this process, done first in forks of it. Under TCG
# the translations of the interpreter's code are made per address, and only
# a fork has this process's addresses: a fresh python3 (the template's
# clone_warmup) warms its own. Each case is a hand-over as the agent would
# send it, with its stdin in a pipe: `python3 -c` ending through the
# interpreter's own exit, and the check runner (docs/eval.md) on a small
# sample, ending in os._exit. Template code only: no job is in the VM yet.
_WARM_PROGRAM = """from typing import List


def close_pairs(xs: List[float], t: float) -> List[tuple]:
    out = []
    for i, a in enumerate(xs):
        for j, b in enumerate(xs[i + 1:], i + 1):
            if abs(a - b) < t:
                out.append((i, j))
    return sorted(out, key=lambda p: (p[1], p[0]))

"""
_WARM_TEST = """def check(candidate):
    assert candidate([1.0, 2.0, 3.9, 4.0], 0.3) == [(2, 3)]
    assert candidate([], 1.0) == []
    words = " ".join(str(x) for x in range(5)).split()
    assert {w: len(w) for w in words} == dict.fromkeys(words, 1)
    assert max(set(words)) == "4" and "-".join(words[::-1]).upper()
    try:
        int("x")
    except ValueError:
        pass
"""
_WARM_SAMPLE = _WARM_PROGRAM + "\n" + _WARM_TEST


def _warm(os, sys):
    import json

    def hand_over(argv, stdin):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(w)
            out, err = (os.open("/dev/null", os.O_WRONLY) for _ in "12")
            return b"\0".join([b"."] + argv), [r, out, err, os.open(".", os.O_PATH)]
        os.close(r)
        os.write(w, stdin)  # small: within the pipe's buffer
        os.close(w)
        _, status = os.waitpid(pid, 0)
        if status:
            sys.stderr.write("airlock zygote: warm-up %r: status %d\n" % (argv[1], status))
        return None

    cases = [([b"python3", b"-c", _WARM_SAMPLE.encode() + b"check(close_pairs)\nprint(1)\n"], b"")]
    if os.path.exists("/run/airlock-check/check.py"):
        spec = {"program": _WARM_PROGRAM, "test": _WARM_TEST, "check": "check", "candidate": "close_pairs"}
        cases.append(([b"python3", b"/run/airlock-check/check.py"], b"warm\n" + json.dumps(spec).encode()))
    for argv, stdin in cases:
        child = hand_over(argv, stdin)
        if child:
            return child
    return None


def _sys_path0(os, script):
    # CPython's _PyPathConfig_ComputeSysPath0 for a script: one readlink,
    # realpath, then the directory
    p = script
    try:
        link = os.readlink(p)
    except OSError:
        link = None
    if link:
        if link.startswith("/"):
            p = link
        elif "/" in link:
            p = os.path.join(os.path.dirname(p), link)
    try:
        p = os.path.realpath(p, strict=True)
    except OSError:
        pass
    i = p.rfind("/")
    return p[:i] if i > 0 else ("/" if i == 0 else "")


def _is_zip(filename):
    import zipimport

    try:
        zipimport.zipimporter(filename)
    except Exception:
        return False
    return True


# The job's code runs from this, the top level, so that it sits one frame
# below where `python3 FILE` puts it, not more.
_m, _f, _s = _airlock_zygote()
try:
    exec(compile(_s, _f, "exec", dont_inherit=True), _m.__dict__)
except SystemExit:
    raise  # the interpreter's own handling: message and exit status
except BaseException as _e:
    import sys as _sys

    _tb = _e.__traceback__
    while _tb is not None and _tb.tb_frame.f_code is _sys._getframe().f_code:
        _tb = _tb.tb_next  # not ours to show: the job's frames only
    _e.__traceback__ = _tb  # what the hook prints, whatever tb it gets
    _sys.last_type, _sys.last_value, _sys.last_traceback = type(_e), _e, _tb
    _sys.excepthook(type(_e), _e, _tb)
    if isinstance(_e, KeyboardInterrupt):  # as the interpreter ends then
        import os as _os
        import signal as _signal

        _sys.stdout.flush()
        _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
        _os.kill(_os.getpid(), _signal.SIGINT)
    raise SystemExit(1) from None
_m.__dict__.pop("__file__", None)
_m.__dict__.pop("__cached__", None)
