/* init.c: turn the initramfs into the running guest, as PID 1.
 *
 * Steps, in order (each logs and carries on where it can; a guest without
 * its root disk still answers hello so the host can say why):
 *  1. devtmpfs on /dev, proc, sysfs; fds 0-2 on /dev/console;
 *  2. load the modules listed in /etc/airlock/modules (virtio drivers are
 *     modules in Debian's cloud kernel), EEXIST being fine;
 *  3. wait for /dev/vda, mount it ext4 read-only on /newroot, move /dev
 *     /proc /sys into it and switch root (chdir, mount --move . /, chroot;
 *     the initramfs contents are simply left behind);
 *  4. one size-capped tmpfs for scratch space, bound to /work (job-owned)
 *     and /tmp (1777), so disk_mb caps both together; /run, /dev/shm;
 *  5. a networked template's interface, route and resolver (net.c);
 *  6. cgroup2 on /sys/fs/cgroup with +memory +pids +cpu for children; the
 *     agent moves to /agent with a memory reserve, OOM-exempt and locked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

#define MODULES_LIST	   "/etc/airlock/modules"
#define ROOT_DEV	   "/dev/vda"
#define ROOT_WAIT_MS	   60000u     /* TCG boots are slow */
#define SCRATCH_DEFAULT_MB 512u	      /* until `setup` says otherwise */
#define AGENT_MEMORY_MIN   "33554432" /* 32 MiB reserved for the agent */
#define CGROUP		   "/sys/fs/cgroup"
#define MOUNT_NOSUID	   (MS_NOSUID | MS_NODEV)

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* mount(2) that logs; mkdir's the target first (the initramfs may lack it). */
static int mnt(const char *src, const char *dst, const char *type,
	       unsigned long flags, const char *data)
{
	mkdir(dst, 0755);
	if (mount(src, dst, type, flags, data) == 0)
		return 0;
	al_agent_log("mount %s on %s: %s", type ? type : src, dst,
		     strerror(errno));
	return -errno;
}

static void console_fds(void)
{
	int fd = open("/dev/console", O_RDWR | O_NOCTTY);

	if (fd < 0)
		return;
	for (int i = 0; i < 3; i++)
		if (fcntl(i, F_GETFD) < 0)
			dup2(fd, i);
	if (fd > 2)
		close(fd);
}

static void load_modules(void)
{
	char line[512];
	FILE *f = fopen(MODULES_LIST, "re");
	int fd;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		fd = open(line, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			al_agent_log("module %s: %s", line, strerror(errno));
			continue;
		}
		if (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST)
			al_agent_log("load %s: %s", line, strerror(errno));
		close(fd);
	}
	fclose(f);
}

static int wait_for(const char *path, unsigned ms)
{
	struct timespec ts = {0, 10 * 1000000};
	struct stat st;

	for (unsigned waited = 0; waited < ms; waited += 10) {
		if (stat(path, &st) == 0)
			return 0;
		nanosleep(&ts, NULL);
	}
	return -ENOENT;
}

static int switch_root(void)
{
	static const char *const moves[] = {"/dev", "/proc", "/sys"};
	char dst[64];

	if (wait_for(ROOT_DEV, ROOT_WAIT_MS) < 0) {
		al_agent_log("%s never appeared", ROOT_DEV);
		return -ENODEV;
	}
	if (mnt(ROOT_DEV, "/newroot", "ext4", MS_RDONLY, "") < 0)
		return -EIO;
	for (size_t i = 0; i < sizeof(moves) / sizeof(moves[0]); i++) {
		snprintf(dst, sizeof(dst), "/newroot%s", moves[i]);
		if (mount(moves[i], dst, NULL, MS_MOVE, NULL) < 0)
			al_agent_log("move %s: %s", moves[i], strerror(errno));
	}
	if (chdir("/newroot") < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 ||
	    chroot(".") < 0 || chdir("/") < 0) {
		al_agent_log("switch root: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/* Scratch tmpfs behind /work and /tmp; /run; /dev/shm. */
static void mount_scratch(const struct al_agent_config *cfg)
{
	char opts[64], work[300], tmp[300];

	mnt("tmpfs", "/run", "tmpfs", MOUNT_NOSUID, "mode=0755,size=16m");
	mkdir("/run/airlock", 0700);
	/* checkers' files (files.c): root's, space no job can fill */
	mnt("tmpfs", AL_CHECKER_AREA, "tmpfs", MOUNT_NOSUID | MS_NODEV,
	    "mode=0755,size=64m");
	snprintf(opts, sizeof(opts), "mode=0755,size=%um", SCRATCH_DEFAULT_MB);
	if (mnt("tmpfs", cfg->scratch_dir, "tmpfs", MOUNT_NOSUID, opts) < 0)
		return;
	snprintf(work, sizeof(work), "%s/work", cfg->scratch_dir);
	snprintf(tmp, sizeof(tmp), "%s/tmp", cfg->scratch_dir);
	mkdir(work, 0755);
	mkdir(tmp, 01777);
	chmod(tmp, 01777);
	if (chown(work, cfg->uid, cfg->gid) < 0)
		al_agent_log("chown work: %s", strerror(errno));
	mnt(work, cfg->work_dir, NULL, MS_BIND, NULL);
	mnt(tmp, "/tmp", NULL, MS_BIND, NULL);
	mnt("tmpfs", "/dev/shm", "tmpfs", MOUNT_NOSUID, "mode=1777,size=64m");
}

/* sandbox/agent/check.py, embedded by CMake */
extern const unsigned char al_check_py[];
extern const size_t al_check_py_len;

/* The script jobs run (AL_CHECK_PY): the runner itself is the module
 * beside it, which the python template's zygote has already imported
 * (zygote.py puts AL_CHECK_DIR on its path for that), so a job's check
 * compiles and imports nothing of it. */
static const char check_stub[] =
	"# check.py: Airlock's eval check runner (docs/eval.md). The code is\n"
	"# _airlock_check.py beside this file.\n"
	"import sys\n"
	"import _airlock_check\n"
	"sys.exit(_airlock_check.main())\n";

static int write_ro(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
				O_NOFOLLOW, 0444);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, data, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

/* The check runner (check.py) in AL_CHECK_DIR, root's and read-only, for
 * `airlock eval` jobs (docs/eval.md). Boot time, so templates hold it. */
static void install_check(void)
{
	int r = 0;

	if (mkdir(AL_CHECK_DIR, 0755) < 0 && errno != EEXIST)
		r = -errno;
	if (r == 0)
		r = write_ro(AL_CHECK_MOD, al_check_py, al_check_py_len);
	if (r == 0)
		r = write_ro(AL_CHECK_PY, check_stub, sizeof(check_stub) - 1);
	if (r < 0)
		al_agent_log("install %s: %s", AL_CHECK_DIR, strerror(-r));
}

static void setup_cgroups(void)
{
	static const char *const ctl[] = {"+memory", "+pids", "+cpu"};
	char self[32];

	if (mnt("cgroup2", CGROUP, "cgroup2", MOUNT_NOSUID | MS_NOEXEC, "") < 0)
		return;
	for (size_t i = 0; i < 3; i++)
		if (write_file(CGROUP "/cgroup.subtree_control", ctl[i]) < 0)
			al_agent_log("enable %s: %s", ctl[i], strerror(errno));
	mkdir(CGROUP "/agent", 0755);
	mkdir(CGROUP "/job", 0755);
	snprintf(self, sizeof(self), "%d", getpid());
	if (write_file(CGROUP "/agent/cgroup.procs", self) < 0)
		al_agent_log("join agent cgroup: %s", strerror(errno));
	write_file(CGROUP "/agent/memory.min", AGENT_MEMORY_MIN);
	write_file("/proc/self/oom_score_adj", "-1000");
	if (mlockall(MCL_CURRENT) < 0)
		al_agent_log("mlockall: %s", strerror(errno));
}

int al_agent_init_system(const struct al_agent_config *cfg)
{
	mnt("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
	console_fds();
	mnt("proc", "/proc", "proc", MOUNT_NOSUID | MS_NOEXEC, "");
	mnt("sysfs", "/sys", "sysfs", MOUNT_NOSUID | MS_NOEXEC, "");
	load_modules();
	if (switch_root() < 0)
		return -ENODEV;
	mount_scratch(cfg);
	install_check();
	al_agent_net_up();
	setup_cgroups();
	return 0;
}

int al_agent_apply_limits(struct al_agent *a, const struct al_limits *l,
			  char *err, size_t err_size)
{
	char opts[64];

	/* already that size (a clone's template set it before its
	 * snapshot): no remount, kernel code a clone would translate anew */
	if (!a->cfg->init || !l->disk_mb || l->disk_mb == a->scratch_mb)
		return 0;
	snprintf(opts, sizeof(opts), "size=%um", l->disk_mb);
	if (mount(NULL, a->cfg->scratch_dir, NULL, MS_REMOUNT | MOUNT_NOSUID,
		  opts) < 0) {
		snprintf(err, err_size, "resize scratch: %s", strerror(errno));
		return -errno;
	}
	a->scratch_mb = l->disk_mb;
	return 0;
}
