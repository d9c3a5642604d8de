/* conn.h: one asynchronous Redis connection on a libuv loop that keeps
 * itself connected.
 *
 * hiredis 0.14's libuv adapter drops poll errors on the floor, so a connect
 * that fails (refused, unreachable, half-open) is never reported. Every
 * connection here therefore runs a watchdog timer: a connect that has not
 * completed (AUTH, SELECT, SCRIPT LOAD, PING answered) within
 * connect_timeout_ms is torn down, and so is an established connection
 * whose oldest outstanding command has waited more than command_timeout_ms
 * (plus `block_ms` for a connection that blocks in XREADGROUP). After
 * either, or after the server closes the connection, it reconnects with
 * exponential backoff (100 ms doubling to 5 s, with jitter).
 *
 * Using it:
 *
 *  1. alq_conn_init() with the loop, the URL and callbacks; it starts
 *     connecting at once. on_up fires each time the connection is ready,
 *     on_down each time a ready connection is lost.
 *  2. alq_conn_cmd() / alq_conn_eval() only while up (else -ENOTCONN and the
 *     callback never fires). Otherwise the callback fires exactly once:
 *     with the reply, or with NULL when the connection was lost or timed
 *     out before one came. The reply is freed after the callback returns.
 *  3. alq_conn_close(): drops the connection (pending callbacks get NULL)
 *     and closes the timer; `on_closed` fires from the close callback, after
 *     which the struct may be freed.
 */
#ifndef AL_CONN_H
#define AL_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <uv.h>

#include "queue.h"

struct alq_conn;
typedef void alq_reply_fn(struct alq_conn *c, redisReply *r, void *priv);
typedef void alq_conn_fn(struct alq_conn *c);

enum alq_conn_state {
	ALQ_CONN_DOWN = 0,   /* waiting to reconnect */
	ALQ_CONN_CONNECTING, /* connect, AUTH, SELECT, SCRIPT LOAD in flight */
	ALQ_CONN_UP,	     /* ready for commands */
	ALQ_CONN_CLOSED,     /* alq_conn_close() called */
};

struct alq_conn {
	uv_loop_t *loop;	     /* the loop it runs on */
	struct alq_url url;	     /* where to connect */
	const char *name;	     /* for logs: "cmd", "blocking" */
	uint32_t connect_timeout_ms; /* per attempt */
	uint32_t command_timeout_ms; /* per reply */
	uint32_t block_ms;	     /* extra allowance for blocking reads */
	alq_conn_fn *on_up;	     /* became ready */
	alq_conn_fn *on_down;	     /* a ready connection was lost */
	alq_conn_fn *on_closed;	     /* after alq_conn_close() */
	void *data;		     /* the owner's */

	redisAsyncContext *ac;	     /* NULL when down */
	uv_timer_t timer;	     /* watchdog, backoff */
	enum alq_conn_state state;   /* see above */
	uint64_t deadline;	     /* connect deadline / retry time */
	uint32_t backoff_ms;	     /* next reconnect delay */
	unsigned inflight;	     /* commands without a reply */
	uint64_t progress;	     /* last reply, or first send */
	unsigned setup_left;	     /* connect steps still to answer */
	bool drop;		     /* tear down at the next tick */
	char sha[ALQ_N_SCRIPTS][41]; /* SCRIPT LOAD answers */
	char err[160];		     /* last failure, for logs */
	uint64_t reconnects;	     /* times it went down and retried */
	/* Redis Cluster (cluster.h): after a MOVED the next connect goes to
	 * the slot's new master; ASK, TRYAGAIN and CLUSTERDOWN park the
	 * command and send it again on a later tick */
	char moved_host[256];	/* where MOVED said, "" = the URL */
	int moved_port;		/* its port, 0 = none */
	struct pending *parked; /* commands waiting to be sent again */
	uint64_t redirects;	/* MOVED, ASK, TRYAGAIN... answered */
};

/* Set up and start connecting. The string fields must outlive the conn.
 * Returns 0 or a negative errno (then nothing was started). */
int alq_conn_init(struct alq_conn *c, uv_loop_t *loop,
		  const struct alq_url *url, const char *name);
bool alq_conn_up(const struct alq_conn *c);
int alq_conn_cmd(struct alq_conn *c, alq_reply_fn *cb, void *priv, int argc,
		 const char **argv, const size_t *lens);
/* Run script `s` with keys argv[0..nkeys) and args argv[nkeys..argc). */
int alq_conn_eval(struct alq_conn *c, enum alq_script s, alq_reply_fn *cb,
		  void *priv, int nkeys, int argc, const char **argv,
		  const size_t *lens);
/* Tear the current connection down now and reconnect (e.g. NOGROUP after a
 * server restart). */
void alq_conn_reset(struct alq_conn *c, const char *why);
void alq_conn_close(struct alq_conn *c);

#endif
