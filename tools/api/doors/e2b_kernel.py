# e2b_kernel.py: the code interpreter of E2B's door (docs/compat-e2b.md),
# run inside the sandbox. Not a file of the image: tools/api/doors/
# e2b_jupyter.c embeds it (cmake turns it into a C string) and passes it
# to `python3 -c` as the exec's argv.
#
# As the client (argv[1] == "client"): read the request (one JSON line:
# code, context_id) from stdin, hand it to the kernel over its unix
# socket (starting the kernel, in a session of its own, when none
# answers) and copy the kernel's NDJSON answer to stdout: the exec's
# stdout is what the door streams to @e2b/code-interpreter.
# As the kernel (argv[1] == "kernel"): serve requests one at a time, each
# context a globals dict kept for the sandbox's life; the last expression
# is the main result; matplotlib figures become PNG results.
import ast, base64, io, json, os, socket, subprocess, sys, time, traceback

SOCK = os.path.abspath(".e2b-kernel.sock")
count = [0]
contexts = {}


def emit_to(f):
    def emit(d):
        f.write(json.dumps(d) + "\n")
        f.flush()
    return emit


class Stream(io.TextIOBase):
    """A stream of the cell's output, emitted a line at a time."""

    def __init__(self, kind, emit):
        self.kind, self.emit, self.buf = kind, emit, ""

    def write(self, s):
        self.buf += s
        while "\n" in self.buf:
            line, self.buf = self.buf.split("\n", 1)
            self.emit({"type": self.kind, "text": line + "\n"})
        return len(s)

    def flush(self):
        if self.buf:
            self.emit({"type": self.kind, "text": self.buf})
            self.buf = ""


def figures(emit):
    plt = sys.modules.get("matplotlib.pyplot")
    if not plt:
        return
    for n in plt.get_fignums():
        b = io.BytesIO()
        plt.figure(n).savefig(b, format="png")
        emit({"type": "result", "png": base64.b64encode(b.getvalue()).decode(),
              "text": "<Figure>", "is_main_result": False})
    plt.close("all")


def run(req, emit):
    g = contexts.setdefault(req.get("context_id") or "default",
                            {"__name__": "__main__"})
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Stream("stdout", emit), Stream("stderr", emit)
    try:
        tree = ast.parse(req.get("code", ""), "<cell>", "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<cell>", "exec"), g)
        if last is not None:
            v = eval(compile(last, "<cell>", "eval"), g)
            if v is not None:
                emit({"type": "result", "text": repr(v), "is_main_result": True})
        figures(emit)
    except BaseException as e:
        emit({"type": "error", "name": type(e).__name__, "value": str(e),
              "traceback": "".join(traceback.format_exception(type(e), e, e.__traceback__))})
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = saved
    count[0] += 1
    emit({"type": "number_of_executions", "execution_count": count[0]})


def kernel():
    s = socket.socket(socket.AF_UNIX)
    try:
        os.unlink(SOCK)
    except OSError:
        pass
    s.bind(SOCK)
    os.chmod(SOCK, 0o600)
    s.listen(4)
    while True:
        c, _ = s.accept()
        with c, c.makefile("rb") as r, c.makefile("w", encoding="utf-8") as w:
            try:
                req = json.loads(r.readline())
            except ValueError:
                continue
            run(req, emit_to(w))


def connect():
    s = socket.socket(socket.AF_UNIX)
    s.connect(SOCK)
    return s


def client():
    req = sys.stdin.buffer.read()
    try:
        s = connect()
    except OSError:
        subprocess.Popen([sys.executable, "-c", sys.argv[2], "kernel"],
                         start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(600):
            time.sleep(0.05)
            try:
                s = connect()
                break
            except OSError:
                pass
        else:
            sys.exit("the kernel did not start")
    s.sendall(req.replace(b"\n", b" ") + b"\n")
    while True:
        b = s.recv(65536)
        if not b:
            break
        sys.stdout.buffer.write(b)
        sys.stdout.flush()


if sys.argv[1:2] == ["kernel"]:
    kernel()
else:
    client()
