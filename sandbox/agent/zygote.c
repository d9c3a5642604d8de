/* zygote.c: the template's pre-initialized python3 (docs/zygote.md).
 *
 * Under TCG every clone is a new QEMU whose translation cache starts
 * empty, and a job's `python3 FILE` spends most of its time on the
 * interpreter's start-up: the loader, libc, the runtime, `site`, the
 * imports graders use, each translated anew. A template may instead hold
 * a python3 that did all of that before the snapshot (zygote.py), waiting
 * on a socket. A job's first python3 step then runs in it: the agent
 * moves the process into the step's cgroup, gives it the step's file-size
 * limit, and sends it the step's argv, cwd and stdio; the process is the
 * step's main child from there on (it is ours: we spawned it, we reap
 * it), and everything else in exec.c (output, limits, kill, verdict)
 * stays as it is.
 *
 * Security. The zygote is spawned like a step (job user, new session,
 * no_new_privs, no core dumps, OOM-killable) and runs only the template's
 * own code before its one job. It never coexists with job code outside a
 * step's cgroup: any step that does not run in it ends it first
 * (al_zygote_end), so a job cannot reach it before it becomes that job's
 * process. It is used once. Nothing it says is believed: the step's
 * status comes from wait4 and the cgroup, as for any step.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "clock.h"

#define ZYGOTE_FD	   3	       /* its end of the socket, in it */
#define ZYGOTE_MODULES_MAX 64	       /* names in `modules` */
#define ZYGOTE_MSG_MAX	   (60u << 10) /* cwd + argv in the hand-over */

/* sandbox/agent/zygote.py, embedded by CMake */
extern const unsigned char al_zygote_py[];
extern const size_t al_zygote_py_len;

extern char **environ;

static bool module_name_ok(const char *s)
{
	if (!*s || *s == '.')
		return false;
	for (; *s; s++)
		if (!(*s == '_' || *s == '.' || (*s >= 'a' && *s <= 'z') ||
		      (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
			return false;
	return true;
}

/* The zygote's cgroup, job/zygote: its path (the root's length was
 * checked when it was made). */
static void cg_path(const struct al_agent *a, char path[PATH_MAX])
{
	snprintf(path, PATH_MAX, "%.2048s/job/zygote", a->cfg->cgroup_root);
}

/* Make it, like a step's (no limits: it is the template's; its job's
 * cgroup has them). */
static int cg_make(const struct al_agent *a, char path[PATH_MAX])
{
	const char *root = a->cfg->cgroup_root;

	if (strlen(root) > PATH_MAX / 2)
		return -ENAMETOOLONG;
	snprintf(path, PATH_MAX, "%.2048s/job", root);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	cg_path(a, path);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Kill whatever is left in cgroup `cg` and wait (briefly) until it is
 * empty, reaping as we go (we may be init): its rmdir then succeeds. */
static void cg_kill(struct al_agent *a, const char *cg)
{
	char path[PATH_MAX];
	char buf[64];
	int fd;

	snprintf(path, sizeof(path), "%.2048s/cgroup.kill", cg);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, "1", 1) < 0) {
		close(fd);
		return;
	}
	close(fd);
	snprintf(path, sizeof(path), "%.2048s/cgroup.events", cg);
	for (int i = 0; i < 500; i++) {
		ssize_t n;

		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			return;
		buf[n] = '\0';
		if (strstr(buf, "populated 0"))
			return;
		al_agent_reap(a, -1, NULL, NULL);
		usleep(1000);
	}
}

/* In the child, before exec: the reason goes to the console. */
static __attribute__((noreturn)) void child_fail(const char *what)
{
	dprintf(2, "airlock-agent: zygote: %s: %s\n", what, strerror(errno));
	_exit(125);
}

/* In the child: a step's set-up (exec.c child_setup), with /dev/null for
 * stdin and stdout and the console for stderr until its job. */
static __attribute__((noreturn)) void child(const struct al_agent *a,
					    int sock, int cg_fd, char **argv,
					    char **env)
{
	const struct al_agent_config *cfg = a->cfg;
	struct rlimit core = {0, 0};
	sigset_t none;
	int null = open("/dev/null", O_RDWR | O_CLOEXEC), fd;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
	    dup2(sock, ZYGOTE_FD) < 0 || fcntl(ZYGOTE_FD, F_SETFD, 0) < 0)
		child_fail("fds");
	if (fchdir(a->work_fd) < 0)
		child_fail("work dir");
	syscall(SYS_close_range, ZYGOTE_FD + 1u, ~0u, 0u);
	if (setsid() < 0)
		child_fail("setsid");
	if (cg_fd < 0) { /* no CLONE_INTO_CGROUP: join by hand */
		char procs[PATH_MAX];

		cg_path(a, procs);
		strncat(procs, "/cgroup.procs", PATH_MAX - strlen(procs) - 1);
		fd = open(procs, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "0", 1) < 0)
			child_fail("join cgroup");
		close(fd);
	}
	fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "0", 1) < 0 && cfg->init)
			child_fail("oom_score_adj");
		close(fd);
	}
	if (setrlimit(RLIMIT_CORE, &core) < 0)
		child_fail("setrlimit");
	if (cfg->drop_ids && (setgroups(0, NULL) < 0 || setgid(cfg->gid) < 0 ||
			      setuid(cfg->uid) < 0))
		child_fail("drop privileges");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail("no_new_privs");
	environ = env;
	execvp(argv[0], argv);
	child_fail("exec python3");
}

/* Wait for its ready byte; 0, or -errno when it died or took too long. */
static int wait_ready(int fd, uint32_t timeout_ms)
{
	uint64_t end = al_now_ms() + timeout_ms;
	char c;

	for (;;) {
		uint64_t t = al_now_ms();
		struct pollfd p = {fd, POLLIN, 0};
		int r = poll(&p, 1, t >= end ? 0 : (int)(end - t));
		ssize_t n;

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return -ETIMEDOUT;
		n = recv(fd, &c, 1, 0);
		if (n == 1 && c == 'R')
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? -errno : -ECHILD;
	}
}

int al_zygote_start(struct al_agent *a, const char *modules,
		    uint32_t timeout_ms, char *err, size_t err_size)
{
	char cg[PATH_MAX], *mods = NULL, *script = NULL, **env = NULL, *save;
	char *argv[ZYGOTE_MODULES_MAX + 4];
	int sv[2] = {-1, -1}, cg_fd = -1, r, n = 0;
	struct clone_args ca = {.exit_signal = SIGCHLD};
	long pid = -1;

	if (a->zygote_pid > 0 || !a->cfg->cgroup_root) {
		snprintf(err, err_size, "zygote: %s",
			 a->zygote_pid > 0 ? "already running"
					   : "needs step cgroups");
		return a->zygote_pid > 0 ? -EEXIST : -ENOTSUP;
	}
	mods = strdup(modules);
	script = malloc(al_zygote_py_len + 1);
	env = al_agent_env(a, NULL);
	if (!mods || !script || !env) {
		r = -ENOMEM;
		goto out;
	}
	memcpy(script, al_zygote_py, al_zygote_py_len);
	script[al_zygote_py_len] = '\0';
	argv[n++] = "python3";
	argv[n++] = "-c";
	argv[n++] = script;
	for (char *m = strtok_r(mods, " ", &save); m;
	     m = strtok_r(NULL, " ", &save)) {
		if (n > ZYGOTE_MODULES_MAX + 2 || !module_name_ok(m)) {
			r = -EINVAL;
			goto out;
		}
		argv[n++] = m;
	}
	argv[n] = NULL;
	if ((r = cg_make(a, cg)) < 0)
		goto out;
	cg_fd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg_fd < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		r = -errno;
		goto out;
	}
	ca.flags = CLONE_INTO_CGROUP;
	ca.cgroup = (uint64_t)cg_fd;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0 && (errno == ENOSYS || errno == EINVAL || errno == E2BIG)) {
		close(cg_fd);
		cg_fd = -1;
		pid = fork();
	}
	if (pid == 0)
		child(a, sv[1], cg_fd, argv, env);
	if (pid < 0) {
		r = -errno;
		goto out;
	}
	close(sv[1]);
	sv[1] = -1;
	r = wait_ready(sv[0], timeout_ms);
	if (r < 0) {
		kill((pid_t)pid, SIGKILL);
		while (!al_agent_reap(a, (pid_t)pid, NULL, NULL))
			usleep(1000);
		rmdir(cg);
		goto out;
	}
	a->zygote_pid = (pid_t)pid;
	a->zygote_fd = sv[0];
	sv[0] = -1;
out:
	if (r < 0)
		snprintf(err, err_size, "zygote: %s",
			 r == -EINVAL	 ? "bad module list"
			 : r == -ECHILD	 ? "python3 exited before it was ready"
			 : r == -ETIMEDOUT ? "not ready in time"
					  : strerror(-r));
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	if (cg_fd >= 0)
		close(cg_fd);
	al_agent_env_free(env);
	free(script);
	free(mods);
	return r;
}

int al_zygote_warm(struct al_agent *a, uint32_t timeout_ms, char *err,
		   size_t err_size)
{
	int r;

	if (a->zygote_pid <= 0) {
		snprintf(err, err_size, "zygote: none waiting");
		return -ENOENT;
	}
	r = send(a->zygote_fd, "W", 1, MSG_NOSIGNAL) == 1 ? 0 : -errno;
	if (r == 0)
		r = wait_ready(a->zygote_fd, timeout_ms);
	if (r < 0) {
		snprintf(err, err_size, "zygote warm-up: %s",
			 r == -ECHILD	   ? "python3 exited"
			 : r == -ETIMEDOUT ? "not ready in time"
					   : strerror(-r));
		al_zygote_end(a);
	}
	return r;
}

bool al_zygote_fits(const struct al_agent *a, const struct al_step *s)
{
	if (a->zygote_pid <= 0 || s->argc < 2 || s->n_env)
		return false;
	if (strcmp(s->argv[0], "python3") && strcmp(s->argv[0], "/usr/bin/python3"))
		return false;
	if (!strcmp(s->argv[1], "-c"))
		return s->argc >= 3;
	return s->argv[1][0] != '-' && s->argv[1][0] != '\0';
}

void al_zygote_end(struct al_agent *a)
{
	char cg[PATH_MAX];
	pid_t pid = a->zygote_pid;

	if (pid <= 0)
		return;
	a->zygote_pid = 0; /* ours to reap here, not a surprise */
	kill(pid, SIGKILL);
	while (!al_agent_reap(a, pid, NULL, NULL))
		usleep(1000);
	if (a->zygote_fd >= 0)
		close(a->zygote_fd);
	a->zygote_fd = -1;
	cg_path(a, cg);
	cg_kill(a, cg); /* a warm-up's fork, if one was still running */
	rmdir(cg);
}

int al_zygote_take(struct al_agent *a, const struct al_step *s,
		   const struct al_limits *lim, int procs_fd, const int fds[3],
		   int cwd_fd, pid_t *ret_pid)
{
	const char *cwd = s->cwd ? s->cwd : ".";
	int all[4] = {fds[0], fds[1], fds[2], cwd_fd};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(all))];
	} ctl;
	struct msghdr mh = {0};
	struct iovec iov;
	size_t len = strlen(cwd) + 1, off;
	char *msg, pidbuf[16];
	pid_t pid = a->zygote_pid;
	int r = 0;

	for (size_t i = 0; i < s->argc; i++)
		len += strlen(s->argv[i]) + 1;
	if (len > ZYGOTE_MSG_MAX)
		return -E2BIG;
	if (!(msg = malloc(len)))
		return -ENOMEM;
	off = strlen(cwd) + 1;
	memcpy(msg, cwd, off);
	for (size_t i = 0; i < s->argc; i++) {
		size_t k = strlen(s->argv[i]) + 1;

		memcpy(msg + off, s->argv[i], k);
		off += k;
	}
	/* into the step's cgroup first: every instruction of the job runs
	 * under its limits and is counted there */
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	if (procs_fd < 0 || write(procs_fd, pidbuf, strlen(pidbuf)) < 0) {
		r = procs_fd < 0 ? -ENOTSUP : -errno;
		goto out;
	}
	if (lim->file_size_mb) {
		struct rlimit fs = {(rlim_t)lim->file_size_mb << 20,
				    (rlim_t)lim->file_size_mb << 20};

		if (prlimit(pid, RLIMIT_FSIZE, &fs, NULL) < 0) {
			r = -errno;
			goto out;
		}
	}
	iov = (struct iovec){msg, len - 1}; /* no NUL after the last */
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	memset(ctl.buf, 0, sizeof(ctl.buf));
	ctl.h.cmsg_level = SOL_SOCKET;
	ctl.h.cmsg_type = SCM_RIGHTS;
	ctl.h.cmsg_len = CMSG_LEN(sizeof(all));
	memcpy(CMSG_DATA(&ctl.h), all, sizeof(all));
	while (sendmsg(a->zygote_fd, &mh, MSG_NOSIGNAL) < 0)
		if (errno != EINTR) {
			r = -errno;
			goto out;
		}
	/* the step's now: not ours to end or reap as a zygote */
	close(a->zygote_fd);
	a->zygote_fd = -1;
	a->zygote_pid = 0;
	*ret_pid = pid;
	{
		char cg[PATH_MAX];

		cg_path(a, cg);
		if (rmdir(cg) < 0) /* empty now */
			al_agent_log("rmdir %s: %s", cg, strerror(errno));
	}
out:
	free(msg);
	return r;
}
