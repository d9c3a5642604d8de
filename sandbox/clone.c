/* clone.c: copy-on-write clones of a template, and the pool of
 * pre-started VMMs that makes them fast.
 *
 * Theory of operation. A clone is a new QEMU with the template's command
 * line (machine.c) except that it maps the template's sealed RAM memfd
 * with share=off (MAP_PRIVATE: every clone shares the untouched pages
 * and gets private copies of what it writes) and waits in
 * -incoming defer. A restore has three steps:
 *
 *   spawn    vm_create + vm_launch: QEMU starts and initialises on its
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
	r = vm_connect(vm, o);
	if (r == 0)
		r = vm_qmp_ignore_shared(vm);
	if (r == 0) {
		/* root's file: no link followed, no FIFO blocked on */
		dfd = sb_open_dir(t->dir);
		fd = dfd < 0 ? dfd
			     : sb_open_in(dfd, "state", O_RDONLY, 0, geteuid());
		if (dfd >= 0)
			close(dfd);
		r = fd < 0 ? fd : vm_qmp_pass_state(vm, fd);
		if (fd >= 0)
			close(fd); /* QEMU holds its own copy now */
	}
	if (r < 0 && !vm->error[0])
		vm_fail(vm, r, "prepare restore");
	vm->prepared = r == 0;
	return r;
}

/* Load the snapshot into a prepared VMM. The template was saved running,
 * so QEMU starts the guest by itself once the state is in: no polling for
 * the end of the load, no `cont`. A load that fails makes QEMU exit with
 * the reason on stderr, which the first agent call reports. */
static int restore_load(struct sb_vm *vm)
{
	return vm_qmp(vm, "migrate-incoming",
		      json_pack("{s:s}", "uri", "fd:state"), NULL);
}

/* A VMM for a clone of `t`, waiting in -incoming defer: no guest state,
 * so it may be started ahead of the job that will use it. */
static int clone_spawn(const struct sb_options *o, const struct sb_template *t,
		       struct sb_net *net, struct sb_vm **ret)
{
	struct machine_mem m = {.fd = t->mem_fd, .share = false,
				.incoming = true};
	int r = vm_create(o, t->img.name, t->accel, ret);

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
	/* same devices as the template, a CID of its own (vm_create) */
	return vm_launch(*ret, o, &t->img, &m);
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
			vm_fail(vm, r, "load snapshot");
	}
	/* the template's agent said hello when it was built: reseed is the
	 * clone's first request (it waits in the socket until the guest
	 * runs), and its reply says the agent is there */
	if (r == 0)
		r = vm_ready(vm, o, o->call_timeout_ms);
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

int sb_pool_restore(struct sb_pool *p, struct sb_vm **ret)
{
	struct sb_vm *vm = NULL;
	uint64_t t0 = al_now_ms();
	int r;

	/* oldest first; a spare whose QEMU died is dropped */
	while (p->n && !vm) {
		vm = pool_take(p, 0);
		if (!sb_vm_alive(vm)) {
			sb_vm_destroy(vm);
			vm = NULL;
		}
	}
	if (!vm) {
		r = clone_spawn(p->o, p->t, NULL, &vm);
		if (r < 0) {
			*ret = vm;
			return r;
		}
	}
	*ret = vm;
	vm->start_ms = t0 > vm->start_ms ? t0 : vm->start_ms;
	r = clone_finish(vm, p->o, p->t);
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
}
