/* common.c: keys, ids, replies and record endings the session files
 * share (internal.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "sess_internal.h"

int sess__key(char *buf, size_t len, const char *q, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(buf, len, "airlock:{%s}:sess:", q), m;

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	va_start(ap, fmt);
	m = vsnprintf(buf + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	if (m < 0 || (size_t)m >= len - (size_t)n)
		return -ENAMETOOLONG;
	return 0;
}

redisContext *sess__rc(struct alq_client *cl, const struct al_sess_opts *o)
{
	if (cl->rc && !cl->rc->err)
		return cl->rc;
	alq_client_close(cl);
	if (alq_client_open(cl, &o->url, o->queue, sess__timeout_ms(o)) < 0) {
		alq_client_close(cl);
		return NULL;
	}
	return cl->rc;
}

bool sess__id_valid(const char *id)
{
	size_t n = strlen(id);

	return al_sess_id_ok(id, n, 's') || al_sess_id_ok(id, n, 'r');
}

int sess__new_id(char *buf, size_t len, char prefix)
{
	unsigned char b[12];

	if (len < 27)
		return -ENAMETOOLONG;
	if (getrandom(b, sizeof(b), 0) != sizeof(b))
		return -EIO;
	buf[0] = prefix;
	buf[1] = '-';
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(buf + 2 + 2 * i, 3, "%02x", b[i]);
	return 0;
}

void sess__iso(uint64_t ms, char out[32])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	char day[24];

	gmtime_r(&t, &tm);
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, 32, "%.19s.%03uZ", day, (unsigned)(ms % 1000));
}

int sess__check(redisContext *rc, redisReply *r, char *err, size_t len)
{
	if (r && r->type != REDIS_REPLY_ERROR)
		return 0;
	if (err)
		snprintf(err, len, "redis: %s",
			 r		 ? r->str
			 : rc->errstr[0] ? rc->errstr
					 : "no reply");
	return -EIO;
}

int sess__reply(redisContext *rc, const char *q, const char *rid,
	       const char *json)
{
	char k[SESS_KEY_MAX];
	redisReply *r;
	int ret;

	if (sess__key(k, sizeof(k), q, "reply:%s", rid) < 0)
		return -EINVAL;
	redisAppendCommand(rc, "RPUSH %s %s", k, json);
	redisAppendCommand(rc, "EXPIRE %s %u", k, SESS_REPLY_TTL_S);
	ret = 0;
	for (int i = 0; i < 2; i++) {
		r = NULL;
		if (redisGetReply(rc, (void **)&r) != REDIS_OK || !r ||
		    r->type == REDIS_REPLY_ERROR)
			ret = -EIO;
		if (r)
			freeReplyObject(r);
		if (!rc || rc->err)
			return -EIO;
	}
	return ret;
}

/* KEYS[1] record, KEYS[2] stats; ARGV reason, error, now_ms, keep_s */
static const char END_LUA[] =
    "local st = redis.call('HGET', KEYS[1], 'state')\n"
    "if not st or st == 'ended' then return 0 end\n"
    "redis.call('HSET', KEYS[1], 'state', 'ended', 'reason', ARGV[1],\n"
    "  'ended_at_ms', ARGV[3])\n"
    "if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'error', ARGV[2])"
    " end\n"
    "redis.call('EXPIRE', KEYS[1], tonumber(ARGV[4]))\n"
    "redis.call('HINCRBY', KEYS[2], 'ended:' .. ARGV[1], 1)\n"
    "return 1\n";

int sess__end(redisContext *rc, const char *q, const char *id,
	     const char *reason, const char *error, uint32_t keep_s,
	     uint64_t at_ms)
{
	char k[SESS_KEY_MAX], ks[SESS_KEY_MAX], now[24], keep[16];
	redisReply *r;
	int ret;

	if (sess__key(k, sizeof(k), q, "%s", id) < 0 ||
	    sess__key(ks, sizeof(ks), q, "stats") < 0)
		return -EINVAL;
	snprintf(now, sizeof(now), "%llu",
		 (unsigned long long)(at_ms ? at_ms : al_wall_ms()));
	snprintf(keep, sizeof(keep), "%u", keep_s);
	r = redisCommand(rc, "EVAL %s 2 %s %s %s %s %s %s", END_LUA, k, ks,
			 reason, error ? error : "", now, keep);
	if (sess__check(rc, r, NULL, 0) < 0)
		ret = -EIO;
	else
		ret = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
	if (r)
		freeReplyObject(r);
	return ret;
}

static const char B64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

json_t *al_sess_blob_json(const char *p, size_t n)
{
	json_t *s = json_stringn(p, n);
	char *out;
	size_t o = 0;

	if (s || n > (64u << 20))
		return s;
	out = malloc((n + 2) / 3 * 4 + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)(unsigned char)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)(unsigned char)p[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)p[i + 2];
		out[o++] = B64[v >> 18 & 63];
		out[o++] = B64[v >> 12 & 63];
		out[o++] = i + 1 < n ? B64[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? B64[v & 63] : '=';
	}
	out[o] = '\0';
	s = json_pack("{s:s}", "base64", out);
	free(out);
	return s;
}

/* Hash fields kept as numbers in JSON; the rest are strings. */
static const char *const NUMERIC[] = {
    "created_at_ms", "expires_at_ms", "alive_at_ms",
    "ended_at_ms",   "idle_at_ms",    "ttl_s",
    "idle_s",	     "execs",	      "exit_code",
    "signal",	     "wall_ms",	      "cpu_ms",
    "stdout_bytes",  "stderr_bytes",  "started_at_ms",
    "restore_ms",    "exec",	      "hibernate_s",
    "resumed_ms",    "resumes",       "hibernated_at_ms",
    "hibernate_ms",
    NULL,
};
static const char *const BOOLEAN[] = {"stdout_truncated", "stderr_truncated",
				      "warm", "cancelled", "saveable", "hibernated",
				      NULL};
static const char *const ISO[][2] = {
    {"created_at_ms", "created_at"},
    {"expires_at_ms", "expires_at"},
    {"ended_at_ms", "ended_at"},
    {"idle_at_ms", "idle_at"},
};

static bool in(const char *const *set, const char *s)
{
	for (; *set; set++)
		if (!strcmp(*set, s))
			return true;
	return false;
}

/* HGETALL reply pairs -> object. */
static json_t *hash_json(const redisReply *r)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i + 1 < r->elements; i += 2) {
		const redisReply *k = r->element[i], *v = r->element[i + 1];
		json_t *j;

		if (k->type != REDIS_REPLY_STRING ||
		    v->type != REDIS_REPLY_STRING)
			continue;
		if (in(NUMERIC, k->str))
			j = json_integer(strtoll(v->str, NULL, 10));
		else if (in(BOOLEAN, k->str))
			j = json_boolean(v->str[0] == '1');
		else if (!strcmp(k->str, "metadata") || !strcmp(k->str, "env"))
			j = json_loadb(v->str, v->len, 0, NULL);
		else
			j = al_sess_blob_json(v->str, v->len);
		if (j)
			json_object_set_new(o, k->str, j);
	}
	for (size_t i = 0; o && i < sizeof(ISO) / sizeof(ISO[0]); i++) {
		json_t *ms = json_object_get(o, ISO[i][0]);
		char iso[32];

		if (json_is_integer(ms) && json_integer_value(ms) > 0) {
			sess__iso((uint64_t)json_integer_value(ms), iso);
			json_object_set_new(o, ISO[i][1], json_string(iso));
		}
	}
	return o;
}

static int get_hash(redisContext *rc, const char *key, json_t **ret, char *err,
		    size_t len)
{
	redisReply *r = redisCommand(rc, "HGETALL %s", key);
	int ret_ = sess__check(rc, r, err, len);

	if (ret_ == 0 && (r->type != REDIS_REPLY_ARRAY || !r->elements))
		ret_ = -ENOENT;
	if (ret_ == 0 && !(*ret = hash_json(r)))
		ret_ = -ENOMEM;
	if (r)
		freeReplyObject(r);
	return ret_;
}

int sess__record_json(redisContext *rc, const char *q, const char *id,
		     json_t **ret, char *err, size_t len)
{
	char k[SESS_KEY_MAX];

	if (sess__key(k, sizeof(k), q, "%s", id) < 0)
		return -EINVAL;
	return get_hash(rc, k, ret, err, len);
}

int sess__exec_json(redisContext *rc, const char *q, const char *id, uint64_t n,
		   json_t **ret, char *err, size_t len)
{
	char k[SESS_KEY_MAX];

	if (sess__key(k, sizeof(k), q, "%s:x:%llu", id, (unsigned long long)n) <
	    0)
		return -EINVAL;
	return get_hash(rc, k, ret, err, len);
}

int sess__fail(struct alq_client *c, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return r;
}

const unsigned SESS_EXEC_BUCKETS[SESS_EXEC_NBUCKETS] = {
    10, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000};
