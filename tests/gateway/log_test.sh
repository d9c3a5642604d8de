#!/usr/bin/env bash
# log_test.sh AIRLOCK: `airlock packages log` and `pending` show what the
# audit records say, never a terminal control in them: the records are
# written by the gateway (assumed compromised) from what clients sent, so
# a record whose fields carry ESC sequences, C1 controls, bidirectional
# controls or tabs is printed with those bytes escaped (\xNN), in every
# output form (text, --json).
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# JSON escapes: ESC, a tab, C1 CSI (U+009B), RLO (U+202E)
python3 - "$tmp/audit.jsonl" <<'PY'
import json, sys
bad = "\x1b[2J\x1b]0;owned\x07\t\u009b31m\u202eevil"
rec = {"time": "2026-01-01T00:00:00.000Z", "time_ms": 1767225600000,
       "job": "j" + bad, "peer": "10.201.0.2", "ecosystem": "python",
       "route": "project", "name": "n" + bad, "version": "",
       "file": "f" + bad, "sha256": "", "decision": "deny", "pending": True,
       "reason": "r" + bad, "lookalike": "l" + bad}
open(sys.argv[1], "w").write(json.dumps(rec) + "\n")
PY
for cmd in "log" "log --json" "pending" "pending --json"; do
  # shellcheck disable=SC2086
  "$bin" packages $cmd --dir "$tmp" > "$tmp/out" 2>&1 || fail "$cmd: $(cat "$tmp/out")"
  grep -q 'evil' "$tmp/out" || fail "$cmd shows no record: $(cat "$tmp/out")"
  if LC_ALL=C grep -qP '\x1b|\x07|\xc2\x9b|\xe2\x80\xae' "$tmp/out"; then
    fail "$cmd prints a terminal control: $(od -c "$tmp/out" | head -5)"
  fi
  case $cmd in
    log) [ "$(awk -F'\t' '{print NF}' "$tmp/out")" = 8 ] || fail "log: a tab inside a field" ;;
  esac
done
echo ok
