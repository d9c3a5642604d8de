/* redistest.h: a real redis-server for a test, on a unix socket in a fresh
 * temp dir, no TCP port; killed and reaped by redistest_stop().
 *
 * `aof` turns on the append-only file with fsync on every write, for the
 * tests that restart the server mid-batch and expect nothing to be lost.
 */
#ifndef AL_REDISTEST_H
#define AL_REDISTEST_H

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct redistest {
	char dir[64];	/* temp dir: socket, AOF, log */
	char sock[100]; /* unix socket path */
	char url[160];	/* unix://... */
	pid_t pid;	/* redis-server, -1 when stopped */
	bool aof;	/* persistence on */
};

static inline void redistest_sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static inline bool redistest_ping(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	char buf[16];
	bool ok = false;
	int fd;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    write(fd, "PING\r\n", 6) == 6 && read(fd, buf, sizeof(buf)) > 0)
		ok = !strncmp(buf, "+PONG", 5);
	close(fd);
	return ok;
}

/* Start (or restart, keeping dir and data) the server. 0 or -1. */
static inline int redistest_start(struct redistest *t)
{
	char log[160];

	if (!t->dir[0]) {
		snprintf(t->dir, sizeof(t->dir), "/tmp/al-redis-XXXXXX");
		if (!mkdtemp(t->dir))
			return -1;
		snprintf(t->sock, sizeof(t->sock), "%s/redis.sock", t->dir);
		snprintf(t->url, sizeof(t->url), "unix://%s", t->sock);
	}
	snprintf(log, sizeof(log), "%s/redis.log", t->dir);
	t->pid = fork();
	if (t->pid < 0)
		return -1;
	if (t->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execlp("redis-server", "redis-server", "--port", "0",
		       "--unixsocket", t->sock, "--unixsocketperm", "700",
		       "--dir", t->dir, "--save", "", "--appendonly",
		       t->aof ? "yes" : "no", "--appendfsync", "always",
		       "--logfile", log, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		if (redistest_ping(t->sock))
			return 0;
		redistest_sleep_ms(10);
	}
	return -1;
}

/* Kill the server (SIGKILL unless `clean`) and reap it. */
static inline void redistest_kill(struct redistest *t, bool clean)
{
	if (t->pid <= 0)
		return;
	kill(t->pid, clean ? SIGTERM : SIGKILL);
	while (waitpid(t->pid, NULL, 0) < 0 && errno == EINTR)
		;
	t->pid = -1;
}

static inline void redistest_stop(struct redistest *t)
{
	char cmd[128];

	redistest_kill(t, false);
	if (t->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "redistest: could not remove %s\n",
				t->dir);
	}
	t->dir[0] = '\0';
}

#endif
