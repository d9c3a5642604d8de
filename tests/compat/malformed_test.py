#!/usr/bin/env python3
"""malformed_test.py: malformed requests on each door get the protocol's
own error (Judge0: 4xx with {"error"} or per-field {"field": [...]};
Piston: 400 {"message"}; SandboxFusion: 422 {"detail"}). The caller
checks that nothing was enqueued. A token is configured: Judge0 sends it
as X-Auth-Token, the others as a bearer token.

usage: malformed_test.py BASE_URL TOKEN
"""
import json
import sys

import requests

BASE, TOKEN = sys.argv[1], sys.argv[2]
J0 = {"Content-Type": "application/json", "X-Auth-Token": TOKEN}
BEARER = {"Content-Type": "application/json",
          "Authorization": "Bearer " + TOKEN}
BIG = "x" * (2 << 20)
TEN = "y" * (10 << 20)
n = 0


def expect(method, path, headers, body, code, check, raw=None, params=None):
    global n
    data = raw if raw is not None else json.dumps(body)
    r = requests.request(method, BASE + path, headers=headers, data=data,
                         params=params, timeout=120)
    try:
        j = r.json()
    except ValueError:
        sys.exit(f"malformed: FAIL: {path} {body!r:.80}: not JSON: "
                 f"{r.status_code} {r.text[:200]}")
    if r.status_code != code or not check(j):
        sys.exit(f"malformed: FAIL: {path} {str(body)[:80]}: got "
                 f"{r.status_code} {str(j)[:300]}, want {code}")
    n += 1


def field(name):
    return lambda j: isinstance(j.get(name), list) and j[name]


def error(j):
    return isinstance(j.get("error"), str)


def message(j):
    return isinstance(j.get("message"), str)


def detail(j):
    return "detail" in j


ok = {"source_code": "print(1)", "language_id": 71}
# --- Judge0 ---
expect("POST", "/submissions", {"Content-Type": "application/json"}, ok,
       401, error)
expect("POST", "/submissions", J0, {**ok, "language_id": "abc"}, 422,
       field("language_id"))
expect("POST", "/submissions", J0, {**ok, "language_id": 9999}, 422,
       field("language_id"))
expect("POST", "/submissions", J0, {"language_id": 71}, 422,
       field("source_code"))
expect("POST", "/submissions", J0, {**ok, "source_code": 5}, 422,
       field("source_code"))
expect("POST", "/submissions", J0, {**ok, "stdin": ["a"]}, 422,
       field("stdin"))
expect("POST", "/submissions", J0, {**ok, "cpu_time_limit": "fast"}, 422,
       field("cpu_time_limit"))
expect("POST", "/submissions", J0, {**ok, "cpu_time_limit": 100}, 422,
       field("cpu_time_limit"))
expect("POST", "/submissions", J0, {**ok, "memory_limit": -1}, 422,
       field("memory_limit"))
expect("POST", "/submissions", J0, {**ok, "enable_network": True}, 422,
       field("enable_network"))
# compiler options on an interpreted language: Judge0's own refusal
expect("POST", "/submissions", J0, {**ok, "compiler_options": "-O"}, 422,
       lambda j: j.get("compiler_options") == [
           "setting compiler options is only allowed for compiled "
           "languages"])
expect("POST", "/submissions", J0, {**ok, "source_code": BIG}, 422,
       field("source_code"))
expect("POST", "/submissions", J0, {**ok, "source_code": "!!not b64"}, 422,
       field("source_code"), params={"base64_encoded": "true"})
expect("POST", "/submissions", J0, None, 400, error,
       raw=b'{"source_code":"\xff\xfe","language_id":71}')
expect("POST", "/submissions", J0, None, 400, error, raw=b"not json")
expect("POST", "/submissions", J0, {**ok, "source_code": TEN}, 422,
       field("source_code"))
expect("POST", "/submissions/batch", J0, {"submissions": [ok] * 1000}, 422,
       error)
expect("POST", "/submissions/batch", J0, {"submissions": "x"}, 400, error)
expect("GET", "/submissions/no-such-token", J0, None, 404, error, raw=b"")
expect("GET", "/languages/9999", J0, None, 404, error, raw=b"")
expect("POST", "/submissions", {**J0, "X-Auth-Token": "wrong-token-0123456"},
       ok, 401, error)
# text/plain (what a browser may post cross-site unasked): refused here
expect("POST", "/submissions", {**J0, "Content-Type": "text/plain"}, ok,
       415, error)
# additional_files: each zip refused before the queue, per field (422)
import base64 as _b64
import io as _io
import warnings as _w
import zipfile as _zf


def _zip(entries, comp=_zf.ZIP_DEFLATED):
    buf = _io.BytesIO()
    with _w.catch_warnings():
        _w.simplefilter("ignore")  # zipfile warns of the duplicate
        with _zf.ZipFile(buf, "w", comp) as z:
            for e, data in entries:
                z.writestr(e, data)
    return _b64.b64encode(buf.getvalue()).decode()


_link = _zf.ZipInfo("link")
_link.create_system = 3
_link.external_attr = 0o120777 << 16
_enc = bytearray(_b64.b64decode(_zip([("a", "x")], _zf.ZIP_STORED)))
_enc[6] |= 1  # the encrypted flag, in the local and central headers
_enc[_enc.rindex(b"PK\x01\x02") + 8] |= 1
for bad, why in ((_zip([(_link, "/etc/passwd")]), "a symlink"),
                 (_zip([("../evil", "x")]), "not a relative path"),
                 (_zip([("/abs", "x")]), "not a relative path"),
                 (_zip([("a/../../b", "x")]), "not a relative path"),
                 (_zip([("a\\b", "x")]), "not a relative path"),
                 (_zip([("run", "1"), ("run", "2")]), "name twice"),
                 (_zip([(f"f{i}", "x") for i in range(65)]), "entries"),
                 (_zip([("bomb", "0" * (11 << 20))]), "uncompressed"),
                 (_b64.b64encode(bytes(_enc)).decode(), "encrypted"),
                 (_b64.b64encode(b"not a zip at all").decode(),
                  "not a zip"),
                 ("!!not base64!!", "not base64"), (5, "base64 zip"),
                 # a name cut inside a character: the message stays JSON
                 (_zip([("\u00e9" * 40 + "/../x", "x")]),
                  "not a relative path")):
    expect("POST", "/submissions", J0, {**ok, "additional_files": bad}, 422,
           lambda j, w=why: any(w in m for m in
                                j.get("additional_files") or []))
expect("POST", "/submissions", J0, {"language_id": 89}, 422,
       field("additional_files"))
# --- Piston ---
P = "/api/v2/execute"
good = {"language": "python", "version": "*",
        "files": [{"content": "print(1)"}]}
expect("POST", P, {"Content-Type": "application/json"}, good, 401, message)
# piston-client's text/plain is taken without Origin, never with one
expect("POST", P, {**BEARER, "Content-Type": "text/plain",
                   "Origin": "http://evil.example"}, good, 415, message)
expect("POST", P, {**BEARER, "Content-Type": "text/plain"},
       {**good, "language": 5}, 400, message)
expect("POST", P, BEARER, {**good, "language": 5}, 400, message)
expect("POST", P, BEARER, {**good, "language": "brainfuck"}, 400, message)
expect("POST", P, BEARER, {**good, "version": "2.7"}, 400, message)
expect("POST", P, BEARER, {**good, "files": "print(1)"}, 400, message)
expect("POST", P, BEARER, {**good, "files": []}, 400, message)
expect("POST", P, BEARER,
       {**good, "files": [{"content": "!!", "encoding": "base64"}]}, 400,
       message)
expect("POST", P, BEARER,
       {**good, "files": [{"content": "zz", "encoding": "hex"}]}, 400,
       message)
expect("POST", P, BEARER, {**good, "args": "a b"}, 400, message)
expect("POST", P, BEARER, {**good, "run_timeout": "soon"}, 400, message)
expect("POST", P, BEARER, {**good, "files": [{"content": BIG}]}, 400,
       message)
expect("POST", P, BEARER, {**good, "files": [{"content": TEN}]}, 400,
       message)
expect("POST", P, BEARER, None, 400, message, raw=b"\xff\xfe")
# --- SandboxFusion ---
S = "/run_code"
sf = {"code": "print(1)", "language": "python"}
expect("POST", S, {"Content-Type": "application/json"}, sf, 401, detail)
expect("POST", S, BEARER, {**sf, "code": 1}, 422, detail)
expect("POST", S, BEARER, {**sf, "language": "cobol-1960"}, 422, detail)
expect("POST", S, BEARER, {**sf, "run_timeout": "x"}, 422, detail)
expect("POST", S, BEARER, {**sf, "files": {"a": "!!"}}, 422, detail)
expect("POST", S, BEARER, {**sf, "fetch_files": "a"}, 422, detail)
expect("POST", S, BEARER, {**sf, "code": BIG}, 422, detail)
expect("POST", S, BEARER, {**sf, "code": TEN}, 422, detail)
expect("POST", S, BEARER, None, 422, detail, raw=b"[1,2")
# --- SandboxFusion /submit: FastAPI's 422 {"detail": [..]} for a field
# of the wrong shape, its HTTPException 400 {"detail": "..."} otherwise ---
U = "/submit"
row = {"prompt": "def f():\n", "test": "def check(c):\n    pass\n",
       "entry_point": "f"}
cfg = {"language": "python", "provided_data": row, "extra": {}}
sub = {"dataset": "humaneval_python", "id": 0, "completion": "  return 1\n",
       "config": cfg}
mb = {**sub, "dataset": "mbpp",
      "config": {"provided_data": {"labels": {"test_setup_code": ""},
                                   "test_list": ["assert f() == 1"]}}}


def listed(j):
    return isinstance(j.get("detail"), list) and j["detail"]


def said(j):
    return isinstance(j.get("detail"), str)


expect("POST", U, {"Content-Type": "application/json"}, sub, 401, detail)
for k in ("dataset", "id", "completion", "config"):
    expect("POST", U, BEARER, {x: v for x, v in sub.items() if x != k},
           422, listed)
expect("POST", U, BEARER, {**sub, "id": [1]}, 422, listed)
expect("POST", U, BEARER, {**sub, "completion": 5}, 422, listed)
expect("POST", U, BEARER, {**sub, "completion": BIG}, 422, listed)
expect("POST", U, BEARER, {**sub, "completion": "a\u0000b"}, 422, listed)
expect("POST", U, BEARER, {**sub, "config": "x"}, 422, listed)
expect("POST", U, BEARER,
       {**sub, "config": {**cfg, "run_timeout": "soon"}}, 422, listed)
expect("POST", U, BEARER, None, 422, listed, raw=b"[1,2")
# neither provided_data nor a dataset this server holds
expect("POST", U, BEARER, {**sub, "config": {"language": "python"}}, 400,
       said)
expect("POST", U, BEARER,
       {**sub, "config": {**cfg, "provided_data": None}}, 400, said)
expect("POST", U, BEARER, {**sub, "config": {**cfg, "provided_data": [row]}},
       400, said)
expect("POST", U, BEARER, {**sub, "dataset": "humaneval_cpp"}, 400, said)
# a dataset id cut inside a character in the message: still JSON
expect("POST", U, BEARER, {**sub, "dataset": "x" + "\u00e9" * 40}, 400,
       said)
expect("POST", U, BEARER, {**sub, "dataset": "x",
                           "config": {**cfg, "dataset_type": "NoSuch"}},
       400, said)
expect("POST", U, BEARER, {**sub, "config": {**cfg, "language": "cpp"}},
       400, said)
expect("POST", U, BEARER,
       {**sub, "config": {**cfg, "provided_data": {"prompt": "x"}}}, 400,
       said)
expect("POST", U, BEARER,
       {**sub, "config": {**cfg, "provided_data": {**row, "test": BIG}}},
       400, said)
expect("POST", U, BEARER, {**mb, "config": {"provided_data": {
    "labels": {}, "test_list": ["assert 1"]}}}, 400, said)
expect("POST", U, BEARER, {**mb, "config": {"provided_data": {
    "labels": "{not json", "test_list": ["assert 1"]}}}, 400, said)
expect("POST", U, BEARER, {**mb, "config": {"provided_data": {
    "labels": {"test_setup_code": ""}, "test_list": []}}}, 400, said)
expect("POST", U, BEARER, {**mb, "config": {"provided_data": {
    "labels": {"test_setup_code": ""}, "test_list": [1]}}}, 400, said)
expect("POST", U, BEARER, {**mb, "config": {"provided_data": {
    "labels": {"test_setup_code": ""}, "test_list": ["a"] * 1001}}}, 400,
       said)
print(f"malformed: {n} requests refused, each in its protocol's shape")
