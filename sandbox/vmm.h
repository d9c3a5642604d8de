/* vmm.h: the QEMU process: argv building, launch, kill and reap. Internal
 * to sandbox/ (the command line itself is machine.h's). */
#ifndef AL_VMM_H
#define AL_VMM_H

#include <stddef.h>
#include <stdbool.h>
#include <sys/types.h>

#define VMM_ARGV_MAX 96
#define VMM_TOKEN_FD 3 /* where QEMU finds spec->token_fd (machine.c) */

/* A command line being built; strings are owned by it. */
struct vmm_argv {
	char *v[VMM_ARGV_MAX + 1]; /* NULL-terminated */
	size_t n;                  /* entries used */
	int err;                   /* first error while building */
};

/* Append one argument, printf-style. */
void vmm_arg(struct vmm_argv *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void vmm_argv_release(struct vmm_argv *a);

struct cg;

/* Who the VMM runs as: uid 0 keeps ours. */
struct vmm_creds {
	uid_t uid;     /* user to become, 0 = stay */
	gid_t gid;     /* its group */
	gid_t extra;   /* one supplementary group (kvm), 0 = none */
};

/* Everything the launch applies to one VMM process. Networking adds two
 * fields here: the per-VM network namespace (an fd the child setns()es
 * into before exec) and the tap device in it (an fd the child keeps, which
 * the command line names); a jail (mount namespace, pivot_root, seccomp)
 * is applied by the same child code. */
struct vmm_spec {
	const struct vmm_argv *argv; /* command line, argv[0] the binary */
	const char *log;             /* stdout and stderr go here */
	struct vmm_creds creds;      /* who it runs as (uid 0: as we are) */
	const struct cg *cg;         /* host cgroup to join, NULL = none */
	int token_fd;                /* vsock token memfd, kept open in QEMU
	                              * as VMM_TOKEN_FD; 0 = none */
};

/* Start spec->argv in a new session with an empty environment, stdin from
 * /dev/null and stdout/stderr to the log, inside the cgroup and as the
 * creds; it dies with us (PDEATHSIG). */
int vmm_spawn(const struct vmm_spec *spec, pid_t *ret_pid, int *ret_pidfd);
/* Has the process exited? (non-blocking) */
bool vmm_exited(int pidfd);
/* SIGKILL, reap; accepts pid -1 / pidfd -1 and resets them. */
void vmm_kill(pid_t *pid, int *pidfd);

#endif
