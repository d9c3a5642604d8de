/* worker.h: running one job in one fresh VM and building its result.
 *
 *  1. al_worker_init() with the sandbox options and the policy (both
 *     outlive the worker); `cold` makes every job cold-boot instead of
 *     restoring a template clone (tests, benchmarks).
 *  2. al_worker_run() per job: validate against the policy (RJ), get a
 *     VM, set limits, place files, run the steps, collect files, destroy
 *     the VM. It always produces a result; Airlock's own failures are XX
 *     with `error` saying what failed, never a crash or a lost job.
 *  3. al_worker_release().
 */
#ifndef AL_WORKER_H
#define AL_WORKER_H

#include "results.h"
#include "sandbox.h"

#define AL_WORKER_TEMPLATES 16

/* A snapshot's definition as published through Redis (docs/snapshots.md,
 * "On every host"): the dispatcher reads it and hands it to the worker
 * with each job that names the snapshot. It is data from anyone who can
 * write Redis: a setup job (run only as a job, under this host's
 * policy), never a path or a command for the host. */
struct al_snapdef {
	char name[AL_NAME_MAX + 1]; /* the snapshot */
	char base[AL_NAME_MAX + 1]; /* its base image template */
	char image[33];             /* that image's content hash (sb_image) */
	char setup_sha[65];         /* al_worker_setup_hash() of the setup */
	char key[33];               /* al_snapdef_key() of the four above */
	const char *setup;          /* the setup job's msgpack */
	size_t setup_len;           /* its bytes, <= AL_JOB_MAX_BYTES */
};

struct al_worker {
	const struct sb_options *sb;      /* sandbox options */
	const struct al_policy *policy;   /* limits and allow-lists */
	bool cold;                        /* cold boot every job */
	char name[AL_NAME_MAX + 1];       /* `worker` in results */
	struct sb_template templates[AL_WORKER_TEMPLATES]; /* opened (a
					   * name's networked variant is an
					   * entry of its own) */
	struct sb_pool pools[AL_WORKER_TEMPLATES]; /* pre-started VMMs */
	size_t n_templates;               /* entries used */
	size_t last;                      /* pool of the last job, or
					   * AL_WORKER_TEMPLATES: none yet */
	bool warm_failed[AL_WORKER_TEMPLATES]; /* warm-up failed: no retry
					   * until the next job */
	bool (*job_waiting)(void *);      /* NULL, or: a job waits (stop
					   * warming, al_proc_serve sets it) */
	void *job_waiting_arg;            /* its argument */
	struct sb_net_pool net;           /* ready network slots, and the
					   * last job's, closed when idle */
	const struct al_snapdef *snapdef; /* the published definition of the
					   * snapshot the current job names,
					   * NULL = none (set by proc.c) */
	char snap_failed[33];             /* key of the last definition whose
					   * setup failed or was refused here:
					   * its jobs are refused at once */
	char snap_failed_err[300];        /* and why */
	bool saveable;                    /* restore VMs saveable (a session
					   * that may be snapshot: live.c) */
	char gw_addr[48];                 /* the session VM's slot address
					   * the package gateway knows it by
					   * (al_worker_open_vm), "" = none */
};

/* Guest RAM kept for the kernel and the agent beyond a job's memory_mb:
 * a job asking for more than a template VM can give is cold-booted in a
 * VM of its own size instead of restored. */
#define AL_WORKER_RESERVE_MB 256

void al_worker_init(struct al_worker *w, const struct sb_options *sb,
		    const struct al_policy *policy, const char *name);
/* Run `job`; queued_ms is how long it waited in the queue. *ret is always
 * filled (release with al_result_release); returns 0, or -ENOMEM when not
 * even a result could be built. */
int al_worker_run(struct al_worker *w, const struct al_job *job,
		  uint64_t queued_ms, uint32_t attempt, struct al_result *ret);
/* Make snapshot `name` from setup job `job` (its template is the base):
 * run its steps in a clone of the base and save that VM when every step
 * is OK (sandbox.h, docs/snapshots.md). *ret is filled as by
 * al_worker_run, *info (may be NULL) when one was saved. Returns 0 (made;
 * *info set), 1 (a cache hit: the same base and setup exist; no step
 * ran), -EINVAL (the job breaks the policy: *ret is RJ), -ECANCELED (a
 * step was not OK: *ret says which; nothing saved), else -errno (our own
 * failure: *ret is XX). */
int al_worker_snapshot(struct al_worker *w, const char *name,
		       const struct al_job *job, struct al_result *ret,
		       struct sb_snapshot_info *info);
/* Between jobs: close the last job's network slot and make the ready
 * ones (w->net, sandbox/net/net.h); get the pre-started VMMs ready to
 * load a snapshot, so the next restore skips that work (waits for QEMU
 * start-up if need be), and keep the warm clones (docs/warm.md): the last
 * job's template's (sb->warm_last) and those of sb->warm, replacing dead
 * or old ones.
 * Stops early when w->job_waiting says a job waits. */
void al_worker_idle(struct al_worker *w);
/* How long the idle loop may sleep before al_worker_idle() is due again
 * (warm clones age and die), ms; -1 = until the next job. */
int al_worker_idle_ms(const struct al_worker *w);
/* Warm clones `spec` ("python:2 c:1") asks of `name`: 0 if none; -1 if
 * spec is malformed (config check). */
int al_worker_warm_count(const char *spec, const char *name);
/* The VM a job would run in, ready for steps, for a session
 * (worker/session.h): the policy check, a network slot, a warm clone, a
 * restored clone or a cold boot exactly as al_worker_run() picks, ttl_ms
 * as its hard deadline, the job's limits set and files placed; no step
 * runs. 0 and *ret_vm (the caller destroys it); -EINVAL when the job
 * breaks the policy, else -errno; err says why either way. */
int al_worker_open_vm(struct al_worker *w, const struct al_job *job,
		      uint64_t ttl_ms, struct sb_vm **ret_vm, char *err,
		      size_t errlen);
/* Before the VM al_worker_open_vm() gave is destroyed: the package
 * gateway forgets its slot's identity (job->id there: the session's),
 * so a later VM on that address is never taken for it. */
void al_worker_close_vm(struct al_worker *w);
/* The setup job's content hash (its msgpack without id and meta), hex:
 * what a snapshot's key covers of its setup. 0 or -ENOMEM. */
int al_worker_setup_hash(const struct al_job *job, char out[65]);
/* The key of a published definition: a hash of its name, base, base
 * image hash and setup hash (host-independent: no QEMU, no machine
 * config), 32 hex digits. */
void al_snapdef_key(const struct al_snapdef *d, char out[33]);
/* Whether d's fields are well formed and its key is theirs. */
bool al_snapdef_valid(const struct al_snapdef *d);
/* Check definition d on this worker's host (worker/snapdef.c): 1 when
 * it may be used once built (build_on_demand: *ret_setup is the setup
 * job, to build from), 0 when this host has its build and may not build
 * (build_on_demand off), -ESTALE when the job must be refused (err says
 * why, naming the snapshot). Release *ret_setup in every case. */
int al_snapdef_check(const struct al_worker *w, const struct al_snapdef *d,
		     struct al_job *ret_setup, char *err, size_t errlen);
/* Before a job that names snapshot `name` runs, with w->snapdef set: make
 * sure this host's build of `name` is exactly the published definition,
 * building it when it is missing or another (one build per name per host
 * at a time: the others wait on its lock). 0 when the job may run from
 * it (also when no definition of `name` was handed over: a snapshot made
 * on this host alone); -ESTALE when it must not (err says why, naming
 * the snapshot: the job is RJ); else -errno, our own failure (XX). */
int al_worker_snapshot_ensure(struct al_worker *w, const char *name,
			      char *err, size_t errlen);
/* An RJ result for a job that could not be decoded. */
int al_worker_reject(const char *id, const struct al_diags *d,
		     struct al_result *ret);
void al_worker_release(struct al_worker *w);

#endif
