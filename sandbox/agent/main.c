/* main.c: airlock-agent entry point: PID 1 in the guest, or a test server.
 *
 * As PID 1 it sets up the guest (init.c) and serves the guest channels
 * forever: init must never exit, so every failure is reported and the loop
 * goes on. Started any other way it needs --serve-fd N or --socket PATH and
 * serves one connection, so the step executor can be tested on a host:
 *
 *   airlock-agent --serve-fd 3 [--work-dir DIR] [--cgroup-root DIR]
 *                 [--as-self]
 *
 * --as-self keeps our own uid (tests as an ordinary user); without it steps
 * run as uid/gid 1000, which needs root.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"
#include "opts.h"

static int listen_unix(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int lfd, fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -errno;
	unlink(path);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(lfd, 1) < 0) {
		fd = -errno;
		goto out;
	}
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		fd = -errno;
out:
	close(lfd);
	unlink(path);
	return fd;
}

static int parse_args(int argc, char **argv, struct al_agent_config *cfg)
{
	static const struct al_opt opts[] = {
	    {"serve-fd", 'f', AL_OPT_ARG},
	    {"socket", 's', AL_OPT_ARG},
	    {"work-dir", 'w', AL_OPT_ARG},
	    {"cgroup-root", 'c', AL_OPT_ARG},
	    {"as-self", 'a', 0},
	    {NULL, 0, 0},
	};
	int c;

	while ((c = al_opts_next(argc, argv, opts)) != -1) {
		switch (c) {
		case 'f':
			cfg->serve_fd = atoi(optarg);
			break;
		case 's':
			cfg->socket_path = optarg;
			break;
		case 'w':
			cfg->work_dir = optarg;
			break;
		case 'c':
			cfg->cgroup_root = optarg;
			break;
		case 'a':
			cfg->drop_ids = false;
			break;
		default:
			return -EINVAL;
		}
	}
	if (!cfg->init && cfg->serve_fd < 0 && !cfg->socket_path)
		return -EINVAL;
	return 0;
}

/* PID 1: nothing may make us exit. */
static __attribute__((noreturn)) void run_init(struct al_agent *a)
{
	for (;;) {
		al_agent_serve(a, -1);
		sleep(1);
	}
}

int main(int argc, char **argv)
{
	struct al_agent_config cfg = {
	    .init = getpid() == 1,
	    .work_dir = "/work",
	    .scratch_dir = "/run/airlock/scratch",
	    .drop_ids = true,
	    .uid = AL_AGENT_UID,
	    .gid = AL_AGENT_GID,
	    .serve_fd = -1,
	};
	struct al_agent a = {
	    .cfg = &cfg, .sig_fd = -1, .work_fd = -1, .random_fd = -1,
	    .zygote_fd = -1};
	int fd;

	if (parse_args(argc, argv, &cfg) < 0 && !cfg.init) {
		fprintf(stderr, "usage: airlock-agent --serve-fd N | --socket "
				"PATH [--work-dir DIR] [--cgroup-root DIR] "
				"[--as-self]\n");
		return 2;
	}
	if (cfg.init) {
		cfg.cgroup_root = "/sys/fs/cgroup";
		al_agent_init_system(&cfg);
	} else {
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	}
	if (al_agent_signals(&a) < 0)
		al_agent_log("signalfd: %s", strerror(errno));
	a.work_fd = open(cfg.work_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (a.work_fd < 0)
		al_agent_log("work dir %s: %s", cfg.work_dir, strerror(errno));
	if (cfg.init) {
		/* opened once: a clone's first request (reseed) then costs no
		 * path walk, which under TCG is code translated anew per VM */
		a.random_fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
		if (a.random_fd < 0)
			al_agent_log("/dev/urandom: %s", strerror(errno));
		run_init(&a);
	}
	fd = cfg.socket_path ? listen_unix(cfg.socket_path) : cfg.serve_fd;
	if (fd < 0) {
		al_agent_log("socket: %s", strerror(-fd));
		return 1;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC); /* steps must never see the channel */
	return al_agent_serve(&a, fd) < 0 ? 1 : 0;
}
