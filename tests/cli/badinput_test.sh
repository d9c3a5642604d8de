#!/bin/bash
# badinput_test.sh: every CLI command that parses a user's file, fed a table
# of malformed inputs (issue 37, item 1: `airlock eval` freed an
# uninitialised sample on a line with no completion and aborted). Each must
# refuse with exit 1 or 2 and a message, never a signal (134 = abort) and
# never a sanitizer report; the ASan stage of tools/test.sh runs this
# (label unit) against the sanitized binary. No Redis, no VM: every input
# is refused before anything is submitted.
#
# usage: badinput_test.sh AIRLOCK SOURCE_DIR WORK_DIR
set -u
export LC_ALL=C
airlock=$1
src=$2
work=$3
failures=0
rm -rf "$work" && mkdir -p "$work" || exit 1
export AIRLOCK_STATE_DIR=$work/state
problems=$src/datasets/HumanEval.jsonl.gz

# The bad lines: each is one input file (printf format, so \n \x.. work).
bad=(
	'{"task_id": "HumanEval/0"}\n'
	'{"task_id": "HumanEval/0", "generation": "    return 1\\n"}\n'
	'[{"task_id": "HumanEval/0", "completion": "x"}]\n'
	'42\n'
	'"a string"\n'
	'null\n'
	'{"task_id": 7, "completion": "x"}\n'
	'{"task_id": "HumanEval/0", "completion": 7}\n'
	'{"task_id": "HumanEval/0", "completion": "x"\n'
	'{"task_id": "nope", "completion": "x"}\n'
	'\xff\xfe\x00\x01\n'
	'{"id": "a", "template": "python", "steps": [{"cmd": 5}]}\n'
	'{"id": "a", "steps": "x"}\n'
	'{}\n{}\n'
	'[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n'
	'{"task_id": "HumanEval/0", "solution": null, "completion": null}\n'
)
# The commands: @ is replaced by the input file.
cmds=(
	"eval @ --problems $problems -o $work/out.jsonl"
	"eval $src/tests/data/eval/plus_samples.jsonl --problems @ -o $work/out.jsonl"
	"validate @"
	"batch @ -o $work/out.jsonl"
	"report --jobs @ $work/none.jsonl -o $work/r.html"
	"report @ -o $work/r.html"
)

for c in "${cmds[@]}"; do
	for i in "${!bad[@]}"; do
		in=$work/in-$i.jsonl
		printf "${bad[$i]}" >"$in"
		# shellcheck disable=SC2086 # the command is split on purpose
		set -- ${c//@/$in}
		"$airlock" "$@" >"$work/out" 2>"$work/err" </dev/null
		rc=$?
		if [ "$rc" -ne 1 ] && [ "$rc" -ne 2 ]; then
			echo "FAIL: airlock $* (input $i) exited $rc, wanted 1 or 2"
			head -5 "$work/err"
			failures=$((failures + 1))
		elif grep -qE 'Sanitizer|free\(\)|runtime error' "$work/err"; then
			echo "FAIL: airlock $* (input $i): a sanitizer report"
			head -20 "$work/err"
			failures=$((failures + 1))
		elif ! [ -s "$work/err" ] && ! [ -s "$work/out" ]; then
			echo "FAIL: airlock $* (input $i): refused without a word"
			failures=$((failures + 1))
		fi
	done
done
# The message names the field a harness must rename (item 1).
printf '{"task_id": "HumanEval/0", "generation": "x"}\n' >"$work/gen.jsonl"
"$airlock" eval "$work/gen.jsonl" --problems "$problems" -o "$work/o" \
	2>"$work/err" >/dev/null
grep -q 'gen.jsonl:1: .*completion' "$work/err" ||
	{ echo "FAIL: no line and field named:"; cat "$work/err"; failures=$((failures + 1)); }
echo "$failures failure(s)"
[ "$failures" -eq 0 ]
