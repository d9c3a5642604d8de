#!/bin/bash
# template_test.sh: enabling a language is not a hidden step (issue 37,
# item 8/9). A template outside templates.allowed is refused naming the key
# and the config file to change; an allowed template with no image is
# refused when the job is submitted (RJ, never run, never dead-lettered)
# with the command that builds it; `airlock doctor` names it (FAIL, exit 1)
# and says nothing per template no config allows. A fresh state dir with no
# image: no VM runs.
#
# usage: template_test.sh AIRLOCK WORK_DIR
set -u
export LC_ALL=C
airlock=$1
work=$2
failures=0
rm -rf "$work" && mkdir -p "$work/state" || exit 1
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
conf=$work/t.conf
printf '[sandbox]\nstate_dir = %s\n[templates]\nallowed = python java\n' \
	"$work/state" >"$conf"
export AIRLOCK_CONFIG=$conf

# a template not allowed: the key and the file
printf '{"id": "g1", "template": "c", "sh": "true"}\n' >"$work/c.jsonl"
"$airlock" validate "$work/c.jsonl" >"$work/out" 2>&1
grep -q "template \"c\" is not in templates.allowed (python java): add it there in $conf" \
	"$work/out" || fail "validate: key and file not named: $(cat "$work/out")"

# an allowed template without an image: refused at submit, not run
printf '{"id": "j1", "template": "java", "sh": "true"}\n' >"$work/j.jsonl"
timeout 60 "$airlock" batch "$work/j.jsonl" -o "$work/r.jsonl" >"$work/out" 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "batch: exit $rc, wanted 1 (a line refused)"
grep -q '"status":"RJ".*no image on this host; fix: airlock image build java' \
	"$work/r.jsonl" || fail "batch: no RJ naming the build: $(head -c 400 "$work/r.jsonl")"
timeout 60 "$airlock" run --template java -- true >"$work/out" 2>&1
grep -q 'no image on this host; fix: airlock image build java' "$work/out" ||
	fail "run: not refused: $(cat "$work/out")"
# run does not announce its embedded Redis on every call (item 13)
if grep -q 'embedded:' "$work/out"; then
	fail "run: says embedded without -v"
fi

# run -l java with a file of another name says where it goes (item 14)
printf 'public class Sum {}\n' >"$work/Sum.java"
timeout 60 "$airlock" run -l java "$work/Sum.java" >"$work/out" 2>&1
grep -q 'note: Sum.java goes into the VM as Main.java.*public class must be Main' \
	"$work/out" || fail "run -l java: rename not said: $(cat "$work/out")"

# doctor: the allowed template with no image is named, exit 1; templates
# no config allows are one ok line, not a warning each
"$airlock" doctor >"$work/doc" 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "doctor: exit $rc, wanted 1"
grep -q '^FAIL  image      java: not built, and templates.allowed names it' \
	"$work/doc" || fail "doctor: java not named: $(grep image "$work/doc")"
grep -q '^ok    templates  [0-9]* more defined' "$work/doc" ||
	fail "doctor: no summary of unused templates"
if grep -q '^warn  image' "$work/doc"; then
	fail "doctor: a warning per image: $(grep '^warn  image' "$work/doc" | head -3)"
fi
echo "$failures failure(s)"
[ "$failures" -eq 0 ]
