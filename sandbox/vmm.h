/* vmm.h: the QEMU process: command line, spawn, kill and reap. Internal to
 * sandbox/. */
#ifndef AL_VMM_H
#define AL_VMM_H

#include <stddef.h>
#include <stdbool.h>
#include <sys/types.h>

#define VMM_ARGV_MAX 96

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

/* Start argv[0] in a new session with an empty environment, stdin from
 * /dev/null and stdout/stderr to `log`, inside cgroup `cg` (may be NULL)
 * and as `creds` (may be NULL); it dies with us (PDEATHSIG). */
int vmm_spawn(const struct vmm_argv *a, const char *log,
	      const struct vmm_creds *creds, const struct cg *cg,
	      pid_t *ret_pid, int *ret_pidfd);
/* Has the process exited? (non-blocking) */
bool vmm_exited(int pidfd);
/* SIGKILL, reap; accepts pid -1 / pidfd -1 and resets them. */
void vmm_kill(pid_t *pid, int *pidfd);

#endif
