/* session.h: one VM kept across execs, the worker side of a session.
 *
 * A session (docs/sessions.md) is a job whose steps arrive one at a time.
 * Its VM is got exactly as a job's is (al_worker_open_vm: policy, network
 * slot, warm clone, restored clone or cold boot, limits, files) and each
 * exec is one sb_vm_run_step_out() in it, so everything a job guarantees
 * about isolation holds for every exec. The caller (dispatcher/session/)
 * owns the clocks and the routing; this file owns the VM.
 *
 *  1. al_wsess_init(), al_wsess_warm() while nothing waits (a warm clone
 *     for the hand-off), al_wsess_open(): the VM, ready for execs; ttl_ms
 *     is its hard end.
 *  2. al_wsess_exec() per exec: output goes to `out` as it is produced.
 *  3. al_wsess_close(): destroy the VM (always, whatever happened).
 */
#ifndef AL_WSESSION_H
#define AL_WSESSION_H

#include "worker.h"

struct al_wsess {
	struct sb_options sb;	      /* the caller's, without pre-start */
	struct al_worker w;	      /* the worker whose VM calls it uses */
	struct sb_vm *vm;	      /* the VM, NULL once closed */
	struct al_limits lim;	      /* effective limits of the session */
	uint32_t step_timeout_ms;     /* policy default per exec */
	uint32_t step_timeout_max_ms; /* policy maximum per exec */
};

/* Ready `s` (no VM yet). */
void al_wsess_init(struct al_wsess *s, const struct sb_options *sb,
		   const struct al_policy *policy, const char *name);
/* Before the session is known: make the warm clones the config asks
 * for (sb->warm, docs/warm.md), so that al_wsess_open() gets a hand-off
 * instead of a restore. Blocks for the warm-ups. */
void al_wsess_warm(struct al_wsess *s);
/* The VM for `job` (its template, limits, network, files; its steps are
 * ignored), alive for at most ttl_ms. 0, -EINVAL (the policy refuses it)
 * or -errno; err says why. */
int al_wsess_open(struct al_wsess *s, const struct al_job *job, uint64_t ttl_ms,
		  char *err, size_t errlen);
/* Move the VM's hard end to ttl_ms from now (extend). */
void al_wsess_set_ttl(struct al_wsess *s, uint64_t ttl_ms);
/* Run `step` with timeout_ms (0 = its own, else the policy default),
 * passing output to `out` as the guest produces it, at most
 * `stream_cap` bytes per stream (the agent ends the step past it: OL).
 * 0 with *ret filled (its status says how the exec ended), or -errno when
 * the VM failed (then it is unusable: close the session). */
int al_wsess_exec(struct al_wsess *s, const struct al_step *step,
		  uint32_t timeout_ms, uint32_t stream_cap, sb_out_fn out,
		  void *opaque, struct al_step_result *ret);
/* al_wsess_exec with `tick` called at least every 100 ms while the exec
 * runs (sandbox.h, sb_vm_run_step_ctl): a signal it returns goes to the
 * exec's processes. */
int al_wsess_exec_tick(struct al_wsess *s, const struct al_step *step,
		       uint32_t timeout_ms, uint32_t stream_cap, sb_out_fn out,
		       sb_tick_fn tick, void *opaque,
		       struct al_step_result *ret);
/* End every process the session left running (its background ones, in
 * the guest's job/bg): a job step (never a session exec) that kills
 * every process of the job user but itself, before which the agent
 * kills job/bg too (sandbox/agent/exec.c). Called before a session is
 * saved as a snapshot, so nothing of its code runs in the clones. 0, or
 * -errno when the VM failed. */
int al_wsess_end_background(struct al_wsess *s);
/* Does its agent take signals while an exec runs? (A round trip the
 * first time; never while an exec runs.) */
bool al_wsess_can_signal(struct al_wsess *s);
/* Is the VMM still alive? */
bool al_wsess_alive(struct al_wsess *s);
void al_wsess_close(struct al_wsess *s);

#endif
