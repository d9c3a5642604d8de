#!/usr/bin/env python3
"""sf_submit_test.py: SandboxFusion's dataset route /submit as its SDK
sends it (sandbox_fusion.submit: requests.post(ENDPOINT + "/submit",
json=SubmitRequest(...).dict()), every TestConfig field present, None
as null) with the problem's row in config.provided_data: HumanEval/0's
canonical solution accepted and a wrong completion not, an MBPP problem
(SandboxFusion's own fewshot example) accepted as a [DONE]-ended
completion and failed as a fenced one. The answer read as the SDK's
EvalResult model reads it.

usage: sf_submit_test.py BASE_URL HUMANEVAL_JSONL_GZ
"""
import gzip
import json
import sys

import requests

URL = sys.argv[1].rstrip("/") + "/submit"
he = json.loads(gzip.open(sys.argv[2], "rt").readline())  # HumanEval/0


def fail(what):
    sys.exit("sandboxfusion submit: FAIL: " + what)


def config(data, **kw):
    # TestConfig(...).dict(): every field, None as null
    c = {"dataset_type": None, "language": None, "locale": None,
         "is_fewshot": None, "compile_timeout": None, "run_timeout": None,
         "custom_extract_logic": None, "provided_data": data, "extra": {}}
    c.update(kw)
    return c


def submit(dataset, id_, completion, cfg):
    r = requests.post(URL, json={"dataset": dataset, "id": id_,
                                 "completion": completion, "config": cfg},
                      timeout=600)
    if r.status_code != 200:
        fail(f"{dataset} {id_}: {r.status_code} {r.text}")
    out = r.json()
    # EvalResult's fields, tests[0].exec_info a RunCodeResponse
    for k in ("id", "accepted", "extracted_code", "full_code", "tests"):
        if k not in out:
            fail(f"no {k}: {out}")
    t = out["tests"][0]
    if out["id"] != id_ or t["passed"] != out["accepted"] or \
            t["exec_info"]["status"] not in ("Success", "Failed"):
        fail(f"shape: {out}")
    return out


row = {k: he[k] for k in ("task_id", "prompt", "test", "entry_point")}
out = submit("humaneval_python", he["task_id"], he["canonical_solution"],
             config(row, language="python", locale="en"))
if not out["accepted"] or \
        out["tests"][0]["exec_info"]["status"] != "Success" or \
        not out["full_code"].endswith("\ncheck(has_close_elements)") or \
        out["extracted_code"] != he["canonical_solution"]:
    fail(f"HumanEval/0 canonical: {out}")
# a completion that runs on past the function (a model's next def) is cut
# at SandboxFusion's stop token, as it does
wrong = "    return False\n\n\ndef unrelated():\n    pass\n"
out = submit("humaneval_python", he["task_id"], wrong,
             config(row, language="python"))
ei = out["tests"][0]["exec_info"]
if out["accepted"] or ei["status"] != "Failed" or \
        "AssertionError" not in ei["run_result"]["stderr"] or \
        out["extracted_code"] != "    return False\n\n":
    fail(f"HumanEval/0 wrong: {out}")

mbpp = {"id": 2, "content": "Write a function to find the similar elements "
        "from the given two tuple lists.",
        "labels": json.dumps({"task_id": 2, "test_setup_code": "",
                              "challenge_test_list": []}),
        "test_list": json.dumps([
            "assert similar_elements((3, 4, 5, 6),(5, 7, 4, 10)) == (4, 5)",
            "assert similar_elements((1, 2, 3, 4),(5, 4, 3, 7)) == (3, 4)",
            "assert similar_elements((11, 12, 14, 13),(17, 15, 14, 13)) "
            "== (13, 14)"])}
good = ("def similar_elements(test_tup1, test_tup2):\r\n"
        "  res = tuple(set(test_tup1) & set(test_tup2))\r\n"
        "  return (res)\n[DONE]\n[BEGIN]\nignored")
out = submit("mbpp", 2, good, config(mbpp, run_timeout=20))
if not out["accepted"] or "\r" in out["extracted_code"] or \
        "[DONE]" in out["full_code"] or \
        not out["full_code"].rstrip().endswith("== (13, 14)"):
    fail(f"mbpp 2 accepted: {out}")
bad = "Here:\n```python\ndef similar_elements(a, b):\n    return tuple(a)\n```\n"
out = submit("mbpp", 2, bad, config(mbpp))
if out["accepted"] or out["tests"][0]["exec_info"]["status"] != "Failed" or \
        out["extracted_code"] != "\ndef similar_elements(a, b):\n    return tuple(a)":
    fail(f"mbpp 2 failed: {out}")
print("sandboxfusion submit: ok")
