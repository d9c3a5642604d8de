# vmstate.sh: sourced by the shell tests that run real VMs through the
# CLI with a state dir of their own.
#
# vm_state WORK TEMPLATE: WORK made afresh with WORK/state, which sees
# the shared test images, templates and snapshots ($AIRLOCK_TEST_STATE,
# else /var/tmp/airlock-test) while its embedded Redis's lock and AOF
# stay apart from other tests'; AIRLOCK_CONFIG exported to WORK/t.conf.
# Exits 77 (CTest's skip) when TEMPLATE has no image there.
vm_state() {
  local work=$1 img=${AIRLOCK_TEST_STATE:-/var/tmp/airlock-test} d
  rm -rf "$work" && mkdir -p "$work/state" || exit 1
  [ -e "$img/images/$2" ] || { echo "SKIP: no $2 image in $img"; exit 77; }
  for d in images templates snapshots; do ln -s "$img/$d" "$work/state/$d"; done
  printf '[sandbox]\nstate_dir = %s\n' "$work/state" >"$work/t.conf"
  export AIRLOCK_CONFIG=$work/t.conf
}
