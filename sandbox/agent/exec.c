/* exec.c: run one step in its own cgroup and report how it ended.
 *
 * Theory of operation. Each step gets a fresh cgroup `job/step-N` under the
 * configured cgroup root, with memory.max, memory.swap.max=0,
 * memory.oom.group=1 and pids.max from the limits. The child joins it
 * before it runs any job code (it writes "0" to cgroup.procs), starts a new
 * session, drops to the job user with no new privileges, caps file size and
 * core dumps, enters the step's cwd (resolved beneath the work dir, as the
 * job user) and execs. Problems that are ours (cgroup, identity) come back
 * through a close-on-exec pipe and make the step XX; problems that are the
 * job's (no such command, bad cwd) print to its stderr and exit 127/126, as
 * a shell would.
 *
 * The parent feeds stdin and drains stdout/stderr through non-blocking
 * pipes in one poll loop, which also watches SIGCHLD (the signalfd) and the
 * wall deadline. It keeps the first `output_bytes` of each stream; past that
 * the step is killed (OL). The deadline kills it too (TO), and so does
 * using more than the step's `cpu_ms` of CPU time (TL, see watch_cpu: a
 * limit far less dependent on host load than wall time). Killing means
 * cgroup.kill: every process of the step, however it forked or setsid'd.
 * When the main child exits, the rest of the cgroup is killed as well, so
 * nothing outlives its step; then we wait for the cgroup to empty, read its
 * cpu.stat / memory.peak / memory.events and remove it.
 *
 * Signals (proto v4). While a step runs the host may send `signal`; the
 * loop polls the request channel (struct al_exec_ctl) beside the pipes,
 * and sends the signal to every process of the step: each pid in its
 * cgroup.procs (the step's processes, however they setsid'd), else its
 * process group. A grace then starts: if the main child still lives
 * when it ends, the whole step is killed as for a timeout, and the
 * result is what the wait status says (SG, signal 9). A step that traps
 * the signal and exits by itself ends as it exits; what it left
 * running is killed as always.
 *
 * A template may keep a pre-started python3 (zygote.c): a job's first
 * python3 step then runs in it instead of a forked child (moved into the
 * step's cgroup, handed its stdio and cwd) and everything above holds
 * for it the same; any other step ends a waiting zygote first.
 *
 * Background (proto v5, session execs only: run_step `background`). When
 * the main child of such a step exits by itself, what it left running is
 * not killed: keep_background() freezes the step's cgroup (so nothing
 * forks past the move), moves every process into the session-wide cgroup
 * `job/bg` (made once, with the step's memory.max and pids.max, no swap)
 * and thaws it. The step then ends with what its pipes hold: one drain,
 * then our read ends close, so a background process that still writes to
 * the step's stdout/stderr gets EPIPE/SIGPIPE instead of holding the exec
 * open (`nohup cmd > file 2>&1 &` is the form to use). A `signal` reaches
 * only the running step's cgroup, never job/bg; background processes die
 * with the VM. A step that was killed or cancelled (sent a signal other
 * than USR1/USR2) keeps nothing: it goes whole. A job's steps never set
 * it: nothing outlives a job step.
 *
 * Without a cgroup root (host tests as an ordinary user) the same happens
 * by process group, which a job can escape with setsid: tests only.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/sched.h>
#include <linux/close_range.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "clock.h"

#define CHUNK	      (64u << 10) /* one read from a step pipe */
#define KILL_GRACE_MS 3000u	  /* after a kill, wait this long for EOF */
#define EMPTY_WAIT_MS 5000u	  /* wait this long for the cgroup to empty */
#define THRASH_SAMPLE_MS 250u	  /* memory thrash watch period */
#define THRASH_REFAULTS 256u	  /* refaults per sample that count */
#define THRASH_STRIKES 4u	  /* samples in a row before ML */
#define CPU_SAMPLE_MIN_MS 10u	  /* CPU-time watch: shortest sample period */
#define CPU_SAMPLE_MAX_MS 250u	  /* and longest */
#define FREEZE_WAIT_MS 1000u	  /* background: wait this long for frozen */
#define MOVE_ROUNDS 64u		  /* background: passes over cgroup.procs */

extern char **environ;

struct stream {
	int fd;		      /* our read end, -1 at EOF */
	int no;		      /* 1 stdout, 2 stderr */
	struct al_blob *keep; /* kept bytes, in the result */
	bool *truncated;      /* in the result */
	uint64_t *total;      /* in the result */
};

struct run {
	struct al_agent *a;	     /* the agent */
	const struct al_step *step;  /* what to run */
	const struct al_limits *lim; /* its limits */
	struct al_step_result *res;  /* what we report */
	uint32_t timeout_ms;	     /* wall limit */
	uint32_t cpu_ms;	     /* CPU-time limit, 0 = none */
	uint64_t cpu_at;	     /* CPU watch: next sample, ms */
	uint32_t out_cap;	     /* kept bytes per stream */
	char cg[PATH_MAX];	     /* step cgroup dir, "" without cgroups */
	int procs_fd;		     /* cgroup.procs, for the child */
	int cg_fd;		     /* the step cgroup dir (clone3), -1 */
	pid_t pid;		     /* main child, 0 before fork */
	bool zygote;		     /* run it in the zygote (zygote.c) */
	int in_fd;		     /* stdin write end, -1 when done */
	size_t in_off;		     /* stdin bytes written */
	struct stream out[2];	     /* stdout, stderr */
	bool exited;		     /* main child reaped */
	int wstatus;		     /* its wait status */
	struct rusage ru;	     /* its rusage */
	enum al_status kill_why;     /* TO/TL/OL/ML once killed, else AL_OK */
	uint64_t t0, t_end;	     /* CLOCK_MONOTONIC ms */
	uint64_t kill_at;	     /* when we killed, 0 = not yet */
	uint64_t mem_at;	     /* thrash watch: last sample, ms */
	uint64_t mem_hits;	     /* memory.events max at that sample */
	uint64_t mem_refaults;	     /* workingset refaults at that sample */
	unsigned mem_strikes;	     /* samples in a row at the limit */
	const struct al_exec_ctl *ctl; /* host's signals, NULL = none */
	int ctl_fd;		     /* ctl->fd while it is polled, else -1 */
	uint64_t sig_kill_at;	     /* signal's grace end, 0 = none */
	bool background;	     /* leave what it left running (v5) */
	bool kept;		     /* and did: job/bg (or its group) has it */
	bool cancelled;		     /* sent a signal other than USR1/USR2 */
	al_exec_out_fn cb;	     /* streaming */
	void *opaque;		     /* for cb */
	char err[256];		     /* our own failure, "" = none */
};

/* What the child reports through the error pipe before it execs. */
struct child_err {
	int err;       /* errno */
	char what[64]; /* which setup stage failed */
};

/* --- cgroup files --------------------------------------------------------- */

static int cg_write(const char *dir, const char *file, const char *val)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd, r = 0;

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		r = -errno;
	close(fd);
	return r;
}

/* A small file's text into buf (NUL-terminated, cut at len - 1 bytes):
 * the byte count or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* The value after `key` in a "key value" file, or the first number in the
 * file when key is NULL. */
static int cg_read_u64(const char *dir, const char *file, const char *key,
		       uint64_t *ret)
{
	char path[PATH_MAX], buf[2048], *p;
	ssize_t n;

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	n = read_small(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	p = buf;
	if (key) {
		size_t kl = strlen(key);

		for (p = buf; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
			if (!strncmp(p, key, kl) && p[kl] == ' ')
				break;
		if (!p)
			return -ENOENT;
		p += kl + 1;
	}
	*ret = strtoull(p, NULL, 10);
	return 0;
}

/* Limit files: ENOENT means the controller is not there (host tests). */
static int cg_limit(struct run *rn, const char *file, uint64_t v, bool max)
{
	char val[32];
	int r;

	if (max && v == 0)
		snprintf(val, sizeof(val), "max");
	else
		snprintf(val, sizeof(val), "%llu", (unsigned long long)v);
	r = cg_write(rn->cg, file, val);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		snprintf(rn->err, sizeof(rn->err), "cgroup %s: %s", file,
			 strerror(-r));
	return r;
}

/* Make the cgroup of step `no` (and the job's, with its controllers, the
 * first time) into `step`, empty and without limits. */
static int cg_make(struct al_agent *a, unsigned no, char step[PATH_MAX])
{
	const char *root = a->cfg->cgroup_root;
	char job[PATH_MAX];

	if (strlen(root) > PATH_MAX / 2)
		return -ENAMETOOLONG;
	snprintf(job, PATH_MAX, "%.2048s/job", root);
	if (mkdir(job, 0755) < 0 && errno != EEXIST)
		return -errno;
	/* best effort: absent controllers leave their files absent */
	cg_write(job, "cgroup.subtree_control", "+memory");
	cg_write(job, "cgroup.subtree_control", "+pids");
	cg_write(job, "cgroup.subtree_control", "+cpu");
	snprintf(step, PATH_MAX, "%.2048s/job/step-%u", root, no);
	return mkdir(step, 0755) < 0 ? -errno : 0;
}

void al_exec_prepare(struct al_agent *a)
{
	char step[PATH_MAX];

	if (a->cfg->cgroup_root && a->cg_ready != a->step_no + 1 &&
	    cg_make(a, a->step_no + 1, step) == 0)
		a->cg_ready = a->step_no + 1;
}

static int cg_create(struct run *rn, const struct al_limits *lim)
{
	const char *root = rn->a->cfg->cgroup_root;
	char step[PATH_MAX];
	int r, dir;

	if (rn->a->cg_ready == rn->a->step_no) { /* made ahead, empty */
		snprintf(step, sizeof(step), "%.2048s/job/step-%u", root,
			 rn->a->step_no);
	} else if ((r = cg_make(rn->a, rn->a->step_no, step)) < 0) {
		errno = -r;
		goto fail;
	}
	rn->a->cg_ready = 0;
	memcpy(rn->cg, step, sizeof(step));
	r = cg_limit(rn, "memory.max", (uint64_t)lim->memory_mb << 20, true);
	r = r ? r : cg_limit(rn, "memory.swap.max", 0, false);
	r = r ? r : cg_limit(rn, "memory.oom.group", 1, false);
	r = r ? r : cg_limit(rn, "pids.max", lim->pids, true);
	if (r < 0)
		return r;
	dir = open(step, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		goto fail;
	rn->procs_fd = openat(dir, "cgroup.procs", O_WRONLY | O_CLOEXEC);
	rn->cg_fd = dir; /* spawn's clone3 starts the child in it */
	if (rn->procs_fd < 0)
		goto fail;
	return 0;
fail:
	r = -errno;
	snprintf(rn->err, sizeof(rn->err), "cgroup create: %s", strerror(-r));
	return r;
}

/* Kill everything the step started. */
static void kill_all(struct run *rn)
{
	if (rn->cg[0] && cg_write(rn->cg, "cgroup.kill", "1") == 0)
		return;
	if (rn->pid > 0) {
		kill(-rn->pid, SIGKILL);
		if (!rn->exited)
			kill(rn->pid, SIGKILL);
	}
}

static void kill_for(struct run *rn, enum al_status why)
{
	if (rn->kill_why == AL_OK)
		rn->kill_why = why;
	if (!rn->kill_at)
		rn->kill_at = al_now_ms();
	kill_all(rn);
}

/* A step at its memory limit with no swap is not always OOM-killed:
 * while the kernel can evict the step's file pages (its own binaries and
 * libraries, read straight back from disk) it thrashes instead, for
 * minutes under TCG: memory.events `max` climbs by hundreds a second and
 * the same file pages are refaulted thousands of times. (Seen here: a
 * Python list growth under 256 MiB stuck with 150 KiB of file pages left,
 * 90 MiB of page tables and 14,000 refaults per 250 ms.) So every
 * THRASH_SAMPLE_MS: when the cgroup hit memory.max again and refaulted at
 * least THRASH_REFAULTS pages since the last look, that is a strike; after
 * THRASH_STRIKES in a row (a second of thrashing) the step is ended as ML,
 * which is what the OOM killer would do once the last file page was
 * gone. A step streaming a big file near its limit evicts pages it does
 * not read again, so it does not refault and is left alone. */
static void watch_memory(struct run *rn)
{
	uint64_t t = al_now_ms(), hits, rf_file, rf_anon;

	if (!rn->cg[0] || rn->kill_at || rn->exited ||
	    t - rn->mem_at < THRASH_SAMPLE_MS)
		return;
	rn->mem_at = t;
	if (cg_read_u64(rn->cg, "memory.events", "max", &hits) < 0 ||
	    cg_read_u64(rn->cg, "memory.stat", "workingset_refault_file",
			&rf_file) < 0 ||
	    cg_read_u64(rn->cg, "memory.stat", "workingset_refault_anon",
			&rf_anon) < 0)
		return;
	if (hits > rn->mem_hits &&
	    rf_file + rf_anon >= rn->mem_refaults + THRASH_REFAULTS)
		rn->mem_strikes++;
	else
		rn->mem_strikes = 0;
	rn->mem_hits = hits;
	rn->mem_refaults = rf_file + rf_anon;
	if (rn->mem_strikes >= THRASH_STRIKES)
		kill_for(rn, AL_ML);
}

/* CPU time of the main child and the children it reaped, from
 * /proc/PID/stat: the fallback without a cgroup (host tests), which a
 * child that is not waited for escapes. */
static int proc_cpu_ms(pid_t pid, uint64_t *ret)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;
	long cut, cst, hz = sysconf(_SC_CLK_TCK);
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = read_small(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	if (!p || hz <= 0 ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu "
			  "%ld %ld", &ut, &st, &cut, &cst) != 4)
		return -EBADMSG;
	*ret = ((uint64_t)ut + st + (uint64_t)(cut + cst)) * 1000u /
	       (uint64_t)hz;
	return 0;
}

/* CPU time the step has used so far: the cgroup's (every process it ever
 * had), else the main child's. */
static int cpu_used_ms(struct run *rn, uint64_t *ret)
{
	uint64_t us;

	if (rn->cg[0] &&
	    cg_read_u64(rn->cg, "cpu.stat", "usage_usec", &us) == 0) {
		*ret = us / 1000;
		return 0;
	}
	return rn->exited ? -ESRCH : proc_cpu_ms(rn->pid, ret);
}

/* The CPU-time limit: sample the step's usage and kill it (TL) once it is
 * past `cpu_ms`. The next sample comes when, with every CPU busy, the
 * step could first reach the limit (clamped to CPU_SAMPLE_MIN_MS ..
 * CPU_SAMPLE_MAX_MS), so a busy step overruns by at most one short
 * sample period per CPU and an idle one costs a read every 250 ms.
 * verdict() also makes a step TL that exited by itself past the limit, so
 * the status follows the CPU time reported, whatever the sampling saw. */
static void watch_cpu(struct run *rn)
{
	uint64_t t = al_now_ms(), used = 0, wait;
	long ncpu;

	if (!rn->cpu_ms || rn->kill_at || rn->exited || t < rn->cpu_at)
		return;
	if (cpu_used_ms(rn, &used) < 0) {
		rn->cpu_at = t + CPU_SAMPLE_MAX_MS;
		return;
	}
	if (used > rn->cpu_ms) {
		kill_for(rn, AL_TL);
		return;
	}
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	wait = (rn->cpu_ms - used) / (uint64_t)(ncpu > 0 ? ncpu : 1);
	if (wait < CPU_SAMPLE_MIN_MS)
		wait = CPU_SAMPLE_MIN_MS;
	if (wait > CPU_SAMPLE_MAX_MS)
		wait = CPU_SAMPLE_MAX_MS;
	rn->cpu_at = t + wait;
}

/* Wait for the cgroup to empty (reaping as we go: we may be init), read
 * its accounting, remove it. A cgroup still populated after the kill and
 * EMPTY_WAIT_MS fails the step, and taints the agent: no later step (a
 * checker, say) runs beside what survived. */
static void cg_finish(struct run *rn)
{
	uint64_t v, deadline = al_now_ms() + EMPTY_WAIT_MS;
	bool full = false;

	if (!rn->cg[0])
		return;
	while (cg_read_u64(rn->cg, "cgroup.events", "populated", &v) == 0 &&
	       (full = v != 0) && al_now_ms() < deadline) {
		kill_all(rn);
		al_agent_reap(rn->a, -1, NULL, NULL);
		usleep(2000);
	}
	if (full) {
		rn->a->tainted = true;
		snprintf(rn->err, sizeof(rn->err),
			 "processes of the step outlived its kill");
		al_agent_log("step %u: processes outlived the kill",
			     rn->a->step_no);
	}
	if (cg_read_u64(rn->cg, "cpu.stat", "usage_usec", &v) == 0)
		rn->res->cpu_ms = v / 1000;
	if (cg_read_u64(rn->cg, "memory.peak", NULL, &v) == 0)
		rn->res->max_rss_kb = v / 1024;
	if (cg_read_u64(rn->cg, "memory.events", "oom_kill", &v) == 0 && v &&
	    rn->kill_why == AL_OK)
		rn->kill_why = AL_ML;
	if (rmdir(rn->cg) < 0)
		al_agent_log("rmdir %s: %s", rn->cg, strerror(errno));
}

/* --- the child ------------------------------------------------------------ */

static __attribute__((noreturn)) void child_fail(int err_fd, const char *what)
{
	struct child_err ce = {.err = errno};

	snprintf(ce.what, sizeof(ce.what), "%s", what);
	if (write(err_fd, &ce, sizeof(ce)) < 0)
		_exit(125);
	_exit(125);
}

/* Our side of the child's set-up: failures here are XX. */
static void child_setup(struct run *rn, const int fds[3], int err_fd)
{
	const struct al_agent_config *cfg = rn->a->cfg;
	const struct al_limits *lim = rn->lim;
	struct rlimit core = {0, 0}, fsize = {RLIM_INFINITY, RLIM_INFINITY};
	sigset_t none;
	int fd;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	for (int i = 0; i < 3; i++)
		if (dup2(fds[i], i) < 0)
			child_fail(err_fd, "dup2");
	if (setsid() < 0)
		child_fail(err_fd, "setsid");
	if (rn->procs_fd >= 0 && rn->cg_fd < 0 &&
	    write(rn->procs_fd, "0", 1) < 0)
		child_fail(err_fd, "join cgroup");
	fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		/* we are OOM-exempt; the step must not be */
		if (write(fd, "0", 1) < 0 && cfg->init)
			child_fail(err_fd, "oom_score_adj");
		close(fd);
	}
	if (lim->file_size_mb)
		fsize.rlim_cur = fsize.rlim_max = (rlim_t)lim->file_size_mb
						  << 20;
	if (setrlimit(RLIMIT_CORE, &core) < 0 ||
	    (lim->file_size_mb && setrlimit(RLIMIT_FSIZE, &fsize) < 0))
		child_fail(err_fd, "setrlimit");
	if (cfg->drop_ids && (setgroups(0, NULL) < 0 || setgid(cfg->gid) < 0 ||
			      setuid(cfg->uid) < 0))
		child_fail(err_fd, "drop privileges");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(err_fd, "no_new_privs");
	/* nothing but stdio reaches the job, whatever we inherited */
	syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC);
}

/* The job's side: failures here are the job's, reported like a shell. */
static __attribute__((noreturn)) void child_exec(struct run *rn, char **env)
{
	const struct al_step *s = rn->step;
	struct open_how how = {
	    .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	char *sh_argv[] = {"/bin/sh", "-c", s->sh, NULL};
	char **argv = s->argc ? s->argv : sh_argv;
	const char *cwd = s->cwd ? s->cwd : ".";
	long fd;

	fd = syscall(SYS_openat2, rn->a->work_fd, cwd, &how, sizeof(how));
	if (fd < 0 || fchdir((int)fd) < 0) {
		dprintf(2, "airlock: cwd %s: %s\n", cwd, strerror(errno));
		_exit(127);
	}
	environ = env;
	execvp(argv[0], argv);
	dprintf(2, "airlock: %s: %s\n", argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

/* --- the parent ----------------------------------------------------------- */

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* fork(), the child born in the step cgroup when there is one (clone3's
 * CLONE_INTO_CGROUP: no migration of a running process into it, the
 * kernel's heavier path, which the guest would translate anew in every
 * clone under TCG). A kernel without it: fork, and the child joins
 * through cgroup.procs (cg_fd -1 tells it to). */
static pid_t fork_into(struct run *rn)
{
	struct clone_args ca = {
		.flags = CLONE_INTO_CGROUP,
		.exit_signal = SIGCHLD,
		.cgroup = (uint64_t)rn->cg_fd,
	};
	long pid;

	if (rn->cg_fd < 0)
		return fork();
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0 && (errno == ENOSYS || errno == EINVAL || errno == E2BIG)) {
		close_fd(&rn->cg_fd);
		return fork();
	}
	return (pid_t)pid;
}

/* The step's main child is the waiting zygote (zygote.c), given these
 * ends of its pipes. Any failure ends the zygote and returns -errno: the
 * step then forks as usual (which reports a bad cwd as the job's). */
static int zygote_hand(struct run *rn, int in, int out, int err)
{
	struct open_how how = {
	    .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	const int fds[3] = {in, out, err};
	const char *cwd = rn->step->cwd ? rn->step->cwd : ".";
	long fd = syscall(SYS_openat2, rn->a->work_fd, cwd, &how, sizeof(how));
	int r = fd < 0 ? -errno : 0;

	if (r == 0) {
		r = al_zygote_take(rn->a, rn->step, rn->lim, rn->procs_fd, fds,
				   (int)fd, &rn->pid);
		close((int)fd);
		if (r < 0)
			al_agent_log("zygote hand-over: %s", strerror(-r));
	}
	if (r < 0) {
		al_zygote_end(rn->a);
		rn->pid = 0;
	}
	return r;
}

/* Fork the child with pipes; on success the parent ends are in rn. */
static int spawn(struct run *rn, char **env)
{
	int in[2] = {-1, -1}, o[2] = {-1, -1}, e[2] = {-1, -1};
	int ep[2] = {-1, -1}, r = 0;
	struct child_err ce;
	ssize_t n;

	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(o, O_CLOEXEC) < 0 ||
	    pipe2(e, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0) {
		r = -errno;
		snprintf(rn->err, sizeof(rn->err), "pipe: %s", strerror(-r));
		goto out;
	}
	rn->t0 = al_now_ms();
	if (rn->zygote && zygote_hand(rn, in[0], o[1], e[1]) == 0)
		goto started;
	rn->pid = fork_into(rn);
	if (rn->pid < 0) {
		r = -errno;
		rn->pid = 0;
		snprintf(rn->err, sizeof(rn->err), "fork: %s", strerror(-r));
		goto out;
	}
	if (rn->pid == 0) {
		const int fds[3] = {in[0], o[1], e[1]};

		close(ep[0]);
		child_setup(rn, fds, ep[1]);
		child_exec(rn, env);
	}
	close_fd(&ep[1]);
	do
		n = read(ep[0], &ce, sizeof(ce));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(ce)) {
		ce.what[sizeof(ce.what) - 1] = '\0';
		snprintf(rn->err, sizeof(rn->err), "step setup: %s: %s",
			 ce.what, strerror(ce.err));
		r = -ce.err;
		goto out;
	}
started:
	rn->in_fd = in[1], in[1] = -1;
	rn->out[0].fd = o[0], o[0] = -1;
	rn->out[1].fd = e[0], e[0] = -1;
	set_nonblock(rn->in_fd);
	set_nonblock(rn->out[0].fd);
	set_nonblock(rn->out[1].fd);
	if (!rn->step->has_stdin || rn->step->stdin_.len == 0)
		close_fd(&rn->in_fd);
out:
	close_fd(&in[0]), close_fd(&in[1]), close_fd(&o[0]), close_fd(&o[1]);
	close_fd(&e[0]), close_fd(&e[1]), close_fd(&ep[0]), close_fd(&ep[1]);
	return r;
}

static void feed_stdin(struct run *rn)
{
	const struct al_blob *b = &rn->step->stdin_;
	ssize_t n;

	while (rn->in_fd >= 0 && rn->in_off < b->len) {
		n = write(rn->in_fd, b->data + rn->in_off, b->len - rn->in_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) /* EPIPE: the job closed its stdin; fine */
			break;
		rn->in_off += (size_t)n;
	}
	close_fd(&rn->in_fd);
}

/* Keep what fits under the cap; anything beyond means OL. */
static int keep(struct run *rn, struct stream *st, const uint8_t *buf, size_t n)
{
	struct al_blob *b = st->keep;
	size_t room = rn->out_cap - b->len, k = n < room ? n : room;

	*st->total += n;
	if (k) {
		uint8_t *p = realloc(b->data, b->len + k + 1);

		if (!p)
			return -ENOMEM;
		memcpy(p + b->len, buf, k);
		b->data = p;
		b->len += k;
		b->data[b->len] = '\0';
		if (rn->cb && rn->cb(rn->opaque, st->no, buf, k) < 0)
			rn->cb = NULL;
	}
	if (k < n) {
		*st->truncated = true;
		kill_for(rn, AL_OL);
	}
	return 0;
}

static int drain(struct run *rn, struct stream *st)
{
	static uint8_t buf[CHUNK];
	ssize_t n;

	for (;;) {
		n = read(st->fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0) {
			close_fd(&st->fd);
			return 0;
		}
		if (keep(rn, st, buf, (size_t)n) < 0)
			return -ENOMEM;
	}
}

static int poll_timeout(struct run *rn)
{
	uint64_t t = al_now_ms(), end;

	if (rn->kill_at)
		end = rn->kill_at + KILL_GRACE_MS;
	else
		end = rn->t0 + rn->timeout_ms;
	/* wake up to sample memory pressure */
	if (rn->cg[0] && !rn->kill_at && end > t + THRASH_SAMPLE_MS)
		end = t + THRASH_SAMPLE_MS;
	/* and CPU time */
	if (rn->cpu_ms && !rn->kill_at && !rn->exited && end > rn->cpu_at)
		end = rn->cpu_at;
	/* and a signal's grace */
	if (rn->sig_kill_at && !rn->kill_at && end > rn->sig_kill_at)
		end = rn->sig_kill_at;
	return t >= end ? 0 : (int)(end - t);
}

/* Send `sig` to every process of the step (see the top of the file). */
static void signal_step(struct run *rn, int sig)
{
	char path[PATH_MAX + 16], buf[4096];
	FILE *f;

	if (rn->exited && sig != SIGKILL)
		return; /* what it left behind is being killed anyway */
	if (sig == SIGKILL) {
		kill_for(rn, AL_OK); /* the wait status says SG 9 */
		return;
	}
	if (!rn->cg[0]) {
		if (rn->pid > 0)
			kill(-rn->pid, sig);
		return;
	}
	snprintf(path, sizeof(path), "%s/cgroup.procs", rn->cg);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(buf, sizeof(buf), f)) {
		long pid = strtol(buf, NULL, 10);

		if (pid > 1)
			kill((pid_t)pid, sig);
	}
	fclose(f);
}

/* The control channel is readable: act on a complete `signal`. A hangup
 * with nothing to read (a virtio-serial port with no host keeps saying
 * POLLHUP) takes it out of the poll set for the rest of the step. */
static void ctl_read(struct run *rn, short revents)
{
	uint32_t sig = 0, grace = 0;
	int r = revents & POLLIN
		    ? rn->ctl->read(rn->ctl->opaque, &sig, &grace)
		    : -EPIPE;

	if (r < 0 || (r == 0 && (revents & POLLHUP))) {
		rn->ctl_fd = -1; /* host gone: the step runs on */
		return;
	}
	if (r == 0 || !al_step_signal_ok((int)sig))
		return;
	al_agent_log("step %u: signal %s grace_ms=%u", rn->a->step_no,
		     al_signal_name((int)sig), grace);
	signal_step(rn, (int)sig);
	if (sig != SIGUSR1 && sig != SIGUSR2)
		rn->cancelled = true; /* what it leaves goes with it */
	if (grace && !rn->sig_kill_at && !rn->kill_at) {
		if (grace > AL_SIGNAL_GRACE_MAX)
			grace = AL_SIGNAL_GRACE_MAX;
		rn->sig_kill_at = al_now_ms() + grace;
	}
}

/* The session's background cgroup, `job/bg`, into `bg`: made the first
 * time with the step's memory and pids caps (later execs of the session
 * carry the same limits), then reused. */
static int bg_cgroup(struct run *rn, char bg[PATH_MAX])
{
	const char *root = rn->a->cfg->cgroup_root;
	char mem[32], pids[32];

	snprintf(bg, PATH_MAX, "%.2048s/job/bg", root);
	if (mkdir(bg, 0755) < 0)
		return errno == EEXIST ? 0 : -errno;
	snprintf(mem, sizeof(mem), "%llu",
		 (unsigned long long)rn->lim->memory_mb << 20);
	snprintf(pids, sizeof(pids), "%u", rn->lim->pids);
	/* best effort, as for a step: an absent controller, an absent file */
	if (rn->lim->memory_mb)
		cg_write(bg, "memory.max", mem);
	cg_write(bg, "memory.swap.max", "0");
	if (rn->lim->pids)
		cg_write(bg, "pids.max", pids);
	return 0;
}

/* Write every pid in the step cgroup's cgroup.procs to `to_fd`; returns
 * how many there were. */
static int move_pids(struct run *rn, int to_fd)
{
	char path[PATH_MAX + 16], buf[32];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", rn->cg);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(buf, sizeof(buf), f)) {
		long pid = strtol(buf, NULL, 10);

		if (pid <= 1)
			continue;
		n++;
		snprintf(buf, sizeof(buf), "%ld", pid);
		if (write(to_fd, buf, strlen(buf)) < 0 && errno != ESRCH)
			al_agent_log("step %u: move %ld to bg: %s",
				     rn->a->step_no, pid, strerror(errno));
	}
	fclose(f);
	return n;
}

/* Move what the step left running into job/bg (see the top of the
 * file). 0 once the step's cgroup is empty, else -errno. */
static int move_to_bg(struct run *rn)
{
	char bg[PATH_MAX], procs[PATH_MAX + 16];
	uint64_t v, deadline;
	int fd, r, n = 1;

	r = bg_cgroup(rn, bg);
	if (r < 0)
		return r;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", bg);
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* frozen, nothing forks between our read of cgroup.procs and the
	 * move; a process moved takes job/bg's state (thawed) */
	cg_write(rn->cg, "cgroup.freeze", "1");
	deadline = al_now_ms() + FREEZE_WAIT_MS;
	while (cg_read_u64(rn->cg, "cgroup.events", "frozen", &v) == 0 &&
	       !v && al_now_ms() < deadline)
		usleep(1000);
	for (unsigned i = 0; i < MOVE_ROUNDS && n > 0; i++)
		n = move_pids(rn, fd);
	close(fd);
	cg_write(rn->cg, "cgroup.freeze", "0");
	if (n < 0)
		return n;
	if (cg_read_u64(rn->cg, "cgroup.events", "populated", &v) == 0 && v)
		return -EBUSY;
	return 0;
}

/* Take what the pipe holds now, no more: a background process that
 * keeps writing must not keep us reading. */
static int drain_now(struct run *rn, struct stream *st)
{
	static uint8_t buf[CHUNK];
	int avail = 0;
	ssize_t n;

	if (ioctl(st->fd, FIONREAD, &avail) < 0)
		return -errno;
	while (avail > 0) {
		n = read(st->fd, buf,
			 (size_t)avail < sizeof(buf) ? (size_t)avail
						     : sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		avail -= (int)n;
		if (keep(rn, st, buf, (size_t)n) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The main child of a background step exited by itself: keep what it
 * left running (or kill it, when it cannot be moved), take what the
 * pipes hold now and close them: the step ends here. */
static void keep_background(struct run *rn)
{
	int r = 0;

	if (rn->cg[0])
		r = move_to_bg(rn);
	if (r < 0) {
		al_agent_log("step %u: background: %s; killed",
			     rn->a->step_no, strerror(-r));
		kill_for(rn, AL_OK);
	} else {
		rn->kept = true;
	}
	close_fd(&rn->in_fd);
	for (int i = 0; i < 2; i++) {
		if (rn->out[i].fd >= 0)
			drain_now(rn, &rn->out[i]);
		close_fd(&rn->out[i].fd);
	}
}

/* Poll until the child is reaped and both pipes hit EOF. */
static int pump(struct run *rn)
{
	struct pollfd p[5];
	int r;

	while (!rn->exited || rn->out[0].fd >= 0 || rn->out[1].fd >= 0) {
		p[0] = (struct pollfd){rn->a->sig_fd, POLLIN, 0};
		p[1] = (struct pollfd){rn->in_fd, POLLOUT, 0};
		p[2] = (struct pollfd){rn->out[0].fd, POLLIN, 0};
		p[3] = (struct pollfd){rn->out[1].fd, POLLIN, 0};
		p[4] = (struct pollfd){rn->ctl_fd, POLLIN, 0};
		r = poll(p, 5, poll_timeout(rn));
		if (r < 0 && errno != EINTR)
			return -errno;
		watch_memory(rn);
		watch_cpu(rn);
		if (rn->sig_kill_at && !rn->kill_at && !rn->exited &&
		    al_now_ms() >= rn->sig_kill_at)
			kill_for(rn, AL_OK); /* the grace ended: SG 9 */
		if (r == 0 && rn->kill_at &&
		    al_now_ms() >= rn->kill_at + KILL_GRACE_MS)
			break; /* unkillable or fd held elsewhere: give up */
		if (r == 0 && !rn->kill_at &&
		    al_now_ms() >= rn->t0 + rn->timeout_ms)
			kill_for(rn, AL_TO);
		if (r <= 0)
			continue;
		if (p[4].revents)
			ctl_read(rn, p[4].revents);
		if (p[1].revents)
			feed_stdin(rn);
		for (int i = 0; i < 2; i++)
			if (p[2 + i].revents && drain(rn, &rn->out[i]) < 0)
				return -ENOMEM;
		if (p[0].revents && !rn->exited &&
		    al_agent_reap(rn->a, rn->pid, &rn->wstatus, &rn->ru)) {
			rn->exited = true;
			rn->t_end = al_now_ms();
			if (rn->background && !rn->kill_at && !rn->cancelled)
				keep_background(rn);
			else
				kill_for(rn, AL_OK); /* what it left behind */
		}
	}
	return 0;
}

/* Map how it ended onto the status vocabulary. */
static void verdict(struct run *rn)
{
	struct al_step_result *res = rn->res;

	if (WIFEXITED(rn->wstatus)) {
		res->has_exit_code = true;
		res->exit_code = WEXITSTATUS(rn->wstatus);
	} else if (WIFSIGNALED(rn->wstatus)) {
		res->signal = WTERMSIG(rn->wstatus);
	}
	if (rn->kill_why != AL_OK)
		res->status = rn->kill_why;
	else if (res->signal)
		res->status = AL_SG;
	else if (res->exit_code)
		res->status = AL_RE;
	else
		res->status = AL_OK;
	if (!rn->cg[0] || !res->cpu_ms)
		res->cpu_ms = (uint64_t)(rn->ru.ru_utime.tv_sec +
					 rn->ru.ru_stime.tv_sec) *
				  1000 +
			      (uint64_t)(rn->ru.ru_utime.tv_usec +
					 rn->ru.ru_stime.tv_usec) /
				  1000;
	if (!res->max_rss_kb)
		res->max_rss_kb = (uint64_t)rn->ru.ru_maxrss;
	if (rn->cpu_ms && res->cpu_ms > rn->cpu_ms && rn->kill_why == AL_OK)
		res->status = AL_TL; /* exited by itself, between samples */
	res->wall_ms = (rn->t_end ? rn->t_end : al_now_ms()) - rn->t0;
}

/* After a failed set-up the child exits by itself; reap it. */
static void reap_child(struct run *rn)
{
	uint64_t deadline = al_now_ms() + EMPTY_WAIT_MS;
	struct pollfd p = {rn->a->sig_fd, POLLIN, 0};

	while (rn->pid > 0 && !rn->exited) {
		if (al_agent_reap(rn->a, rn->pid, &rn->wstatus, &rn->ru)) {
			rn->exited = true;
			break;
		}
		if (al_now_ms() > deadline)
			kill(rn->pid, SIGKILL);
		poll(&p, 1, 100);
	}
}

/* Our own failure: XX, with the reason where a human will see it. */
static int fail_xx(struct run *rn)
{
	struct al_step_result *res = rn->res;

	res->status = AL_XX;
	free(res->error);
	res->error = strdup(rn->err);
	if (!res->error)
		return -ENOMEM;
	res->wall_ms = rn->t0 ? al_now_ms() - rn->t0 : 0;
	return 0;
}

static void run_init(struct run *rn, struct al_agent *a,
		     const struct al_step *step, const struct al_limits *lim)
{
	struct al_step_result *res = rn->res;

	rn->a = a;
	rn->step = step;
	rn->lim = lim;
	rn->procs_fd = rn->cg_fd = rn->in_fd = rn->out[0].fd = rn->out[1].fd =
	    -1;
	rn->timeout_ms =
	    step->timeout_ms ? step->timeout_ms : AL_AGENT_TIMEOUT_MS;
	if (rn->timeout_ms > AL_TIMEOUT_MS_MAX)
		rn->timeout_ms = AL_TIMEOUT_MS_MAX;
	rn->cpu_ms = step->cpu_ms < AL_CPU_MS_MAX ? step->cpu_ms
						  : AL_CPU_MS_MAX;
	rn->out_cap =
	    lim->output_bytes ? lim->output_bytes : AL_AGENT_OUTPUT_BYTES;
	if (rn->out_cap > AL_OUTPUT_MAX)
		rn->out_cap = AL_OUTPUT_MAX;
	rn->out[0] = (struct stream){
	    -1, 1, &res->stdout_, &res->stdout_truncated, &res->stdout_bytes};
	rn->out[1] = (struct stream){
	    -1, 2, &res->stderr_, &res->stderr_truncated, &res->stderr_bytes};
}

/* A job's step (not a session exec): whatever a session left running in
 * job/bg goes first. A clone of a session's snapshot carries the
 * session's background processes in its RAM (issue 34, finding 1: one
 * rewrote the checker a later job's grading ran); the save kills them
 * too (save.c), this is the clone's own line. Every session leftover is
 * in job/bg (keep_background moves it there; the job user cannot move a
 * process between cgroups), so one cgroup.kill ends them all, however
 * they forked. */
static void end_session_leftovers(struct al_agent *a)
{
	char bg[PATH_MAX];
	struct stat st;

	if (!a->cfg->cgroup_root)
		return;
	snprintf(bg, sizeof(bg), "%.2048s/job/bg", a->cfg->cgroup_root);
	if (stat(bg, &st) < 0)
		return;
	if (cg_write(bg, "cgroup.kill", "1") == 0)
		al_agent_log(
		    "job step: killed a session's background processes");
	for (int i = 0; i < 100 && rmdir(bg) < 0 && errno == EBUSY; i++)
		usleep(1000); /* until the last one is reaped */
}

static int exec_step(struct al_agent *a, const struct al_step *step,
		     const struct al_limits *lim, bool warmup,
		     al_exec_out_fn out, void *opaque,
		     const struct al_exec_ctl *ctl, struct al_step_result *ret)
{
	struct run rn = {.res = ret, .cb = out, .opaque = opaque, .ctl = ctl};
	char **env = NULL;
	int r = 0;

	memset(ret, 0, sizeof(*ret));
	if (step->name && !(ret->name = strdup(step->name)))
		return -ENOMEM;
	run_init(&rn, a, step, lim);
	rn.ctl_fd = ctl && ctl->read ? ctl->fd : -1;
	rn.background = ctl && ctl->background;
	if (!rn.background && !warmup)
		end_session_leftovers(a);
	a->step_no++;
	if (a->tainted) { /* cg_finish: what survived a step runs still */
		snprintf(rn.err, sizeof(rn.err),
			 "an earlier step's processes outlived its kill");
		goto out;
	}
	/* the zygote runs this step, or nothing: no job code beside it */
	rn.zygote = !warmup && al_zygote_fits(a, step);
	if (!rn.zygote && !warmup)
		al_zygote_end(a);
	env = al_agent_env(a, step);
	if (!env) {
		snprintf(rn.err, sizeof(rn.err), "out of memory");
		goto out;
	}
	if (a->cfg->cgroup_root && cg_create(&rn, lim) < 0)
		goto out;
	if (spawn(&rn, env) < 0)
		goto out;
	r = pump(&rn);
	if (r < 0)
		snprintf(rn.err, sizeof(rn.err), "step i/o: %s", strerror(-r));
out:
	/* a step that ended by itself leaves nothing to kill but what it
	 * left running, which cg_finish kills; without cgroups, its group */
	if (!rn.exited || (!rn.cg[0] && !rn.kept))
		kill_all(&rn);
	reap_child(&rn);
	close_fd(&rn.in_fd), close_fd(&rn.out[0].fd), close_fd(&rn.out[1].fd);
	close_fd(&rn.procs_fd), close_fd(&rn.cg_fd);
	cg_finish(&rn);
	al_files_wipe_checkers(); /* a checker's files end with its step */
	al_agent_env_free(env);
	if (rn.err[0])
		return fail_xx(&rn);
	verdict(&rn);
	return 0;
}

int al_exec_step(struct al_agent *a, const struct al_step *step,
		 const struct al_limits *lim, al_exec_out_fn out, void *opaque,
		 struct al_step_result *ret)
{
	return exec_step(a, step, lim, false, out, opaque, NULL, ret);
}

int al_exec_step_ctl(struct al_agent *a, const struct al_step *step,
		     const struct al_limits *lim, al_exec_out_fn out,
		     void *opaque, const struct al_exec_ctl *ctl,
		     struct al_step_result *ret)
{
	return exec_step(a, step, lim, false, out, opaque, ctl, ret);
}

int al_exec_warmup(struct al_agent *a, const struct al_step *step,
		   const struct al_limits *lim, struct al_step_result *ret)
{
	return exec_step(a, step, lim, true, NULL, NULL, NULL, ret);
}
