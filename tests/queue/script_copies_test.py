#!/usr/bin/python3
"""script_copies_test.py: the Python client's copies of the queue's Lua
scripts (clients/python/airlock/client.py: SUBMIT, JOB_STATUS, CANCEL)
are the dispatcher's (dispatcher/queue/script.c), byte for byte.

The client must send the same script so that both submit paths share one
SHA and one behaviour; the source of truth is script.c. Reads client.py
as text (no import: no redis module needed) and asks script_text for the
C text. Usage: script_copies_test.py SCRIPT_TEXT_BINARY CLIENT_PY
"""
import ast
import subprocess
import sys


def python_copies(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    out = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):
            name = node.targets[0].id
            if name in ("SUBMIT", "JOB_STATUS", "CANCEL"):
                out[name] = ast.literal_eval(node.value)
    return out


def main():
    binary, client = sys.argv[1], sys.argv[2]
    copies = python_copies(client)
    bad = 0
    for name in ("SUBMIT", "JOB_STATUS", "CANCEL"):
        want = subprocess.run([binary, name], check=True,
                              capture_output=True).stdout.decode()
        got = copies.get(name)
        if got != want:
            print(f"{client}: {name} differs from dispatcher/queue/"
                  f"script.c's (got {len(got or '')} bytes, want "
                  f"{len(want)})")
            bad = 1
    if not bad:
        print("3 scripts match byte for byte")
    return bad


if __name__ == "__main__":
    sys.exit(main())
