/* client.c: the blocking client's connection: connect, AUTH and SELECT,
 * follow Cluster redirections and Sentinel fail-overs, one command. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "cluster.h"
#include "internal.h"
#include "queue.h"
#include "sentinel.h"

/* --- the blocking client ----------------------------------------------------
 */

struct timeval alq__tv_ms(uint32_t ms)
{
	struct timeval tv = {.tv_sec = ms / 1000,
			     .tv_usec = (suseconds_t)(ms % 1000) * 1000};
	return tv;
}

/* Turn a failed call into -errno and remember why. */
int alq__client_fail(struct alq_client *c, const redisReply *r)
{
	if (r && r->type == REDIS_REPLY_ERROR) {
		snprintf(c->err, sizeof(c->err), "redis: %.200s", r->str);
		return -EPROTO;
	}
	if (c->rc && c->rc->err) {
		snprintf(c->err, sizeof(c->err), "redis: %s", c->rc->errstr);
		if (c->rc->err == REDIS_ERR_IO && c->rc->errstr[0] &&
		    strstr(c->rc->errstr, "temporarily unavailable"))
			return -ETIMEDOUT;
		return c->rc->err == REDIS_ERR_EOF ? -ECONNRESET : -EIO;
	}
	snprintf(c->err, sizeof(c->err), "redis: unexpected reply");
	return -EPROTO;
}

/* Connect c->rc to host:port (or the URL's unix socket when host is
 * NULL), AUTH and SELECT as the URL says. On failure c->rc is NULL and
 * c->err says why. */
static int client_connect(struct alq_client *c, const char *host, int port)
{
	const struct alq_url *u = &c->url;
	struct timeval tv = alq__tv_ms(c->timeout_ms);
	redisReply *r = NULL;
	int ret = 0;

	c->rc = !host ? redisConnectUnixWithTimeout(u->path, tv)
		      : redisConnectWithTimeout(host, port, tv);
	if (!c->rc) {
		snprintf(c->err, sizeof(c->err), "redis: out of memory");
		return -ENOMEM;
	}
	if (c->rc->err) {
		snprintf(c->err, sizeof(c->err), "redis: %s", c->rc->errstr);
		ret = c->rc->err == REDIS_ERR_IO ? -ECONNREFUSED : -EIO;
		goto out;
	}
	redisSetTimeout(c->rc, alq__tv_ms(c->timeout_ms + c->extra_ms));
	if (u->pass[0]) {
		r = u->user[0]
			? redisCommand(c->rc, "AUTH %s %s", u->user, u->pass)
			: redisCommand(c->rc, "AUTH %s", u->pass);
		if (!r || r->type == REDIS_REPLY_ERROR) {
			ret = alq__client_fail(c, r);
			goto out;
		}
		freeReplyObject(r);
		r = NULL;
	}
	if (u->db) {
		r = redisCommand(c->rc, "SELECT %u", u->db);
		if (!r || r->type == REDIS_REPLY_ERROR) {
			ret = alq__client_fail(c, r);
			goto out;
		}
	}
out:
	freeReplyObject(r);
	if (ret < 0) {
		redisFree(c->rc);
		c->rc = NULL;
	}
	return ret;
}

/* Is r a cluster redirection? (*rd filled) */
bool alq__redirected(const redisReply *r, struct alq_redirect *rd)
{
	if (!r || r->type != REDIS_REPLY_ERROR) {
		rd->kind = ALQ_REDIRECT_NONE;
		return false;
	}
	alq_redirect_parse(r->str, r->len, rd);
	return rd->kind != ALQ_REDIRECT_NONE;
}

/* Pause before sending again after TRYAGAIN / CLUSTERDOWN / ASK: 10 ms
 * doubling to 320 ms, so a few seconds of migration or failover pass. */
static void redirect_pause(unsigned tries)
{
	struct timespec ts = {0, 0};
	unsigned ms = 10u << (tries < 5 ? tries : 5);

	ts.tv_nsec = (long)ms * 1000000L;
	nanosleep(&ts, NULL);
}

/* Does CLUSTER SLOTS reply r name host:port as a node of some slot? */
static bool slots_name(const redisReply *r, const char *host, int port)
{
	for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements;
	     i++) {
		const redisReply *range = r->element[i];

		for (size_t j = 2;
		     range->type == REDIS_REPLY_ARRAY && j < range->elements;
		     j++) {
			const redisReply *n = range->element[j];

			if (n->type == REDIS_REPLY_ARRAY && n->elements >= 2 &&
			    n->element[0]->type == REDIS_REPLY_STRING &&
			    n->element[1]->type == REDIS_REPLY_INTEGER &&
			    n->element[1]->integer == port &&
			    !strcmp(n->element[0]->str, host))
				return true;
		}
	}
	return false;
}

int alq__node_known(const struct alq_url *u, const char *host, int port,
		    uint32_t timeout_ms, char *err, size_t errlen)
{
	struct alq_client s = {.url = *u, .timeout_ms = timeout_ms};
	redisReply *r;
	bool known;

	if (!alq_node_allowed(host, u->unix_ ? "localhost" : u->host)) {
		snprintf(err, errlen,
			 "redis: redirected to %.100s:%d, an address never "
			 "followed: refused",
			 host, port);
		return -EPERM;
	}
	if (!u->unix_ && !u->sentinel_ && port == u->port &&
	    !strcmp(host, u->host))
		return 0; /* the seed itself */
	/* ask the configured seed (the URL's node) which nodes serve slots */
	if (client_connect(&s, u->unix_ ? NULL : u->host, u->port) < 0) {
		snprintf(err, errlen, "redis: redirected to %.100s:%d: %s",
			 host, port, s.err);
		explicit_bzero(&s.url, sizeof(s.url));
		return -EHOSTUNREACH;
	}
	r = redisCommand(s.rc, "CLUSTER SLOTS");
	known = slots_name(r, host, port);
	freeReplyObject(r);
	redisFree(s.rc);
	explicit_bzero(&s.url, sizeof(s.url));
	if (!known) {
		snprintf(err, errlen,
			 "redis: redirected to %.100s:%d, a node CLUSTER SLOTS "
			 "of the configured node does not name: refused",
			 host, port);
		return -EPERM;
	}
	return 0;
}

/* MOVED: the slot's master is rd's host:port; connect there instead,
 * only when the configured node knows it (alq__node_known). On failure
 * the old connection stays (the caller reports the MOVED). */
static int follow_moved(struct alq_client *c, const struct alq_redirect *rd)
{
	redisContext *old = c->rc;
	char host[ALQ_HOST_MAX + 1];

	snprintf(host, sizeof(host), "%s", rd->host[0] ? rd->host : c->host);
	if (alq__node_known(&c->url, host, rd->port, c->timeout_ms, c->err,
			    sizeof(c->err)) < 0)
		return -EPERM;
	c->rc = NULL;
	if (client_connect(c, host, rd->port) < 0) {
		c->rc = old;
		return -EIO;
	}
	redisFree(old);
	snprintf(c->host, sizeof(c->host), "%s", host);
	c->port = rd->port;
	c->submit_sha[0] = '\0'; /* this node has not loaded it */
	c->redirects++;
	return 0;
}

/* ASK: ASKING then the command on the migration's target, once, on a
 * connection of its own. NULL when that node cannot be reached. */
static redisReply *ask(struct alq_client *c, const struct alq_redirect *rd,
		       int argc, const char **argv, const size_t *lens)
{
	struct alq_client t = *c;
	redisReply *r = NULL, *a;

	t.rc = NULL;
	if (alq__node_known(&c->url, rd->host[0] ? rd->host : c->host, rd->port,
			    c->timeout_ms, c->err, sizeof(c->err)) < 0 ||
	    client_connect(&t, rd->host[0] ? rd->host : c->host, rd->port) < 0)
		return NULL;
	a = redisCommand(t.rc, "ASKING");
	if (a && a->type == REDIS_REPLY_STATUS)
		r = redisCommandArgv(t.rc, argc, argv, lens);
	freeReplyObject(a);
	redisFree(t.rc);
	c->redirects++;
	return r;
}

/* redis+sentinel: the connection broke or answers READONLY (a failover
 * demoted its master): ask the sentinels again and connect to the master
 * they name. On failure the old connection stays. */
static int follow_sentinel(struct alq_client *c)
{
	redisContext *old = c->rc;
	char host[sizeof(c->host)], err[400];
	int port;

	if (alq_sentinel_master(&c->url, c->timeout_ms, host, sizeof(host),
				&port, err, sizeof(err)) < 0)
		return -EHOSTUNREACH;
	c->rc = NULL;
	if (client_connect(c, host, port) < 0) {
		c->rc = old;
		return -EIO;
	}
	redisFree(old);
	snprintf(c->host, sizeof(c->host), "%s", host);
	c->port = port;
	c->submit_sha[0] = '\0';
	return 0;
}

static bool failed_over(const struct alq_client *c, const redisReply *r)
{
	return c->url.sentinel_ && (!r || (r->type == REDIS_REPLY_ERROR &&
					   !strncmp(r->str, "READONLY", 8)));
}

/* One command, following cluster redirections: a MOVED reconnects to the
 * slot's new master, an ASK goes to the migration's target once, a
 * TRYAGAIN or CLUSTERDOWN waits and sends it again; up to
 * ALQ__REDIRECT_TRIES times (a few seconds), then the last reply is the
 * caller's to report. None of them ran the command, so resending is safe
 * (cluster.h). */
redisReply *alq__cmd_argv(struct alq_client *c, int argc, const char **argv,
			  const size_t *lens)
{
	struct alq_redirect rd;
	redisReply *r = NULL;

	for (unsigned tries = 0;; tries++) {
		r = redisCommandArgv(c->rc, argc, argv, lens);
		if (failed_over(c, r) && tries + 1 < ALQ__REDIRECT_TRIES) {
			/* every script here may run twice (ids, SET NX) */
			freeReplyObject(r);
			redirect_pause(tries);
			follow_sentinel(c);
			continue;
		}
		if (!alq__redirected(r, &rd) ||
		    tries + 1 >= ALQ__REDIRECT_TRIES)
			return r;
		if (rd.kind == ALQ_REDIRECT_MOVED) {
			if (follow_moved(c, &rd) < 0)
				return r;
		} else if (rd.kind == ALQ_REDIRECT_ASK) {
			redisReply *a = ask(c, &rd, argc, argv, lens);
			struct alq_redirect again;

			if (a && !alq__redirected(a, &again)) {
				freeReplyObject(r);
				return a;
			}
			freeReplyObject(a);
			redirect_pause(tries);
		} else {
			redirect_pause(tries);
		}
		freeReplyObject(r);
	}
}

redisReply *alq_client_command(struct alq_client *c, int argc,
			       const char **argv, const size_t *lens)
{
	redisReply *r = c->rc ? alq__cmd_argv(c, argc, argv, lens) : NULL;

	if (!r)
		snprintf(c->err, sizeof(c->err), "redis: %s",
			 c->rc && c->rc->errstr[0] ? c->rc->errstr
						   : "not connected");
	return r;
}

/* After a pipeline saw redirection rd: act on it (reconnect, or wait)
 * before the caller sends its commands again one by one or anew. */
int alq__follow(struct alq_client *c, const struct alq_redirect *rd,
		unsigned tries)
{
	if (tries + 1 >= ALQ__REDIRECT_TRIES) {
		snprintf(c->err, sizeof(c->err),
			 "redis: cluster redirections "
			 "did not settle");
		return -EAGAIN;
	}
	if (rd->kind == ALQ_REDIRECT_MOVED)
		return follow_moved(c, rd) < 0 ? -EIO : 0;
	redirect_pause(tries);
	return 0;
}

int alq_client_open(struct alq_client *c, const struct alq_url *u,
		    const char *queue, uint32_t timeout_ms)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->queue, sizeof(c->queue), "%s", queue);
	c->timeout_ms = timeout_ms;
	c->url = *u;
	snprintf(c->host, sizeof(c->host), "%s", u->host);
	c->port = u->port;
	if (u->sentinel_ &&
	    alq_sentinel_master(u, timeout_ms, c->host, sizeof(c->host),
				&c->port, c->err, sizeof(c->err)) < 0)
		return -EHOSTUNREACH;
	return client_connect(c, u->unix_ ? NULL : c->host, c->port);
}

void alq_client_close(struct alq_client *c)
{
	if (c->rc)
		redisFree(c->rc);
	c->rc = NULL;
	explicit_bzero(&c->url, sizeof(c->url));
}
