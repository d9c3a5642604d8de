/* cgroup.c: host cgroups for VMM processes.
 *
 * cgroup v2 when /sys/fs/cgroup is cgroup2 (airlock/<vm>: memory.max,
 * memory.swap.max, cpu.max, pids.max); else v1 with one dir per
 * controller hierarchy (memory.limit_in_bytes, cpu.cfs_quota_us,
 * pids.max). Everything lives under an `airlock` parent so that an
 * operator sees and caps all VMMs in one place. Creation failing for lack
 * of permission is not an error: the VM runs without a host cgroup, and
 * `airlock doctor` says so.
 *
 * Workers get a memory cgroup of their own, airlock/workers/<pid> (memory
 * controller only), which each worker creates and joins itself before it
 * serves a job (sb_cg_worker_join). A worker cannot remove its own cgroup, so
 * each join first removes those of workers that are gone; the VMMs a
 * worker starts move on to their own cgroups before they exec.
 *
 * A VMM cgroup's name is PID-vm-XXXXXX, PID being the process that made
 * the VM: sb__cg_sweep() removes those of dead processes
 * (sandbox/sweep.c decides which are dead).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cgroup.h"

#define CGROUP2_MAGIC 0x63677270
#define CG_ROOT "/sys/fs/cgroup"
#define CPU_PERIOD_US 100000u
#define SWEEP_WAIT_MS 2000u /* for a swept cgroup's processes to go */

/* Every `airlock` parent a VMM cgroup may live under. */
static const char *const parents[] = {
	CG_ROOT "/airlock",
	CG_ROOT "/memory/airlock",
	CG_ROOT "/cpu/airlock",
	CG_ROOT "/pids/airlock",
};

static bool is_v2(void)
{
	struct statfs s;

	return statfs(CG_ROOT, &s) == 0 && s.f_type == CGROUP2_MAGIC;
}

static bool v1_has(const char *ctl)
{
	char path[64];

	snprintf(path, sizeof(path), CG_ROOT "/%s/cgroup.procs", ctl);
	return access(path, W_OK) == 0;
}

const char *sb_cg_version(void)
{
	if (is_v2())
		return access(CG_ROOT "/cgroup.subtree_control", W_OK) == 0
			       ? "v2"
			       : "none";
	return v1_has("memory") ? "v1" : "none";
}

static int write_file(const char *dir, const char *file, const char *val)
{
	char path[PATH_MAX + 64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -EIO;
}

static int add_dir(struct cg *cg, const char *parent, const char *name)
{
	char dir[PATH_MAX];

	if (mkdir(parent, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (snprintf(dir, sizeof(dir), "%s/%s", parent, name) >=
	    (int)sizeof(dir))
		return -ENAMETOOLONG;
	if (mkdir(dir, 0755) < 0)
		return -errno;
	memcpy(cg->dirs[cg->n], dir, sizeof(dir));
	snprintf(cg->procs[cg->n], sizeof(cg->procs[0]), "%s/cgroup.procs",
		 dir);
	cg->n++;
	return 0;
}

static int create_v2(struct cg *cg, const char *name, uint64_t mem,
		     uint32_t cpu_percent, uint32_t pids)
{
	char val[64];
	int r;

	/* controllers must be enabled from the root down */
	write_file(CG_ROOT, "cgroup.subtree_control", "+memory +cpu +pids");
	r = add_dir(cg, CG_ROOT "/airlock", name);
	if (r < 0)
		return r;
	write_file(CG_ROOT "/airlock", "cgroup.subtree_control",
		   "+memory +cpu +pids");
	snprintf(val, sizeof(val), "%llu", (unsigned long long)mem);
	r = write_file(cg->dirs[0], "memory.max", val);
	if (r == 0)
		r = write_file(cg->dirs[0], "memory.swap.max", "0");
	snprintf(val, sizeof(val), "%llu %u",
		 (unsigned long long)CPU_PERIOD_US * cpu_percent / 100,
		 CPU_PERIOD_US);
	if (r == 0)
		r = write_file(cg->dirs[0], "cpu.max", val);
	snprintf(val, sizeof(val), "%u", pids);
	if (r == 0)
		r = write_file(cg->dirs[0], "pids.max", val);
	return r;
}

static int create_v1(struct cg *cg, const char *name, uint64_t mem,
		     uint32_t cpu_percent, uint32_t pids)
{
	char val[64];
	int r;

	r = add_dir(cg, CG_ROOT "/memory/airlock", name);
	if (r < 0)
		return r;
	snprintf(val, sizeof(val), "%llu", (unsigned long long)mem);
	r = write_file(cg->dirs[cg->n - 1], "memory.limit_in_bytes", val);
	if (r == 0 && v1_has("cpu") &&
	    (r = add_dir(cg, CG_ROOT "/cpu/airlock", name)) == 0) {
		snprintf(val, sizeof(val), "%llu",
			 (unsigned long long)CPU_PERIOD_US * cpu_percent / 100);
		r = write_file(cg->dirs[cg->n - 1], "cpu.cfs_quota_us", val);
	}
	if (r == 0 && v1_has("pids") &&
	    (r = add_dir(cg, CG_ROOT "/pids/airlock", name)) == 0) {
		snprintf(val, sizeof(val), "%u", pids);
		r = write_file(cg->dirs[cg->n - 1], "pids.max", val);
	}
	return r;
}

int sb__cg_create(struct cg *cg, const char *name, uint64_t memory_bytes,
		  uint32_t cpu_percent, uint32_t pids)
{
	const char *v = sb_cg_version();
	int r;

	memset(cg, 0, sizeof(*cg));
	if (!strcmp(v, "none"))
		return 0;
	if (!strcmp(v, "v2"))
		r = create_v2(cg, name, memory_bytes, cpu_percent, pids);
	else
		r = create_v1(cg, name, memory_bytes, cpu_percent, pids);
	if (r < 0) {
		sb__cg_destroy(cg);
		/* no permission: run without, as on hosts without cgroups */
		return r == -EACCES || r == -EPERM || r == -EROFS ? 0 : r;
	}
	return 0;
}

int sb__cg_join_self(const struct cg *cg)
{
	for (int i = 0; i < cg->n; i++) {
		int fd = open(cg->procs[i], O_WRONLY | O_CLOEXEC);

		if (fd < 0)
			return -errno;
		if (write(fd, "0", 1) != 1) {
			close(fd);
			return -EIO;
		}
		close(fd);
	}
	return 0;
}

/* The "oom_kill N" line of dir/file; 0 when absent or unreadable. */
static uint64_t read_oom_kill(const char *dir, const char *file)
{
	char path[PATH_MAX + 32], buf[1024];
	const char *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	for (p = buf; p; p = strchr(p, '\n')) {
		p += *p == '\n';
		if (!strncmp(p, "oom_kill ", 9))
			return strtoull(p + 9, NULL, 10);
	}
	return 0;
}

uint64_t sb__cg_oom_kills(const struct cg *cg)
{
	uint64_t n = 0;

	for (int i = 0; i < cg->n && !n; i++) {
		n = read_oom_kill(cg->dirs[i], "memory.events");
		if (!n)
			n = read_oom_kill(cg->dirs[i], "memory.oom_control");
	}
	return n;
}

void sb__cg_destroy(struct cg *cg)
{
	for (int i = cg->n - 1; i >= 0; i--) {
		/* a just-killed process may linger a moment as a zombie of
		 * the kernel's accounting: retry briefly */
		for (int k = 0; k < 50 && rmdir(cg->dirs[i]) < 0 &&
				errno == EBUSY;
		     k++)
			usleep(1000);
	}
	cg->n = 0;
}

/* Remove the cgroups of workers that are gone (named by their pid). */
static void sweep_workers(const char *parent)
{
	char path[PATH_MAX + 256];
	struct dirent *e;
	DIR *d = opendir(parent);
	char *end;
	long pid;

	if (!d)
		return;
	while ((e = readdir(d))) {
		pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue; /* alive (or its pid reused: next time) */
		snprintf(path, sizeof(path), "%s/%s", parent, e->d_name);
		rmdir(path);
	}
	closedir(d);
}

/* airlock/workers under the memory hierarchy; the limit's file name. */
static int workers_parent(char *dir, size_t len, const char **limit)
{
	if (is_v2()) {
		/* controllers are enabled from the root down */
		write_file(CG_ROOT, "cgroup.subtree_control", "+memory");
		if (mkdir(CG_ROOT "/airlock", 0755) < 0 && errno != EEXIST)
			return -errno;
		write_file(CG_ROOT "/airlock", "cgroup.subtree_control",
			   "+memory");
		snprintf(dir, len, "%s", CG_ROOT "/airlock/workers");
		*limit = "memory.max";
	} else {
		if (mkdir(CG_ROOT "/memory/airlock", 0755) < 0 &&
		    errno != EEXIST)
			return -errno;
		snprintf(dir, len, "%s", CG_ROOT "/memory/airlock/workers");
		*limit = "memory.limit_in_bytes";
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (is_v2())
		write_file(dir, "cgroup.subtree_control", "+memory");
	return 0;
}

int sb_cg_worker_join(uint64_t memory_bytes, char *ret_dir, size_t len)
{
	char parent[PATH_MAX], dir[PATH_MAX + 16], val[32];
	const char *limit = "memory.max";
	int r;

	ret_dir[0] = '\0';
	if (!strcmp(sb_cg_version(), "none"))
		return -EOPNOTSUPP;
	r = workers_parent(parent, sizeof(parent), &limit);
	if (r < 0)
		return r;
	sweep_workers(parent);
	snprintf(dir, sizeof(dir), "%s/%d", parent, (int)getpid());
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	snprintf(val, sizeof(val), "%llu", (unsigned long long)memory_bytes);
	r = write_file(dir, limit, val);
	if (r == 0 && is_v2())
		r = write_file(dir, "memory.swap.max", "0");
	else if (r == 0) /* no swap either, where v1 accounts it */
		write_file(dir, "memory.memsw.limit_in_bytes", val);
	if (r == 0)
		r = write_file(dir, "cgroup.procs", "0");
	if (r < 0) {
		rmdir(dir);
		return r;
	}
	snprintf(ret_dir, len, "%s", dir);
	return 0;
}

/* SIGKILL every process in the cgroup dir `dfd`; how many it signalled. */
static unsigned kill_procs(int dfd)
{
	char buf[4096];
	unsigned n = 0;
	ssize_t len;
	int fd = openat(dfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = 0;
	for (char *p = buf, *end; *p; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		if (pid > 1 && kill((pid_t)pid, SIGKILL) == 0)
			n++;
	}
	return n;
}

/* Kill what runs in parent/name and remove it; true once it is gone. */
static bool sweep_one(int pfd, const char *name, unsigned *killed)
{
	uint64_t waited = 0;
	int dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					   O_CLOEXEC);

	if (dfd < 0)
		return false;
	/* kill until empty: a process may fork as we read */
	for (;;) {
		unsigned k = kill_procs(dfd);

		*killed += waited ? 0 : k; /* count each process once */
		if (unlinkat(pfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
			break;
		if (errno != EBUSY || waited >= SWEEP_WAIT_MS) {
			close(dfd);
			return false;
		}
		usleep(10000);
		waited += 10;
	}
	close(dfd);
	return true;
}

int sb__cg_sweep(bool (*stale)(const char *name, void *arg), void *arg,
		 unsigned *ret_killed)
{
	int n = 0;

	for (size_t i = 0; i < sizeof(parents) / sizeof(parents[0]); i++) {
		int pfd = open(parents[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *d = pfd < 0 ? NULL : fdopendir(pfd);
		struct dirent *e;

		if (!d) {
			if (pfd >= 0)
				close(pfd);
			continue;
		}
		while ((e = readdir(d)))
			if (e->d_type == DT_DIR && e->d_name[0] != '.' &&
			    stale(e->d_name, arg) &&
			    sweep_one(pfd, e->d_name, ret_killed))
				n++;
		closedir(d);
	}
	return n;
}
