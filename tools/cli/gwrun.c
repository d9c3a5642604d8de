/* gwrun.c: the package gateway's keeper (gwrun.h).
 *
 * Theory of operation. The keeper is forked by serve (or the embedded
 * mode) before any thread starts, and dies with it (PR_SET_PDEATHSIG).
 * For each start it forks a child that unshares its network namespace
 * and waits on a pipe; the keeper, still in the host's namespace, makes
 * the veth into the child's namespace (sb_net_gateway_link(): the host's
 * wall first, which refuses anything the gateway starts itself) and
 * tells the child to go on; the child gives its namespace its address
 * and a route to the slots only (sb_net_gateway_inner()), marks every fd
 * it inherited close-on-exec and execs airlock-gateway, which binds,
 * opens its files and drops to its own uid (gateway/main.c) before it
 * reads a byte from a VM. When the gateway dies the keeper reaps it, says
 * so, deletes the veth (its namespace would take it along, but lazily)
 * and starts another.
 * SIGTERM: the gateway gets SIGTERM, is reaped, the keeper exits.
 *
 * The keeper is also the audit records' relay (gwrelay.h): every 100 ms
 * it adds the new lines of the gateway's audit file to the Redis stream
 * on serve's own Redis URL. The gateway gets no Redis address and holds
 * no connection (gateway/main.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gwrelay.h"
#include "gwrun.h"
#include "log.h"
#include "queue.h"
#include "sandbox.h"

#define GW_BACKOFF_MAX_S 30 /* the longest pause between starts */
#define GW_YOUNG_S	 60 /* a gateway that died sooner died young */

bool al_gw_wanted(const struct al_config *cfg)
{
	for (size_t i = 0; i < cfg->network.n; i++)
		if (!strcmp(cfg->network.policy[i].name, AL_GW_POLICY))
			return true;
	return false;
}

/* What the keeper execs. */
struct gw_argv {
	char bin[PATH_MAX];
	char dir[PATH_MAX];
	char listen[32];
	bool have_url;	    /* the audit stream's Redis is url */
	struct alq_url url; /* serve's own: the relay's, never the gateway's */
};

/* The child: wait for the keeper's link, then the namespace's inside,
 * then exec the gateway. Never returns. */
static void child(const struct gw_argv *a, int ready_w, int go_r)
{
	char err[256] = "", go = 0;
	const char *argv[6];
	int n = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (unshare(CLONE_NEWNET) < 0) {
		fprintf(stderr, "airlock: gateway: unshare: %s\n",
			strerror(errno));
		_exit(1);
	}
	if (write(ready_w, "r", 1) != 1 || read(go_r, &go, 1) != 1 || go != 'g')
		_exit(1); /* the keeper said why */
	if (sb_net_gateway_inner(err, sizeof(err)) < 0) {
		fprintf(stderr, "airlock: gateway: %s\n", err);
		_exit(1);
	}
	argv[n++] = a->bin;
	argv[n++] = "--dir";
	argv[n++] = a->dir;
	argv[n++] = "--listen";
	argv[n++] = a->listen;
	argv[n] = NULL;
	/* its stdout (`listening on`) joins serve's log */
	dup2(STDERR_FILENO, STDOUT_FILENO);
	/* whatever serve had open stays here, whoever opened it */
	syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
	execv(a->bin, (char *const *)argv);
	fprintf(stderr, "airlock: gateway: %s: %s\n", a->bin, strerror(errno));
	_exit(127);
}

/* One gateway started: its pid, or -errno (said). */
static pid_t start(const struct gw_argv *a)
{
	int ready[2], go[2], ns = -1, r;
	char path[64], err[256] = "", c = 0;
	pid_t pid;

	if (pipe2(ready, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(go, O_CLOEXEC) < 0) {
		r = -errno;
		close(ready[0]);
		close(ready[1]);
		return r;
	}
	pid = fork();
	if (pid == 0) {
		close(ready[0]);
		close(go[1]);
		child(a, ready[1], go[0]);
	}
	close(ready[1]);
	close(go[0]);
	r = pid < 0 ? -errno : 0;
	if (r == 0 && read(ready[0], &c, 1) != 1)
		r = -ECHILD; /* it said why */
	if (r == 0) {
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
		ns = open(path, O_RDONLY | O_CLOEXEC);
		r = ns < 0 ? -errno : sb_net_gateway_link(ns, err, sizeof(err));
		if (ns >= 0)
			close(ns);
		if (r < 0)
			al_warn("gateway: %s", err[0] ? err : strerror(-r));
	}
	if (r == 0 && write(go[1], "g", 1) != 1)
		r = -EPIPE;
	close(ready[0]);
	close(go[1]);
	if (r < 0 && pid > 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (r != -EEXIST) /* else another gateway's */
			sb_net_gateway_unlink();
	}
	if (r == 0)
		al_info("gateway: started, pid %d, on %s", (int)pid, a->listen);
	return r < 0 ? r : pid;
}

static volatile sig_atomic_t stopping;

static void on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

/* 100 ms of the keeper's time: the audit records relayed, then a nap. */
static void tick(struct al_gw_relay *relay)
{
	static int said; /* the error said last: each said once in a row */
	int r = al_gw_relay_poll(relay);

	if (r < 0 && r != said)
		al_warn("gateway: audit relay: %s: %s", relay->path,
			strerror(-r));
	said = r < 0 ? r : 0;
	usleep(100000);
}

/* A gateway that ended: said, its link gone. */
static void ended(pid_t pid, int st)
{
	if (WIFSIGNALED(st))
		al_warn("gateway: pid %d killed by signal %d", (int)pid,
			WTERMSIG(st));
	else
		al_warn("gateway: pid %d exited, status %d", (int)pid,
			WEXITSTATUS(st));
	sb_net_gateway_unlink();
}

/* The keeper's loop. Never returns. */
static void keep(const struct gw_argv *a)
{
	struct sigaction sa = {.sa_handler = on_term};
	struct al_gw_relay relay;
	unsigned backoff = 1;
	pid_t pid = -1;
	int st;

	sigset_t set;

	if (al_gw_relay_init(&relay, a->dir, a->have_url ? &a->url : NULL) < 0)
		al_warn("gateway: audit relay: %s: name too long", a->dir);

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN); /* a Redis gone: an error, not our death */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	while (!stopping) {
		time_t t0 = time(NULL);

		pid = start(a);
		while (pid > 0 && !stopping) {
			/* polled: a SIGTERM between a check and a blocking
			 * wait would be missed */
			if (waitpid(pid, &st, WNOHANG) != pid) {
				tick(&relay);
				continue;
			}
			ended(pid, st);
			pid = -1;
		}
		if (stopping)
			break;
		if (time(NULL) - t0 >= GW_YOUNG_S)
			backoff = 1;
		al_info("gateway: starting again in %u s", backoff);
		for (unsigned i = 0; i < backoff * 10 && !stopping; i++)
			tick(&relay);
		if (backoff < GW_BACKOFF_MAX_S)
			backoff = backoff * 2 > GW_BACKOFF_MAX_S
				      ? GW_BACKOFF_MAX_S
				      : backoff * 2;
	}
	if (pid > 0) {
		kill(pid, SIGTERM);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		sb_net_gateway_unlink();
	}
	/* its last records */
	while (al_gw_relay_poll(&relay) > 0)
		;
	al_gw_relay_release(&relay);
	_exit(0);
}

static int argv_of(const struct al_config *cfg, struct gw_argv *a, char *err,
		   size_t errlen)
{
	char state[AL_CONFIG_STATE_DIR_MAX + 1];
	const char *env = getenv("AIRLOCK_GATEWAY");
	int r;

	memset(a, 0, sizeof(*a));
	if (env && *env)
		snprintf(a->bin, sizeof(a->bin), "%s", env);
	else if (al_install_path(AL_REL_GATEWAY, AL_GATEWAY_BIN, a->bin,
				 sizeof(a->bin)) < 0)
		snprintf(a->bin, sizeof(a->bin), "%s", AL_GATEWAY_BIN);
	if (access(a->bin, X_OK) < 0) {
		snprintf(err, errlen, "gateway: %s: %s (AIRLOCK_GATEWAY)",
			 a->bin, strerror(errno));
		return -ENOENT;
	}
	r = al_config_state_dir(cfg, state, sizeof(state));
	if (r < 0 || snprintf(a->dir, sizeof(a->dir), "%s/packages", state) >=
			 (int)sizeof(a->dir)) {
		snprintf(err, errlen, "gateway: state dir: %s",
			 strerror(r < 0 ? -r : ENAMETOOLONG));
		return r < 0 ? r : -ENAMETOOLONG;
	}
	snprintf(a->listen, sizeof(a->listen), "%s:%d", SB_NET_GW_IP,
		 SB_NET_GW_PORT);
	/* the audit stream: the keeper relays to serve's own Redis (any
	 * URL serve takes); the gateway never learns it */
	if (cfg->redis.url[0] && alq_url_parse(cfg->redis.url, &a->url) == 0)
		a->have_url = true;
	return 0;
}

pid_t al_gw_spawn(const struct al_config *cfg, char *err, size_t errlen)
{
	pid_t parent = getpid(), pid;
	struct gw_argv a;
	int r;

	if (geteuid() != 0) {
		snprintf(err, errlen,
			 "the [network." AL_GW_POLICY "] policy needs the "
			 "package gateway, which needs root (its network "
			 "namespace, its uid)");
		return -EPERM;
	}
	r = argv_of(cfg, &a, err, errlen);
	if (r < 0)
		return r;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		r = -errno;
		snprintf(err, errlen, "gateway: fork: %s", strerror(-r));
		return r;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		/* Ctrl-C reaches the command, which stops us (al_gw_stop) */
		setpgid(0, 0);
		signal(SIGCHLD, SIG_DFL);
		keep(&a);
	}
	return pid;
}

void al_gw_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}
