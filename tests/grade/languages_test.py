#!/usr/bin/env python3
"""languages_test.py AIRLOCK SRC WORKDIR: a test per language (issue 26):
a hello-world that reads stdin and writes stdout is accepted, and a
compile error (where the language has a compile or check step) is
compile_error with the compiler's message in compile_output. One batch.

The c and python templates' languages always run (their images are the
vm_images fixture's); with AIRLOCK_FULL=1 the node template's image is
built too and JavaScript runs as well (about 40 s more).
"""
import json
import os
import subprocess
import sys

airlock, src, work = sys.argv[1:4]
state = os.environ.get("AIRLOCK_TEST_STATE", "/var/tmp/airlock-test")
full = os.environ.get("AIRLOCK_FULL") == "1"
os.makedirs(work, exist_ok=True)

# language: template, file, source (reads a name, prints "hello, NAME"),
# broken source, compile command, run command
LANGS = {
    "c": ("c", "main.c",
          '#include <stdio.h>\nint main(void){char n[64];'
          'if(scanf("%63s",n)!=1)return 1;printf("hello, %s\\n",n);return 0;}\n',
          "int main(void){ return 0 }\n",
          ["gcc", "-O2", "-o", "main", "main.c"], ["./main"]),
    "cpp": ("c", "main.cc",
            '#include <cstdio>\n#include <string>\nint main(){char n[64];'
            'if(std::scanf("%63s",n)!=1)return 1;std::string s=n;'
            'std::printf("hello, %s\\n",s.c_str());}\n',
            "int main(){ undefined_name(); }\n",
            ["g++", "-O2", "-o", "main", "main.cc"], ["./main"]),
    "python": ("python", "main.py", 'print("hello, " + input().strip())\n',
               'print("hello"\n',
               ["python3", "-m", "py_compile", "main.py"], ["python3", "main.py"]),
    "bash": ("python", "main.sh", 'read -r n; echo "hello, $n"\n',
             'if true; then echo x\n',
             ["bash", "-n", "main.sh"], ["bash", "main.sh"]),
}
if full:
    LANGS["javascript"] = (
        "node", "main.js",
        'const n = require("fs").readFileSync(0, "utf8").trim();\n'
        'console.log("hello, " + n);\n',
        'console.log("hello";\n',
        ["node", "--check", "main.js"], ["node", "main.js"])
    subprocess.run(["bash", os.path.join(src, "sandbox/image/build-image.sh"),
                    "--template", "node", "--agent",
                    os.environ.get("AIRLOCK_AGENT", os.path.join(
                        os.path.dirname(airlock), "..", "sandbox", "agent",
                        "airlock-agent")),
                    "--state-dir", state], check=True)

jobs = []
for name, (tmpl, path, ok, bad, comp, run) in LANGS.items():
    for kind, code in (("hello", ok), ("ce", bad)):
        jobs.append({"id": f"{name}-{kind}", "template": tmpl,
                     "files": {path: code},
                     "steps": [{"name": "compile", "cmd": comp, "compile": True,
                                "timeout_ms": 300000},
                               {"name": "hello", "cmd": run, "stdin": "ada\n",
                                "if": "setup_ok", "timeout_ms": 120000,
                                "expect": {"stdout": "hello, ada\n"}}]})
jobs_path = os.path.join(work, "languages.jsonl")
with open(jobs_path, "w") as f:
    f.writelines(json.dumps(j) + "\n" for j in jobs)
conf = os.path.join(work, "airlock.conf")
with open(conf, "w") as f:
    f.write(f"[sandbox]\nstate_dir = {state}\n[templates]\n"
            f"allowed = python c{' node' if full else ''}\n"
            f"dir = {os.path.join(src, 'configs/templates')}\n")
out = os.path.join(work, "results.jsonl")
for p in (out, out + ".partial"):
    if os.path.exists(p):
        os.unlink(p)
env = dict(os.environ, AIRLOCK_CONFIG=conf)
env.pop("AIRLOCK_REDIS", None)
p = subprocess.run([airlock, "batch", "-o", out, "--workers", "2", jobs_path],
                   env=env, capture_output=True, text=True, timeout=900)
print(p.stdout)
if p.returncode != 0:
    sys.exit(f"FAIL: batch exit {p.returncode}: {p.stderr[-2000:]}")
res = {json.loads(l)["id"]: json.loads(l) for l in open(out)}
failures, checks = [], 0
for name in LANGS:
    for kind, verdict in (("hello", "accepted"), ("ce", "compile_error")):
        checks += 1
        r = res.get(f"{name}-{kind}", {})
        got = (r.get("status"), r.get("verdict"))
        want = ("OK" if kind == "hello" else "CE", verdict)
        co = (r.get("steps") or [{}])[0].get("compile_output", "")
        if got != want or (kind == "ce" and not co):
            failures.append(f"{name}-{kind}: got {got}, want {want}; "
                            f"compile_output {co[:200]!r}")
        else:
            print(f"ok {name}-{kind}: {verdict}"
                  + (f" ({co.splitlines()[0][:70]})" if co else ""))
for f in failures:
    print("FAIL:", f)
print(f"{checks - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
