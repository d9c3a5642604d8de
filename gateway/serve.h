/* serve.h: the gateway's HTTP server (libmicrohttpd) over the routes of
 * route.h, answering from the allowlist and the mirror only, and writing
 * one audit record per request.
 *
 * The caller (main.c) opens everything that needs privileges first (the
 * listening socket, the mirror, the audit file), drops to the gateway's
 * own uid, then calls gw_server_start(): from then on the process holds
 * no capability, can read the mirror and the allowlist, append to the
 * audit file, and nothing more.
 *
 * Who asks is the client's source address: GW_HOST_JOB for loopback, else the
 * job or session id a worker wrote for that address in the slots dir
 * (SLOTS/ADDR, one line), else "unknown ADDR". Nothing the client sends
 * (headers, paths) is ever taken as its identity.
 *
 * Caps against hostile clients: GW_PATH_MAX per path, the connection's
 * memory limit (headers beyond it are answered 431 by libmicrohttpd),
 * a per-address connection cap (one VM cannot take every connection), a
 * total cap, an idle timeout (slow clients are dropped), bodies refused,
 * a request rate per address (a flood is answered 429 and audited as one
 * record a second, so it cannot fill the disk with audit lines).
 */
#ifndef AL_GW_SERVE_H
#define AL_GW_SERVE_H

#include <stdbool.h>

struct gw_serve_options {
	int listen_fd;		/* bound and listening; owned by the server */
	int mirror_fd;		/* the mirror dir (O_DIRECTORY); owned */
	int slots_fd;		/* the slots dir, or -1; owned */
	const char *allow_path; /* reread when it changes */
	int audit_fd;		/* O_APPEND, or -1; owned */
	unsigned threads;	/* worker threads */
	unsigned conn_max;	/* connections in all */
	unsigned per_ip_max;	/* connections from one address */
	unsigned timeout_s;	/* idle connection timeout */
	bool quiet;		/* no per-request log lines */
	unsigned rate; /* requests a second from one address, 0 = any */
};

struct gw_server;

/* Start serving. 0 and *ret, or -errno (-EINVAL: the allowlist does not
 * parse; the reason is printed on stderr). */
int gw_server_start(const struct gw_serve_options *o, struct gw_server **ret);
/* Stop, wait for the threads, close every fd given. NULL is fine. */
void gw_server_stop(struct gw_server *s);

#endif
