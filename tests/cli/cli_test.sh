#!/bin/bash
# cli_test.sh: end-to-end tests of the `airlock` binary: usage, exit codes and
# `airlock validate` against the job corpus in tests/data/jobs.
#
# usage: cli_test.sh CASE AIRLOCK SOURCE_DIR WORK_DIR VERSION
#   CASE is one of: usage common valid invalid formats big batch
#
# batch: what `airlock batch` does with input that is no valid job, which
# needs no Redis (nothing is submitted): exit 1 and an RJ result a line
# when lines are rejected; a pretty-printed document or a JSON array is
# refused whole (exit 2, one message, no output).
#
# An invalid/NAME.json comes with NAME.expect: the lines `airlock validate`
# must print for it, minus the `FILE:LINE: ` prefix. In an expected line `*`
# matches any text (the rest is literal), for reasons that quote a parser's
# message or a truncated path.
set -u
export LC_ALL=C

case_name=$1
airlock=$2
src=$3
work=$4
version=$5
jobs=$src/tests/data/jobs
failures=0

rm -rf "$work" && mkdir -p "$work" || exit 1
out=$work/stdout
err=$work/stderr

fail()
{
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# run ARGS...: run airlock; sets $rc, output in $out and $err
run()
{
	"$airlock" "$@" >"$out" 2>"$err"
	rc=$?
}

# run_in STDIN_FILE ARGS...
run_in()
{
	local in=$1
	shift
	"$airlock" "$@" <"$in" >"$out" 2>"$err"
	rc=$?
}

expect_rc()
{
	[[ $rc == "$1" ]] || fail "$2: exit $rc, want $1 (stderr: $(head -c 300 "$err"))"
}

expect_empty()
{
	[[ ! -s $1 ]] || fail "$2: want no output on $(basename "$1"), got: $(head -c 300 "$1")"
}

# glob_match PATTERN TEXT: `*` is a wildcard, every other byte literal
glob_match()
{
	local pat=$1 s=$2 esc='' c i

	for ((i = 0; i < ${#pat}; i++)); do
		c=${pat:i:1}
		if [[ $c == '*' ]]; then
			esc+='*'
		else
			esc+="\\$c"
		fi
	done
	[[ $s == $esc ]]
}

# Output must never carry control bytes from the input (only '\n').
expect_clean()
{
	if LC_ALL=C grep -q '[[:cntrl:]]' "$1"; then
		fail "$2: control bytes in output: $(od -c "$1" | head -5)"
	fi
}

# check_lines FILE EXPECT: every line of EXPECT (a pattern for the part
# after `FILE:LINE: `) matches some line of $out
check_lines()
{
	local file=$1 expect=$2 want line rest found

	while IFS= read -r want; do
		found=0
		while IFS= read -r line; do
			rest=${line#"$file:"}
			[[ $rest =~ ^[0-9]+:\ (.*)$ ]] || continue
			if glob_match "$want" "${BASH_REMATCH[1]}"; then
				found=1
				break
			fi
		done <"$out"
		((found)) || fail "$file: no line matches '$want'; got: $(head -c 600 "$out")"
	done <"$expect"
}

# expect_out LINE...: stdout is exactly these lines (each a pattern)
expect_out()
{
	local -a got
	local i

	mapfile -t got <"$out"
	if ((${#got[@]} != $#)); then
		fail "want $# lines, got ${#got[@]}: $(head -c 600 "$out")"
		return
	fi
	for ((i = 0; i < $#; i++)); do
		local want=${*:i+1:1}
		glob_match "$want" "${got[i]}" || fail "line $((i + 1)): want '$want', got '${got[i]}'"
	done
}

# repeat N CHAR: N copies of CHAR, no newline
repeat()
{
	head -c "$1" /dev/zero | tr '\0' "$2"
}

test_usage()
{
	local help

	for a in --help -h; do
		run $a
		expect_rc 0 "airlock $a"
		grep -q '^usage: airlock' "$out" || fail "airlock $a: no usage line"
		grep -q '^  validate  ' "$out" || fail "airlock $a: validate not listed"
		# every command listed has its own help
		for c in $(sed -n 's/^  \([a-z]*\)  .*/\1/p' "$out"); do
			"$airlock" help "$c" > /dev/null 2>&1 ||
				fail "airlock $a lists '$c' but 'help $c' fails"
		done
		expect_empty "$err" "airlock $a"
	done
	help=$(cat "$out")

	run
	expect_rc 2 "airlock (no args)"
	grep -q '^usage: airlock' "$err" || fail "airlock (no args): no usage on stderr"
	expect_empty "$out" "airlock (no args)"

	run help
	expect_rc 0 "airlock help"
	[[ $(cat "$out") == "$help" ]] || fail "airlock help differs from --help"

	run help validate
	expect_rc 0 "airlock help validate"
	grep -q '^usage: airlock validate' "$out" || fail "help validate: no usage"
	grep -q -- '--quiet' "$out" || fail "help validate: no options"
	help=$(cat "$out")
	for a in --help -h; do
		run validate $a
		expect_rc 0 "airlock validate $a"
		[[ $(cat "$out") == "$help" ]] || fail "validate $a differs from help validate"
	done
	run help help
	expect_rc 0 "airlock help help"
	grep -q '^usage: airlock help' "$out" || fail "help help: no usage"

	for a in --version version -V; do
		run $a
		expect_rc 0 "airlock $a"
		expect_out "airlock $version"
	done
	run version --help
	expect_rc 0 "airlock version --help"
	grep -q '^usage: airlock version' "$out" || fail "version --help: no usage"

	run frobnicate --help
	expect_rc 2 "unknown command"
	grep -q "unknown command 'frobnicate'" "$err" || fail "unknown command: message: $(cat "$err")"
	expect_empty "$out" "unknown command"
	run help frobnicate
	expect_rc 2 "help unknown command"
	run --frobnicate
	expect_rc 2 "unknown global option"
	run validate --frobnicate x.json
	expect_rc 2 "unknown validate option"
	grep -q "airlock validate: unrecognized option" "$err" || fail "unknown validate option: message: $(cat "$err")"
	run validate
	expect_rc 2 "validate without FILE"
	run version extra
	expect_rc 2 "version with an argument"
}

# The set-up every command shares (tools/cli/cli.h): --help and --config
# everywhere, --redis and --queue on the queue commands, one way to report
# bad usage.
test_common()
{
	local w=$work c cmds job=$jobs/valid/python-hello.json

	printf '[limits]\nwall_ms = 60000\n' >"$w/ok.conf"
	printf '[templates]\ndefault = c\nallowed = c\n' >"$w/c-only.conf"
	printf '[limits]\nfrob = 1\n' >"$w/bad.conf"

	run --help
	cmds=$(sed -n 's/^  \([a-z]*\)  .*/\1/p' "$out")
	[[ $(wc -w <<<"$cmds") -ge 13 ]] || fail "commands listed: $cmds"
	for c in $cmds; do
		run "$c" --config "$w/ok.conf" --help
		expect_rc 0 "$c --config PATH --help"
		grep -q "^usage: airlock $c" "$out" || fail "$c --config --help: no usage"
		grep -q -- '-c, --config PATH' "$out" || fail "$c --help: --config not listed"
		run "$c" -c "$w/ok.conf" --help
		expect_rc 0 "$c -c PATH --help"
		run "$c" --frobnicate
		expect_rc 2 "$c --frobnicate"
		expect_empty "$out" "$c --frobnicate"
		[[ $(cat "$err") == "airlock $c: unrecognized option '--frobnicate'"$'\n'"try \`airlock $c --help\`" ]] ||
			fail "$c --frobnicate: message: $(cat "$err")"
	done
	# --redis and --queue belong to the queue commands only
	for c in submit wait result status run batch serve; do
		grep -q -- '--redis URL' <("$airlock" help "$c") || fail "help $c: no --redis"
	done
	run validate --redis unix:///x "$job"
	expect_rc 2 "validate --redis"

	# validate: --config's policy instead of the built-in one
	run validate --config "$w/ok.conf" "$job"
	expect_rc 0 "validate --config"
	expect_empty "$out" "validate --config"
	run validate -c "$w/c-only.conf" "$job"
	expect_rc 1 "validate --config c-only"
	expect_out "$job:1: template: template \"python\" is not in templates.allowed (c): add it there in *c-only.conf"
	run validate --config "$w/bad.conf" "$job"
	expect_rc 2 "validate --config bad"
	grep -q "^$w/bad.conf:2: limits.frob: unknown key" "$err" || fail "validate bad config: $(cat "$err")"
	run validate --config "$w/none.conf" "$job"
	expect_rc 2 "validate --config missing"
	# without --config: the effective config ($AIRLOCK_CONFIG), the one
	# submit and serve would use, not the built-in policy
	AIRLOCK_CONFIG=$w/c-only.conf run validate "$job"
	expect_rc 1 "validate with \$AIRLOCK_CONFIG c-only"
	AIRLOCK_CONFIG=$w/bad.conf run validate "$job"
	expect_rc 2 "validate with an invalid \$AIRLOCK_CONFIG"
	run status --config "$w/ok.conf" a b
	expect_rc 2 "status with two ids"

	# network policies: the [network.NAME] sections, plus none
	printf '[network.testnet]\nallow = allowed.test\nports = tcp/80\n' >"$w/net.conf"
	printf '{"sh":"true","network":"testnet"}\n' >"$w/net-job.json"
	printf '{"sh":"true","network":"none"}\n' >"$w/none-job.json"
	printf '{"sh":"true","network":"other"}\n' >"$w/other-job.json"
	run validate --config "$w/net.conf" "$w/net-job.json" "$w/none-job.json"
	expect_rc 0 "validate network testnet"
	run validate --config "$w/net.conf" "$w/other-job.json"
	expect_rc 1 "validate network other"
	expect_out "$w/other-job.json:1: network: unknown network policy \"other\""
	run validate "$w/net-job.json"
	expect_rc 1 "validate network, built-in policy"
	printf '[network.testnet]\nallow = allowed.test\nports = tcp/80 tcp/0\n' >"$w/badnet.conf"
	run config --check --config "$w/badnet.conf"
	expect_rc 1 "config --check bad policy"
	[[ $(cat "$err") == "$w/badnet.conf:3: network.testnet.ports: \"tcp/0\": ports are 1..65535" ]] ||
		fail "config --check bad policy: $(cat "$err")"
	run config --config "$w/net.conf"
	expect_rc 0 "config with a policy"
	grep -qx '\[network.testnet\]' "$out" || fail "config: no [network.testnet]: $(cat "$out")"

	# version and help take --config (and need no config)
	run version --config "$w/bad.conf"
	expect_rc 0 "version --config"
	expect_out "airlock $version"
	run help --config "$w/ok.conf" run
	expect_rc 0 "help --config run"
	grep -q '^usage: airlock run' "$out" || fail "help --config run: no usage"
	run help run --config "$w/ok.conf"
	expect_rc 0 "help run --config"

	# operands a command does not take are usage errors everywhere
	for c in doctor serve config version; do
		run "$c" --config "$w/ok.conf" extra
		expect_rc 2 "$c extra"
		[[ $(head -1 "$err") == "airlock $c: takes no arguments" ]] ||
			fail "$c extra: message: $(cat "$err")"
	done
	# one message for one option, one form for a config's problems
	# eval and batch refuse bad input before anything runs (no Redis, no
	# VMs: these exit before either starts)
	he=$src/datasets/HumanEval.jsonl.gz
	printf '{"task_id":"HumanEval/0","completion":"  pass"}\n' >"$w/s.jsonl"
	printf '{"task_id":"HumanEval/999","completion":"  pass"}\n' >"$w/s999.jsonl"
	run eval "$w/s.jsonl"
	expect_rc 2 "eval without --problems"
	grep -q -- "--problems FILE is needed" "$err" || fail "eval no --problems: $(cat "$err")"
	run eval -k 10,1 --problems "$he" "$w/s.jsonl"
	expect_rc 2 "eval -k 10,1"
	run eval --problems "$he" "$w/s999.jsonl"
	expect_rc 2 "eval unknown task"
	[[ $(head -1 "$err") == "airlock eval: $w/s999.jsonl:1: task_id HumanEval/999: not in $he" ]] ||
		fail "eval unknown task: message: $(cat "$err")"
	run eval --problems "$w/s.jsonl" "$w/s.jsonl"
	expect_rc 2 "eval samples as problems"
	grep -q "s.jsonl:1: prompt, test and entry_point\|s.jsonl:1: test_list" "$err" ||
		fail "eval bad problems: message: $(cat "$err")"
	[[ ! -e $w/s.jsonl_results.jsonl ]] || fail "eval wrote results on error"
	run batch --resume "$w/s.jsonl"
	expect_rc 2 "batch --resume without -o"
	grep -q -- "--resume needs -o FILE" "$err" || fail "batch --resume: $(cat "$err")"
	for c in serve batch eval; do
		run "$c" --workers 0 x
		expect_rc 2 "$c --workers 0"
		[[ $(head -1 "$err") == "airlock $c: --workers: must be 1..1024" ]] ||
			fail "$c --workers 0: message: $(cat "$err")"
	done
	for c in doctor "image list" status config; do
		run $c --config "$w/bad.conf"
		[[ $rc == 1 || $rc == 2 ]] || fail "$c --config bad: exit $rc"
		[[ $(head -1 "$err") == "$w/bad.conf:2: limits.frob: unknown key"* ]] ||
			fail "$c --config bad: message: $(cat "$err")"
	done
	run image
	expect_rc 2 "image, no verb"
	grep -q "try \`airlock image --help\`" "$err" || fail "image: $(cat "$err")"
	run image list --config "$w/ok.conf" extra
	expect_rc 2 "image list extra"
	run image build --config "$w/ok.conf"
	expect_rc 2 "image build, no template"
	[[ $(head -1 "$err") == "airlock image: build: name a template" ]] ||
		fail "image build: message: $(cat "$err")"
}

test_valid()
{
	local n=0 f id

	for f in "$jobs"/valid/*.json "$src"/examples/*.json "$src"/examples/*.jsonl; do
		[[ -e $f ]] || continue
		n=$((n + 1))
		run validate "$f"
		expect_rc 0 "$f"
		expect_empty "$out" "$f"
		expect_empty "$err" "$f"
	done
	((n >= 10)) || fail "only $n valid jobs"

	f=$jobs/valid/python-hello.json
	run validate -v "$f"
	expect_rc 0 "-v"
	expect_out "$f:1: ok python-hello"
	run validate -v "$jobs/valid/minimal.json"
	expect_out "$jobs/valid/minimal.json:1: ok"

	# all at once: one exit code, no output
	run validate "$jobs"/valid/*.json
	expect_rc 0 "all valid jobs at once"
	expect_empty "$out" "all valid jobs at once"
}

test_invalid()
{
	local n=0 f name

	for f in "$jobs"/invalid/*.json; do
		n=$((n + 1))
		name=${f%.json}
		[[ -s $name.expect ]] || fail "$f: no $name.expect"
		run validate "$f"
		expect_rc 1 "$f"
		expect_empty "$err" "$f"
		expect_clean "$out" "$f"
		check_lines "$f" "$name.expect"

		run validate -q "$f"
		expect_rc 1 "-q $f"
		expect_empty "$out" "-q $f"
	done
	((n >= 35)) || fail "only $n invalid jobs"

	# a valid and an invalid file: 1, and only the invalid one reports
	run validate "$jobs/valid/minimal.json" "$jobs/invalid/steps-empty.json"
	expect_rc 1 "valid + invalid"
	expect_out "$jobs/invalid/steps-empty.json:1: steps: must have 1..256 entries"
}

test_formats()
{
	local w=$work

	# JSONL: LINE is the line the job is on; blank lines skipped
	cd "$jobs" || return
	run validate -v mixed.jsonl
	expect_rc 1 "mixed.jsonl"
	expect_out "mixed.jsonl:1: ok mixed-1" \
		"mixed.jsonl:3: steps[0].timeot_ms: unknown field" \
		"mixed.jsonl:4: ok mixed-4" \
		"mixed.jsonl:6: limits.vcpus: must be 1..4" \
		"mixed.jsonl:7: invalid JSON at line 1 column *" \
		"mixed.jsonl:8: must be an object" \
		"mixed.jsonl:9: ok mixed-9"
	run validate mixed.jsonl
	[[ $(grep -c ': ok' "$out") == 0 ]] || fail "ok lines without -v"
	cd "$w" || return

	# one document over several lines, after blank lines: LINE is where it
	# starts; jansson's own line numbers count from the top of the file
	printf '\n\n{\n  "steps": []\n}\n' >doc.json
	run validate doc.json
	expect_rc 1 "doc.json"
	expect_out "doc.json:3: steps: must have 1..256 entries"
	printf '\n{\n  "sh": "true",\n  "sh": "false"\n}\n' >dup.json
	run validate dup.json
	expect_out "dup.json:2: invalid JSON at line 4 column *: duplicate object key*"

	# a one-line document followed by blank lines is one job
	printf '{"id": "one", "sh": "true"}\n\n  \n' >one.json
	run validate -v one.json
	expect_rc 0 "one.json"
	expect_out "one.json:1: ok one"

	# CRLF line ends, no final newline
	printf '{"id": "a", "sh": "true"}\r\n\r\n{"id": "b", "sh": "true"}' >crlf.jsonl
	run validate -v crlf.jsonl
	expect_rc 0 "crlf.jsonl"
	expect_out "crlf.jsonl:1: ok a" "crlf.jsonl:3: ok b"

	# a pretty-printed job whose first line is a complete value is JSONL:
	# the documented rule, shown here so a change is deliberate
	printf '{}\n{"sh": "true"}\n' >two.txt
	run validate two.txt
	expect_rc 1 "two.txt"
	expect_out "two.txt:1: steps: required (or give cmd or sh at top level)"

	# stdin
	run_in "$jobs/valid/python-hello.json" validate -v -
	expect_rc 0 "stdin valid"
	expect_out "<stdin>:1: ok python-hello"
	run_in "$jobs/mixed.jsonl" validate -
	expect_rc 1 "stdin jsonl"
	grep -q '^<stdin>:6: limits.vcpus: must be 1..4$' "$out" || fail "stdin jsonl: $(cat "$out")"
	printf '{"steps": [{"sh": "true"}, {"sh": "true", "timeout_ms": 0}]}' >t.json
	run_in t.json validate -
	expect_rc 1 "stdin invalid"
	expect_out "<stdin>:1: steps[1].timeout_ms: must be 1..600000"

	# empty and blank input is not a job
	: >empty.json
	run validate empty.json
	expect_rc 1 "empty file"
	expect_out "empty.json:1: invalid JSON*"
	printf '\n \n\t\n' >blank.json
	run validate blank.json
	expect_rc 1 "blank file"

	# unreadable files: 2, the message names the file, the rest still run
	run validate "$w/no-such-file.json"
	expect_rc 2 "missing file"
	expect_empty "$out" "missing file"
	[[ $(cat "$err") == "airlock: cannot read '$w/no-such-file.json': No such file or directory" ]] ||
		fail "missing file: message: $(cat "$err")"
	run validate "$w"
	expect_rc 2 "directory"
	[[ $(cat "$err") == "airlock: cannot read '$w': Is a directory" ]] ||
		fail "directory: message: $(cat "$err")"
	run validate "$w/no-such-file.json" t.json "$jobs/valid/minimal.json"
	expect_rc 2 "missing + invalid"
	expect_out "t.json:1: steps[1].timeout_ms: must be 1..600000"
	run validate -q "$w/no-such-file.json"
	expect_rc 2 "-q missing file"

	# hostile bytes: no crash, nothing raw echoed
	printf '\033]0;pwned\007{"sh": "\033[2J"}\n' >esc.json
	printf '{"id": "x\xff\xfe", "sh": "true"}\n{"\xc2\x9b31m": 1, "sh": "true"}\n' >bytes.jsonl
	head -c 4096 /dev/urandom >random.bin
	printf '\0\0\0{"sh": "true"}\n' >nul.json
	for f in esc.json bytes.jsonl random.bin nul.json; do
		run validate "$f"
		expect_rc 1 "$f"
		expect_clean "$out" "$f"
		grep -q $'\xc2\x9b' "$out" && fail "$f: C1 control echoed"
	done
	printf '%s' "$(repeat 100000 '[')" >deep.json
	run validate deep.json
	expect_rc 1 "deep.json"
}

test_big()
{
	local cap=16777216 w=$work pre='{"sh": "true", "files": {"f": "' post='"}}'
	local fill=$((cap - ${#pre} - ${#post}))

	cd "$w" || return
	# exactly at the cap: fine, one byte more: rejected without a crash
	{ printf '%s' "$pre"; repeat $fill a; printf '%s' "$post"; } >at-cap.json
	[[ $(stat -c %s at-cap.json) == "$cap" ]] || fail "at-cap.json size"
	run validate at-cap.json
	expect_rc 0 "at-cap.json"
	{ printf '%s' "$pre"; repeat $((fill + 1)) a; printf '%s\n' "$post"; } >over-cap.json
	run validate over-cap.json
	expect_rc 1 "over-cap.json"
	expect_out "over-cap.json:1: larger than 16777216 bytes"

	# a document spread over lines is capped as a whole
	{ printf '{\n"sh": "true",\n"files": {"f": "'; repeat $((cap / 2)) b; printf '",\n"g": "'; repeat $((cap / 2)) c; printf '"}\n}\n'; } >over-cap-lines.json
	run validate over-cap-lines.json
	expect_rc 1 "over-cap-lines.json"
	expect_out "over-cap-lines.json:1: larger than 16777216 bytes"

	# JSONL: each line is capped; the others are still checked
	{
		printf '{"id": "first", "sh": "true"}\n'
		printf '%s' "$pre"; repeat $((fill + 1)) a; printf '%s\n' "$post"
		printf '{"id": "third", "steps": []}\n'
		printf '%s' "$pre"; repeat $fill a; printf '%s\n' "$post"
	} >big.jsonl
	run validate -v big.jsonl
	expect_rc 1 "big.jsonl"
	expect_out "big.jsonl:1: ok first" \
		"big.jsonl:2: larger than 16777216 bytes" \
		"big.jsonl:3: steps: must have 1..256 entries" \
		"big.jsonl:4: ok"
	# a first line over the cap ends the file: its format is unknown
	{ printf '%s' "$pre"; repeat $((fill + 1)) a; printf '%s\n' "$post"; printf '{"steps": []}\n'; } >big-first.jsonl
	run validate big-first.jsonl
	expect_rc 1 "big-first.jsonl"
	expect_out "big-first.jsonl:1: larger than 16777216 bytes"

	# caps on single fields, too big to keep in the corpus
	{ printf '{"sh": "'; repeat 262145 x; printf '"}\n'; } >sh-big.json
	run validate sh-big.json
	expect_rc 1 "sh-big.json"
	expect_out "sh-big.json:1: sh: must be at most 262144 bytes"
	{ printf '{"cmd": ["echo", "'; repeat 131072 x; printf '", "'; repeat 131072 y; printf '"]}\n'; } >argv-big.json
	run validate argv-big.json
	expect_rc 1 "argv-big.json"
	expect_out "argv-big.json:1: cmd: must be at most 262144 bytes in all"
	{ printf '{"steps": [{"sh": "env", "env": {"X": "'; repeat 32769 v; printf '"}}]}\n'; } >env-big.json
	run validate env-big.json
	expect_rc 1 "env-big.json"
	expect_out 'env-big.json:1: steps[0].env["X"]: must be at most 32768 bytes'
	{ printf '{"steps": [{"sh": "env", "env": {"'; repeat 129 V; printf '": "1"}}]}\n'; } >env-name-big.json
	run validate env-name-big.json
	expect_rc 1 "env-name-big.json"
	expect_out 'env-name-big.json:1: steps[0].env["VVV*"]: must match [A-Za-z_][A-Za-z0-9_]*'
}

test_batch()
{
	local w=$work job=$jobs/valid/python-hello.json f

	# every line rejected: an RJ result each, in order, and exit 1
	printf '{"sh": "true", "bogus": 1}\n\n{"sh":\n[1, 2]\n' >"$w/bad.jsonl"
	run batch -o "$w/bad.out" "$w/bad.jsonl"
	expect_rc 1 "batch, every line rejected"
	[[ $(jq -r '.status' "$w/bad.out" | tr '\n' ' ') == "RJ RJ RJ " ]] ||
		fail "batch bad.jsonl: results: $(cat "$w/bad.out")"
	[[ $(jq -r '.id' "$w/bad.out" | tr '\n' ' ') == "line-1 line-3 line-4 " ]] ||
		fail "batch bad.jsonl: ids: $(cat "$w/bad.out")"
	grep -q "^airlock batch: 3 of 3 lines are not valid jobs (RJ results, not run): exit 1$" "$err" ||
		fail "batch bad.jsonl: message: $(cat "$err")"
	# one JSON document over lines, as `jq .` writes it: refused whole
	jq . "$job" >"$w/pretty.json"
	run batch -o "$w/pretty.out" "$w/pretty.json"
	expect_rc 2 "batch of a pretty-printed job"
	[[ $(cat "$err") == "airlock batch: $w/pretty.json: one JSON document spread over $(grep -c . "$w/pretty.json") lines, not JSONL: batch takes one job object a line (jq -c . FILE); nothing was run" ]] ||
		fail "batch pretty.json: message: $(cat "$err")"
	[[ ! -e $w/pretty.out && ! -e $w/pretty.out.partial ]] ||
		fail "batch pretty.json wrote results"
	# a JSON array of jobs, pretty or on one line, from a file or stdin
	jq -s . "$job" "$job" >"$w/array.json"
	jq -sc . "$job" "$job" >"$w/array1.json"
	for f in array.json array1.json; do
		run batch "$w/$f"
		expect_rc 2 "batch $f"
		[[ $(wc -l <"$err") == 1 ]] && grep -q "^airlock batch: $w/$f: one JSON array (of 2 values) over [0-9]* lines\?, not JSONL: .*jq -c '.\[\]' FILE" "$err" ||
			fail "batch $f: message: $(cat "$err")"
		expect_empty "$out" "batch $f"
		run_in "$w/$f" batch -
		expect_rc 2 "batch - < $f"
	done
	# JSONL after all: a first line cut short is its own RJ result
	printf '{"sh":\n{"sh": "true", "bogus": 1}\n' >"$w/cut.jsonl"
	run batch "$w/cut.jsonl"
	expect_rc 1 "batch cut.jsonl"
	[[ $(jq -r .status "$out" | tr '\n' ' ') == "RJ RJ " ]] ||
		fail "batch cut.jsonl: $(cat "$out")"
	run batch --help
	grep -q "1 when some line was not a valid job" "$out" ||
		fail "batch --help: exit codes"
}

case $case_name in
usage | common | valid | invalid | formats | big | batch) "test_$case_name" ;;
*)
	echo "unknown case '$case_name'"
	exit 2
	;;
esac
if ((failures)); then
	echo "$case_name: $failures failure(s)"
	exit 1
fi
echo "$case_name: ok"
