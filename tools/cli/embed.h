/* embed.h: the embedded mode of the CLI (embed.c). (What the queue
 * commands share besides, the connection and result printing: cli.h.)
 *
 * Embedded mode: `airlock run` and `airlock batch` with no Redis
 * configured start, for the command's duration only,
 *
 *  1. a private redis-server on a unix socket in the state dir
 *     (STATE/redis-PID.sock, mode 0700, `--port 0`: no TCP at all; no
 *     RDB). By default no AOF either: nothing outlives the command. With
 *     `persist` (batch, eval) it keeps an append-only file (fsync always)
 *     in STATE/embedded-redis/, under an flock so that only one command at
 *     a time owns it; with `keep` (--resume) it loads what is there, so
 *     the results of an interrupted run are found again; without, it
 *     starts empty, as before. When another command holds the lock, this
 *     one runs without the file (and says so), and
 *  2. a dispatcher with local workers: a forked child running
 *     al_serve_run(), the same code as `airlock serve`. A child rather than
 *     a thread because the client side is blocking hiredis while the
 *     dispatcher is a libuv loop that forks workers: processes keep the two
 *     apart, and stopping it is the same drain as stopping `airlock serve`
 *     (its stop_fd is a pipe whose write end only we hold, so it also
 *     drains if we die).
 *
 * al_embed_stop() stops both, reaps both and removes the socket; both also
 * die with the CLI (PR_SET_PDEATHSIG), so nothing is left behind.
 */
#ifndef AL_EMBED_H
#define AL_EMBED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "cli.h"

struct al_embed {
	pid_t redis;	/* redis-server, -1 = none */
	pid_t serve;	/* dispatcher child, -1 = none */
	pid_t gw;	/* the package gateway's keeper (gwrun.h), -1 = none */
	int stop_w;	/* write end of the dispatcher's stop pipe */
	char sock[108]; /* unix socket path */
	char log[128];	/* redis-server's log file */
	char url[128];	/* unix://sock */
	bool persist;	/* in: keep an append-only file in the state dir */
	bool keep;	/* in: with persist, load the file already there */
	int lock_fd;	/* the flock on STATE/embedded-redis.lock, or -1 */
};

void al_embed_init(struct al_embed *e);
/* All of embedded mode: the sandbox and dispatcher options from cfg
 * (al_sandbox_options, al_config_serve_opts), resolve the state dir, start
 * Redis, point cfg->redis.url at it, fork the dispatcher with those
 * options (done when this returns). 0 or -errno with err set. */
int al_embed_start(struct al_embed *e, struct al_config *cfg,
		   const struct al_policy *policy, char *err, size_t errlen);
/* Start redis-server in `state_dir` and wait until it answers. */
int al_embed_redis(struct al_embed *e, const char *state_dir, char *err,
		   size_t errlen);
/* Fork the dispatcher with options `o` (o->url is set to ours). */
int al_embed_serve(struct al_embed *e, struct al_serve_opts *o);
/* Has the dispatcher child exited? (reaps it; *ret_status its status) */
bool al_embed_serve_gone(struct al_embed *e, int *ret_status);
/* Stop the dispatcher (drain, up to grace_ms, then SIGKILL), then Redis;
 * reap both; remove the socket. */
void al_embed_stop(struct al_embed *e, uint32_t grace_ms);

#endif
