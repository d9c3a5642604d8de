/* sweep.c: removing what VMs of dead processes left behind.
 *
 * Theory of operation. A VM's host cgroup is named PID-vm-XXXXXX, PID
 * being the process that made the VM (a worker, or a CLI run); a jailed
 * VMM has no run dir of its own (its uid lease is a flock the kernel
 * drops, its jail root a mount in its own namespace), but VMs of older
 * versions had a run dir RUN/PID-vm-XXXXXX, swept the same way. sb_vm_destroy()
 * removes them, but a process killed with SIGKILL destroys nothing: its QEMU
 * dies by PDEATHSIG, yet the cgroup stays, and a QEMU that somehow outlived it
 * would run on unowned. sb_sweep() looks for names whose PID is dead and
 * removes all three (a zombie counts as dead):
 *
 *   1. cgroups: every process still in one is SIGKILLed, then it goes
 *      (cgroup.c, sb__cg_sweep);
 *   2. processes outside any cgroup (a host without cgroups) whose
 *      command line names a stale run dir: SIGKILLed;
 *   3. run dirs: removed with everything in them, never following a link
 *      a VMM planted (util.c, sb__remove_at);
 *   4. host links al<PID>-<slot> of network slots (net.c): the kernel
 *      frees a slot's namespace, and the veth with it, once its last
 *      process is gone; a link still there is deleted.
 *
 * A name whose PID is alive belongs to a live process (another serve on
 * this host, a CLI run, ourselves) and is never touched. A PID reused by
 * an unrelated process only keeps its garbage until that one exits: the
 * sweep errs on the side of leaving things. Names not of this form are
 * not ours and stay too.
 *
 * sb_sweep_scan() finds the same things and removes nothing: `airlock
 * doctor` reports them (and `doctor --fix` calls sb_sweep()).
 *
 * Callers: the dispatcher, at start-up and whenever one of its workers
 * dies (dispatcher/serve/serve.c); doctor (tools/cli/cmd_doctor.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "net.h"
#include "sandbox.h"
#include "util.h"

#define SWEEP_MAX 256	 /* stale run dirs handled in one sweep */
#define SWEEP_DEPTH 8	 /* directory levels a run dir may have */
#define CMDLINE_MAX 65536 /* bytes of a command line searched */

/* The owner of a VM name PID-vm-XXXXXX, or -1 when not of that form. */
static pid_t name_owner(const char *name)
{
	char *end;
	long pid;

	if (name[0] < '1' || name[0] > '9')
		return -1;
	pid = strtol(name, &end, 10);
	if (pid <= 0 || pid > 0x3fffffff || strncmp(end, "-vm-", 4) ||
	    strlen(end + 4) != 6)
		return -1;
	for (const char *c = end + 4; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
		      (*c >= 'A' && *c <= 'Z')))
			return -1;
	return (pid_t)pid;
}

/* Is `pid` gone or a zombie (killed, not yet reaped: an orphan waits
 * for whoever reaps it, which may take a while)? */
static bool dead(pid_t pid)
{
	char path[64], buf[512], *end;
	ssize_t n;
	int fd;

	if (kill(pid, 0) < 0)
		return errno == ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	end = strrchr(buf, ')'); /* the name may hold anything */
	return end && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X');
}

/* A VM name whose owner is dead. */
static bool stale(const char *name, void *arg)
{
	pid_t pid = name_owner(name);

	(void)arg;
	return pid > 0 && dead(pid);
}

struct stale_dirs {
	char path[SWEEP_MAX][PATH_MAX]; /* RUN/NAME/ of each stale dir */
	unsigned n;                     /* entries in path */
};

/* Collect the stale run dirs in `run_dir`. */
static void find_dirs(const char *run_dir, struct stale_dirs *s)
{
	DIR *d = opendir(run_dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)) && s->n < SWEEP_MAX)
		if (stale(e->d_name, NULL) &&
		    snprintf(s->path[s->n], sizeof(s->path[0]), "%s/%s/",
			     run_dir, e->d_name) < (int)sizeof(s->path[0]))
			s->n++;
	closedir(d);
}

/* Does process `pid`'s command line name one of the stale dirs? */
static bool names_stale_dir(long pid, const struct stale_dirs *s, char *buf)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, CMDLINE_MAX - 1);
	close(fd);
	if (n <= 0)
		return false;
	for (ssize_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[n] = 0;
	for (unsigned i = 0; i < s->n; i++)
		if (strstr(buf, s->path[i]))
			return true;
	return false;
}

/* Processes that name a stale run dir (SIGKILLed if `kill_them`); how
 * many. */
static unsigned by_cmdline(const struct stale_dirs *s, bool kill_them)
{
	char *buf = s->n ? malloc(CMDLINE_MAX) : NULL;
	DIR *d = buf ? opendir("/proc") : NULL;
	struct dirent *e;
	unsigned n = 0;

	while (d && (e = readdir(d))) {
		long pid = strtol(e->d_name, NULL, 10);

		if (pid > 1 && pid != getpid() &&
		    names_stale_dir(pid, s, buf) &&
		    (!kill_them || kill((pid_t)pid, SIGKILL) == 0))
			n++;
	}
	if (d)
		closedir(d);
	free(buf);
	return n;
}

/* Remove each stale run dir; how many went. */
static unsigned remove_dirs(const char *run_dir, const struct stale_dirs *s)
{
	size_t base = strlen(run_dir) + 1;
	unsigned n = 0;
	int dfd = sb__open_dir(run_dir);

	if (dfd < 0)
		return 0;
	for (unsigned i = 0; i < s->n; i++) {
		char name[64];

		snprintf(name, sizeof(name), "%.*s",
			 (int)(strlen(s->path[i]) - base - 1),
			 s->path[i] + base);
		if (sb__remove_at(dfd, name, SWEEP_DEPTH) == 0)
			n++;
	}
	close(dfd);
	return n;
}

int sb_sweep(const struct sb_options *o, struct sb_sweep_stats *ret)
{
	struct stale_dirs *s = calloc(1, sizeof(*s));
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!s)
		return -ENOMEM;
	r = sb__cg_sweep(stale, NULL, &ret->killed);
	/* a slot's namespace dies with its last process; its host link
	 * goes with it, but not at once: delete what is still there */
	ret->links = sb_net_sweep(dead);
	if (r > 0)
		ret->cgroups = (unsigned)r;
	/* a run dir that is not ours alone is not swept (nor used) */
	r = sb__private_dir(o->run_dir, 0700);
	if (r == 0) {
		find_dirs(o->run_dir, s);
		ret->killed += by_cmdline(s, true);
		ret->dirs = remove_dirs(o->run_dir, s);
	}
	free(s);
	return r;
}

/* ---- looking only ------------------------------------------------------ */

struct scan {
	unsigned n;	  /* stale names seen */
	char *example;	  /* the first one, for the report */
	size_t len;	  /* its buffer */
	const char *kind; /* what it is: "cgroup", "link", "run dir" */
};

static void seen(struct scan *s, const char *name)
{
	if (!s->n++ && s->len)
		snprintf(s->example, s->len, "%s %s", s->kind, name);
}

/* sb__cg_sweep()'s callback: counts a stale cgroup and keeps it. */
static bool scan_cgroup(const char *name, void *arg)
{
	if (stale(name, NULL))
		seen(arg, name);
	return false;
}

void sb_sweep_scan(const struct sb_options *o, struct sb_sweep_stats *ret,
		   char *example, size_t len)
{
	struct scan cg = {0, example, len, "cgroup"};
	struct stale_dirs *s = calloc(1, sizeof(*s));
	unsigned killed = 0, links;
	char link[64];

	memset(ret, 0, sizeof(*ret));
	if (len)
		example[0] = 0;
	sb__cg_sweep(scan_cgroup, &cg, &killed);
	links = sb_net_scan(dead, link, sizeof(link));
	if (links && !cg.n && len) /* one example: the first kind found */
		snprintf(example, len, "link %s", link);
	if (s) {
		find_dirs(o->run_dir, s);
		if (s->n && !cg.n && !links && len)
			snprintf(example, len, "run dir %s", s->path[0]);
		ret->dirs = s->n;
		ret->killed = by_cmdline(s, false);
		free(s);
	}
	ret->cgroups = cg.n;
	ret->links = links;
}
