/* embed.c: the embedded mode (embed.h): a private redis-server and a
 * dispatcher child for the duration of one command.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <net/if.h>
#include <time.h>
#include <unistd.h>

#include "embed.h"
#include "gwrun.h"
#include "log.h"
#include "sandbox.h"
#include "sbconfig.h"

/* --- embedded mode
 * ------------------------------------------------------------ */

void al_embed_init(struct al_embed *e)
{
	memset(e, 0, sizeof(*e));
	e->redis = -1;
	e->serve = -1;
	e->gw = -1;
	e->stop_w = -1;
	e->lock_fd = -1;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static bool answers(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	char buf[8] = "";
	bool ok = false;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return false;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    write(fd, "PING\r\n", 6) == 6 && read(fd, buf, 5) == 5)
		ok = !memcmp(buf, "+PONG", 5);
	close(fd);
	return ok;
}

static void reap(pid_t *pid, unsigned wait_ms)
{
	int st;

	if (*pid <= 0)
		return;
	for (unsigned i = 0; i < wait_ms / 10; i++) {
		if (waitpid(*pid, &st, WNOHANG) == *pid) {
			*pid = -1;
			return;
		}
		sleep_ms(10);
	}
	kill(*pid, SIGKILL);
	while (waitpid(*pid, &st, 0) < 0 && errno == EINTR)
		;
	*pid = -1;
}

/* Remove the append-only files of an earlier run (a fresh start). */
static void aof_clear(const char *aofdir)
{
	DIR *d = opendir(aofdir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
}

/* With e->persist: lock and prepare STATE/embedded-redis/ (its path in
 * dir[]); "" when not persisting (or another command holds it). */
static void persist_dir(struct al_embed *e, const char *state_dir,
			char *dir, size_t len)
{
	char lock[4200], aof[4200];

	dir[0] = '\0';
	if (!e->persist)
		return;
	snprintf(lock, sizeof(lock), "%s/embedded-redis.lock", state_dir);
	e->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (e->lock_fd < 0 || flock(e->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		fprintf(stderr, "airlock: %s is held by another command: this "
				"one keeps no append-only file\n",
			lock);
		if (e->lock_fd >= 0)
			close(e->lock_fd);
		e->lock_fd = -1;
		return;
	}
	snprintf(dir, len, "%s/embedded-redis", state_dir);
	snprintf(aof, sizeof(aof), "%s/aof", dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		dir[0] = '\0';
		return;
	}
	if (!e->keep)
		aof_clear(aof);
}

int al_embed_redis(struct al_embed *e, const char *state_dir, char *err,
		   size_t errlen)
{
	pid_t parent = getpid();
	char pdir[4200];
	int n;

	/* ~/.local/state may not exist. 0755, as `airlock image build` makes
	 * it: root's state dir holds the images other users run from
	 * (README, "not root"); what is private in it (the embedded Redis,
	 * templates, snapshots) is a 0700 directory of its own. */
	n = sb_mkdirs(state_dir, 0755);
	if (n < 0) {
		snprintf(err, errlen, "state dir %s: %s", state_dir,
			 strerror(-n));
		return n;
	}
	n = snprintf(e->sock, sizeof(e->sock), "%s/redis-%d.sock", state_dir,
		     (int)parent);
	if (n < 0 || (size_t)n >= sizeof(e->sock)) {
		snprintf(err, errlen, "state dir %s: too long for a socket",
			 state_dir);
		return -ENAMETOOLONG;
	}
	snprintf(e->log, sizeof(e->log), "%s/redis-%d.log", state_dir,
		 (int)parent);
	snprintf(e->url, sizeof(e->url), "unix://%s", e->sock);
	unlink(e->sock);
	persist_dir(e, state_dir, pdir, sizeof(pdir));
	fflush(NULL);
	e->redis = fork();
	if (e->redis < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -errno;
	}
	if (e->redis == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		setpgid(0, 0); /* Ctrl-C is ours to handle, not its */
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
		}
		execlp("redis-server", "redis-server", "--port", "0",
		       "--unixsocket", e->sock, "--unixsocketperm", "700",
		       "--dir", pdir[0] ? pdir : state_dir, "--save", "",
		       "--appendonly", pdir[0] ? "yes" : "no",
		       "--appenddirname", "aof", "--appendfsync", "always",
		       "--daemonize", "no", "--logfile", e->log, "--loglevel",
		       "warning", (char *)NULL);
		fprintf(stderr, "airlock: redis-server: %s\n", strerror(errno));
		_exit(127);
	}
	for (int i = 0; i < 1000; i++) { /* 10 s */
		int st;

		if (answers(e->sock))
			return 0;
		if (waitpid(e->redis, &st, WNOHANG) == e->redis) {
			e->redis = -1;
			snprintf(err, errlen,
				 "embedded redis-server exited at start (is "
				 "it installed? log: %s)",
				 e->log);
			return -ECHILD;
		}
		sleep_ms(10);
	}
	snprintf(err, errlen, "embedded redis-server did not answer in 10 s");
	reap(&e->redis, 0);
	return -ETIMEDOUT;
}

int al_embed_start(struct al_embed *e, struct al_config *cfg,
		   const struct al_policy *policy, char *err, size_t errlen)
{
	char state[AL_CONFIG_STATE_DIR_MAX + 1];
	struct al_serve_opts so; /* read by the dispatcher child, forked here */
	struct sb_options sb;
	struct alq_url url;
	int r;

	r = al_sandbox_options(cfg, &sb, err, errlen);
	if (r < 0)
		return r;
	r = al_config_state_dir(cfg, state, sizeof(state));
	if (r < 0) {
		snprintf(err, errlen, "state dir: %s", strerror(-r));
		return r;
	}
	r = al_embed_redis(e, state, err, errlen);
	if (r < 0)
		return r;
	snprintf(cfg->redis.url, sizeof(cfg->redis.url), "%s", e->url);
	if (alq_url_parse(e->url, &url) < 0) {
		snprintf(err, errlen, "embedded redis: bad socket path");
		return -EINVAL;
	}
	al_config_serve_opts(cfg, &url, policy, &sb, &so);
	al_cli_warn_unjailed(&sb);
	/* the package gateway, unless a serve on this host keeps one */
	if (al_gw_wanted(cfg) && !if_nametoindex(SB_NET_GW_HOST_IF)) {
		char gerr[512];

		e->gw = al_gw_spawn(cfg, gerr, sizeof(gerr));
		if (e->gw < 0)
			al_warn("%s: jobs with network \"%s\" will not reach "
				"it",
				gerr, AL_GW_POLICY);
	}
	r = al_embed_serve(e, &so);
	if (r < 0)
		snprintf(err, errlen, "starting the dispatcher: %s",
			 strerror(-r));
	return r;
}

int al_embed_serve(struct al_embed *e, struct al_serve_opts *o)
{
	pid_t parent = getpid();
	int p[2], r;

	if (alq_url_parse(e->url, &o->url) < 0)
		return -EINVAL;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	fflush(NULL);
	e->serve = fork();
	if (e->serve < 0) {
		r = -errno;
		close(p[0]);
		close(p[1]);
		return r;
	}
	if (e->serve == 0) {
		close(p[1]);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		setpgid(0, 0); /* Ctrl-C reaches us; we stop it */
		/* the embedded Redis's lock is the command's: a dispatcher
		 * still draining after a second Ctrl-C must not hold it
		 * against an immediate --resume (issue 37) */
		if (e->lock_fd >= 0)
			close(e->lock_fd);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		/* the command's own output is what the user reads */
		if (al_log_level > AL_LOG_WARN)
			al_log_level = AL_LOG_WARN;
		o->stop_fd = p[0];
		r = al_serve_run(o);
		_exit(r < 0 ? 1 : 0);
	}
	close(p[0]);
	e->stop_w = p[1];
	return 0;
}

bool al_embed_serve_gone(struct al_embed *e, int *ret_status)
{
	int st;

	if (e->serve <= 0)
		return true;
	if (waitpid(e->serve, &st, WNOHANG) != e->serve)
		return false;
	e->serve = -1;
	if (ret_status)
		*ret_status = st;
	return true;
}

void al_embed_stop(struct al_embed *e, uint32_t grace_ms)
{
	if (e->stop_w >= 0) {
		close(e->stop_w); /* the dispatcher drains on EOF */
		e->stop_w = -1;
	}
	reap(&e->serve, grace_ms + 5000);
	al_gw_stop(e->gw);
	e->gw = -1;
	if (e->redis > 0) {
		kill(e->redis, SIGTERM);
		reap(&e->redis, 5000);
	}
	if (e->sock[0])
		unlink(e->sock);
	if (e->log[0])
		unlink(e->log);
	if (e->lock_fd >= 0) {
		close(e->lock_fd); /* after Redis is gone: the file is ours */
		e->lock_fd = -1;
	}
}
