/* vmm.c: starting and stopping QEMU processes.
 *
 * QEMU is semi-trusted: a guest escape lands in it. So it starts with an
 * empty environment (no secrets), no inherited fds but 0-2, in its own
 * session, and with PDEATHSIG so it cannot outlive the worker that owns it.
 * It is always ended with SIGKILL and reaped through a pidfd.
 *
 * Theory of operation. vmm_spawn() takes a struct vmm_spec, everything
 * the launch applies, and does it in the child between fork and exec, in
 * this order: new session, join the host cgroup, drop to the VMM user,
 * arm PDEATHSIG (the uid change clears it), point stdio at /dev/null and
 * the log, close every other fd, exec with an empty environment. This is
 * where per-VM networking and the jail plug in: the spec gains a netns fd
 * (setns() before the privilege drop) and a tap fd (kept open across exec
 * and named in the command line by machine.c), and the jail (mount
 * namespace, pivot_root into the run dir, seccomp) goes in the same
 * child sequence. Nothing in the child allocates.
 *
 * Callers: vm.c only (vm_spawn), for cold boots, template builds and
 * clones alike.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "vmm.h"

void vmm_arg(struct vmm_argv *a, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (a->err)
		return;
	if (a->n >= VMM_ARGV_MAX) {
		a->err = -E2BIG;
		return;
	}
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		a->err = -ENOMEM;
	else
		a->v[a->n++] = s;
	va_end(ap);
	a->v[a->n] = NULL;
}

void vmm_argv_release(struct vmm_argv *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	memset(a, 0, sizeof(*a));
}

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Drop to the VMM user: groups first, then gid, then uid. */
static int drop_privileges(const struct vmm_creds *c)
{
	gid_t groups[1] = {c->extra};

	if (c->uid == 0)
		return 0;
	if (setgroups(c->extra ? 1 : 0, groups) < 0 || setgid(c->gid) < 0 ||
	    setuid(c->uid) < 0)
		return -1;
	return 0;
}

/* In the child, before exec: nothing here may allocate. */
static void child(const struct vmm_spec *s, int log_fd, pid_t parent)
{
	static char *const envp[] = {"PATH=/usr/bin:/bin", NULL};
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	setsid();
	if ((s->cg && cg_join_self(s->cg) < 0) ||
	    drop_privileges(&s->creds) < 0) {
		dprintf(log_fd, "vmm: cgroup or privileges: %s\n",
			strerror(errno));
		_exit(126);
	}
	/* after the uid change, which clears the parent-death signal */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(126);
	if (null < 0 || dup2(null, 0) < 0 || dup2(log_fd, 1) < 0 ||
	    dup2(log_fd, 2) < 0)
		_exit(126);
	/* the vsock token (vm_token_fd) is the one fd QEMU inherits */
	if (s->token_fd > 0 && s->token_fd != VMM_TOKEN_FD &&
	    dup2(s->token_fd, VMM_TOKEN_FD) < 0)
		_exit(126);
	if (s->token_fd == VMM_TOKEN_FD)
		fcntl(VMM_TOKEN_FD, F_SETFD, 0);
	syscall(SYS_close_range, s->token_fd > 0 ? VMM_TOKEN_FD + 1u : 3u,
		~0u, 0u);
	execve(s->argv->v[0], s->argv->v, envp);
	dprintf(2, "exec %s: %s\n", s->argv->v[0], strerror(errno));
	_exit(127);
}

int vmm_spawn(const struct vmm_spec *spec, pid_t *ret_pid, int *ret_pidfd)
{
	pid_t parent = getpid(), pid;
	int log_fd, pidfd;

	if (spec->argv->err)
		return spec->argv->err;
	log_fd = open(spec->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (log_fd < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int r = -errno;

		close(log_fd);
		return r;
	}
	if (pid == 0)
		child(spec, log_fd, parent);
	close(log_fd);
	pidfd = pidfd_open_(pid);
	if (pidfd < 0) {
		int r = -errno;

		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return r;
	}
	*ret_pid = pid;
	*ret_pidfd = pidfd;
	return 0;
}

bool vmm_exited(int pidfd)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};

	return pidfd < 0 || poll(&p, 1, 0) > 0;
}

void vmm_kill(pid_t *pid, int *pidfd)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (*pidfd >= 0)
		close(*pidfd);
	*pid = -1;
	*pidfd = -1;
}
