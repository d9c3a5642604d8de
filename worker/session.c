/* session.c: one VM kept across execs (session.h).
 *
 * Nothing here is new machinery: the VM comes from al_worker_open_vm()
 * (job.c), each exec is sb_vm_run_step_out() under the session's limits,
 * and the VM is destroyed by sb_vm_destroy(). What differs from a job is
 * only that the caller decides when the next step comes and when the VM
 * ends. An exec's timeout is its own (or the policy default), capped at
 * the policy maximum; the VM's hard deadline (the session's TTL) cuts
 * every call to it regardless.
 */
#include <errno.h>
#include <string.h>

#include "session.h"

void al_wsess_init(struct al_wsess *s, const struct sb_options *sb,
		   const struct al_policy *policy, const char *name)
{
	memset(s, 0, sizeof(*s));
	/* one VM for the session's whole life: a VMM pre-started for a next
	 * job (sb_pool_fill) would hold a uid, a cgroup and a QEMU's memory
	 * for nothing until the session ends */
	s->sb = *sb;
	s->sb.prestart = 0;
	al_worker_init(&s->w, &s->sb, policy, name);
	s->step_timeout_ms = policy->step_timeout_ms;
	s->step_timeout_max_ms = policy->step_timeout_max_ms;
}

void al_wsess_warm(struct al_wsess *s)
{
	al_worker_idle(&s->w);
}

int al_wsess_open(struct al_wsess *s, const struct al_job *job, uint64_t ttl_ms,
		  char *err, size_t errlen)
{
	al_job_limits(job, s->w.policy, &s->lim);
	return al_worker_open_vm(&s->w, job, ttl_ms, &s->vm, err, errlen);
}

void al_wsess_set_ttl(struct al_wsess *s, uint64_t ttl_ms)
{
	if (s->vm)
		sb_vm_set_deadline(s->vm, al_deadline_in(ttl_ms));
}

int al_wsess_exec(struct al_wsess *s, const struct al_step *step,
		  uint32_t timeout_ms, uint32_t stream_cap, sb_out_fn out,
		  void *opaque, struct al_step_result *ret)
{
	return al_wsess_exec_tick(s, step, timeout_ms, stream_cap, out, NULL,
				  opaque, ret);
}

bool al_wsess_can_signal(struct al_wsess *s)
{
	return s->vm && sb_vm_can_signal(s->vm);
}

int al_wsess_exec_tick(struct al_wsess *s, const struct al_step *step,
		       uint32_t timeout_ms, uint32_t stream_cap, sb_out_fn out,
		       sb_tick_fn tick, void *opaque,
		       struct al_step_result *ret)
{
	struct al_limits lim = s->lim;
	uint32_t t = timeout_ms ? timeout_ms : step->timeout_ms;

	if (!s->vm)
		return -EPIPE;
	if (!t)
		t = s->step_timeout_ms;
	if (s->step_timeout_max_ms && t > s->step_timeout_max_ms)
		t = s->step_timeout_max_ms;
	lim.output_bytes = stream_cap;
	memset(ret, 0, sizeof(*ret));
	/* a session exec: what it starts in the background lives on */
	return sb_vm_run_step_ctl(s->vm, step, &lim, t, out, opaque, tick,
				  opaque, true, ret);
}

int al_wsess_end_background(struct al_wsess *s)
{
	/* as the job user: every process of that user but this shell
	 * (kill(-1) spares its caller), whatever cgroup it is in; an agent
	 * of proto v5+ also kills job/bg before any job step */
	static char sh[] = "kill -KILL -1 2>/dev/null; true";
	struct al_step step = {.sh = sh};
	struct al_step_result res;
	struct al_limits lim;
	int r;

	if (!s->vm)
		return -EPIPE;
	lim = s->lim;
	memset(&res, 0, sizeof(res));
	/* background false: a job's step, which ends job/bg first */
	r = sb_vm_run_step_ctl(s->vm, &step, &lim, 10000, NULL, NULL, NULL,
			       NULL, false, &res);
	al_step_result_release(&res);
	return r;
}

bool al_wsess_alive(struct al_wsess *s)
{
	return s->vm && sb_vm_alive(s->vm);
}

void al_wsess_close(struct al_wsess *s)
{
	/* the gateway forgets the slot before the slot is closed */
	al_worker_close_vm(&s->w);
	if (s->vm)
		sb_vm_destroy(s->vm);
	s->vm = NULL;
	al_worker_release(&s->w);
}
