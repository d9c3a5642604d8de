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
 *  4. sb_vm_destroy(): SIGKILL the VMM, reap it, remove its run dir,
 *     sockets and cgroup. Always, whatever happened; a VM never runs a
 *     second job.
 *
 * Errors are negative errno; the VM's `error` text says what failed in
 * words for the XX result (no guest bytes unescaped). A call that fails
 * with anything but -EPROTO leaves the VM unusable: destroy it.
 */
#ifndef AL_SANDBOX_H
#define AL_SANDBOX_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent_client.h"
#include "cgroup.h"
#include "qmp.h"
#include "results.h"

enum sb_carrier {
	SB_CARRIER_AUTO = 0, /* vsock where /dev/vhost-vsock is usable */
	SB_CARRIER_SERIAL,   /* virtio-serial port (a unix socket here) */
	SB_CARRIER_VSOCK,    /* vhost-vsock, a unique guest CID per VM */
};

enum sb_accel_mode {
	SB_ACCEL_AUTO = 0, /* KVM when a probe shows it can run the guest */
	SB_ACCEL_KVM,
	SB_ACCEL_TCG,
};

struct sb_options {
	char state_dir[PATH_MAX]; /* images/ and templates/ live here */
	char run_dir[PATH_MAX];   /* per-VM dirs with sockets (short path) */
	char qemu[PATH_MAX];      /* QEMU binary */
	enum sb_accel_mode accel; /* accelerator choice */
	uint32_t memory_mb;       /* guest RAM */
	uint32_t vcpus;           /* guest CPUs */
	uint32_t boot_timeout_ms; /* cold boot -> agent hello */
	uint32_t call_timeout_ms; /* agent calls other than run_step */
	uint32_t ttl_ms;          /* hard lifetime of a VM; 0 = none */
	uid_t vmm_uid;            /* run QEMU as this user, 0 = as we are */
	gid_t vmm_gid;            /* and group */
	gid_t kvm_gid;            /* supplementary group for /dev/kvm */
	uint32_t vmm_overhead_mb; /* host cgroup memory: RAM + this */
	uint32_t vmm_cpu_percent; /* host cgroup CPU per vCPU, 100 = one */
	uint32_t vmm_pids;        /* host cgroup pids.max */
	uint32_t prestart;        /* pre-started VMMs per template */
	enum sb_carrier carrier;  /* guest channel */
};

struct sb_image {
	char dir[PATH_MAX];     /* resolved image dir */
	char name[AL_NAME_MAX + 1]; /* template name */
	char hash[33];          /* content hash of the image inputs */
	char initrd[64];        /* initramfs file name in dir */
	char cmdline[1024];     /* kernel command line */
	char warmup[1024];      /* shell command run before a snapshot, "" */
};

struct sb_vm {
	pid_t pid;                    /* QEMU, -1 once reaped */
	int pidfd;                    /* pidfd of QEMU, -1 if none */
	int agent_fd;                 /* stream to the agent */
	struct al_agent_client agent; /* protocol state on agent_fd */
	struct qmp qmp;               /* QMP connection (fd -1 if none) */
	char dir[PATH_MAX];           /* per-VM run dir */
	char template_[AL_NAME_MAX + 1]; /* template it runs */
	enum al_accel accel;          /* accelerator that ran */
	bool restored;                /* restored from a snapshot */
	bool prepared;                /* clone VMM connected, state fd in */
	uint64_t start_ms;            /* monotonic ms at start */
	uint64_t ready_ms;            /* start -> agent ready */
	int64_t load_rt_us;           /* restore: CLOCK_REALTIME (us) when the
				       * load was asked for, to set against
				       * QMP event times (benchmarks) */
	uint64_t deadline_ms;         /* hard TTL (monotonic), 0 = none */
	char error[256];              /* what went wrong, for XX */
	struct cg cg;                 /* host cgroup of QEMU */
	uint32_t cid;                 /* vsock guest CID, 0 = virtio-serial */
};

/* Which carrier `o` resolves to on this host. */
enum sb_carrier sb_carrier_resolve(const struct sb_options *o);

/* A template: a snapshot of a booted, idle VM of one image. */
struct sb_template {
	char dir[PATH_MAX];      /* STATE/templates/NAME-KEY */
	struct sb_image img;     /* the image it was booted from */
	enum al_accel accel;     /* accelerator it was saved under */
	char key[17];            /* cache key (hex) */
	bool built;              /* this open built it (a cache miss) */
	uint64_t build_ms;       /* cold boot + save, when built */
};

/* Defaults: state dir /var/lib/airlock (root) or ~/.local/state/airlock,
 * run dir /run/airlock or /tmp/airlock-UID, 1024 MiB, 1 vCPU, auto,
 * one pre-started VMM, QEMU as `nobody` (+ group kvm) when we are root. */
void sb_options_init(struct sb_options *o);

/* Find the newest built image of `template_` under o->state_dir. -ENOENT
 * (not built: `airlock image build NAME`), -EBADMSG (bad manifest). */
int sb_image_open(const struct sb_options *o, const char *template_,
		  struct sb_image *ret);

/* Which accelerator `mode` resolves to on this host (auto probes KVM). */
enum al_accel sb_accel_resolve(const struct sb_options *o,
			       const struct sb_image *img);

/* Cold boot: start QEMU on the image, wait for the agent, reseed it. */
int sb_vm_boot(const struct sb_options *o, const struct sb_image *img,
	       struct sb_vm **ret);

/* Open the template of `template_`: reuse the cached snapshot when its key
 * (image hash, machine config, QEMU binary) matches, else cold boot and
 * save one. Safe against concurrent openers (a lock file). */
int sb_template_open(const struct sb_options *o, const char *template_,
		     struct sb_template *ret);
/* A fresh clone of the template: a new QEMU maps the template's RAM
 * copy-on-write, loads its device state, resumes, and the agent gets new
 * entropy and the clock. On failure *ret (if set) holds vm->error. */
int sb_vm_restore(const struct sb_options *o, const struct sb_template *t,
		  struct sb_vm **ret);

/* Pre-started VMMs: QEMU processes of one template waiting in -incoming
 * defer, holding no guest state, so that a restore skips QEMU's own
 * start-up. Each is used once. */
#define SB_POOL_MAX 8
struct sb_pool {
	const struct sb_options *o;    /* options, outlive the pool */
	const struct sb_template *t;   /* template, outlives the pool */
	struct sb_vm *spare[SB_POOL_MAX]; /* started, not yet used */
	size_t n;                      /* entries in spare */
	size_t want;                   /* spares to keep */
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

int sb_vm_setup(struct sb_vm *vm, const struct al_limits *limits);
int sb_vm_put_files(struct sb_vm *vm, const struct al_file *files, size_t n);
/* Run a step; the guest kills it after `timeout_ms` (the caller's, e.g.
 * cut to the job's wall time left; 0 = the step's own), whatever the step
 * says. The call's deadline adds a margin for the channel and is capped by
 * the VM's TTL. */
int sb_vm_run_step(struct sb_vm *vm, const struct al_step *step,
		   const struct al_limits *limits, uint32_t timeout_ms,
		   struct al_step_result *ret);
int sb_vm_get_files(struct sb_vm *vm, char *const *paths, size_t n,
		    uint64_t max_bytes, struct al_msg_files *ret);
/* Is the VMM process still alive? */
bool sb_vm_alive(struct sb_vm *vm);
void sb_vm_destroy(struct sb_vm *vm);

#endif
