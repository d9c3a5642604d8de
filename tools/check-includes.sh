#!/bin/bash
# check-includes.sh: every production file's "..." includes against its
# room's rule (the room READMEs' "May include", docs/architecture.md's
# include table), and no file including another room's internal header.
#
# A room is the directory a file sits in. An include resolves to the
# including file's own directory first (as the compiler does), then to
# every production header of that name; it passes when one of those is
# allowed by the room's rule. Prints each break and exits 1; prints
# nothing and exits 0 when every include holds. Run by CTest
# (check_includes, label unit) and so by tools/test.sh.
set -u
cd "$(dirname "$0")/.." || exit 2

ROOMS="dispatcher gateway results sandbox tools worker"
# The dispatcher's faces: what a room above may include of it.
DQ="dispatcher/queue/queue.h dispatcher/queue/conn.h dispatcher/queue/log.h
    dispatcher/queue/cluster.h dispatcher/queue/url.h dispatcher/queue/sentinel.h"
DS="dispatcher/serve/serve.h dispatcher/serve/metrics.h dispatcher/serve/snapdef.h"
DSESS="dispatcher/session/sessions.h dispatcher/session/sess_id.h"
DISP="$DQ $DS $DSESS"
GWCLI="gateway/pkgfile.h gateway/allow.h gateway/mirror.h gateway/audit.h
       gateway/upstream.h"
# Headers generated into the build tree (CMakeLists.txt, generated/).
GENERATED="version.h e2b_kernel.h"
# Headers no file outside their own directory may include.
INTERNAL="internal.h sess_internal.h vm_internal.h workers.h"

# The rule of a room: directories (ending in /) and single headers.
rule() {
	case "$1" in
	results) echo "results/" ;;
	sandbox/agent) echo "sandbox/agent/ results/" ;;
	sandbox/net) echo "sandbox/net/ sandbox/options.h sandbox/util.h sandbox/lease.h results/" ;;
	sandbox/preload) echo "" ;;
	sandbox) echo "sandbox/ sandbox/net/net.h results/" ;;
	worker) echo "worker/ sandbox/sandbox.h results/ gateway/audit.h" ;;
	dispatcher/queue) echo "dispatcher/queue/ results/" ;;
	dispatcher/serve) echo "dispatcher/serve/ $DQ worker/ sandbox/sandbox.h results/" ;;
	dispatcher/session) echo "dispatcher/session/ $DQ dispatcher/serve/serve.h worker/ sandbox/sandbox.h results/" ;;
	gateway) echo "gateway/ results/" ;;
	tools/eval) echo "tools/eval/ results/" ;;
	tools/config) echo "tools/config/ $DISP sandbox/sandbox.h results/" ;;
	tools/api) echo "tools/api/ tools/config/ $DISP results/" ;;
	tools/api/doors) echo "tools/api/doors/ tools/api/ tools/config/ tools/eval/ $DISP results/" ;;
	tools/cli) echo "tools/cli/ tools/api/ tools/api/doors/door.h tools/config/ tools/eval/ $GWCLI $DISP worker/ sandbox/sandbox.h results/" ;;
	tools/bench) echo "tools/bench/ tools/cli/ tools/api/ tools/config/ tools/eval/ $GWCLI $DISP worker/ sandbox/sandbox.h results/ tests/queue/servetest.h" ;;
	*) echo "NORULE" ;;
	esac
}

# Does header path h (repo-relative) pass the rule words of a room?
allowed() {
	local h=$1 w
	shift
	for w in "$@"; do
		case "$w" in
		*/) [ "${h#"$w"}" != "$h" ] && [ "${h#"$w"}" = "$(basename "$h")" ] && return 0 ;;
		*) [ "$h" = "$w" ] && return 0 ;;
		esac
	done
	return 1
}

headers=$(find $ROOMS tests/queue -name '*.h' | sort)
fail=0
for f in $(find $ROOMS -name '*.[ch]' | sort); do
	dir=$(dirname "$f")
	words=$(rule "$dir")
	if [ "$words" = NORULE ]; then
		echo "$f: room $dir has no include rule in tools/check-includes.sh"
		fail=1
		continue
	fi
	while IFS=: read -r line inc; do
		[ -n "$inc" ] || continue
		if [ -e "$dir/$inc" ]; then # its own room, or a room inside it
			p=$(realpath --relative-to=. "$dir/$inc")
			# shellcheck disable=SC2086
			[ "$(dirname "$p")" = "$dir" ] || allowed "$p" $words ||
				{ echo "$f:$line: includes \"$inc\", outside room $dir's rule"; fail=1; }
			continue
		fi
		name=$(basename "$inc")
		case " $GENERATED " in *" $name "*) continue ;; esac
		ok=0
		cands=$(printf '%s\n' "$headers" | grep -E "(^|/)$name\$")
		for c in $cands; do
			case " $INTERNAL " in *" $name "*) continue ;; esac
			# shellcheck disable=SC2086
			allowed "$c" $words && ok=1
		done
		if [ $ok = 0 ]; then
			echo "$f:$line: includes \"$inc\" (${cands//$'\n'/ }), outside room $dir's rule"
			fail=1
		fi
	done < <(grep -n '^#include "' "$f" | sed -E 's/^([0-9]+):#include "([^"]+)".*/\1:\2/')
done
exit $fail
