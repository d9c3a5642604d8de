/* util.c: clock and unix-socket helpers shared inside sandbox/. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

uint64_t sb_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int sb_remaining(uint64_t deadline)
{
	uint64_t now = sb_now_ms();

	if (now >= deadline)
		return 0;
	return deadline - now > INT32_MAX ? INT32_MAX : (int)(deadline - now);
}

int sb_connect_unix(const char *path, uint64_t deadline)
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
		if (sb_remaining(deadline) == 0)
			return -ETIMEDOUT;
		usleep(2000);
	}
}
