#!/usr/bin/env bash
# secrets_test.sh AIRLOCK: a Redis password in a config file every user
# may read is pointed out (issue 23, finding 11): a warning naming the
# file and $AIRLOCK_REDIS; none for a 0640 file, a password-less URL, or
# the URL from $AIRLOCK_REDIS.
set -euo pipefail
bin=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d /tmp/al-secrets-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
conf=$tmp/airlock.conf
printf '[redis]\nurl = redis://:s3cret@127.0.0.1:1/\n' > "$conf"
chmod 0644 "$conf"
"$bin" config --config "$conf" > "$tmp/out" 2> "$tmp/err" || fail "config: $(cat "$tmp/err")"
grep -q "warn.*redis.url in $conf holds a password.*mode 0644.*AIRLOCK_REDIS" "$tmp/err" ||
  fail "0644 config with a password: no warning: $(cat "$tmp/err")"
! grep -q s3cret "$tmp/err" || fail "the warning shows the password"
chmod 0640 "$conf"
"$bin" config --config "$conf" > "$tmp/out" 2> "$tmp/err"
! grep -q 'holds a password' "$tmp/err" || fail "0640: warned: $(cat "$tmp/err")"
chmod 0644 "$conf"
AIRLOCK_REDIS=redis://127.0.0.1:1/ "$bin" config --config "$conf" > "$tmp/out" 2> "$tmp/err"
! grep -q 'holds a password' "$tmp/err" || fail "\$AIRLOCK_REDIS: warned: $(cat "$tmp/err")"
printf '[redis]\nurl = redis://127.0.0.1:1/\n' > "$conf"
"$bin" config --config "$conf" > "$tmp/out" 2> "$tmp/err"
! grep -q 'holds a password' "$tmp/err" || fail "no password: warned: $(cat "$tmp/err")"
echo "secrets: ok"
