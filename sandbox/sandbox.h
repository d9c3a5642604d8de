/* sandbox.h: the microVM layer, the one header workers use.
 *
 * A VM runs one job and is destroyed. Using it:
 *
 *  1. Fill a `struct sb_options` (sb_options_init() gives the defaults;
 *     the config file overrides them).
 *  2. Get a VM: sb_vm_boot() cold-boots the template's image (seconds), or
 *     sb_template_open() once plus sb_vm_restore() per job (milliseconds:
 *     a copy-on-write clone of a snapshot). Either returns a VM whose agent
 *     has answered hello and has been handed fresh entropy and the clock.
 *  3. sb_vm_setup() (job limits), sb_vm_put_files(), sb_vm_run_step() per
 *     step, sb_vm_get_files().
 *  4. sb_vm_destroy(): SIGKILL the VMM, reap it, close its channels,
 *     remove its cgroup, release its uid. Always, whatever happened; a VM
 *     never runs a second job.
 *
 * Errors are negative errno; sb_vm_error() says what failed in words for
 * the XX result (no guest bytes unescaped). A call that fails with
 * anything but -EPROTO leaves the VM unusable: destroy it.
 *
 * This header pulls in no QMP, JSON, cgroup or agent-protocol types: a
 * VM is opaque here, read through sb_vm_error(), sb_vm_accel() and the
 * other accessors at the end.
 */
#ifndef AL_SANDBOX_H
#define AL_SANDBOX_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "clock.h"
#include "options.h"
#include "results.h"

struct sb_image {
	char dir[PATH_MAX];     /* resolved image dir */
	char name[AL_NAME_MAX + 1]; /* template name */
	char hash[33];          /* content hash of the image inputs */
	char initrd[64];        /* initramfs file name in dir */
	char cmdline[1024];     /* kernel command line */
	char warmup[1024];      /* shell command run before a snapshot, "" */
	char clone_warmup[1024]; /* run in each warm clone before its job
				  * (the manifest's, else `warmup`), "" */
	char zygote[1025];      /* python modules the
				  * template's zygote imports, "" = no
				  * zygote (docs/zygote.md) */
};

/* One VM (opaque: sandbox/vm_internal.h defines it). Read it through the
 * sb_vm_* accessors below. */
struct sb_vm;
struct al_msg_files;

/* A template: a snapshot of a booted, idle VM of one image. */
struct sb_template {
	char dir[PATH_MAX];      /* STATE/templates/NAME-KEY */
	struct sb_image img;     /* the image it was booted from */
	enum al_accel accel;     /* accelerator it was saved under */
	char key[17];            /* cache key (hex) */
	int mem_fd;              /* its RAM: a sealed memfd, the process's
				  * own (kept for the process's life) */
	bool built;              /* this open built it (a cache miss) */
	bool net;                /* the networked variant: one NIC */
	bool snapshot;           /* a snapshot (snapshot.c): dir may go */
	bool share_mem;          /* clones map mem_fd share=on (live.c: a
				  * private copy a live VM is saved from) */
	uint64_t build_ms;       /* cold boot + save, when built */
};


/* Find the newest built image of `template_` under o->state_dir, else
 * (read-only) under o->system_dir. -ENOENT (not built: `airlock image
 * build NAME`), -EACCES (there, not readable), -EBADMSG (bad manifest). */
/* Is template_'s image in the state (or system) dir? A name check and a
 * realpath: cheap enough to ask per submitted job. */
bool sb_image_built(const struct sb_options *o, const char *template_);
int sb_image_open(const struct sb_options *o, const char *template_,
		  struct sb_image *ret);

/* Which accelerator `mode` resolves to on this host (auto probes KVM). */
enum al_accel sb_accel_resolve(const struct sb_options *o,
			       const struct sb_image *img);

/* What sb_accel_resolve() would answer without probing: the enum
 * al_accel, or -ENOENT when auto has no cached verdict for img yet (the
 * first VM of the image probes). For `airlock doctor`. */
int sb_accel_known(const struct sb_options *o, const struct sb_image *img);

/* Cold boot: start QEMU on the image, wait for the agent, reseed it. */
int sb_vm_boot(const struct sb_options *o, const struct sb_image *img,
	       struct sb_vm **ret);

/* Cold boot with a NIC in network slot `net` (net.h), which the VM owns
 * from here on, failure included. */
struct sb_net;
int sb_vm_boot_net(const struct sb_options *o, const struct sb_image *img,
		   struct sb_net *net, struct sb_vm **ret);

/* Open the template of `template_`: reuse the cached snapshot when its key
 * (image hash, machine config, QEMU binary) matches, else cold boot and
 * save one. Safe against concurrent openers (a lock file). */
int sb_template_open(const struct sb_options *o, const char *template_,
		     struct sb_template *ret);
/* The same, or (net) its networked variant: same image, one NIC, its own
 * cache key; every clone has the same address and MAC (docs/network.md). */
int sb_template_open_net(const struct sb_options *o, const char *template_,
			 bool net, struct sb_template *ret);
/* Is `t` still what its name opens? False once a snapshot was removed or
 * re-created (reopen it); always true for an image template. */
bool sb_template_current(const struct sb_template *t);
/* A fresh clone of the template: a new QEMU maps the template's RAM
 * copy-on-write, loads its device state, resumes, and the agent gets new
 * entropy and the clock. On failure *ret (if set) holds vm->error. */
int sb_vm_restore(const struct sb_options *o, const struct sb_template *t,
		  struct sb_vm **ret);
/* A clone of a networked template in network slot `net` (sandbox/net/net.h),
 * which the VM owns from here on, failure included: sb_vm_destroy()
 * closes it after QEMU is gone. No pre-started VMM: its namespace is
 * the job's. */
int sb_vm_restore_net(const struct sb_options *o, const struct sb_template *t,
		      struct sb_net *net, struct sb_vm **ret);

/* Snapshots (snapshot.c): a template derived from an image template by
 * running a setup job in a clone of it and saving that VM, RAM (and so
 * the /work and /tmp tmpfs) included.
 *
 *  1. sb_snapshot_begin(): 1 when a snapshot NAME of exactly this base and
 *     setup hash exists (a cache hit: done); else 0 and *ret_vm, a clone
 *     of the base whose RAM is a shared copy of the base's.
 *  2. Run the setup job's steps in *ret_vm (sb_vm_setup, sb_vm_run_step).
 *  3. sb_snapshot_commit() when every step was OK (saves, destroys the
 *     VM), else sb_snapshot_abort() (destroys the VM, saves nothing).
 *
 * Jobs then name it like a template: the worker opens it with
 * sb_snapshot_open() when no image has that name. See docs/snapshots.md. */
struct sb_snapshot_build {
	char name[AL_NAME_MAX + 1]; /* the snapshot */
	char tmp[PATH_MAX];         /* build dir, renamed into place */
	char inputs[PATH_MAX + 512]; /* what the key covers, text */
	char key[17];               /* hash of inputs, hex */
	struct sb_template base;    /* the image template it derives from */
	struct sb_vm *vm;           /* the setup's VM until commit/abort */
	int mem_fd;                 /* its RAM: a shared copy of base's */
	int lock_fd;                /* the snapshot name's build lock */
	uint64_t t0;                /* al_now_ms() at begin */
};
/* What a snapshot holds on disk (list, commit). */
#define AL_SESS_ORIGIN_MAX 64
struct sb_snapshot_info {
	char name[AL_NAME_MAX + 1]; /* the snapshot */
	char base[AL_NAME_MAX + 1]; /* its base template */
	char dir[PATH_MAX];         /* STATE/snapshots/NAME-KEY-ID */
	char setup[65];             /* the setup job's hash, hex */
	uint64_t disk_bytes;        /* allocated on disk */
	uint64_t mem_bytes;         /* RAM pages saved (differ from base) */
	int64_t created;            /* wall clock, seconds */
	bool in_use;                /* a process holds it open */
	bool stale;                 /* its base template changed */
	char origin[AL_SESS_ORIGIN_MAX + 1]; /* "session:ID" when a live
				     * session was saved (live.c), else "" */
	char owner[AL_SESS_ORIGIN_MAX + 1]; /* who saved it (a principal,
				     * [A-Za-z0-9_.@-]), else "" */
	uint64_t build_ms;          /* commit: begin -> saved */
	uint64_t save_ms;           /* commit: state + RAM written */
};
int sb_snapshot_begin(const struct sb_options *o, const char *name,
		      const char *base, const char *setup_hash,
		      struct sb_snapshot_build *b, struct sb_vm **ret_vm);
/* Save b->vm as snapshot b->name; evicts old unused snapshots over
 * o->snapshot_max_mb. *ret (may be NULL) describes it. */
int sb_snapshot_commit(const struct sb_options *o,
		       struct sb_snapshot_build *b, struct sb_snapshot_info *ret);
void sb_snapshot_abort(struct sb_snapshot_build *b);
/* Whether a build of snapshot `name` is on this host (worker/job.c: an
 * unlisted snapshot is refused by name, not reported missing). */
bool sb_snapshot_exists(const struct sb_options *o, const char *name);
/* Whether the newest build of snapshot `name` on this host is exactly
 * base `base` (as this host's template of it now is) and setup hash
 * `setup_hash`: what sb_snapshot_begin() would call a cache hit, checked
 * without building anything but the base template if it is missing
 * (worker/snapdef.c, snapshots.build_on_demand = false). */
bool sb_snapshot_built(const struct sb_options *o, const char *name,
		       const char *base, const char *setup_hash);
/* Open snapshot `name` as a template: -ENOENT (none here), -ESTALE (its
 * base template changed: re-create it). */
int sb_snapshot_open(const struct sb_options *o, const char *name,
		     struct sb_template *ret);
/* Up to `max` snapshots of the state dir, oldest first; the count. */
int sb_snapshot_list(const struct sb_options *o, struct sb_snapshot_info *ret,
		     size_t max);
/* Remove snapshot `name` (-ENOENT if none). Clones running from it keep
 * running: they hold its RAM and state open. */
int sb_snapshot_remove(const struct sb_options *o, const char *name);

/* Saveable VMs (live.c; docs/sessions.md "Snapshot"): a clone of `t`
 * whose RAM is a private copy of t's memfd mapped share=on, so that the
 * live VM can be saved as a snapshot (sb_snapshot_save_live) without
 * putting its RAM in the migration stream. Costs the copy at restore and
 * that RAM's pages in the VM's memory. Otherwise sb_vm_restore_net. */
int sb_vm_restore_saveable(const struct sb_options *o,
			   const struct sb_template *t, struct sb_net *net,
			   struct sb_vm **ret);
/* Was `vm` made by sb_vm_restore_saveable? */
bool sb_vm_saveable(const struct sb_vm *vm);
/* Close this process's cached RAM of snapshot `name` (opened by
 * sb_snapshot_open; its clones keep their own mappings): a session's
 * resumed VM holds its own copy. A template opened from it must not be
 * used again (its dir is gone: sb_template_current is false). */
void sb_snapshot_release(const char *name);
/* Close every template and snapshot RAM memfd this process opened (a
 * hibernated session gives its memory back): no sb_template, pool or VM
 * of this process may use them after (al_worker_release first); the next
 * open loads them again. */
void sb_template_release_all(void);
void sb_snapshot_release_all(void);
/* Save the live, saveable `vm` as snapshot `name` (which must not exist
 * yet: -EEXIST), recording `origin` ("session:ID") and `owner` (NULL or
 * "": none; else a principal's name, [A-Za-z0-9_.@-], at most
 * AL_SESS_ORIGIN_MAX: -EINVAL); the guest is paused for the save and runs
 * on after it. -EOPNOTSUPP (not saveable),
 * -ESTALE (its base template changed since it started). */
int sb_snapshot_save_live(const struct sb_options *o, struct sb_vm *vm,
			  const char *name, const char *origin,
			  const char *owner, struct sb_snapshot_info *ret);
/* How many snapshots on this host name `owner` as theirs (0 for ""). */
int sb_snapshot_count_owned(const struct sb_options *o, const char *owner);

/* Pre-started VMMs: QEMU processes of one template waiting in -incoming
 * defer, holding no guest state, so that a restore skips QEMU's own
 * start-up. Each is used once.
 *
 * Warm clones (docs/warm.md): clones already restored, reseeded and
 * warmed up (the image's clone_warmup command run in them as the job
 * user, through the step path a job uses), waiting for a job. A warm
 * clone has run only the template's own trusted command; it is handed
 * to one job (sb_pool_take) with fresh entropy and the clock, and is
 * destroyed after it like any VM. */
#define SB_POOL_MAX 8
/* A session's snapshots are named with this prefix (dispatcher/session/
 * save.c); sb_snapshot_begin refuses it: an operator's never are. */
#define SB_SNAP_SESSION_PREFIX "session-"
struct sb_pool {
	const struct sb_options *o;    /* options, outlive the pool */
	const struct sb_template *t;   /* template, outlives the pool */
	struct sb_vm *spare[SB_POOL_MAX]; /* started, not yet used */
	size_t n;                      /* entries in spare */
	size_t want;                   /* spares to keep */
	struct sb_vm *warm[SB_POOL_MAX]; /* warmed clones, oldest first */
	uint64_t warm_at[SB_POOL_MAX]; /* al_now_ms() when each got warm */
	size_t n_warm;                 /* entries in warm */
	size_t want_warm;              /* warm clones to keep */
	uint64_t max_age_ms;           /* replace older ones; 0 = never */
	unsigned replaced;             /* warm clones dropped: died, hung or
					* too old (tests, logs) */
};
void sb_pool_init(struct sb_pool *p, const struct sb_options *o,
		  const struct sb_template *t, unsigned size);
/* Start VMMs until `want` are waiting (returns at once: they start up in
 * the background). */
void sb_pool_fill(struct sb_pool *p);
/* Connect each waiting VMM and hand it the snapshot's fd (QEMU start-up
 * must have finished: this waits for it). Call while idle, e.g. between
 * jobs: a restore then only loads the state and wakes the guest. */
void sb_pool_prepare(struct sb_pool *p);
/* sb_vm_restore through a spare (or a new VMM if none is left), then
 * refill. */
int sb_pool_restore(struct sb_pool *p, struct sb_vm **ret);
void sb_pool_release(struct sb_pool *p);
/* Keep `n` warm clones (at most SB_POOL_MAX), each replaced once it has
 * waited max_age_ms (0 = never). */
void sb_pool_set_warm(struct sb_pool *p, unsigned n, uint64_t max_age_ms);
/* Drop warm clones whose QEMU died or that are too old, then make new
 * ones until want_warm wait: restore, reseed, warm-up, tidy. Blocks for
 * the warm-ups (call between jobs); `stop` (may be NULL) is asked before
 * each restore and warm-up: when it says a job waits, a restored clone
 * waits without its warm-up (sb_vm_warm false) and the call returns.
 * Returns how many were made, or the -errno of a failed one (that clone
 * is dropped; the next call retries). */
int sb_pool_warm(struct sb_pool *p, bool (*stop)(void *), void *arg);
/* A warm clone for a job: the oldest live one that answers, within a
 * short timeout, the job's setup with `lim` carrying fresh entropy and
 * the clock (it may have waited minutes): one round trip, and the job's
 * own sb_vm_setup(lim) then sends nothing. lim NULL: a reseed only (the
 * caller sends setup). Those that do not answer are destroyed and
 * counted in `replaced`. -ENOENT when none is left: restore
 * (sb_pool_restore). Its ready_ms is the hand-off time. */
int sb_pool_take(struct sb_pool *p, const struct al_limits *lim,
		 struct sb_vm **ret);

/* A VM for a job or a session, the one call a worker makes for it
 * (get.c): what it asks for, from the most specific down.
 *   1. `image` set (pool NULL): a cold boot of that image (NIC in `net`
 *      when set): the worker runs cold, or the job's VM size differs
 *      from the template's;
 *   2. `pool` and `saveable`: a clone on a private share=on copy of the
 *      template's RAM (sb_vm_restore_saveable), in `net` when set;
 *   3. `pool` and `net`: a clone of a networked template in `net`;
 *   4. `pool`: a warm clone fitting `lim` when one waits (sb_pool_take),
 *      else a restore through a pre-started VMM (sb_pool_restore).
 * The VM owns `net` from the call on, failure included. 0, or -errno
 * with sb_vm_error(*ret) saying why when *ret is set. */
struct sb_vm_want {
	const char *image;	     /* cold boot this image (case 1) */
	struct sb_pool *pool;	     /* else restore from this pool's template */
	struct sb_net *net;	     /* the VM's network slot, NULL = none */
	const struct al_limits *lim; /* the job's limits: a warm clone's setup */
	bool saveable;		     /* a clone that can be saved (case 2) */
};
int sb_vm_get(const struct sb_options *o, const struct sb_vm_want *want,
	      struct sb_vm **ret);

int sb_vm_setup(struct sb_vm *vm, const struct al_limits *limits);
int sb_vm_put_files(struct sb_vm *vm, const struct al_file *files, size_t n);
/* Run a step; the guest kills it after `timeout_ms` (the caller's, e.g.
 * cut to the job's wall time left; 0 = the step's own), whatever the step
 * says. The call's deadline adds a margin for the channel and is capped by
 * the VM's TTL. */
int sb_vm_run_step(struct sb_vm *vm, const struct al_step *step,
		   const struct al_limits *limits, uint32_t timeout_ms,
		   struct al_step_result *ret);
/* The same, with the step's output passed to `out` as the guest produces
 * it (fd 1 or 2; at most the step's output_bytes per stream), before the
 * call returns: sessions store it as it comes (worker/session.c). */
typedef void (*sb_out_fn)(void *opaque, int fd, const uint8_t *data,
			  size_t len);
int sb_vm_run_step_out(struct sb_vm *vm, const struct al_step *step,
		       const struct al_limits *limits, uint32_t timeout_ms,
		       sb_out_fn out, void *opaque, struct al_step_result *ret);
/* The same, with `tick` called at least every AL_AGENT_TICK_MS (100 ms)
 * while the step runs; when it returns 1, the signal it put in *sig
 * (al_step_signal_ok, proto.h) goes to every process of the step, then
 * SIGKILL after *grace_ms if the step still runs (0: no kill). Needs
 * sb_vm_can_signal(), else the signal is dropped. `background` (session
 * execs only, never a job's steps): what the step leaves running when its
 * main process exits survives it, in the VM's background cgroup (proto
 * v5; an older agent kills it, as for a job step). */
typedef int (*sb_tick_fn)(void *opaque, uint32_t *sig, uint32_t *grace_ms);
int sb_vm_run_step_ctl(struct sb_vm *vm, const struct al_step *step,
		       const struct al_limits *limits, uint32_t timeout_ms,
		       sb_out_fn out, void *opaque, sb_tick_fn tick,
		       void *tick_opaque, bool background,
		       struct al_step_result *ret);
/* Does the VM's agent take signals while a step runs (its hello said
 * v >= 4, proto.h)? Asked once, with a round trip, for a clone, which had
 * no hello of its own; false also when it could not be asked (the VM
 * failed: sb_vm_error). Never while a step runs. */
bool sb_vm_can_signal(struct sb_vm *vm);
/* Bring `paths` back, at most max_bytes of contents. Returns the count of
 * files the guest sent that were not asked for (dropped), or -EMSGSIZE
 * when it sent more than max_bytes (*ret then holds nothing). */
int sb_vm_get_files(struct sb_vm *vm, char *const *paths, size_t n,
		    uint64_t max_bytes, struct al_msg_files *ret);
/* Is the VMM process still alive? */
bool sb_vm_alive(struct sb_vm *vm);
void sb_vm_destroy(struct sb_vm *vm);
/* Release what sb_vm_get_files() returned. */
void sb_files_release(struct al_msg_files *f);

/* Accessors. Each accepts a VM in any state, failed ones included. */
/* What went wrong, in words ("" when nothing did; "" for a NULL vm). */
const char *sb_vm_error(const struct sb_vm *vm);
/* The accelerator it runs under. */
enum al_accel sb_vm_accel(const struct sb_vm *vm);
/* The memory.max of a VMM's host cgroup under `accel`: guest RAM + TCG's
 * translation buffer + vmm_overhead_mb (vm.c says why), bytes. */
uint64_t sb_vmm_memory_cap(const struct sb_options *o, enum al_accel accel);
/* Restored from a template snapshot (else cold-booted). */
bool sb_vm_restored(const struct sb_vm *vm);
/* Handed over warm (sb_pool_take): restored and warmed before the job. */
bool sb_vm_warm(const struct sb_vm *vm);
/* Milliseconds from the request (boot or restore) to the agent ready. */
uint64_t sb_vm_ready_ms(const struct sb_vm *vm);
/* A restore: CLOCK_REALTIME in microseconds when the snapshot load was
 * asked for, to set against QMP event times (benchmarks); 0 if none. */
int64_t sb_vm_load_rt_us(const struct sb_vm *vm);
/* The VMM's pid (-1 once reaped), for /proc figures in benchmarks. */
pid_t sb_vm_pid(const struct sb_vm *vm);
/* Its network slot (counters, dropped destinations), NULL = none. */
struct sb_net *sb_vm_net(struct sb_vm *vm);
/* Take its network slot away from it (sb_vm_destroy then leaves it be):
 * closed by the caller after the VM, e.g. once the job's result is sent. */
struct sb_net *sb_vm_detach_net(struct sb_vm *vm);
/* Set the VM's hard deadline: every later call is cut to it. A pooled VMM
 * started with other options gets the job's TTL this way. */
void sb_vm_set_deadline(struct sb_vm *vm, struct al_deadline d);

/* What sb_sweep() removed. */
struct sb_sweep_stats {
	unsigned dirs;    /* run dirs of dead owners */
	unsigned cgroups; /* host cgroup dirs (v1: one per hierarchy) */
	unsigned killed;  /* processes still running in them, SIGKILLed */
	unsigned links;   /* host ends of network slots' veths (net.c) */
};
/* Remove what VMs of dead processes left: a VM's run dir and host cgroup
 * are named PID-vm-XXXXXX after the process that made it; those whose PID
 * is dead go, and any process still in such a cgroup (or naming such a
 * run dir) is killed. VMs of live processes (another serve on this host)
 * are never touched. *ret says what went even on failure; -EPERM when the
 * run dir is not ours alone (sb__private_dir: then only cgroups are
 * swept). Call at start-up and when a worker died. */
int sb_sweep(const struct sb_options *o, struct sb_sweep_stats *ret);
/* What sb_sweep() would remove now, touching nothing (airlock doctor):
 * dirs, cgroups, links, and in `killed` the processes that name a stale
 * run dir. `example` gets one stale name ("" when none). */
void sb_sweep_scan(const struct sb_options *o, struct sb_sweep_stats *ret,
		   char *example, size_t len);

/* "v2", "v1" or "none": the host cgroup support VMMs get (doctor). */
const char *sb_cg_version(void);
/* Move this process into a memory cgroup of its own capped at
 * memory_bytes (airlock/workers/<pid>, see sandbox/cgroup.c); *ret_dir
 * gets its path. -EOPNOTSUPP without cgroups, else -errno. */
int sb_cg_worker_join(uint64_t memory_bytes, char *ret_dir, size_t len);

/* --- probes: what airlock-bench-vm measures inside a VM (probe.c) ---- */

/* Translated blocks QEMU holds so far (HMP `info jit`; TCG only, else
 * 0). */
long sb_vm_tcg_blocks(struct sb_vm *vm);
/* When QEMU resumed the guest (its RESUME event, within timeout_ms), in
 * ms of CLOCK_REALTIME into *ret. 0 or -errno. */
int sb_vm_resume_rt_ms(struct sb_vm *vm, int timeout_ms, double *ret);
/* One agent round trip of a kind, on a VM that has not run a step. */
enum sb_trip {
	SB_TRIP_PING,	       /* the channel and the agent's loop alone */
	SB_TRIP_RESEED,	       /* entropy and clock */
	SB_TRIP_SETUP,	       /* the job's limits */
	SB_TRIP_SETUP_RESEED,  /* both in one request: the hand-off */
};
int sb_vm_trip(struct sb_vm *vm, const struct sb_options *o,
	       const struct al_limits *lim, enum sb_trip kind,
	       int timeout_ms);

/* The network slots a networked VM runs in (sandbox/net/: net.h). */
#include "net.h"

#endif
