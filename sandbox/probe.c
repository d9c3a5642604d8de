/* probe.c: what airlock-bench-vm (tools/bench) measures inside a VM,
 * behind the public face: QEMU's translated blocks and RESUME time, one
 * agent round trip by kind. The benchmark needs nothing else of a VM's
 * insides, so it includes sandbox.h alone like every other caller.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"
#include "vm_internal.h"

long sb_vm_tcg_blocks(struct sb_vm *vm)
{
	json_t *ret = NULL;
	const char *s, *at;
	char err[256];
	long v = 0;

	if (sb_vm_accel(vm) != AL_ACCEL_TCG ||
	    sb__qmp_execute(&vm->qmp, "human-monitor-command",
			    json_pack("{s:s}", "command-line", "info jit"),
			    2000, &ret, err, sizeof(err)) < 0)
		return 0;
	s = json_string_value(ret);
	at = s ? strstr(s, "TB count") : NULL;
	if (at)
		v = strtol(at + strlen("TB count"), NULL, 10);
	json_decref(ret);
	return v;
}

int sb_vm_resume_rt_ms(struct sb_vm *vm, int timeout_ms, double *ret)
{
	json_t *ev = NULL, *ts;
	int r = sb__qmp_wait_event(&vm->qmp, "RESUME", timeout_ms, &ev);

	if (r < 0)
		return r;
	ts = json_object_get(ev, "timestamp");
	*ret = (double)json_integer_value(json_object_get(ts, "seconds")) *
		       1e3 +
	       (double)json_integer_value(json_object_get(ts, "microseconds")) /
		       1e3;
	json_decref(ev);
	return 0;
}

int sb_vm_trip(struct sb_vm *vm, const struct sb_options *o,
	       const struct al_limits *lim, enum sb_trip kind,
	       int timeout_ms)
{
	switch (kind) {
	case SB_TRIP_PING:
		return sb__agent_client_ping(&vm->agent, timeout_ms);
	case SB_TRIP_RESEED:
		return sb__vm_reseed(vm, o);
	case SB_TRIP_SETUP:
		return sb__agent_client_setup(&vm->agent, lim, timeout_ms);
	case SB_TRIP_SETUP_RESEED:
		return sb__vm_setup_reseed(vm, lim, timeout_ms);
	}
	return -EINVAL;
}
