/* main.c: airlock-gateway, the package gateway program (docs/packages.md).
 *
 * Theory of operation. Everything that needs privileges happens first,
 * in this order: every fd inherited past stderr is closed, the listening
 * socket is bound, the packages dir's mirror and slots dirs are made,
 * the audit file is opened O_APPEND; then, when started as root, the
 * process enters its jail (jail.h): a mount namespace whose root holds
 * only the packages dir (read-only) and /dev/null, where the mirror and
 * slots dirs are opened again from inside (a directory fd opened before
 * pivot_root would lead out of the jail by ".."), and the jail checks
 * that no fd it holds is a directory outside its root. It drops to the
 * gateway's own uid and gid (--uid, default GW_UID: a uid no VM, worker
 * or person uses), with no supplementary groups, no capabilities and
 * no_new_privs; a seccomp filter allows only the system calls serving
 * needs. Only then does it parse a byte from a client. A gateway
 * compromised through its parser holds: its uid, read access to the
 * packages dir (the mirror, the allowlist, the slots; nothing else of the
 * host's files), append to the audit file, the listening socket, and no
 * way to open a socket, connect, exec, fork or write a file by name. It
 * holds no Redis connection: its records reach the Redis stream through
 * a relay that reads the audit file (tools/cli/gwrelay.c), which can
 * only add them.
 *
 * It prints `listening on ADDR:PORT` on stdout once it serves, and stops
 * on SIGTERM or SIGINT.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "audit.h"
#include "jail.h"
#include "opts.h"
#include "pkgfile.h"
#include "serve.h"

#define GW_FDS_WANT 4096    /* fds: connections (1024) and the rest */
#define GW_UID	    1199999 /* below the VMMs' range (sandbox.vmm_uid_base) */

static const char usage[] =
    "usage: airlock-gateway --dir DIR [--listen ADDR:PORT] [--uid UID]\n"
    "                       [--threads N] [--per-ip N] [--timeout S] "
    "[--quiet]\n"
    "\n"
    "Serve pip (/pypi/simple/) and npm (the root) from DIR/mirror, only the\n"
    "files DIR/packages.allow pins, every request recorded in\n"
    "DIR/audit.jsonl. DIR is what `airlock packages` manages.\n"
    "\n"
    "  -d, --dir DIR          the packages dir\n"
    "  -l, --listen ADDR:PORT address to listen on (default 127.0.0.1:0,\n"
    "                         any free port; the chosen one is printed)\n"
    "  -u, --uid UID          as root, run as UID (default 1199999)\n"
    "  -t, --threads N        worker threads (default 2)\n"
    "  -p, --per-ip N         connections from one address (default 64)\n"
    "  -T, --timeout S        idle connection timeout, s (default 10)\n"
    "  -R, --rate N           requests a second from one address, bursts of\n"
    "                         2N; more are answered 429 (default 200; 0: no "
    "cap)\n"
    "  -q, --quiet            log refusals and incidents only\n";

static int listen_on(const char *spec, char *shown, size_t size)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof(sin);
	char addr[64];
	const char *colon = strrchr(spec, ':');
	long port;
	int fd, one = 1;

	if (!colon || (size_t)(colon - spec) >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, spec, (size_t)(colon - spec));
	addr[colon - spec] = '\0';
	port = strtol(colon + 1, NULL, 10);
	if (port < 0 || port > 65535 ||
	    inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return -EINVAL;
	sin.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(fd, 1024) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) < 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	snprintf(shown, size, "%s:%u", addr, ntohs(sin.sin_port));
	return fd;
}

static int drop_to(uid_t uid)
{
	if (geteuid() != 0)
		return 0; /* already unprivileged: nothing to drop */
	if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
	    setresuid(uid, uid, uid) < 0)
		return -errno;
	if (setuid(0) == 0)
		return -EPERM; /* the drop did not hold */
	return 0;
}

static int open_dir(const char *dir, const char *name, bool create)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (create && mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Room for every connection libmicrohttpd may hold (serve.c: 1024 at
 * most) and the gateway's own files: a soft fd limit of 1024, the usual
 * default, would make accept() fail for every VM once hostile clients
 * hold about 1000 connections. Raised up to the hard limit, before the
 * jail (whose filter has no setrlimit). */
static void fd_room(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= GW_FDS_WANT)
		return;
	rl.rlim_cur = rl.rlim_max < GW_FDS_WANT ? rl.rlim_max : GW_FDS_WANT;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		fprintf(stderr, "airlock-gateway: fd limit stays %llu: %s\n",
			(unsigned long long)rl.rlim_cur, strerror(errno));
}

/* What main() gathers from its arguments and opens. */
struct gw_main {
	struct gw_serve_options o;
	const char *dir;	 /* the packages dir */
	const char *listen_spec; /* ADDR:PORT */
	uid_t uid;		 /* dropped to, as root */
	char shown[96];		 /* the address bound, for people */
	char allow[4096];	 /* the allowlist's path, as we see it */
};

/* The options; 0, 1 (--help said) or 2 (usage said). */
static int parse_args(int argc, char **argv, struct gw_main *m)
{
	static const struct al_opt opts[] = {
	    {"dir", 'd', AL_OPT_ARG | AL_OPT_SHORT},
	    {"listen", 'l', AL_OPT_ARG | AL_OPT_SHORT},
	    {"uid", 'u', AL_OPT_ARG | AL_OPT_SHORT},
	    {"threads", 't', AL_OPT_ARG | AL_OPT_SHORT},
	    {"per-ip", 'p', AL_OPT_ARG | AL_OPT_SHORT},
	    {"timeout", 'T', AL_OPT_ARG | AL_OPT_SHORT},
	    {"quiet", 'q', AL_OPT_SHORT},
	    {"rate", 'R', AL_OPT_ARG | AL_OPT_SHORT},
	    {"help", 'h', AL_OPT_SHORT},
	    {NULL, 0, 0},
	};
	int c;

	while ((c = al_opts_next(argc, argv, opts)) != -1) {
		unsigned long v = optarg ? strtoul(optarg, NULL, 10) : 0;

		switch (c) {
		case 'd':
			m->dir = optarg;
			break;
		case 'l':
			m->listen_spec = optarg;
			break;
		case 'u':
			m->uid = (uid_t)v;
			break;
		case 't':
			m->o.threads = (unsigned)v;
			break;
		case 'p':
			m->o.per_ip_max = (unsigned)v;
			break;
		case 'T':
			m->o.timeout_s = (unsigned)v;
			break;
		case 'q':
			m->o.quiet = true;
			break;
		case 'R':
			m->o.rate = (unsigned)v;
			break;
		case 'h':
			fputs(usage, stdout);
			return 1;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (!m->dir || optind != argc || m->uid == 0 || m->o.threads > 64) {
		fputs(usage, stderr);
		return 2;
	}
	return 0;
}

/* Bind, make the packages dir, open the mirror, slots and the audit
 * file. 0, or -1 (said). */
static int open_files(struct gw_main *m)
{
	char audit[4200];

	snprintf(m->allow, sizeof(m->allow), "%s/packages.allow", m->dir);
	snprintf(audit, sizeof(audit), "%s/audit.jsonl", m->dir);
	m->o.listen_fd = listen_on(m->listen_spec, m->shown, sizeof(m->shown));
	if (m->o.listen_fd < 0) {
		fprintf(stderr, "airlock-gateway: cannot listen on %s: %s\n",
			m->listen_spec, strerror(-m->o.listen_fd));
		return -1;
	}
	umask(022);
	if (mkdir(m->dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "airlock-gateway: %s: %s\n", m->dir,
			strerror(errno));
		return -1;
	}
	m->o.mirror_fd = open_dir(m->dir, "mirror", true);
	/* the workers name each slot's job here (worker/job.c) */
	m->o.slots_fd = open_dir(m->dir, "slots", true);
	m->o.audit_fd =
	    open(audit, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		 0640);
	if (m->o.mirror_fd < 0 || m->o.slots_fd < 0 || m->o.audit_fd < 0) {
		fprintf(stderr,
			"airlock-gateway: %s: cannot open the mirror, the "
			"slots or the audit log: %s\n",
			m->dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* As root: the jail, the packages dir's fds opened again inside it, and
 * the check that no fd leads out. 0, or -1 (said). */
static int jail(struct gw_main *m)
{
	const char *step = "";
	char sha[GW_SHA512_B64 + 1];
	int rc;

	/* libcrypto reads its config at first use: before the jail */
	gw_sha256_hex((const uint8_t *)"", 0, sha);
	gw_sha512_b64((const uint8_t *)"", 0, sha);
	rc = gw_jail_enter(m->dir, &step);
	if (rc == 0) {
		step = "open the mirror and slots inside";
		close(m->o.mirror_fd);
		close(m->o.slots_fd);
		m->o.mirror_fd = open_dir(GW_JAIL_DIR, "mirror", false);
		m->o.slots_fd = open_dir(GW_JAIL_DIR, "slots", false);
		rc = m->o.mirror_fd < 0	 ? m->o.mirror_fd
		     : m->o.slots_fd < 0 ? m->o.slots_fd
					 : 0;
	}
	if (rc == 0) {
		step = "no fd leads out";
		rc = gw_jail_fds_inside();
	}
	if (rc < 0) {
		fprintf(stderr,
			"airlock-gateway: cannot enter the jail (%s): %s\n",
			step, strerror(-rc));
		return -1;
	}
	snprintf(m->allow, sizeof(m->allow), "%s/packages.allow", GW_JAIL_DIR);
	return 0;
}

/* The uid, no_new_privs, the seccomp filter. 0, or -1 (said). */
static int confine(uid_t uid)
{
	int rc = drop_to(uid);

	if (rc == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		rc = -errno;
	if (rc < 0) {
		fprintf(stderr, "airlock-gateway: cannot drop to uid %u: %s\n",
			(unsigned)uid, strerror(-rc));
		return -1;
	}
	rc = gw_seccomp_install();
	if (rc < 0) {
		fprintf(stderr, "airlock-gateway: cannot install seccomp: %s\n",
			strerror(-rc));
		return -1;
	}
	return 0;
}

/* Serve until SIGTERM or SIGINT. */
static int serve(struct gw_main *m)
{
	struct gw_server *s = NULL;
	sigset_t set;
	int sig;

	/* the server's threads inherit this mask; only we take the signals */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	m->o.allow_path = m->allow;
	if (gw_server_start(&m->o, &s) < 0)
		return 1;
	printf("listening on %s\n", m->shown);
	fflush(stdout);
	fprintf(stderr, "airlock-gateway: serving %s on %s as uid %u\n", m->dir,
		m->shown, (unsigned)geteuid());
	do {
		sig = 0;
		sigwait(&set, &sig);
	} while (sig == SIGHUP);
	gw_server_stop(s);
	return 0;
}

int main(int argc, char **argv)
{
	struct gw_main m = {
	    .o = {.mirror_fd = -1, .slots_fd = -1, .audit_fd = -1, .rate = 200},
	    .listen_spec = "127.0.0.1:0",
	    .uid = GW_UID,
	};
	int rc = parse_args(argc, argv, &m);

	if (rc)
		return rc == 1 ? 0 : 2;
	/* nothing inherited goes into the jail (stdio stays) */
	syscall(SYS_close_range, 3u, ~0u, 0u);
	if (open_files(&m) < 0)
		return 1;
	fd_room();
	if (geteuid() == 0 && jail(&m) < 0)
		return 1;
	if (confine(m.uid) < 0)
		return 1;
	return serve(&m);
}
