/* vmm.h: the QEMU process: argv building, launch (in its jail), kill and
 * reap. Internal to sandbox/ (the command line itself is machine.h's). */
#ifndef AL_VMM_H
#define AL_VMM_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "jail.h"

#define VMM_ARGV_MAX 96

/* The fds a VMM inherits, at fixed numbers the command line names. */
#define VMM_FD_QMP 3   /* QMP: our socketpair's other end */
#define VMM_FD_AGENT 4 /* the agent's virtio-serial port: likewise */
#define VMM_FD_MEM 5   /* guest RAM, a memfd (-1 = anonymous RAM) */
#define VMM_FD_LEASE 6 /* the uid lease, held so it outlives us */
#define VMM_FD_VSOCK 7 /* /dev/vhost-vsock, opened by us (vsock carrier) */
#define VMM_FD_TOKEN 8 /* the vsock token memfd, read by fw_cfg (vsock) */
#define VMM_FD_TAP 9   /* the NIC's tap, in the VM's netns (net.c) */
#define VMM_FD_PRELOAD 10 /* the preloaded shim, set by sb__vmm_spawn */
#define VMM_FD_KERNEL 11  /* a clone's stub kernel, a memfd (vm.c) */
#define VMM_FD_COUNT 9 /* fds 3 .. 3 + VMM_FD_COUNT - 1 */

/* A command line being built; strings are owned by it. */
struct vmm_argv {
	char *v[VMM_ARGV_MAX + 1]; /* NULL-terminated */
	size_t n;                  /* entries used */
	int err;                   /* first error while building */
};

/* Append one argument, printf-style. */
void sb__vmm_arg(struct vmm_argv *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void sb__vmm_argv_release(struct vmm_argv *a);

struct cg;

/* Everything the launch applies to one VMM process. A networked VM's
 * QEMU gets the slot's tap as VMM_FD_TAP; jailed, it stays in the jail's
 * empty network namespace (the tap's fd is its only way out); unjailed,
 * it joins the slot's namespace (net_ns). */
struct vmm_spec {
	const struct vmm_argv *argv; /* command line, argv[0] the binary */
	int log_fd;                  /* stdout and stderr (a pipe's end) */
	int fds[VMM_FD_COUNT];       /* fds[i] becomes fd 3 + i; -1 = none */
	struct vmm_creds creds;      /* who it runs as (uid 0: as we are) */
	const struct cg *cg;         /* host cgroup to join, NULL = none */
	struct vmm_jail jail;        /* the jail, jail.root NULL = none */
	int net_ns;                  /* netns an unjailed child joins; a
				      * jailed one always gets a new empty one */
};

/* Start spec->argv with an empty environment (but for LD_PRELOAD of the
 * shim in sandbox/preload/, at VMM_FD_PRELOAD), stdin from /dev/null,
 * stdout/stderr to log_fd and only spec->fds open, inside the cgroup, the
 * jail and as the creds; it dies with us (PDEATHSIG). We stay its parent
 * (a jailed VMM is pid 1 of its own pid namespace). Any step that fails
 * ends the child before exec with the reason on log_fd (exit 126). */
int sb__vmm_spawn(const struct vmm_spec *spec, pid_t *ret_pid, int *ret_pidfd);
/* Has the process exited? (non-blocking) */
bool sb__vmm_exited(int pidfd);
/* SIGKILL, reap; accepts pid -1 / pidfd -1 and resets them. */
void sb__vmm_kill(pid_t *pid, int *pidfd);

#endif
