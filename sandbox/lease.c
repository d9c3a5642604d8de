/* lease.c: per-VMM uids, leased by flock (see lease.h).
 *
 * The search starts at a random offset so that workers starting together
 * do not all race for the same first files; each probe is one openat()
 * (O_NOFOLLOW, relative to the checked dir fd: no symlink or rename in
 * the path can redirect it) and one non-blocking flock().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lease.h"

/* Open `dir`, making it 0700 if missing; it must be ours and private. */
static int open_lease_dir(const char *dir)
{
	struct stat st;
	int fd;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* Try to lock uid's file: its fd, or -EAGAIN if taken or unusable (a
 * symlink, FIFO or anything but our regular file planted there is never
 * followed, blocked on or trusted: that uid is skipped). */
static int try_uid(int dfd, uint32_t uid)
{
	char name[16];
	struct stat st;
	int fd;

	snprintf(name, sizeof(name), "%u", uid);
	fd = openat(dfd, name,
		    O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		    0600);
	if (fd < 0) /* a link (ELOOP), a dir: unusable, not an error */
		return errno == ELOOP || errno == ENXIO || errno == EISDIR
			       ? -EAGAIN
			       : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid()) {
		close(fd);
		return -EAGAIN;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int r = errno == EWOULDBLOCK ? -EAGAIN : -errno;

		close(fd);
		return r;
	}
	return fd;
}

int sb__lease_uid(const char *dir, uint32_t base, uint32_t count,
		  uid_t *ret_uid, int *ret_fd)
{
	uint32_t start = 0;
	int dfd, fd = -EAGAIN;

	/* never root, never (uid_t)-1 */
	if (base == 0 || count == 0 || (uint64_t)base + count > UINT32_MAX)
		return -EINVAL;
	dfd = open_lease_dir(dir);
	if (dfd < 0)
		return dfd;
	if (getrandom(&start, sizeof(start), 0) != sizeof(start))
		start = (uint32_t)getpid();
	for (uint32_t i = 0; i < count; i++) {
		uint32_t uid = base + (start + i) % count;

		fd = try_uid(dfd, uid);
		if (fd >= 0) {
			*ret_uid = uid;
			*ret_fd = fd;
			break;
		}
		if (fd != -EAGAIN)
			break;
	}
	close(dfd);
	return fd < 0 ? fd : 0;
}
