/* jail.c: the gateway's jail: a mount namespace with only the packages
 * dir and /dev/null, and a seccomp allowlist (jail.h).
 *
 * The syscall list is what serving needs, measured with strace over
 * tests/gateway/{pip,npm,minage,slot}_test.sh (libmicrohttpd's epoll
 * thread pool, glibc's malloc and threads, the mirror read by openat relative to directory fds and
 * listed by getdents64 for a listing's audit record), plus the
 * few glibc may use in their place (poll for epoll_wait, pread, statx).
 * The filter is installed before the server's threads exist (they
 * inherit it) and before any client byte is read.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "jail.h"

/* AddressSanitizer's runtime runs in the gateway of CI's sanitizer build:
 * its threads set an alternate signal stack (allowed for all), and
 * LeakSanitizer's exit check clones a tracer, ptraces and reads /proc
 * (never allowed, no /proc in the jail): that check runs before the jail
 * and the filter instead (a second call is a no-op). */
#if defined(__SANITIZE_ADDRESS__)
#define GW_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GW_ASAN 1
#endif
#endif
#ifdef GW_ASAN
#include <sanitizer/lsan_interface.h>
#endif

#if defined(__x86_64__)
#define GW_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define GW_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "gateway/jail.c: add this architecture's AUDIT_ARCH"
#endif

#define RO_FLAGS                                                               \
	(MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
#define JAIL_MOUNT "/tmp" /* where the new root's tmpfs is built */

/* Bind the file or dir open as FD onto relative DST, remounted with
 * FLAGS (MS_BIND | MS_REMOUNT | ...). */
static int bind_fd(int fd, const char *dst, unsigned long flags)
{
	char src[64];

	snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0 ||
	    mount(NULL, dst, NULL, flags, NULL) < 0)
		return -1;
	return 0;
}

int gw_jail_enter(const char *dir, const char **ret_step)
{
	const char *opts = "mode=0755,size=64k,nr_inodes=16";
	int dfd = -1, nfd = -1, rc = 0, fd;

#ifdef GW_ASAN
	__lsan_do_leak_check();
#endif
	*ret_step = "mount namespace";
	if (unshare(CLONE_NEWNS) < 0)
		goto fail;
	*ret_step = "private mounts";
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		goto fail;
	/* opened in the new namespace: a bind takes only its own mounts */
	*ret_step = "open the packages dir and /dev/null";
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	nfd = open("/dev/null", O_PATH | O_CLOEXEC);
	if (dfd < 0 || nfd < 0)
		goto fail;
	/* the packages dir may be under JAIL_MOUNT: it is bound from its
	 * fd, opened above, never by path again */
	*ret_step = "tmpfs root";
	if (mount("tmpfs", JAIL_MOUNT, "tmpfs",
		  MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0 ||
	    chdir(JAIL_MOUNT) < 0)
		goto fail;
	*ret_step = "bind the packages dir";
	if (mkdir(&GW_JAIL_DIR[1], 0755) < 0 || /* relative: under the cwd */
	    bind_fd(dfd, &GW_JAIL_DIR[1], RO_FLAGS) < 0)
		goto fail;
	*ret_step = "bind /dev/null";
	if (mkdir("dev", 0755) < 0)
		goto fail;
	fd = open("dev/null", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (fd < 0)
		goto fail;
	close(fd);
	if (bind_fd(nfd, "dev/null",
		    MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NOEXEC) < 0)
		goto fail;
	*ret_step = "read-only root";
	if (mount(NULL, ".", NULL,
		  MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  opts) < 0)
		goto fail;
	/* pivot_root(".", "."): the old root is stacked on the new one;
	 * detaching it leaves only the jail */
	*ret_step = "pivot_root";
	if (syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		goto fail;
	goto out;
fail:
	rc = -errno;
out:
	if (dfd >= 0)
		close(dfd);
	if (nfd >= 0)
		close(nfd);
	return rc;
}

/* Where ".." leads from directory fd, 64 steps up: *ret, or -errno. */
static int top_of(int fd, struct stat *ret)
{
	int cur = fcntl(fd, F_DUPFD_CLOEXEC, 0), up;

	if (cur < 0)
		return -errno;
	for (int i = 0; i < 64; i++) {
		up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0)
			break;
		close(cur);
		cur = up;
	}
	up = fstat(cur, ret) < 0 ? -errno : 0;
	close(cur);
	return up;
}

int gw_jail_fds_inside(void)
{
	struct stat root, st, top;
	struct rlimit rl;
	int rc;

	if (stat("/", &root) < 0)
		return -errno;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	if (rl.rlim_cur > GW_JAIL_FDS_MAX)
		rl.rlim_cur = GW_JAIL_FDS_MAX;
	for (int fd = 0; fd < (int)rl.rlim_cur; fd++) {
		if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		rc = top_of(fd, &top);
		if (rc < 0)
			return rc;
		if (top.st_dev != root.st_dev || top.st_ino != root.st_ino)
			return -EXDEV; /* a way out of the jail */
	}
	return 0;
}

/* ---- seccomp ---- */

#define LD_NR                                                                  \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define LD_ARG(i)                                                              \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS,                                     \
		 offsetof(struct seccomp_data, args[i]))
#define RET(v)	 BPF_STMT(BPF_RET | BPF_K, (v))
#define KILL	 RET(SECCOMP_RET_KILL_PROCESS)
#define OK	 RET(SECCOMP_RET_ALLOW)
/* nr == n: allow */
#define ALLOW(n) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 1), OK
/* nr == n: allow when (args[i] & mask) == 0, else kill (A = nr after) */
#define ALLOW_CLEAR(n, i, mask)                                                \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 4), LD_ARG(i),             \
	    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, (mask), 0, 1), KILL, OK
/* nr == n: allow when args[i] has every bit of mask, else kill */
#define ALLOW_SET(n, i, mask)                                                  \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 5), LD_ARG(i),             \
	    BPF_STMT(BPF_ALU | BPF_AND | BPF_K, (mask)),                       \
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (mask), 1, 0), KILL, OK
/* nr == n: allow when args[i] == v, else kill */
#define ALLOW_EQ(n, i, v)                                                      \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 4), LD_ARG(i),             \
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (v), 1, 0), KILL, OK

static const struct sock_filter filter[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, GW_AUDIT_ARCH, 1, 0),
    KILL,
    LD_NR,
#ifdef __x86_64__
    /* x32 numbers reach the same table: never */
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1),
    KILL,
#endif
    /* serving */
    ALLOW(__NR_read),
    ALLOW(__NR_write),
    ALLOW(__NR_writev),
    ALLOW(__NR_pread64),
    ALLOW(__NR_close),
    ALLOW(__NR_lseek),
    ALLOW(__NR_fstat),
    /* the mirror directory listed: which versions a listing withholds */
    ALLOW(__NR_getdents64),
#ifdef __NR_newfstatat
    ALLOW(__NR_newfstatat),
#endif
    ALLOW(__NR_statx),
    ALLOW(__NR_fcntl),
    ALLOW(__NR_accept4),
    ALLOW(__NR_recvfrom),
    ALLOW(__NR_recvmsg),
    ALLOW(__NR_sendto),
    ALLOW(__NR_sendmsg),
    ALLOW(__NR_shutdown),
    ALLOW(__NR_setsockopt),
    ALLOW(__NR_getsockopt),
    ALLOW(__NR_getsockname),
    ALLOW(__NR_getpeername),
    ALLOW(__NR_epoll_create1),
    ALLOW(__NR_epoll_ctl),
#ifdef __NR_epoll_wait
    ALLOW(__NR_epoll_wait),
#endif
    ALLOW(__NR_epoll_pwait),
#ifdef __NR_poll
    ALLOW(__NR_poll),
#endif
    ALLOW(__NR_ppoll),
    ALLOW(__NR_eventfd2),
    ALLOW(__NR_pipe2),
    /* memory, threads, time, signals */
    ALLOW(__NR_mmap),
    ALLOW(__NR_munmap),
    ALLOW(__NR_mprotect),
    ALLOW(__NR_madvise),
    ALLOW(__NR_mremap),
    ALLOW(__NR_brk),
    ALLOW(__NR_futex),
    ALLOW(__NR_set_robust_list),
    ALLOW(__NR_rseq),
    ALLOW(__NR_sched_yield),
    ALLOW(__NR_sched_getaffinity),
    ALLOW(__NR_getrandom),
    ALLOW(__NR_gettid),
    ALLOW(__NR_getpid),
    ALLOW(__NR_geteuid),
    ALLOW(__NR_getuid),
    ALLOW(__NR_tgkill),
    ALLOW(__NR_clock_gettime),
    ALLOW(__NR_clock_nanosleep),
    ALLOW(__NR_nanosleep),
    ALLOW(__NR_gettimeofday),
    ALLOW(__NR_rt_sigprocmask),
    ALLOW(__NR_rt_sigaction),
    ALLOW(__NR_rt_sigreturn),
    ALLOW(__NR_rt_sigtimedwait),
    ALLOW(__NR_sigaltstack),
    ALLOW(__NR_exit),
    ALLOW(__NR_exit_group),
    /* the mirror and the allowlist: read-only opens */
    ALLOW_CLEAR(__NR_openat, 2, O_WRONLY | O_RDWR | O_CREAT | O_TRUNC),
    /* threads only, never a process; clone3's flags are out of reach
     * of a filter: ENOSYS, and glibc falls back to clone */
    ALLOW_SET(__NR_clone, 0, CLONE_THREAD),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
    RET(SECCOMP_RET_ERRNO | ENOSYS),
    /* libmicrohttpd names its threads */
    ALLOW_EQ(__NR_prctl, 0, PR_SET_NAME),
    KILL,
};

int gw_seccomp_install(void)
{
	struct sock_fprog prog = {
	    .len = (unsigned short)(sizeof(filter) / sizeof(filter[0])),
	    .filter = (struct sock_filter *)filter,
	};

#ifdef GW_ASAN
	__lsan_do_leak_check();
#endif
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		    SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0)
		return -errno;
	return 0;
}
