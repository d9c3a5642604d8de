/* conn.c: a self-healing async Redis connection (conn.h).
 *
 * State machine, driven by one repeating watchdog timer (TICK_MS):
 *
 *   DOWN --(retry time reached)--> CONNECTING --(setup answered)--> UP
 *     ^                               |                              |
 *     +----(timeout, error reply)-----+<-----(lost, stalled reply)---+
 *
 * Setup is pipelined right after redisAsyncConnect (hiredis buffers the
 * commands until the socket connects): AUTH and SELECT when the URL asks,
 * one SCRIPT LOAD per script, then PING. The connection is UP when every
 * setup reply arrived without error.
 *
 * Tearing down calls redisAsyncFree() only from the timer (never from inside
 * a hiredis callback, where hiredis would defer it anyway): it first runs
 * every pending callback with a NULL reply, so callers learn about the loss
 * through the one path they already handle. Commands issued from those
 * callbacks are refused (-ENOTCONN), because the state is already DOWN.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <hiredis/adapters/libuv.h>

#include "cluster.h"
#include "conn.h"
#include "internal.h"
#include "log.h"
#include "sentinel.h"

#define TICK_MS	       100u
#define BACKOFF_MIN_MS 100u
#define BACKOFF_MAX_MS 5000u

/* One command in flight. */
struct pending {
	struct alq_conn *c; /* its connection */
	alq_reply_fn *cb;   /* the caller's callback */
	void *priv;	    /* the caller's argument */
	int script;	    /* enum alq_script for EVALSHA, -1 otherwise */
	int argc;	    /* argv kept for the EVAL fallback and resends */
	char **argv;	    /* copies (malloc'd) */
	size_t *lens;	    /* their lengths */
	uint64_t parked_at; /* first parked (cluster), 0 = never */
	uint64_t due;	    /* parked: send again at */
	unsigned tries;	    /* parked: times sent again */
	struct pending *next; /* in c->parked */
};

static void reply_cb(redisAsyncContext *ac, void *reply, void *privdata);

static uint64_t now(const struct alq_conn *c)
{
	return uv_now(c->loop);
}

static void pending_free(struct pending *p)
{
	if (!p)
		return;
	for (int i = 0; p->argv && i < p->argc; i++)
		free(p->argv[i]);
	free(p->argv);
	free(p->lens);
	free(p);
}

/* The parked commands fail (NULL) with the connection they waited on. */
static void flush_parked(struct alq_conn *c)
{
	while (c->parked) {
		struct pending *p = c->parked;

		c->parked = p->next;
		p->cb(c, NULL, p->priv);
		pending_free(p);
	}
}

/* Send the parked commands that are due again (the tick, while up). A
 * command parked past command_timeout_ms drops the connection: its
 * slot did not settle, and the reconnect asks the cluster anew. */
static void resend_parked(struct alq_conn *c)
{
	struct pending **pp = &c->parked, *keep = NULL, **kt = &keep;
	uint64_t n = now(c);

	while (*pp) {
		struct pending *p = *pp;

		*pp = p->next;
		p->next = NULL;
		if (n - p->parked_at > c->command_timeout_ms) {
			snprintf(c->err, sizeof(c->err),
				 "cluster slot did "
				 "not settle (ASK/TRYAGAIN/CLUSTERDOWN)");
			c->drop = true;
			*kt = p, kt = &p->next; /* flushed by the teardown */
		} else if (p->due > n) {
			*kt = p, kt = &p->next;
		} else if (redisAsyncCommandArgv(c->ac, reply_cb, p, p->argc,
						 (const char **)p->argv,
						 p->lens) == REDIS_OK) {
			if (c->inflight++ == 0)
				c->progress = n;
		} else {
			p->cb(c, NULL, p->priv);
			pending_free(p);
		}
	}
	c->parked = keep;
}

static void schedule_retry(struct alq_conn *c)
{
	uint32_t j = 0;

	if (getrandom(&j, sizeof(j), GRND_NONBLOCK) < 0)
		j = (uint32_t)now(c);
	/* jitter: 50..100% of the backoff, so many dispatchers spread out */
	c->deadline = now(c) + c->backoff_ms / 2 + j % (c->backoff_ms / 2 + 1);
	c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
							   : c->backoff_ms * 2;
}

/* The connection is gone (`what` says how): say so once, reconnect after
 * the backoff, and tell the owner when it had been up. */
static void lost(struct alq_conn *c, bool was_up, const char *what)
{
	char where[300];

	alq_url_display(&c->url, where, sizeof(where));
	al_warn("redis %s: %s: %s; reconnecting", c->name, where, what);
	c->reconnects++;
	schedule_retry(c);
	if (was_up && c->on_down)
		c->on_down(c);
}

/* Free the hiredis context now (from the timer or the owner, never from
 * inside a hiredis callback: hiredis defers that case itself). */
static void teardown(struct alq_conn *c, const char *why)
{
	redisAsyncContext *ac = c->ac;
	bool was_up = c->state == ALQ_CONN_UP;

	c->ac = NULL;
	if (c->state != ALQ_CONN_CLOSED)
		c->state = ALQ_CONN_DOWN;
	c->drop = false;
	if (ac)
		redisAsyncFree(ac); /* pending callbacks get NULL */
	c->inflight = 0;
	flush_parked(c);
	if (c->state == ALQ_CONN_CLOSED)
		return;
	lost(c, was_up, why);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
	struct alq_conn *c = ac->data;
	bool was_up;
	char what[160];

	(void)status;
	if (!c || c->ac != ac)
		return; /* we freed it ourselves: teardown() handles it */
	was_up = c->state == ALQ_CONN_UP;
	c->ac = NULL; /* hiredis frees it when we return */
	c->inflight = 0;
	if (c->state != ALQ_CONN_CLOSED)
		c->state = ALQ_CONN_DOWN;
	flush_parked(c);
	if (c->state == ALQ_CONN_CLOSED)
		return;
	snprintf(what, sizeof(what), "connection lost (%s)",
		 ac->errstr[0] ? ac->errstr : "closed");
	lost(c, was_up, what);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
	struct alq_conn *c = ac->data;

	if (!c || c->ac != ac || status == REDIS_OK)
		return; /* success: the setup replies decide */
	/* hiredis frees the context after this callback */
	snprintf(c->err, sizeof(c->err), "%s", ac->errstr);
	c->ac = NULL;
	c->inflight = 0;
	if (c->state == ALQ_CONN_CLOSED)
		return;
	c->state = ALQ_CONN_DOWN;
	c->moved_port = 0; /* back to the URL's node next time */
	al_warn("redis %s: connect failed: %s", c->name, c->err);
	schedule_retry(c);
}

static void setup_cb(redisAsyncContext *ac, void *reply, void *priv)
{
	struct alq_conn *c = ac->data;
	redisReply *r = reply;
	intptr_t step = (intptr_t)priv;

	if (!c || c->ac != ac || !r)
		return; /* lost: the disconnect path handles it */
	c->inflight--;
	c->progress = now(c);
	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(c->err, sizeof(c->err), "setup: %.120s", r->str);
		al_err("redis %s: %s", c->name, c->err);
		c->drop = true;
		return;
	}
	if (step >= 0 && step < ALQ_N_SCRIPTS &&
	    r->type == REDIS_REPLY_STRING && r->len == 40)
		memcpy(c->sha[step], r->str, 41);
	if (--c->setup_left == 0 && c->state == ALQ_CONN_CONNECTING) {
		char where[300];

		c->state = ALQ_CONN_UP;
		c->backoff_ms = BACKOFF_MIN_MS;
		if (c->moved_port)
			snprintf(where, sizeof(where), "%.200s:%d (%s)",
				 c->moved_host, c->moved_port,
				 c->url.sentinel_ ? "master by sentinel"
						  : "MOVED");
		else
			alq_url_display(&c->url, where, sizeof(where));
		al_info("redis %s: connected to %s", c->name, where);
		if (c->on_up)
			c->on_up(c);
	}
}

static int setup_send(struct alq_conn *c, intptr_t step, int argc,
		      const char **argv)
{
	if (redisAsyncCommandArgv(c->ac, setup_cb, (void *)step, argc, argv,
				  NULL) != REDIS_OK)
		return -EIO;
	c->inflight++;
	c->setup_left++;
	return 0;
}

static int setup(struct alq_conn *c)
{
	char db[16];
	int r = 0;

	c->setup_left = 0;
	c->progress = now(c);
	if (c->url.pass[0]) {
		const char *a[] = {"AUTH", c->url.user, c->url.pass};

		r = c->url.user[0]
			? setup_send(c, -1, 3, a)
			: setup_send(c, -1, 2,
				     (const char *[]){"AUTH", c->url.pass});
	}
	if (r == 0 && c->url.db) {
		snprintf(db, sizeof(db), "%u", c->url.db);
		r = setup_send(c, -1, 2, (const char *[]){"SELECT", db});
	}
	for (int s = 0; r == 0 && s < ALQ_N_SCRIPTS; s++)
		r = setup_send(
		    c, s, 3,
		    (const char *[]){"SCRIPT", "LOAD", alq_script_text(s)});
	if (r == 0)
		r = setup_send(c, -1, 1, (const char *[]){"PING"});
	return r;
}

/* redis+sentinel: the master's address now, into moved_host/port (the
 * next connect's target). Blocks the loop for at most 300 ms per
 * sentinel, and only while the connection is down. */
static int sentinel_master(struct alq_conn *c)
{
	char err[400];
	int port = 0;

	if (alq_sentinel_master(&c->url, 300, c->moved_host,
				sizeof(c->moved_host), &port, err,
				sizeof(err)) < 0) {
		snprintf(c->err, sizeof(c->err),
			 "no master from the "
			 "sentinels: %.120s",
			 err);
		al_warn("redis %s: %s", c->name, err);
		return -EHOSTUNREACH;
	}
	c->moved_port = port;
	return 0;
}

static void start_connect(struct alq_conn *c)
{
	redisAsyncContext *ac;

	if (c->url.sentinel_ && sentinel_master(c) < 0) {
		schedule_retry(c);
		return;
	}

	ac = c->moved_port  ? redisAsyncConnect(c->moved_host, c->moved_port)
	     : c->url.unix_ ? redisAsyncConnectUnix(c->url.path)
			    : redisAsyncConnect(c->url.host, c->url.port);
	if (!ac || ac->err) {
		snprintf(c->err, sizeof(c->err), "%s",
			 ac ? ac->errstr : "out of memory");
		if (ac)
			redisAsyncFree(ac);
		al_warn("redis %s: connect failed: %s", c->name, c->err);
		schedule_retry(c);
		return;
	}
	ac->data = c;
	if (redisLibuvAttach(ac, c->loop) != REDIS_OK) {
		redisAsyncFree(ac);
		schedule_retry(c);
		return;
	}
	redisAsyncSetConnectCallback(ac, on_connect);
	redisAsyncSetDisconnectCallback(ac, on_disconnect);
	c->ac = ac;
	c->state = ALQ_CONN_CONNECTING;
	c->deadline = now(c) + c->connect_timeout_ms;
	memset(c->sha, 0, sizeof(c->sha));
	if (setup(c) < 0)
		c->drop = true;
}

static void tick(uv_timer_t *t)
{
	struct alq_conn *c = t->data;
	uint64_t n = now(c);

	switch (c->state) {
	case ALQ_CONN_DOWN:
		if (n >= c->deadline)
			start_connect(c);
		break;
	case ALQ_CONN_CONNECTING:
		if (c->drop)
			teardown(c, c->err[0] ? c->err : "setup failed");
		else if (n >= c->deadline) {
			c->moved_port = 0; /* back to the URL's node */
			teardown(c, "connect timed out");
		}
		break;
	case ALQ_CONN_UP:
		if (c->drop)
			teardown(c, c->err[0] ? c->err : "reset");
		else if (c->inflight &&
			 n - c->progress > c->command_timeout_ms + c->block_ms)
			teardown(c, "reply timed out");
		else if (c->parked)
			resend_parked(c);
		break;
	case ALQ_CONN_CLOSED:
		break;
	}
}

int alq_conn_init(struct alq_conn *c, uv_loop_t *loop,
		  const struct alq_url *url, const char *name)
{
	int r;

	c->loop = loop;
	c->url = *url;
	c->name = name;
	if (!c->connect_timeout_ms)
		c->connect_timeout_ms = 2000;
	if (!c->command_timeout_ms)
		c->command_timeout_ms = 5000;
	c->ac = NULL;
	c->state = ALQ_CONN_DOWN;
	c->deadline = 0;
	c->backoff_ms = BACKOFF_MIN_MS;
	c->inflight = 0;
	c->drop = false;
	c->err[0] = '\0';
	c->moved_host[0] = '\0';
	c->moved_port = 0;
	c->parked = NULL;
	c->redirects = 0;
	r = uv_timer_init(loop, &c->timer);
	if (r < 0)
		return r;
	c->timer.data = c;
	r = uv_timer_start(&c->timer, tick, 0, TICK_MS);
	if (r < 0) {
		uv_close((uv_handle_t *)&c->timer, NULL);
		return r;
	}
	return 0;
}

bool alq_conn_up(const struct alq_conn *c)
{
	return c->state == ALQ_CONN_UP && c->ac && !c->drop &&
	       !(c->ac->c.flags & (REDIS_DISCONNECTING | REDIS_FREEING));
}

/* A cluster redirection in answer to p (cluster.h): MOVED points the
 * next connect at the slot's new master and drops this connection (p's
 * caller gets NULL, as for a lost connection: the command did not run);
 * ASK, TRYAGAIN and CLUSTERDOWN park p to be sent again from the tick
 * (TICK_MS), where a migration or failover has time to end in a MOVED.
 * True when p was taken care of. */
static bool redirect(struct alq_conn *c, const redisReply *r, struct pending *p)
{
	struct alq_redirect rd;

	if (c->url.sentinel_ && !strncmp(r->str, "READONLY", 8)) {
		/* a failover demoted our master: ask the sentinels again */
		snprintf(c->err, sizeof(c->err),
			 "the master became a "
			 "replica (a failover)");
		c->drop = true;
		p->cb(c, NULL, p->priv);
		pending_free(p);
		return true;
	}
	alq_redirect_parse(r->str, r->len, &rd);
	if (rd.kind == ALQ_REDIRECT_NONE)
		return false;
	c->redirects++;
	if (rd.kind == ALQ_REDIRECT_MOVED && !c->drop) {
		char h[sizeof(c->moved_host)];

		snprintf(h, sizeof(h), "%s",
			 rd.host[0]	 ? rd.host
			 : c->moved_port ? c->moved_host
					 : c->url.host);
		/* only to a node the configured one knows (client.c) */
		if (alq__node_known(&c->url, h, rd.port, 300, c->err,
				    sizeof(c->err)) < 0) {
			p->cb(c, NULL, p->priv);
			pending_free(p);
			return true;
		}
		memcpy(c->moved_host, h, sizeof(h));
		c->moved_port = rd.port;
		snprintf(c->err, sizeof(c->err), "MOVED to %.100s:%d",
			 c->moved_host, c->moved_port);
		c->drop = true;
	}
	if (rd.kind == ALQ_REDIRECT_MOVED || !alq_conn_up(c)) {
		/* not run: as if the connection was lost */
		p->cb(c, NULL, p->priv);
		pending_free(p);
		return true;
	}
	if (!p->parked_at)
		p->parked_at = now(c);
	p->due = now(c) + (10u << (p->tries < 4 ? p->tries : 4));
	p->tries++;
	p->next = c->parked;
	c->parked = p;
	return true;
}

static void reply_cb(redisAsyncContext *ac, void *reply, void *privdata)
{
	struct pending *p = privdata;
	struct alq_conn *c = p->c;
	redisReply *r = reply;

	if (c->ac == ac) {
		c->inflight--;
		c->progress = now(c);
	}
	if (r && r->type == REDIS_REPLY_ERROR && c->ac == ac &&
	    redirect(c, r, p))
		return;
	if (r && r->type == REDIS_REPLY_ERROR && p->script >= 0 &&
	    !strncmp(r->str, "NOSCRIPT", 8) && alq_conn_up(c) && c->ac == ac) {
		/* the server lost its script cache: send the text instead */
		free(p->argv[0]);
		free(p->argv[1]);
		p->argv[0] = strdup("EVAL");
		p->argv[1] = strdup(alq_script_text(p->script));
		p->lens[0] = 4;
		p->lens[1] = p->argv[1] ? strlen(p->argv[1]) : 0;
		p->script = -1;
		if (p->argv[0] && p->argv[1] &&
		    redisAsyncCommandArgv(ac, reply_cb, p, p->argc,
					  (const char **)p->argv,
					  p->lens) == REDIS_OK) {
			c->inflight++;
			return;
		}
		r = NULL;
	}
	p->cb(c, r, p->priv);
	pending_free(p);
}

/* A command's pending entry, or NULL when out of memory. */
static struct pending *pending_new(struct alq_conn *c, alq_reply_fn *cb,
				   void *priv, int script)
{
	struct pending *p = calloc(1, sizeof(*p));

	if (p) {
		p->c = c;
		p->cb = cb;
		p->priv = priv;
		p->script = script;
	}
	return p;
}

/* Copy argv[0..argc) into p after `head` words already there: p keeps
 * its command to send it again (NOSCRIPT, cluster redirections). */
static int pending_args(struct pending *p, int head, int argc,
			const char **argv, const size_t *lens)
{
	for (int i = 0; i < argc; i++) {
		size_t len = lens ? lens[i] : strlen(argv[i]);

		p->argv[head + i] = malloc(len + 1);
		if (!p->argv[head + i])
			return -ENOMEM;
		memcpy(p->argv[head + i], argv[i], len);
		p->argv[head + i][len] = '\0';
		p->lens[head + i] = len;
	}
	return 0;
}

static int pending_alloc(struct pending *p, int n)
{
	p->argv = calloc((size_t)n, sizeof(*p->argv));
	p->lens = calloc((size_t)n, sizeof(*p->lens));
	p->argc = n;
	return p->argv && p->lens ? 0 : -ENOMEM;
}

/* Hand p to hiredis; on failure p is freed. */
static int pending_send(struct alq_conn *c, struct pending *p)
{
	if (redisAsyncCommandArgv(c->ac, reply_cb, p, p->argc,
				  (const char **)p->argv,
				  p->lens) != REDIS_OK) {
		pending_free(p);
		return -ENOTCONN;
	}
	if (c->inflight++ == 0)
		c->progress = now(c);
	return 0;
}

int alq_conn_cmd(struct alq_conn *c, alq_reply_fn *cb, void *priv, int argc,
		 const char **argv, const size_t *lens)
{
	struct pending *p;

	if (!alq_conn_up(c))
		return -ENOTCONN;
	p = pending_new(c, cb, priv, -1);
	if (!p)
		return -ENOMEM;
	if (pending_alloc(p, argc) < 0 ||
	    pending_args(p, 0, argc, argv, lens) < 0) {
		pending_free(p);
		return -ENOMEM;
	}
	return pending_send(c, p);
}

int alq_conn_eval(struct alq_conn *c, enum alq_script s, alq_reply_fn *cb,
		  void *priv, int nkeys, int argc, const char **argv,
		  const size_t *lens)
{
	struct pending *p;
	char nk[16];

	if (!alq_conn_up(c))
		return -ENOTCONN;
	p = pending_new(c, cb, priv, c->sha[s][0] ? (int)s : -1);
	if (!p)
		return -ENOMEM;
	if (pending_alloc(p, argc + 3) < 0)
		goto nomem;
	snprintf(nk, sizeof(nk), "%d", nkeys);
	p->argv[0] = strdup(p->script >= 0 ? "EVALSHA" : "EVAL");
	p->argv[1] = strdup(p->script >= 0 ? c->sha[s] : alq_script_text(s));
	p->argv[2] = strdup(nk);
	for (int i = 0; i < 3; i++) {
		if (!p->argv[i])
			goto nomem;
		p->lens[i] = strlen(p->argv[i]);
	}
	if (pending_args(p, 3, argc, argv, lens) < 0)
		goto nomem;
	return pending_send(c, p);
nomem:
	pending_free(p);
	return -ENOMEM;
}

void alq_conn_reset(struct alq_conn *c, const char *why)
{
	if (c->state == ALQ_CONN_CLOSED || !c->ac)
		return;
	snprintf(c->err, sizeof(c->err), "%s", why);
	c->drop = true;
}

static void timer_closed(uv_handle_t *h)
{
	struct alq_conn *c = h->data;

	if (c->on_closed)
		c->on_closed(c);
}

void alq_conn_close(struct alq_conn *c)
{
	if (c->state == ALQ_CONN_CLOSED)
		return;
	c->state = ALQ_CONN_CLOSED;
	teardown(c, "closed");
	uv_close((uv_handle_t *)&c->timer, timer_closed);
}
