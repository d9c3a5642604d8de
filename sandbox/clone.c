/* clone.c: copy-on-write clones of a template, and the pool of
 * pre-started VMMs that makes them fast.
 *
 * Theory of operation. A clone is a new QEMU with the template's command
 * line (machine.c) except that it maps the template's sealed RAM memfd
 * with share=off (MAP_PRIVATE: every clone shares the untouched pages
 * and gets private copies of what it writes) and waits in
 * -incoming defer. A restore has three steps:
 *
 *   spawn    sb__vm_create + sb__vm_launch: QEMU starts and initialises on its
 *            own; no guest state yet (clone_spawn)
 *   prepare  QMP and the agent socket connected, x-ignore-shared set,
 *            the template's `state` fd handed over (clone_prepare)
 *   finish   migrate-incoming loads `state`; since the template was saved
 *            running, QEMU resumes the guest by itself where the template
 *            stopped: the agent blocked in poll(), waiting for a request.
 *            The first request hands over fresh entropy and the clock
 *            before any job code runs (clones are otherwise identical,
 *            CRNG included); its reply says the clone is up (clone_finish)
 *
 * sb_vm_restore() does all three in a row. The pool (struct sb_pool) does
 * spawn while the previous job runs (sb_pool_fill), prepare between jobs
 * (sb_pool_prepare), and only finish in the job's own time
 * (sb_pool_restore). A pre-started VMM holds no guest state, so it may
 * wait as long as it likes; each is used once. The TTL and ready_ms count
 * from the job's request, not from the pre-start.
 *
 * Warm clones (docs/warm.md) go one step further, between jobs: restored,
 * reseeded and warmed up (the image's clone_warmup run as the job user
 * through the step path, then the writable dirs tidied, then a setup with
 * the default job limits, the slow first one), they wait in
 * p->warm until sb_pool_take hands one to a job in one round trip: the
 * job's setup carrying a fresh reseed (entropy and clock: they may have
 * waited minutes; proto v2), applied by the agent before the limits. One
 * whose QEMU died or that has waited max_age_ms is dropped without a
 * round trip (warm_sweep); one that does not answer that setup within
 * HANDOFF_TIMEOUT_MS is destroyed; the job then takes the next one or the
 * restore path.
 *
 * Reads a struct sb_template (template.c makes them) but calls nothing
 * there; builds on vm.c's steps (vm_internal.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "net.h"
#include "sandbox.h"
#include "util.h"
#include "vm_internal.h"

#define WARM_TIMEOUT_MS 120000 /* a clone's warm-up command */
#define HANDOFF_TIMEOUT_MS 2000 /* a waiting warm clone's reseed */

/* Everything a restore needs that holds no guest state: QMP and the agent
 * socket connected, x-ignore-shared set, the state file's fd handed over.
 * A pre-started VMM has this done while the previous job runs
 * (sb_pool_prepare), which takes 4-8 ms off the restore under TCG. */
static int clone_prepare(struct sb_vm *vm, const struct sb_options *o,
			 const struct sb_template *t)
{
	int dfd, fd, r;

	if (vm->prepared)
		return 0;
	r = sb__vm_connect(vm, o);
	if (r == 0)
		r = sb__vm_qmp_ignore_shared(vm);
	if (r == 0) {
		/* root's file: no link followed, no FIFO blocked on */
		dfd = sb__open_dir(t->dir);
		fd = dfd < 0
			 ? dfd
			 : sb__open_in(dfd, "state", O_RDONLY, 0, geteuid());
		if (dfd >= 0)
			close(dfd);
		r = fd < 0 ? fd : sb__vm_qmp_pass_state(vm, fd);
		if (fd >= 0)
			close(fd); /* QEMU holds its own copy now */
	}
	if (r < 0 && !vm->error[0])
		sb__vm_fail(vm, r, "prepare restore");
	vm->prepared = r == 0;
	return r;
}

/* Load the snapshot into a prepared VMM. The template was saved running,
 * so QEMU starts the guest by itself once the state is in: no polling for
 * the end of the load, no `cont`. A load that fails makes QEMU exit with
 * the reason on stderr, which the first agent call reports. */
static int restore_load(struct sb_vm *vm)
{
	return sb__vm_qmp(vm, "migrate-incoming",
			  json_pack("{s:s}", "uri", "fd:state"), NULL);
}

/* A VMM for a clone of `t`, waiting in -incoming defer: no guest state,
 * so it may be started ahead of the job that will use it. */
static int clone_spawn(const struct sb_options *o, const struct sb_template *t,
		       struct sb_net *net, struct sb_vm **ret)
{
	struct machine_mem m = {.fd = t->mem_fd, .share = t->share_mem,
				.incoming = true};
	int r = sb__vm_create(o, t->img.name, t->accel, ret);

	if (r < 0) {
		sb_net_close(net);
		return r;
	}
	(*ret)->net = net; /* the VM's now, whatever happens */
	if (t->net != (net != NULL)) {
		snprintf((*ret)->error, sizeof((*ret)->error), "%s",
			 t->net ? "a networked template's clone needs a "
				  "network slot"
				: "a network slot needs a networked template");
		return -EINVAL;
	}
	(*ret)->restored = true;
	/* same devices as the template, a CID of its own (sb__vm_create) */
	return sb__vm_launch(*ret, o, &t->img, &m);
}

/* Load the snapshot into a spawned VMM and bring the agent up. */
static int clone_finish(struct sb_vm *vm, const struct sb_options *o,
			const struct sb_template *t)
{
	uint64_t t0 = al_now_ms();
	struct al_deadline ttl = o->ttl_ms ? al_deadline_in(o->ttl_ms)
					   : AL_NO_DEADLINE;
	int r = clone_prepare(vm, o, t);

	/* the TTL counts from the job's restore, not from the pre-start */
	if (o->ttl_ms)
		vm->deadline = ttl;
	if (r == 0) {
		struct timespec rt;

		clock_gettime(CLOCK_REALTIME, &rt);
		vm->load_rt_us = (int64_t)rt.tv_sec * 1000000 + rt.tv_nsec / 1000;
		r = restore_load(vm);
		if (r < 0 && vm->error[0] == 0)
			sb__vm_fail(vm, r, "load snapshot");
	}
	/* the template's agent said hello when it was built: reseed is the
	 * clone's first request (it waits in the socket until the guest
	 * runs), and its reply says the agent is there */
	if (r == 0)
		r = sb__vm_ready(vm, o, o->call_timeout_ms);
	/* a pre-started VMM's start-up is not the job's restore time */
	vm->ready_ms = al_now_ms() - (vm->start_ms > t0 ? vm->start_ms : t0);
	return r;
}

int sb_vm_restore(const struct sb_options *o, const struct sb_template *t,
		  struct sb_vm **ret)
{
	return sb_vm_restore_net(o, t, NULL, ret);
}

int sb_vm_restore_net(const struct sb_options *o, const struct sb_template *t,
		      struct sb_net *net, struct sb_vm **ret)
{
	int r = clone_spawn(o, t, net, ret);

	if (r == 0) {
		(*ret)->start_ms = al_now_ms();
		r = clone_finish(*ret, o, t);
	}
	return r;
}

void sb_pool_init(struct sb_pool *p, const struct sb_options *o,
		  const struct sb_template *t, unsigned size)
{
	memset(p, 0, sizeof(*p));
	p->o = o;
	p->t = t;
	p->want = size > SB_POOL_MAX ? SB_POOL_MAX : size;
}

void sb_pool_fill(struct sb_pool *p)
{
	while (p->n < p->want) {
		struct sb_vm *vm = NULL;

		if (clone_spawn(p->o, p->t, NULL, &vm) < 0) {
			sb_vm_destroy(vm);
			return; /* restores spawn inline until this works again */
		}
		p->spare[p->n++] = vm;
	}
}

/* Take spare i out of the pool, keeping the rest in order. */
static struct sb_vm *pool_take(struct sb_pool *p, size_t i)
{
	struct sb_vm *vm = p->spare[i];

	memmove(p->spare + i, p->spare + i + 1,
		(--p->n - i) * sizeof(p->spare[0]));
	return vm;
}

void sb_pool_prepare(struct sb_pool *p)
{
	for (size_t i = 0; i < p->n;) {
		if (clone_prepare(p->spare[i], p->o, p->t) == 0)
			i++;
		else /* a VMM that cannot be prepared is dropped */
			sb_vm_destroy(pool_take(p, i));
	}
}

/* A VMM for the next clone: the oldest live spare, else a new one. */
static int pool_vmm(struct sb_pool *p, struct sb_vm **ret)
{
	struct sb_vm *vm = NULL;

	/* oldest first; a spare whose QEMU died is dropped */
	while (p->n && !vm) {
		vm = pool_take(p, 0);
		if (!sb_vm_alive(vm)) {
			sb_vm_destroy(vm);
			vm = NULL;
		}
	}
	*ret = vm;
	return vm ? 0 : clone_spawn(p->o, p->t, NULL, ret);
}

int sb_pool_restore(struct sb_pool *p, struct sb_vm **ret)
{
	uint64_t t0 = al_now_ms();
	int r = pool_vmm(p, ret);

	if (r < 0)
		return r;
	(*ret)->start_ms = t0 > (*ret)->start_ms ? t0 : (*ret)->start_ms;
	r = clone_finish(*ret, p->o, p->t);
	/* the next VMM starts while this job runs (not while this restore
	 * loads: its start-up would compete for the CPU, measured +10 ms) */
	sb_pool_fill(p);
	return r;
}

void sb_pool_release(struct sb_pool *p)
{
	for (size_t i = 0; i < p->n; i++)
		sb_vm_destroy(p->spare[i]);
	p->n = 0;
	for (size_t i = 0; i < p->n_warm; i++)
		sb_vm_destroy(p->warm[i]);
	p->n_warm = 0;
}

/* --- warm clones ------------------------------------------------------ */

void sb_pool_set_warm(struct sb_pool *p, unsigned n, uint64_t max_age_ms)
{
	p->want_warm = n > SB_POOL_MAX ? SB_POOL_MAX : n;
	p->max_age_ms = max_age_ms;
}

/* Take warm clone i out of the pool, keeping the rest in order. */
static struct sb_vm *warm_take(struct sb_pool *p, size_t i)
{
	struct sb_vm *vm = p->warm[i];

	p->n_warm--;
	memmove(p->warm + i, p->warm + i + 1,
		(p->n_warm - i) * sizeof(p->warm[0]));
	memmove(p->warm_at + i, p->warm_at + i + 1,
		(p->n_warm - i) * sizeof(p->warm_at[0]));
	return vm;
}

/* Run `cmd` through /bin/sh as the job user, the way a job step runs
 * (its own step cgroup, removed after), warm the template's zygote up
 * when it has one (docs/zygote.md, "Warm-up"), then remove what they
 * left in the writable dirs: the job must find them as a cold clone
 * would. */
static int warm_run(struct sb_vm *vm, const struct sb_options *o,
		    const struct sb_image *img)
{
	const char *cmd = img->clone_warmup;
	char *argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};
	char *clean[] = {"/bin/sh", "-c",
			 "rm -rf /work/* /work/.[!.]* /tmp/* /tmp/.[!.]*; :",
			 NULL};
	struct al_step warm = {.argv = argv, .argc = 3};
	struct al_step tidy = {.argv = clean, .argc = 3};
	struct al_step_result res = {0};
	struct al_limits lim;
	int r = 0;

	al_job_limits(&(struct al_job){0}, al_policy_default(), &lim);
	if (cmd[0])
		r = sb__vm_run_warmup(vm, &warm, &lim, WARM_TIMEOUT_MS, &res);
	if (r == 0 && cmd[0] && res.status != AL_OK) {
		snprintf(vm->error, sizeof(vm->error),
			 "clone warm-up ended %s (exit %d)",
			 al_status_name(res.status), res.exit_code);
		r = -EIO;
	}
	al_step_result_release(&res);
	if (r == 0 && img->zygote[0] && o->warm_zygote) {
		r = sb__vm_zygote_warm(vm, WARM_TIMEOUT_MS);
		if (r == -EPROTO) { /* served all the same, cold */
			sb_log(o, SB_LOG_WARN, "clone: zygote warm-up refused");
			r = 0;
		}
	}
	if (r == 0)
		r = sb__vm_run_warmup(vm, &tidy, &lim, WARM_TIMEOUT_MS, &res);
	if (r == 0 && res.status != AL_OK)
		r = -EIO;
	al_step_result_release(&res);
	/* the default job limits once now: the agent's first setup after
	 * the warm-up (its scratch remount) is slow under TCG, 4-18 ms, a
	 * second one ~1 ms; the job's own setup then meets the fast case */
	if (r == 0)
		r = sb_vm_setup(vm, &lim);
	return r;
}

/* Drop the warm clones that can no longer serve: QEMU gone, or older
 * than max_age_ms (a clone that hangs is found at hand-off). */
static void warm_sweep(struct sb_pool *p)
{
	uint64_t now = al_now_ms();

	for (size_t i = 0; i < p->n_warm;) {
		bool old = p->max_age_ms &&
			   now - p->warm_at[i] >= p->max_age_ms;

		if (!old && sb_vm_alive(p->warm[i])) {
			i++;
			continue;
		}
		sb_vm_destroy(warm_take(p, i));
		p->replaced++;
	}
}

/* Restore a clone for the pool; warm it up unless `stop` says a job
 * waits (then it waits restored only: still off the job's path). */
static int warm_one(struct sb_pool *p, bool (*stop)(void *), void *arg)
{
	struct sb_vm *vm = NULL;
	int r = pool_vmm(p, &vm);

	if (r == 0) {
		vm->start_ms = al_now_ms();
		r = clone_finish(vm, p->o, p->t);
	}
	if (r == 0 && !(stop && stop(arg))) {
		r = warm_run(vm, p->o, &p->t->img);
		vm->warm = r == 0;
	}
	if (r < 0) {
		sb_vm_destroy(vm);
		return r;
	}
	p->warm[p->n_warm] = vm;
	p->warm_at[p->n_warm++] = al_now_ms();
	return 0;
}

int sb_pool_warm(struct sb_pool *p, bool (*stop)(void *), void *arg)
{
	int made = 0, r;

	warm_sweep(p);
	/* a clone restored but not warmed (a job was waiting then) gets its
	 * warm-up now */
	for (size_t i = 0; i < p->n_warm && !(stop && stop(arg)); i++)
		if (!p->warm[i]->warm) {
			r = warm_run(p->warm[i], p->o, &p->t->img);
			if (r < 0) {
				sb_vm_destroy(warm_take(p, i));
				return r;
			}
			p->warm[i]->warm = true;
			p->warm_at[i] = al_now_ms();
		}
	while (p->n_warm < p->want_warm && !(stop && stop(arg))) {
		r = warm_one(p, stop, arg);
		if (r < 0)
			return r;
		made++;
	}
	sb_pool_fill(p);
	return made;
}

/* Hand warm clone `vm` to a job: one round trip, setup with the reseed
 * in it (or the reseed alone when the caller sends setup itself). */
static int take_one(struct sb_vm *vm, const struct sb_options *o,
		    const struct al_limits *lim)
{
	struct sb_options short_o = *o;

	/* a clone that stopped answering is not worth a job's wait */
	if (short_o.call_timeout_ms > HANDOFF_TIMEOUT_MS)
		short_o.call_timeout_ms = HANDOFF_TIMEOUT_MS;
	return lim ? sb__vm_setup_reseed(vm, lim, short_o.call_timeout_ms)
		   : sb__vm_reseed(vm, &short_o);
}

int sb_pool_take(struct sb_pool *p, const struct al_limits *lim,
		 struct sb_vm **ret)
{
	uint64_t t0 = al_now_ms();

	*ret = NULL;
	warm_sweep(p);
	while (p->n_warm) {
		struct sb_vm *vm = warm_take(p, 0);

		if (take_one(vm, p->o, lim) == 0) {
			vm->start_ms = t0;
			vm->ready_ms = al_now_ms() - t0;
			*ret = vm;
			return 0;
		}
		/* hung, dead, or refused the job's limits: a restored clone
		 * gets the same setup and reports its error to the job */
		sb_vm_destroy(vm);
		p->replaced++;
	}
	return -ENOENT;
}
