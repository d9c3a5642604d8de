/* vmm.c: starting and stopping QEMU processes.
 *
 * QEMU is semi-trusted: a guest escape lands in it. So it starts with an
 * empty environment (no secrets), only the fds it needs (at numbers the
 * command line names: QMP and agent socketpair ends, the guest RAM memfd,
 * the uid lease), in its own session, in its host cgroup, in a jail
 * (jail.c) when we are root, and with PDEATHSIG so it cannot outlive the
 * worker that owns it. It is always ended with SIGKILL and reaped through
 * a pidfd.
 *
 * Theory of operation. sb__vmm_spawn() takes a struct vmm_spec, everything
 * the launch applies, clones the child (clone3: new namespaces for a
 * jail, a pidfd either way; we stay its parent) and the child does, in
 * this order: new session, join the host cgroup, enter the jail (mounts,
 * pivot_root, hostname), drop (rlimits, no_new_privs, bounding set,
 * uid/gid), arm PDEATHSIG (the uid change clears it) and check we still
 * live, stdin from /dev/null, stdout and stderr to the log pipe, the
 * spec's fds into place and every other fd closed, exec with an empty
 * environment (but for LD_PRELOAD of sandbox/preload/'s shim, a sealed
 * memfd at VMM_FD_PRELOAD: see there why). Any step that fails ends the
 * child with the reason on the
 * log pipe: nothing starts half-jailed. A networked VM's jailed QEMU gets
 * a new empty network namespace like every other (only `lo`, down) and
 * its tap as VMM_FD_TAP: a tap's fd keeps working from any namespace, so
 * QEMU holds the guest's wire and nothing else, and a compromised QEMU
 * has no route anywhere (issue 23; docs/security.md). Only an unjailed
 * QEMU (not root: no slot can be made then) setns()es into the VM's
 * namespace. Nothing in the child allocates.
 *
 * Callers: vm.c only (vm_spawn), for cold boots, template builds, clones
 * and tests/vm's jail probe alike.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <linux/sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "util.h"
#include "vmm.h"

/* sandbox/preload/qemu_preload.c, built and embedded by CMake */
extern const unsigned char sb__qemu_preload[];
extern const size_t sb__qemu_preload_len;

static int preload_fd = -1;
static pthread_once_t preload_once = PTHREAD_ONCE_INIT;

/* The shim as a sealed memfd, once per process. If it cannot be made
 * (an old kernel, memfd_noexec=2) QEMU runs without it: slower, not
 * wrong. */
static void preload_make(void)
{
	int fd = sb__sealed_memfd("airlock-qemu-preload", sb__qemu_preload,
				  sb__qemu_preload_len, true);

	preload_fd = fd >= 0 ? fd : -1;
}

void sb__vmm_arg(struct vmm_argv *a, const char *fmt, ...)
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

void sb__vmm_argv_release(struct vmm_argv *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	memset(a, 0, sizeof(*a));
}

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Not jailed (we are not root): the old drop, when asked for at all. */
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

/* Put spec->fds at 3, 4, ...: first out of the way (a source may sit on
 * a target number), then into place without CLOEXEC; close the rest. */
static int place_fds(const struct vmm_spec *s)
{
	int tmp[VMM_FD_COUNT];

	for (int i = 0; i < VMM_FD_COUNT; i++) {
		tmp[i] = -1;
		if (s->fds[i] >= 0 &&
		    (tmp[i] = fcntl(s->fds[i], F_DUPFD_CLOEXEC,
				    3 + VMM_FD_COUNT)) < 0)
			return -1;
	}
	for (int i = 0; i < VMM_FD_COUNT; i++) {
		if (tmp[i] >= 0 && dup2(tmp[i], 3 + i) < 0)
			return -1;
		if (tmp[i] < 0)
			close(3 + i);
	}
	syscall(SYS_close_range, 3u + VMM_FD_COUNT, ~0u, 0u);
	return 0;
}

/* Die with a reason on the log (the launch's error text reads it). */
static _Noreturn void child_fail(int log_fd, const char *step)
{
	dprintf(log_fd, "vmm: %s: %s\n", step, strerror(errno));
	_exit(126);
}

/* In the child, before exec: nothing here may allocate. parent_fd is a
 * pidfd of the worker: readable once it died. */
static _Noreturn void child(const struct vmm_spec *s, int parent_fd)
{
	static char *const envp[] = {"PATH=/usr/bin:/bin", NULL};
	static char *const envp_preload[] = {
	    "PATH=/usr/bin:/bin",
	    "LD_PRELOAD=/proc/self/fd/10", NULL};

	_Static_assert(VMM_FD_PRELOAD == 10, "LD_PRELOAD names the fd");
	struct pollfd p = {.fd = parent_fd, .events = POLLIN};
	const bool jail = s->jail.root != NULL;
	const char *step = "cgroup";
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	setsid();
	if (!jail && s->net_ns >= 0 && setns(s->net_ns, CLONE_NEWNET) < 0)
		child_fail(s->log_fd, "network namespace");
	if (null < 0 || (s->cg && sb__cg_join_self(s->cg) < 0))
		child_fail(s->log_fd, null < 0 ? "/dev/null" : "cgroup");
	if (jail && (sb__jail_enter(&s->jail, &step) < 0 ||
		     sb__jail_drop(&s->jail, &s->creds, &step) < 0))
		child_fail(s->log_fd, step);
	if (!jail && drop_privileges(&s->creds) < 0)
		child_fail(s->log_fd, "privileges");
	/* after the uid change, which clears the parent-death signal; the
	 * worker may have died before it was armed */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || poll(&p, 1, 0) != 0)
		child_fail(s->log_fd, "parent-death signal");
	if (dup2(null, 0) < 0 || dup2(s->log_fd, 1) < 0 ||
	    dup2(s->log_fd, 2) < 0 || place_fds(s) < 0)
		child_fail(s->log_fd, "fds");
	execve(s->argv->v[0], s->argv->v,
	       s->fds[VMM_FD_PRELOAD - 3] >= 0 ? envp_preload : envp);
	dprintf(2, "exec %s: %s\n", s->argv->v[0], strerror(errno));
	_exit(127);
}

/* fork() for a jail: clone3 into new namespaces, returning a pidfd; we
 * stay the parent (SIGCHLD, waitpid) though the child is pid 1 inside. */
static pid_t clone_vmm(bool jail, int *ret_pidfd)
{
	struct clone_args ca = {
		.flags = CLONE_PIDFD,
		.pidfd = (uint64_t)(uintptr_t)ret_pidfd,
		.exit_signal = SIGCHLD,
	};

	if (jail)
		ca.flags |= CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC |
			    CLONE_NEWUTS | CLONE_NEWNET;
	return (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
}

int sb__vmm_spawn(const struct vmm_spec *spec_in, pid_t *ret_pid,
		  int *ret_pidfd)
{
	struct vmm_spec copy = *spec_in, *spec = &copy;
	int parent_fd, pidfd = -1;
	pid_t pid;

	if (spec->argv->err)
		return spec->argv->err;
	pthread_once(&preload_once, preload_make);
	spec->fds[VMM_FD_PRELOAD - 3] = preload_fd;
	parent_fd = pidfd_open_(getpid());
	if (parent_fd < 0)
		return -errno;
	pid = clone_vmm(spec->jail.root != NULL, &pidfd);
	if (pid == 0)
		child(spec, parent_fd);
	close(parent_fd);
	if (pid < 0)
		return -errno;
	*ret_pid = pid;
	*ret_pidfd = pidfd;
	return 0;
}

bool sb__vmm_exited(int pidfd)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};

	return pidfd < 0 || poll(&p, 1, 0) > 0;
}

void sb__vmm_kill(pid_t *pid, int *pidfd)
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
