/* options.h: what the VM and the network code of sandbox/ both read: the
 * host's sandbox settings (struct sb_options) and their defaults
 * (options.c). Filled by the config (tools/config/sbconfig.c) over
 * sb_options_init(); read-only from then on.
 */
#ifndef AL_SB_OPTIONS_H
#define AL_SB_OPTIONS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

struct sb_net_policy;

/* How the sandbox reports an event that is no caller's error (a template
 * build that failed, a snapshot evicted over the cap): one line, no
 * newline. sb_options_init() sets one that writes "airlock: MSG" on
 * stderr; the CLI routes it through its logger (log.level, log.format). */
enum sb_log_level { SB_LOG_WARN, SB_LOG_INFO };
typedef void (*sb_log_fn)(enum sb_log_level level, const char *msg);

/* root's state dir, where tools/quickstart.sh builds the images; the
 * system dir of everyone else */
#define SB_SYSTEM_DIR "/var/lib/airlock"

struct sb_options {
	char state_dir[PATH_MAX]; /* images/ and templates/ live here */
	char system_dir[PATH_MAX]; /* read-only images when state_dir has
				    * none (root's, for other users), "" */
	char run_dir[PATH_MAX];   /* uid leases and the jail's mount point */
	char qemu[PATH_MAX];      /* QEMU binary */
	enum sb_accel_mode accel; /* accelerator choice */
	uint32_t memory_mb;       /* guest RAM */
	uint32_t vcpus;           /* guest CPUs */
	uint32_t boot_timeout_ms; /* cold boot -> agent hello */
	uint32_t call_timeout_ms; /* agent calls other than run_step */
	uint32_t ttl_ms;          /* hard lifetime of a VM; 0 = none */
	bool jail;                /* jail each VMM (needs root) */
	uint32_t vmm_uid_base;    /* jailed VMMs' uids (== gids): base .. */
	uint32_t vmm_uid_count;   /* .. base + count - 1, one per live VMM */
	gid_t kvm_gid;            /* supplementary group for /dev/kvm */
	uint32_t vmm_overhead_mb; /* host cgroup memory: RAM + TB + this */
	uint32_t tcg_tb_mb;       /* TCG translation buffer (tb-size), MiB */
	uint32_t vmm_cpu_percent; /* host cgroup CPU per vCPU, 100 = one */
	uint32_t vmm_pids;        /* host cgroup pids.max */
	uint32_t prestart;        /* pre-started VMMs per template */
	uint32_t warm_last;       /* warm clones of the last job's template */
	uint32_t warm_max_age_s;  /* a warm clone older than this is
				   * replaced; 0 = never */
	bool warm_zygote;         /* warm up a warm clone's zygote
				   * (docs/zygote.md, "Warm-up") */
	char warm[256];           /* "python:2 c:1": warm clones per
				   * template besides warm_last, per worker */
	enum sb_carrier carrier;  /* guest channel */
	uint32_t worker_memory_mb; /* a worker's host memory cgroup, 0 = none */
	const struct sb_net_policy *net_policies; /* [network.NAME] policies
				   * (the config's; outlive the options) */
	size_t n_net_policies;    /* entries in net_policies */
	uint32_t net_ready;       /* ready network slots per worker (net.h) */
	char net_dns[64];         /* networked VMs' upstream resolver,
				   * IPv4[:PORT] (config [network] dns),
				   * "" = the first nameserver of the host's
				   * /etc/resolv.conf */
	uint32_t snapshot_max_mb;  /* cap on all snapshots' disk, 0 = none */
	bool snapshot_no_build;    /* never build a snapshot from its
				    * published definition (config
				    * snapshots.build_on_demand = false) */
	sb_log_fn log;             /* where events go (never NULL after init) */
};

/* A worker's memory cgroup by default, MiB: a result at its cap twice (the
 * struct, then its encoding) plus room for the job (raw and decoded), a
 * step's reply in flight (one frame, then decoded) and the process. */
#define SB_WORKER_MEMORY_MB (2 * (AL_RESULT_MAX_BYTES >> 20) + 320)

/* Defaults: state dir /var/lib/airlock (root) or ~/.local/state/airlock
 * with /var/lib/airlock as its system dir, run dir /run/airlock or
 * $XDG_RUNTIME_DIR/airlock or /tmp/airlock-UID, 1024 MiB, 1 vCPU, auto,
 * one pre-started VMM; when we are root, each QEMU jailed under a uid of
 * its own from 1200000 .. 1201023 (+ group kvm under KVM). */
void sb_options_init(struct sb_options *o);

/* Which carrier `o` resolves to on this host. */
enum sb_carrier sb_carrier_resolve(const struct sb_options *o);

/* mkdir -p: `path` and its missing parents with `mode`; 0 or -errno
 * (-ENAMETOOLONG past PATH_MAX). A per-user state dir may not exist yet
 * when a template or an accel verdict is first written to it. */
int sb_mkdirs(const char *path, mode_t mode);

/* Report an event through o->log (sandbox/ internal; printf format). */
void sb_log(const struct sb_options *o, enum sb_log_level level,
	    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
