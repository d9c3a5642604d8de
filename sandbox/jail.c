/* jail.c: the VMM's jail, entered by vmm.c's child between clone and exec.
 *
 * Theory of operation. QEMU is semi-trusted: a guest escape runs as QEMU.
 * The child is cloned into new mount, pid, ipc, uts and net namespaces
 * (vmm.c), so it is pid 1 of a pid namespace that holds QEMU alone, and
 * its network namespace has only a `lo` that is down. Here it then:
 *
 *   1. makes every mount private (nothing propagates back to the host),
 *   2. mounts a small tmpfs on the jail dir and fills it: /usr read-only
 *      (QEMU, its libraries, its firmware: merged-usr, so bin, lib, lib64
 *      and sbin are symlinks into it), /etc/ld.so.cache read-only, /dev
 *      with bind-mounted null, zero, urandom (plus kvm under KVM; the
 *      vsock carrier's vhost device comes as an fd we opened), a /proc
 *      of the new pid namespace (QEMU opens guest
 *      RAM as /proc/self/fd/N), and the files the command line names
 *      (kernel, initrd, root disk) read-only at their own paths,
 *   3. remounts that root read-only and pivot_root()s into it, detaching
 *      the host's tree: no host file, socket or process is reachable,
 *   4. (sb__jail_drop) rlimits (no core, FSIZE as asked, a NOFILE cap),
 *      PR_SET_NO_NEW_PRIVS, an empty capability bounding set, and the
 *      VMM's own uid and gid (a lease: no other live VMM has them).
 *
 * No step allocates: the child of a multi-threaded parent may not. Paths
 * are built in stack buffers. Any failure fails the launch (vmm.c): a
 * QEMU never starts unjailed when a jail was asked for.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

#include "jail.h"

#define JAIL_HOSTNAME "airlock-vm"
#define JAIL_NOFILE 4096 /* QEMU's own fds: eventfds, vhost, the chardevs */
#define RO_FLAGS (MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)

/* Create the parents of relative path `rel` (mkdir -p of its dirname). */
static int make_parents(const char *rel)
{
	char buf[PATH_MAX];
	size_t n = strlen(rel);

	if (n >= sizeof(buf))
		return errno = ENAMETOOLONG, -1;
	memcpy(buf, rel, n + 1);
	for (char *s = strchr(buf, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		if (buf[0] && mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return 0;
}

/* Bind `src` onto relative `dst` (a dir or a file, made here) with
 * `flags` for the remount (0: keep the bind's own). */
static int bind_in(const char *src, const char *dst, bool dir,
		unsigned long flags)
{
	int fd;

	if (make_parents(dst) < 0)
		return -1;
	if (dir) {
		if (mkdir(dst, 0755) < 0 && errno != EEXIST)
			return -1;
	} else {
		fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);
		if (fd < 0)
			return -1;
		close(fd);
	}
	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		return -1;
	return flags ? mount(NULL, dst, NULL, flags, NULL) : 0;
}

/* /dev: a few nodes, each bound from the host's /dev. */
static int make_dev(const struct vmm_jail *j)
{
	static const char *const always[] = {"null", "zero", "urandom"};
	char src[64], dst[64];
	const unsigned long fl = MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NOEXEC;

	for (size_t i = 0; i < 3u + (j->kvm ? 1u : 0u); i++) {
		const char *name = i < 3 ? always[i] : "kvm";

		snprintf(src, sizeof(src), "/dev/%s", name);
		snprintf(dst, sizeof(dst), "dev/%s", name);
		if (bind_in(src, dst, false, fl) < 0)
			return -1;
	}
	return 0;
}

/* The tree under the new root (the cwd). */
static int make_tree(const struct vmm_jail *j, const char **step)
{
	static const char *const links[] = {"bin", "lib", "lib64", "sbin"};
	char target[16];

	*step = "bind /usr";
	if (bind_in("/usr", "usr", true, RO_FLAGS) < 0)
		return -1;
	*step = "symlinks";
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(target, sizeof(target), "usr/%s", links[i]);
		if (symlink(target, links[i]) < 0)
			return -1;
	}
	*step = "bind /etc/ld.so.cache";
	if (bind_in("/etc/ld.so.cache", "etc/ld.so.cache", false, RO_FLAGS) < 0)
		return -1;
	*step = "/dev";
	if (make_dev(j) < 0)
		return -1;
	*step = "bind image files";
	for (size_t i = 0; i < j->n_files; i++)
		if (bind_in(j->files[i], j->files[i] + 1, false, RO_FLAGS) < 0)
			return -1;
	*step = "mount /proc";
	if (mkdir("proc", 0555) < 0 ||
	    mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0)
		return -1;
	return 0;
}

int sb__jail_enter(const struct vmm_jail *j, const char **ret_step)
{
	const char *opts = "mode=0755,size=256k,nr_inodes=256";

	*ret_step = "private mounts";
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -1;
	*ret_step = "tmpfs root";
	if (mount("tmpfs", j->root, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0 ||
	    chdir(j->root) < 0)
		return -1;
	if (make_tree(j, ret_step) < 0)
		return -1;
	*ret_step = "read-only root";
	if (mount(NULL, ".", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
		  opts) < 0)
		return -1;
	/* pivot_root(".", "."): the old root ends up stacked on the new
	 * one, and detaching it leaves only the jail */
	*ret_step = "pivot_root";
	if (syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return -1;
	*ret_step = "hostname";
	return sethostname(JAIL_HOSTNAME, sizeof(JAIL_HOSTNAME) - 1);
}

static int set_limit(int what, rlim_t v)
{
	struct rlimit rl = {v, v};

	return setrlimit(what, &rl);
}

/* Empty the capability bounding set: nothing exec'd can regain any. */
static int drop_bounding_set(void)
{
	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				return 0; /* past the kernel's last cap */
			return -1;
		}
	return 0;
}

int sb__jail_drop(const struct vmm_jail *j, const struct vmm_creds *c,
		  const char **ret_step)
{
	gid_t groups[1] = {c->extra};

	*ret_step = "rlimits";
	if (set_limit(RLIMIT_CORE, 0) < 0 ||
	    set_limit(RLIMIT_NOFILE, JAIL_NOFILE) < 0 ||
	    set_limit(RLIMIT_FSIZE, j->fsize) < 0)
		return -1;
	*ret_step = "no_new_privs";
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	*ret_step = "capability bounding set";
	if (drop_bounding_set() < 0)
		return -1;
	*ret_step = "uid";
	if (c->uid == 0)
		return errno = EPERM, -1; /* a jail never runs QEMU as root */
	if (setgroups(c->extra ? 1 : 0, groups) < 0 || setgid(c->gid) < 0 ||
	    setuid(c->uid) < 0)
		return -1;
	return 0;
}
