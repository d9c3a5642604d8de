/* util.c: the deadline-bound read, unix-socket connect and binary lookup
 * shared inside sandbox/. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "util.h"

ssize_t sb_read_deadline(int fd, void *buf, size_t len, struct al_deadline d)
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

int sb_connect_unix(const char *path, struct al_deadline d)
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

int sb_find_binary(const char *name, char *out, size_t size)
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
