#!/bin/bash
# forge_vm_test.sh: issue 33's two forgeries in a real VM (python image),
# against the runner before the judge (check.py as of 28dd744, from this
# clone's history) and against today's. Before: both score a wrong sample
# `passed`, which shows the attack works in a VM; now: both fail. The
# runners run as a check step runs them (the token line, then the spec, on
# stdin; the report on a pipe), as plain python3 in one VM job. Without
# git history the before half is skipped and said so; the now half always
# runs. usage: forge_vm_test.sh AIRLOCK SRC_DIR WORK_DIR
set -u
airlock=$1
src=$2
work=$3
failures=0
. "$(dirname "$0")/../lib/vmstate.sh"
vm_state "$work" python
mkdir -p "$work/in" || exit 1
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
cp "$src/sandbox/agent/check.py" "$work/in/check_now.py"
before=1
git -C "$src" show 28dd744:sandbox/agent/check.py >"$work/in/check_before.py" \
	2>/dev/null || { before=0; echo "note: no git history: the before half is skipped"; }
# the specs: today's (program and test apart) and before's (the whole
# program, the runner calling the test's `check`), for each forgery
/usr/bin/python3 - "$src" "$work/in" <<'EOP' || exit 1
import gzip, json, os, sys
src, out = sys.argv[1], sys.argv[2]
probs = {}
with gzip.open(os.path.join(src, "..", "shared", "datasets",
                            "HumanEval.jsonl.gz"), "rt") as f:
    for line in f:
        p = json.loads(line)
        probs[p["task_id"]] = p
rows = [json.loads(l) for l in
        open(os.path.join(src, "tests/data/eval/forgeries.jsonl"))]
token = os.urandom(16).hex()
open(os.path.join(out, "token"), "w").write(token)
for r in rows:
    if r["kind"] not in ("dirfd-proc-self-mem", "del-rebinds-check"):
        continue
    p = probs[r["task_id"]]
    now = {"program": p["prompt"] + r["completion"], "test": p["test"],
           "check": "check", "candidate": p["entry_point"], "guard": True,
           "timeout_ms": 3000, "cpu_ms": 60000, "strict": False}
    old = dict(now)
    old["program"] += "\n" + old.pop("test") + "\n"
    for name, spec in (("now", now), ("before", old)):
        with open(os.path.join(out, "%s.%s.in" % (r["kind"], name)), "w") as f:
            f.write(token + "\n" + json.dumps(spec))
EOP
cat >"$work/in/run.sh" <<'EOS'
for f in *.in; do
  k=${f%.in}; r=check_${k##*.}.py
  [ -e "$r" ] || continue
  python3 "$r" < "$f" 2>/dev/null | cat > "$k.out"
  echo "$k: $(tail -n 1 "$k.out")"
done
EOS
args=()
for f in "$work"/in/*; do args+=(--file "$f:$(basename "$f")"); done
"$airlock" run -t python --timeout 300 "${args[@]}" -- sh run.sh \
	>"$work/out" 2>"$work/err"
cat "$work/out"
tok=$(cat "$work/in/token")
for k in dirfd-proc-self-mem del-rebinds-check; do
	line=$(grep "^$k.now: " "$work/out")
	case $line in
	*"$tok {\"result\": \"failed"*) ;;
	*) fail "$k: today's runner did not fail it: ${line:-no line}" ;;
	esac
	[ "$before" = 1 ] || continue
	line=$(grep "^$k.before: " "$work/out")
	case $line in
	*"$tok {\"result\": \"passed\""*) ;;
	*) fail "$k: the runner before the judge did not pass it (the attack" \
		"did not work in this VM): ${line:-no line}" ;;
	esac
done
echo "$failures failure(s)"
[ "$failures" -eq 0 ]
