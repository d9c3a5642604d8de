/* sentinel.c: the master's address from Redis Sentinel (sentinel.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "results.h"
#include "cluster.h"
#include "sentinel.h"

/* One "HOST[:PORT]" of s[0..n) into sentinel i. */
static int one(const char *s, size_t n, struct alq_url *u)
{
	const char *colon = memchr(s, ':', n);
	size_t hl = colon ? (size_t)(colon - s) : n;
	uint16_t port = 26379;

	if (u->n_sentinels == ALQ_SENTINELS || hl == 0 ||
	    hl >= sizeof(u->sentinel[0].host))
		return -EINVAL;
	if (colon && al_port_parse(colon + 1, n - hl - 1, &port) < 0)
		return -EINVAL;
	memcpy(u->sentinel[u->n_sentinels].host, s, hl);
	u->sentinel[u->n_sentinels].host[hl] = '\0';
	u->sentinel[u->n_sentinels].port = port;
	u->n_sentinels++;
	return 0;
}

int alq_sentinel_parse(const char *s, struct alq_url *u)
{
	const char *slash = strchr(s, '/');
	const char *end = slash ? slash : s + strlen(s);
	const char *p = s;

	u->n_sentinels = 0;
	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *e = comma ? comma : end;

		if (one(p, (size_t)(e - p), u) < 0)
			return -EINVAL;
		p = comma ? comma + 1 : end;
		if (comma && p == end)
			return -EINVAL; /* a trailing comma */
	}
	if (!u->n_sentinels)
		return -EINVAL;
	snprintf(u->master, sizeof(u->master), "mymaster");
	if (slash && slash[1]) {
		const char *m = slash + 1, *db = strchr(m, '/');
		size_t ml = db ? (size_t)(db - m) : strlen(m);
		uint64_t v;

		if (ml == 0 || ml >= sizeof(u->master))
			return -EINVAL;
		for (size_t i = 0; i < ml; i++)
			if (m[i] <= ' ' || m[i] > '~')
				return -EINVAL;
		memcpy(u->master, m, ml);
		u->master[ml] = '\0';
		if (db && db[1]) {
			if (al_decimal_parse(db + 1, strlen(db + 1), 1u << 20,
					     &v) < 0)
				return -EINVAL;
			u->db = (unsigned)v;
		}
	}
	u->sentinel_ = true;
	snprintf(u->host, sizeof(u->host), "%s", u->sentinel[0].host);
	u->port = u->sentinel[0].port;
	return 0;
}

/* Ask one sentinel; 0 with host/port, or -errno with why. */
static int ask(const struct alq_url *u, unsigned i, uint32_t timeout_ms,
	       char *host, size_t hostlen, int *port, char *why, size_t wl)
{
	struct timeval tv = {.tv_sec = timeout_ms / 1000,
			     .tv_usec =
				 (suseconds_t)(timeout_ms % 1000) * 1000};
	redisContext *rc = redisConnectWithTimeout(u->sentinel[i].host,
						   u->sentinel[i].port, tv);
	redisReply *r = NULL;
	uint16_t p = 0;
	int ret = -EHOSTUNREACH;

	if (!rc || rc->err) {
		snprintf(why, wl, "%s", rc ? rc->errstr : "out of memory");
		goto out;
	}
	redisSetTimeout(rc, tv);
	r = redisCommand(rc, "SENTINEL get-master-addr-by-name %s", u->master);
	if (!r) {
		snprintf(why, wl, "%s", rc->errstr);
	} else if (r->type == REDIS_REPLY_NIL) {
		snprintf(why, wl, "knows no master %s", u->master);
	} else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		   r->element[0]->type != REDIS_REPLY_STRING ||
		   r->element[1]->type != REDIS_REPLY_STRING ||
		   r->element[0]->len == 0 || r->element[0]->len >= hostlen ||
		   r->element[0]->len > ALQ_SENTINEL_HOST_MAX ||
		   al_port_parse(r->element[1]->str, r->element[1]->len, &p) <
		       0) {
		snprintf(why, wl, "%s",
			 r->type == REDIS_REPLY_ERROR ? r->str
						      : "unexpected reply");
	} else {
		memcpy(host, r->element[0]->str, r->element[0]->len);
		host[r->element[0]->len] = '\0';
		*port = p;
		ret = 0;
		/* a master on an address never followed (cluster.h) */
		if (!alq_node_allowed(host, u->sentinel[i].host)) {
			snprintf(why, wl,
				 "names master %.64s, an address never "
				 "followed",
				 host);
			ret = -EPERM;
		}
	}
out:
	freeReplyObject(r);
	if (rc)
		redisFree(rc);
	return ret;
}

int alq_sentinel_master(const struct alq_url *u, uint32_t timeout_ms,
			char *host, size_t hostlen, int *port, char *err,
			size_t errlen)
{
	size_t used = 0;

	if (errlen)
		err[0] = '\0';
	for (unsigned i = 0; i < u->n_sentinels; i++) {
		char why[128];
		int n;

		if (ask(u, i, timeout_ms, host, hostlen, port, why,
			sizeof(why)) == 0)
			return 0;
		n = snprintf(err + used, errlen > used ? errlen - used : 0,
			     "%ssentinel %.64s:%d: %s", used ? "; " : "",
			     u->sentinel[i].host, u->sentinel[i].port, why);
		if (n > 0 && used + (size_t)n < errlen)
			used += (size_t)n;
	}
	return -EHOSTUNREACH;
}
