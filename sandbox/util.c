/* util.c: the deadline-bound read, unix-socket connect, binary lookup and
 * safe file calls shared inside sandbox/.
 *
 * Why the safe calls: a VMM runs as an unprivileged user but can write the
 * directories it works in (its run dir, a template dir while it is built),
 * and every VMM runs as the same user, so a compromised one can plant a
 * symlink or a FIFO where root will open a file, in its own dir or in
 * another VM's. Root therefore opens such files relative to a directory
 * fd, never following a link, never blocking, and checks what it got.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "util.h"

ssize_t sb__read_deadline(int fd, void *buf, size_t len, struct al_deadline d)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	for (;;) {
		ssize_t n;
		int r = poll(&p, 1, al_deadline_poll_ms(d));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		n = read(fd, buf, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		return n < 0 ? -errno : n;
	}
}

int sb__connect_unix(const char *path, struct al_deadline d)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int e;

		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		e = errno;
		close(fd);
		if (e != ENOENT && e != ECONNREFUSED)
			return -e;
		if (al_deadline_passed(d))
			return -ETIMEDOUT;
		usleep(2000);
	}
}

int sb__find_binary(const char *name, char *out, size_t size)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(name, '/')) {
		if (access(name, X_OK) < 0)
			return -errno;
		snprintf(out, size, "%s", name);
		return 0;
	}
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, name) <
			    (int)sizeof(buf) &&
		    access(buf, X_OK) == 0) {
			snprintf(out, size, "%s", buf);
			return 0;
		}
		path += n + (path[n] == ':');
	}
	return -ENOENT;
}

int sb__open_in(int dirfd, const char *name, int flags, mode_t mode,
		uid_t owner)
{
	struct stat st;
	int fd, r;

	if (!*name || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, ".."))
		return -EINVAL;
	if (flags & O_CREAT)
		flags |= O_EXCL;
	fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		    mode);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = -EINVAL;
	else if (owner != (uid_t)-1 && st.st_uid != owner)
		r = -EPERM;
	else
		return fd;
	close(fd);
	return r;
}

int sb__write_file(int dirfd, const char *name, const void *data, size_t len,
		   mode_t mode)
{
	int fd = sb__open_in(dirfd, name, O_WRONLY | O_CREAT, mode, geteuid());
	const char *p = data;
	int r = 0;

	if (fd < 0)
		return fd;
	while (r == 0 && len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			r = n < 0 ? -errno : -EIO;
		else
			p += n, len -= (size_t)n;
	}
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	return r;
}

int sb__open_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int sb__private_dir(const char *path, mode_t mode)
{
	struct stat st;
	mode_t want;
	int fd, r = 0;

	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return -errno;
	fd = sb__open_dir(path);
	if (fd < 0)
		return fd == -ELOOP || fd == -ENOTDIR ? -EPERM : fd;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (st.st_uid != geteuid() || (st.st_mode & 022))
		r = -EPERM; /* someone else may have written in it */
	if (r == 0) {
		want = (st.st_mode & 07700) | (mode & 077);
		if (want != (st.st_mode & 07777) && fchmod(fd, want) < 0)
			r = -errno;
	}
	close(fd);
	return r;
}

int sb__private_files(const char *path)
{
	struct dirent *e;
	struct stat st;
	DIR *d = NULL;
	int dfd, fd, r = 0;

	dfd = sb__open_dir(path);
	if (dfd < 0)
		return dfd;
	if (fstat(dfd, &st) < 0 || st.st_uid != geteuid()) {
		close(dfd);
		return -EPERM;
	}
	if ((st.st_mode & 07777) != 0700 && fchmod(dfd, 0700) < 0)
		r = -errno;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return r ? r : -errno;
	}
	while (r == 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		fd = sb__open_in(dirfd(d), e->d_name, O_RDONLY, 0, geteuid());
		if (fd < 0)
			continue; /* not a regular file of ours: never read */
		if (fstat(fd, &st) == 0 && (st.st_mode & 07777) != 0400 &&
		    fchmod(fd, 0400) < 0)
			r = -errno;
		close(fd);
	}
	closedir(d);
	return r;
}

/* Empty the directory open as `fd` (sb__remove_at's recursion). */
static int remove_entries(int fd, dev_t dev, unsigned depth)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;
	int r = 0;

	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}
	while ((e = readdir(d))) {
		struct stat st;
		int q;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		if (S_ISDIR(st.st_mode) && st.st_dev != dev)
			q = -EBUSY; /* a mount point: not ours to empty */
		else
			q = sb__remove_at(fd, e->d_name, depth);
		if (q < 0 && r == 0)
			r = q;
	}
	closedir(d);
	return r;
}

int sb__remove_at(int dirfd, const char *name, unsigned depth)
{
	struct stat st;
	int fd, r;

	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (depth == 0)
		return -ELOOP;
	fd = openat(dirfd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	r = remove_entries(fd, st.st_dev, depth - 1);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && r == 0)
		r = -errno;
	return r;
}

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U /* Linux 6.3: executable even under memfd_noexec */
#endif

int sb__sealed_memfd(const char *name, const void *data, size_t len, bool exec)
{
	const unsigned int flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	const unsigned int seals =
	    F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
	size_t off = 0;
	int fd, r;

	fd = memfd_create(name, flags | (exec ? MFD_EXEC : 0));
	if (fd < 0 && exec && errno == EINVAL) /* before 6.3: no MFD_EXEC */
		fd = memfd_create(name, flags);
	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, (const char *)data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : -EIO;
			close(fd);
			return r;
		}
		off += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, seals) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}
