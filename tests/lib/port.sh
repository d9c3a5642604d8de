# port.sh: sourced by the shell tests that start a listener on loopback.
#
# free_port: print a TCP port nothing listens on now, below Linux's
# ephemeral range (32768-60999) so an outgoing connection of another test
# cannot be holding it. There is still a window between this check and
# the bind; a test that must not flake retries its listener on a new port.
free_port() {
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 12000))
    if ! ss -Htln "sport = :$p" 2>/dev/null | grep -q . &&
       ! ss -Htln "sport = :$((p + 1))" 2>/dev/null | grep -q .; then
      echo "$p"
      return 0
    fi
  done
  echo "free_port: no free port found" >&2
  return 1
}
