#!/bin/sh
# A testlib-convention checker: check_divisor.sh INPUT OUTPUT ANSWER.
# The input is "factor N"; any divisor D of N with 1 < D < N is right
# (several valid answers), so the answer file is not needed. Exit 0
# accepted, 1 wrong answer, 3 the checker's own failure.
# SECRET-CHECKER-1729: a marker tests/grade/grade_test.py's hostile
# submission searches for; it must never see this file.
in=$1 out=$2
read -r cmd n < "$in" || { echo "fail: no input" >&2; exit 3; }
[ "$cmd" = factor ] || { echo "fail: not a factor test" >&2; exit 3; }
set -f
# shellcheck disable=SC2046
set -- $(cat "$out")
if [ $# -ne 1 ]; then
  echo "wrong answer: expected one number, got $# tokens" >&2
  exit 1
fi
case $1 in
'' | *[!0-9]*) echo "wrong answer: not a number" >&2; exit 1 ;;
esac
if [ ${#1} -lt 10 ] && [ "$1" -gt 1 ] && [ "$1" -lt "$n" ] &&
   [ $((n % $1)) -eq 0 ]; then
  echo "ok $1 divides $n" >&2
  exit 0
fi
echo "wrong answer: $1 is not a proper divisor of $n" >&2
exit 1
