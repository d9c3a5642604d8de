#!/usr/bin/env python3
"""plus_check.py: evalplus's semantics in the check runner
(sandbox/agent/check.py, record and plus modes), on the host: this
machine's python3 runs check.py as the guest does (token on stdin, the
report's token checked as results/attest.c does).

  plus_check.py runner   1. record: the canonical solution of every problem
                            of tests/data/eval/plus_problems.jsonl (evalplus's
                            format) on its base and plus inputs; the tagged
                            outputs must decode to what the canonical returns
                            (tuples, sets, dicts, inf);
                         2. plus: every sample of plus_samples.jsonl must get
                            the base_status and plus_status it writes down
                            from evalplus's rules (pass base but fail plus,
                            pass both, fail base; atol, MBPP+'s set oracle
                            and tuple inputs);
                         3. games: samples that loop, sleep, exit, post a
                            forged verdict or skip a stage must not pass.

  plus_check.py evalplus DIR
                         the same problems and samples (and the games
                         whose semantics evalplus shares) through evalplus's
                         own trusted_exec and untrusted_check (DIR: a
                         checkout of evalplus/evalplus; needs NumPy and
                         psutil); each must get the statuses the samples
                         file writes down. Exit 77 (skipped) without DIR.

The specs are built here as tools/eval/eval.c builds them; the VM path (the C
side, the cache, pass@k) is tests/queue/e2e.sh, case evalplus.
"""
import json
import os
import secrets
from runcheck import run_check
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", ".."))
DATA = os.path.join(SRC, "tests", "data", "eval")
CHECK = os.path.join(SRC, "sandbox", "agent", "check.py")
sys.path.insert(0, os.path.dirname(CHECK))
import check  # noqa: E402  (for _decode only)


def run(spec):
    token = secrets.token_hex(16)
    out = run_check(CHECK, (token + "\n" + json.dumps(spec)).encode(), 120)
    if out is None:
        return {"result": "timed out (harness)"}
    lines = out.decode("utf-8", "replace").splitlines()
    if not lines or not lines[-1].startswith(token + " "):
        return {"result": "no report", "base_status": "timeout",
                "plus_status": "timeout"}
    return json.loads(lines[-1][len(token) + 1:])


def dataset(task_id):
    return "mbpp" if task_id.startswith("Mbpp/") else "humaneval"


def common(mode, p, program):
    return {"mode": mode, "program": program,
            "entry_point": p["entry_point"], "dataset": dataset(p["task_id"]),
            "task": p["task_id"], "base_input": p["base_input"],
            "plus_input": p["plus_input"], "guard": True}


def record(p):
    spec = common("record", p, p["prompt"] + p["canonical_solution"])
    spec.update(timeout_ms=60000, cpu_ms=60000)
    return run(spec)


def plus(p, rec, program, **kw):
    spec = common("plus", p, program)
    spec.update(base=rec["base"], plus=rec["plus"],
                base_time=rec["base_time"], plus_time=rec["plus_time"],
                atol=float(p.get("atol") or 0), strict=False, timeout_ms=3000,
                cpu_ms=3000, min_time_limit=4.0, time_factor=4.0,
                time_cap=60.0)
    spec.update(kw)
    return run(spec)


def canonical_outputs(p):
    """What the canonical returns, computed here (trusted, in-process)."""
    import copy
    g = {}
    exec(p["prompt"] + p["canonical_solution"], g)
    fn = g[p["entry_point"]]
    ins = {k: p[k] for k in ("base_input", "plus_input")}
    if dataset(p["task_id"]) == "mbpp":
        ins = {k: check._mbpp_inputs(p["task_id"], v) for k, v in ins.items()}
    return {k[:4]: [fn(*copy.deepcopy(i)) for i in v] for k, v in ins.items()}


GAMES = [
    # (kind, program suffix or whole program, base, plus, passed)
    ("infinite loop: fails at its 4 s per-input limit",
     "def {e}(*a):\n    while True:\n        pass\n", "fail", "fail"),
    ("sleeps past the limit",
     "import time\ndef {e}(*a):\n    time.sleep(30)\n", "fail", "fail"),
    ("os._exit(0) on the first call: no report",
     "import os\ndef {e}(*a):\n    os._exit(0)\n", "timeout", "timeout"),
    ("module-level sys.exit(0)", "import sys\nsys.exit(0)\n", "fail", "fail"),
    ("posts 'returned' from its own thread",
     "import sys\ndef {e}(*a):\n"
     "    f = sys._getframe(1)\n"
     "    while f and 'done' not in f.f_locals:\n        f = f.f_back\n"
     "    f.f_locals['done'].put(('returned', '', ''))\n"
     "    f.f_locals['done'].put(('failed', 'passed', 'passed'))\n"
     "    return None\n", "fail", "fail"),
    ("releases the stage gate to skip its checks",
     "import sys\ndef {e}(*a):\n"
     "    f = sys._getframe(1)\n"
     "    while f and 'gate' not in f.f_locals:\n        f = f.f_back\n"
     "    f.f_locals['gate'].release()\n"
     "    raise ValueError('nope')\n", "fail", "fail"),
    # its own process's serving breaks with the builtins: the process
    # ends without an answer, which evalplus calls a timeout
    ("rebinds builtins and the runner's names to loosen the comparison",
     "import builtins, sys\nm = sys.modules['__main__']\n"
     "builtins.bool = lambda x: True\nbuiltins.isinstance = "
     "lambda *a: True\nm._MBPP_SET_EQ = m._MBPP_NOT_NONE = ('{e}',)\n"
     "m._judge_plus = m._comparator = m._stage_limits = None\n"
     "def {e}(*a):\n    return [0]\n", "timeout", "timeout"),
    # evalplus passes it (its comparison calls the sample's __eq__); the
    # judge takes plain data only (docs/eval.md, "Where the judge differs")
    ("an always-equal object: flagged, not passed",
     "class E:\n    def __eq__(self, o):\n        return True\n"
     "def {e}(*a):\n    return E()\n", "fail", "fail"),
]


# The games evalplus shares (the others reach into Airlock's runner, which
# evalplus does not have), and the statuses evalplus gives them where they
# are not ours: the always-equal object, which the judge refuses.
EVALPLUS_GAMES = (0, 1, 2, 3, 7)
EVALPLUS_OWN = {7: ("pass", "pass")}


def evalplus_main(src, problems, samples):
    """Statuses from evalplus itself (evalplus/evaluate.py's way: the
    canonical solution through trusted_exec, each sample through
    untrusted_check for base and plus, fast_check as its default)."""
    import types
    for stub in ("wget", "tempdir", "appdirs", "datasets"):  # downloads
        m = types.ModuleType(stub)
        m.user_cache_dir = m.load_dataset = lambda *a, **k: "/nonexistent"
        sys.modules[stub] = m
    sys.path.insert(0, src)
    from evalplus.eval import untrusted_check
    from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS
    from evalplus.gen.util import trusted_exec
    from evalplus.data.mbpp import mbpp_deserialize_inputs
    bad = n = 0
    truth = {}
    for tid, p in problems.items():
        ds = dataset(tid)
        for k in ("base_input", "plus_input"):
            if ds == "mbpp":
                p[k] = mbpp_deserialize_inputs(tid, p[k])
        code = p["prompt"] + p["canonical_solution"]
        nn = ds == "mbpp" and p["entry_point"] in MBPP_OUTPUT_NOT_NONE_TASKS
        truth[tid] = {k: trusted_exec(code, p[k + "_input"],
                                      p["entry_point"], record_time=True,
                                      output_not_none=nn)
                      for k in ("base", "plus")}

    def statuses(p, program):
        t = truth[p["task_id"]]
        return tuple(untrusted_check(
            dataset(p["task_id"]), program, p[k + "_input"],
            p["entry_point"], expected=t[k][0], atol=p["atol"],
            ref_time=t[k][1], fast_check=True)[0] for k in ("base", "plus"))

    cases = [(s["task_id"], s["kind"],
              s["solution"] if "solution" in s else
              problems[s["task_id"]]["prompt"] + s["completion"],
              s["expect_base"], s["expect_plus"]) for s in samples]
    cases += [("HumanEval/902", "game " + g[0], g[1].format(e="min_max"))
              + EVALPLUS_OWN.get(i, (g[2], g[3]))
              for i, g in enumerate(GAMES) if i in EVALPLUS_GAMES]
    for tid, kind, program, base, plus_ in cases:
        got = statuses(problems[tid], program)
        ok = got == (base, plus_)
        n += 1
        bad += not ok
        print("%-4s %s %s: evalplus %s/%s%s" % (
            "ok" if ok else "FAIL", tid, kind, got[0], got[1],
            "" if ok else ", the samples file says %s/%s" % (base, plus_)))
    print("%d passed, %d failed" % (n - bad, bad))
    return 1 if bad else 0


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("runner", "evalplus"):
        print(__doc__, file=sys.stderr)
        return 2
    with open(os.path.join(DATA, "plus_problems.jsonl")) as f:
        problems = {}
        for line in f:
            p = json.loads(line)
            problems[p["task_id"]] = p
    with open(os.path.join(DATA, "plus_samples.jsonl")) as f:
        samples = [json.loads(line) for line in f if line.strip()]
    if sys.argv[1] == "evalplus":
        src = sys.argv[2] if len(sys.argv) > 2 else \
            os.environ.get("EVALPLUS_SRC", "")
        if not src or not os.path.isfile(
                os.path.join(src, "evalplus", "eval", "__init__.py")):
            print("skipped: no evalplus checkout (EVALPLUS_SRC)")
            return 77
        try:
            import numpy  # noqa: F401
            import psutil  # noqa: F401
        except ImportError:
            print("skipped: evalplus needs NumPy and psutil")
            return 77
        return evalplus_main(src, problems, samples)
    bad = n = 0

    def report(ok, what, got):
        nonlocal bad, n
        n += 1
        bad += not ok
        print("%-4s %s: %s" % ("ok" if ok else "FAIL", what, got))

    recs = {}
    for tid, p in problems.items():
        rec = record(p)
        recs[tid] = rec
        ok = rec.get("result") == "recorded"
        if ok:
            want = canonical_outputs(p)
            ok = [check._decode(x) for x in rec["base"]] == want["base"] \
                and [check._decode(x) for x in rec["plus"]] == want["plus"]
            ok = ok and all(type(check._decode(a)) is type(b) for a, b in
                            zip(rec["base"] + rec["plus"],
                                want["base"] + want["plus"]))
        report(ok, "record " + tid, rec.get("reason") or "round trip")
    # every tag of the record format, past JSON's and Python's limits
    odd = {"task_id": "HumanEval/999", "entry_point": "f", "prompt": "",
           "canonical_solution": "def f(k):\n    return [3 ** 9000 * k, "
           "-2 ** 70, float('nan'), float('-inf'), 1.5j, b'\\x00\\xff', "
           "frozenset({(1, 2)}), {(1, 'a'): {2: None}}, (), set(), 2 ** 63 - 1"
           "]\n", "base_input": [[1]], "plus_input": [[-1]], "atol": 0}
    rec = record(odd)
    ok = rec.get("result") == "recorded"
    if ok:
        want = canonical_outputs(odd)
        got = {k: [check._decode(x) for x in rec[k]] for k in ("base", "plus")}
        ok = repr(got) == repr(want) and \
            len(json.dumps(rec["base"])) < 10000  # hex, not 4300 digits
    report(ok, "record of every tagged type", rec.get("reason") or
           "round trip")
    for s in samples:
        p = problems[s["task_id"]]
        prog = s["solution"] if "solution" in s else \
            p["prompt"] + s["completion"]
        got = plus(p, recs[s["task_id"]], prog)
        ok = got.get("base_status") == s["expect_base"] and \
            got.get("plus_status") == s["expect_plus"] and \
            (got.get("result") == "passed") == (
                s["expect_base"] == s["expect_plus"] == "pass")
        report(ok, "%s %s" % (s["task_id"], s["kind"]),
               "%s/%s %s" % (got.get("base_status"), got.get("plus_status"),
                             got.get("reason")))
    p = problems["HumanEval/902"]
    for kind, prog, base, plus_, in GAMES:
        got = plus(p, recs[p["task_id"]], prog.format(e=p["entry_point"]))
        ok = got.get("base_status") == base and \
            got.get("plus_status") == plus_ and \
            (got.get("result") == "passed") == (base == plus_ == "pass")
        report(ok, "game " + kind, "%s/%s %s" % (
            got.get("base_status"), got.get("plus_status"),
            got.get("reason")))
    got = plus(p, recs[p["task_id"]], "class E:\n    def __eq__(s, o):\n"
               "        return True\ndef min_max(xs):\n    return E()\n",
               strict=True)
    report(got.get("base_status") == "fail" and
           got.get("reason", "").startswith("flagged: custom __eq__"),
           "game always-equal under --strict", got.get("reason"))
    print("%d passed, %d failed" % (n - bad, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
