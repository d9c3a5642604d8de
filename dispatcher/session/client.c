/* client.c: the session operations every front end uses (sessions.h):
 * the CLI (tools/cli/cmd_session.c) and the HTTP API alike.
 *
 * A create is validated here first (its template, limits, network and
 * files decoded as a job's are, its metadata as string pairs), recorded
 * `pending`, and pushed on P:create for any host with room; the client
 * waits on its own reply list. Extend and delete go to the owning host's
 * control list, execs to the session's own request list. Every wait is in
 * slices of a second, and between slices the record is read again: a
 * session that ended, or whose host stopped heartbeating (then it is
 * ended `lost` here, naming the host), ends the wait with that status,
 * never a hang.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "sess_internal.h"
#include "proto.h"
#include "sessions.h"

#define SLICE_S	   "1"
#define META_MAX   64	/* metadata pairs */
#define META_BYTES 1024 /* per key or value */

/* KEYS[1] record, KEYS[2] stats; ARGV host key prefix, now, keep_s */
static const char LOST_LUA[] =
    "local st = redis.call('HGET', KEYS[1], 'state')\n"
    "if not st or st == 'ended' or st == 'pending' then return 0 end\n"
    "local h = redis.call('HGET', KEYS[1], 'host')\n"
    "if not h then return 0 end\n"
    "if redis.call('EXISTS', ARGV[1] .. h) == 1 then return 0 end\n"
    "redis.call('HSET', KEYS[1], 'state', 'ended', 'reason', 'lost',\n"
    "  'ended_at_ms', ARGV[2], 'error', 'its host ' .. h .. "
    "' stopped heartbeating (died or lost Redis)')\n"
    "redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))\n"
    "redis.call('HINCRBY', KEYS[2], 'ended:lost', 1)\n"
    "return 1\n";

/* KEYS[1] record, KEYS[2] stats; ARGV error, now, keep_s */
static const char GIVEUP_LUA[] =
    "if redis.call('HGET', KEYS[1], 'state') ~= 'pending' then "
    "return 0 end\n"
    "redis.call('HSET', KEYS[1], 'state', 'ended', 'reason', 'failed',\n"
    "  'ended_at_ms', ARGV[2], 'error', ARGV[1])\n"
    "redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))\n"
    "redis.call('HINCRBY', KEYS[2], 'ended:failed', 1)\n"
    "return 1\n";

static int dump(json_t *j, char **ret)
{
	*ret = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return *ret ? 0 : -ENOMEM;
}

/* May c's principal see record `rec`? An operator ("") every one, a
 * principal those it owns. */
static bool owns(const struct alq_client *c, json_t *rec)
{
	const char *o = json_string_value(json_object_get(rec, "owner"));

	return !c->principal[0] || (o && !strcmp(o, c->principal));
}

/* Session `id` as another principal sees one it does not own: absent. */
static int unknown(struct alq_client *c, const char *id)
{
	return sess__fail(c, -ENOENT, "%s: unknown session", id);
}

/* 0 when c's principal owns session `id` (always for an operator), else
 * -ENOENT "unknown session" (absent or another's: the same answer). */
static int own(struct alq_client *c, const char *id)
{
	char k[SESS_KEY_MAX];
	redisReply *r;
	int x;

	if (!sess__id_valid(id) || id[0] != 's')
		return unknown(c, id);
	if (!c->principal[0])
		return 0;
	sess__key(k, sizeof(k), c->queue, "%s", id);
	r = redisCommand(c->rc, "HGET %s owner", k);
	x = sess__check(c->rc, r, c->err, sizeof(c->err));
	if (x == 0 &&
	    (r->type != REDIS_REPLY_STRING || strcmp(r->str, c->principal)))
		x = unknown(c, id);
	if (r)
		freeReplyObject(r);
	return x;
}

int al_sess_expiry(struct alq_client *c, const char *id, json_t *obj)
{
	char k[SESS_KEY_MAX], iso[32];
	unsigned long long ms;
	redisReply *r;
	int x;

	if ((x = own(c, id)) < 0)
		return x;
	sess__key(k, sizeof(k), c->queue, "%s", id);
	r = redisCommand(c->rc, "HGET %s expires_at_ms", k);
	x = sess__check(c->rc, r, c->err, sizeof(c->err));
	if (x == 0 && r->type == REDIS_REPLY_STRING && r->len < 24 &&
	    (ms = strtoull(r->str, NULL, 10)) > 0) {
		sess__iso(ms, iso);
		json_object_set_new(obj, "expires_at_ms",
				    json_integer((json_int_t)ms));
		json_object_set_new(obj, "expires_at", json_string(iso));
	}
	if (r)
		freeReplyObject(r);
	return x;
}

static int record_any(struct alq_client *c, const char *id, json_t **ret);

/* record_any() of a session c's principal owns; another's is -ENOENT. */
static int record(struct alq_client *c, const char *id, json_t **ret)
{
	int x = record_any(c, id, ret);

	if (x == 0 && !owns(c, *ret)) {
		json_decref(*ret);
		*ret = NULL;
		return unknown(c, id);
	}
	return x;
}

/* End it `lost` if its host stopped heartbeating; then read it. */
static int record_any(struct alq_client *c, const char *id, json_t **ret)
{
	char k[SESS_KEY_MAX], ks[SESS_KEY_MAX], hp[SESS_KEY_MAX], now[24];
	redisReply *r;
	int x;

	if (!sess__id_valid(id) || id[0] != 's')
		return unknown(c, id);
	sess__key(k, sizeof(k), c->queue, "%s", id);
	sess__key(ks, sizeof(ks), c->queue, "stats");
	sess__key(hp, sizeof(hp), c->queue, "host:");
	snprintf(now, sizeof(now), "%llu", (unsigned long long)al_wall_ms());
	r = redisCommand(c->rc, "EVAL %s 2 %s %s %s %s %s", LOST_LUA, k, ks, hp,
			 now, "3600");
	x = sess__check(c->rc, r, c->err, sizeof(c->err));
	if (r)
		freeReplyObject(r);
	if (x < 0)
		return x;
	x = sess__record_json(c->rc, c->queue, id, ret, c->err, sizeof(c->err));
	if (x == -ENOENT)
		return unknown(c, id);
	return x;
}

static const char *state_of(json_t *rec)
{
	const char *s = json_string_value(json_object_get(rec, "state"));

	return s ? s : "?";
}

/* The session has ended: -ESRCH with why in c->err. */
static int ended(struct alq_client *c, const char *id, json_t *rec)
{
	const char *reason = json_string_value(json_object_get(rec, "reason"));
	const char *err = json_string_value(json_object_get(rec, "error"));

	return sess__fail(c, -ESRCH, "%s: session ended (%s)%s%s", id,
		    reason ? reason : "?", err && err[0] ? ": " : "",
		    err ? err : "");
}

/* record() of a session that has not ended: 0 with *ret (the caller's to
 * free), or -errno with why in c->err (-ESRCH: it ended). */
static int live(struct alq_client *c, const char *id, json_t **ret)
{
	json_t *rec;
	int x = record(c, id, &rec);

	if (x < 0)
		return x;
	if (!strcmp(state_of(rec), "ended")) {
		x = ended(c, id, rec);
		json_decref(rec);
		return x;
	}
	*ret = rec;
	return 0;
}

/* Wait for the reply to `rid`; between slices re-read the record of `id`
 * (NULL: none) and stop if it ended. 0 and the reply, -ETIMEDOUT. */
static int await(struct alq_client *c, const char *rid, const char *id,
		 uint64_t timeout_ms, json_t **ret)
{
	uint64_t end = al_now_ms() + timeout_ms;
	char k[SESS_KEY_MAX];
	json_t *rec;
	int x;

	sess__key(k, sizeof(k), c->queue, "reply:%s", rid);
	for (;;) {
		redisReply *r = redisCommand(c->rc, "BLPOP %s " SLICE_S, k);

		x = sess__check(c->rc, r, c->err, sizeof(c->err));
		if (x == 0 && r->type == REDIS_REPLY_ARRAY &&
		    r->elements == 2 &&
		    r->element[1]->len <= AL_SESS_BODY_MAX) {
			*ret = json_loadb(r->element[1]->str,
					  r->element[1]->len, 0, NULL);
			freeReplyObject(r);
			return *ret ? 0 : sess__fail(c, -EBADMSG, "bad reply");
		}
		if (r)
			freeReplyObject(r);
		if (x < 0)
			return x;
		if (id) {
			x = live(c, id, &rec);
			if (x < 0)
				return x;
			json_decref(rec);
		}
		if (al_now_ms() >= end)
			return sess__fail(c, -ETIMEDOUT, "no reply within %llu ms",
				    (unsigned long long)timeout_ms);
	}
}

/* A reply carrying "error" is a refusal: -EINVAL with its text ("" is
 * no refusal). */
static int refused(struct alq_client *c, json_t *rep)
{
	const char *e = json_string_value(json_object_get(rep, "error"));

	if (!e || !e[0])
		return 0;
	return sess__fail(c, -EINVAL, "%s", e);
}

/* Validate a create body before it is queued. */
static int check_body(struct alq_client *c, json_t *body)
{
	static const char *const keep[] = {"template", "limits", "network",
					   "files"};
	static const char *const known[] = {"template", "limits", "network",
					    "files",	"env",	  "metadata",
					    "ttl_s",	"idle_s", "saveable",
					    "fork_of", "hibernate_s", NULL};
	json_t *job = json_object(), *meta = json_object_get(body, "metadata");
	struct al_job j = {0};
	struct al_diags d;
	const char *k;
	json_t *v;
	char *text, why[512];
	int r;

	json_object_foreach(body, k, v)
	{
		size_t i = 0;

		while (known[i] && strcmp(known[i], k))
			i++;
		if (!known[i]) {
			json_decref(job);
			return sess__fail(c, -EINVAL, "%s: unknown field", k);
		}
	}
	if (json_object_get(body, "hibernate_s") &&
	    (!json_is_integer(json_object_get(body, "hibernate_s")) ||
	     json_integer_value(json_object_get(body, "hibernate_s")) < 0 ||
	     json_integer_value(json_object_get(body, "hibernate_s")) >
		 604800)) {
		json_decref(job);
		return sess__fail(c, -EINVAL, "hibernate_s: 0..604800 seconds");
	}
	if (json_object_get(body, "saveable") &&
	    !json_is_boolean(json_object_get(body, "saveable"))) {
		json_decref(job);
		return sess__fail(c, -EINVAL, "saveable: must be true or false");
	}
	if (json_is_true(json_object_get(body, "saveable")) &&
	    json_string_value(json_object_get(body, "network")) &&
	    strcmp(json_string_value(json_object_get(body, "network")),
		   "none")) {
		json_decref(job);
		return sess__fail(c, -EINVAL,
				 "saveable: not with a network (a snapshot's "
				 "VM has no NIC: docs/sessions.md)");
	}
	if (meta &&
	    (!json_is_object(meta) || json_object_size(meta) > META_MAX)) {
		json_decref(job);
		return sess__fail(c, -EINVAL,
			    "metadata: must be an object of at "
			    "most %d string pairs",
			    META_MAX);
	}
	json_object_foreach(meta, k, v) if (!json_is_string(v) ||
					    strlen(k) > META_BYTES ||
					    json_string_length(v) > META_BYTES)
	{
		json_decref(job);
		return sess__fail(c, -EINVAL,
			    "metadata.%s: must be a string "
			    "of at most %d bytes",
			    k, META_BYTES);
	}
	for (size_t i = 0; job && i < 4; i++)
		if (json_object_get(body, keep[i]))
			json_object_set(job, keep[i],
					json_object_get(body, keep[i]));
	json_object_set_new(job, "steps", json_pack("[{s:s}]", "sh", "true"));
	if (json_object_get(body, "env"))
		json_object_set(
		    json_array_get(json_object_get(job, "steps"), 0), "env",
		    json_object_get(body, "env"));
	text = json_dumps(job, JSON_COMPACT);
	json_decref(job);
	if (!text)
		return -ENOMEM;
	al_diags_init(&d);
	r = al_job_from_json(text, strlen(text), &j, &d);
	free(text);
	al_job_release(&j);
	if (r < 0) {
		al_diags_format(&d, why, sizeof(why));
		for (char *p = why; (p = strstr(p, "steps[0]."));)
			memmove(p, p + 9, strlen(p + 9) + 1);
		return sess__fail(c, -EINVAL, "%s", why);
	}
	return 0;
}

/* Record and queue the create of `b` (checked) on list `list` (P:LIST):
 * id and rid in id, rid (32 bytes each). */
static int create_push(struct alq_client *c, json_t *b, uint32_t timeout_ms,
		       const char *list, char *id, char *rid)
{
	json_t *req = NULL;
	char k[SESS_KEY_MAX], ks[SESS_KEY_MAX], *meta = NULL, *text = NULL;
	const char *tmpl, *net;
	uint64_t w = al_wall_ms();
	redisReply *r;
	int x;

	x = check_body(c, b);
	if (x == 0)
		x = sess__new_id(id, 32, 's') ?: sess__new_id(rid, 32, 'r');
	if (x < 0)
		return x;
	tmpl = json_string_value(json_object_get(b, "template"));
	net = json_string_value(json_object_get(b, "network"));
	meta = json_dumps(json_object_get(b, "metadata")
			      ? json_object_get(b, "metadata")
			      : json_object(),
			  JSON_COMPACT);
	sess__key(k, sizeof(k), c->queue, "%s", id);
	r = redisCommand(c->rc,
			 "HSET %s id %s state pending created_at_ms "
			 "%llu template %s network %s metadata %s execs 0 "
			 "owner %s",
			 k, id, (unsigned long long)w, tmpl ? tmpl : "",
			 net ? net : "none", meta ? meta : "{}", c->principal);
	x = sess__check(c->rc, r, c->err, sizeof(c->err));
	if (r)
		freeReplyObject(r);
	sess__key(ks, sizeof(ks), c->queue, "all");
	r = x == 0 ? redisCommand(c->rc, "SADD %s %s", ks, id) : NULL;
	if (r)
		freeReplyObject(r);
	req = json_pack("{s:s,s:s,s:I,s:O}", "id", id, "rid", rid,
			"deadline_ms", (json_int_t)(w + timeout_ms), "body", b);
	text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	if (x == 0 && !text)
		x = -ENOMEM;
	sess__key(ks, sizeof(ks), c->queue, "%s", list);
	r = x == 0 ? redisCommand(c->rc, "RPUSH %s %s", ks, text) : NULL;
	if (x == 0)
		x = sess__check(c->rc, r, c->err, sizeof(c->err));
	if (r)
		freeReplyObject(r);
	/* a host's own list (forks) goes with its requests' deadlines, even
	 * when that host died with entries in it */
	r = x == 0 && strcmp(list, "create")
		? redisCommand(c->rc, "EXPIRE %s %u", ks,
			       timeout_ms / 1000 + SESS_REPLY_TTL_S)
		: NULL;
	if (r)
		freeReplyObject(r);
	json_decref(req);
	free(meta);
	free(text);
	return x;
}

/* Wait for the create (id, rid) queued at start_ms (al_now_ms) to be
 * answered: a host with room takes it by the deadline, else it fails;
 * once taken, its VM gets SESS_START_MAX_MS to come up. */
static int create_wait(struct alq_client *c, const char *id, const char *rid,
		       uint64_t start_ms, uint32_t timeout_ms, char **ret)
{
	char k[SESS_KEY_MAX], ks[SESS_KEY_MAX], now[24];
	uint64_t end = start_ms + timeout_ms;
	json_t *rep = NULL;
	redisReply *r;
	int x;

	sess__key(k, sizeof(k), c->queue, "%s", id);
	for (;;) {
		json_t *rec = NULL;

		x = await(c, rid, NULL, 1000, &rep);
		if (x != -ETIMEDOUT)
			break;
		x = live(c, id, &rec);
		if (x < 0)
			break;
		if (!strcmp(state_of(rec), "pending") && al_now_ms() >= end) {
			json_decref(rec);
			sess__key(ks, sizeof(ks), c->queue, "stats");
			snprintf(now, sizeof(now), "%llu",
				 (unsigned long long)al_wall_ms());
			snprintf(c->err, sizeof(c->err),
				 "create_timeout: no "
				 "host had room for a session within %u ms "
				 "(workers.max_sessions)",
				 timeout_ms);
			r = redisCommand(c->rc, "EVAL %s 2 %s %s %s %s 3600",
					 GIVEUP_LUA, k, ks, c->err, now);
			if (r)
				freeReplyObject(r);
			x = -ETIMEDOUT;
			break;
		}
		json_decref(rec);
		if (al_now_ms() >= end + SESS_START_MAX_MS) {
			x = sess__fail(c, -ETIMEDOUT, "%s: the VM did not come up",
				 id);
			break;
		}
	}
	if (x == 0)
		x = refused(c, rep);
	if (x == 0)
		x = dump(json_incref(rep), ret);
	json_decref(rep);
	return x;
}

int sess__create_on(struct alq_client *c, json_t *b, uint32_t timeout_ms,
		   const char *list, char *id, char *rid)
{
	return create_push(c, b, timeout_ms, list, id, rid);
}

int sess__create_wait(struct alq_client *c, const char *id, const char *rid,
		     uint64_t start_ms, uint32_t timeout_ms, char **ret)
{
	return create_wait(c, id, rid, start_ms, timeout_ms, ret);
}

int al_sess_create(struct alq_client *c, const char *body, uint32_t timeout_ms,
		   char **ret)
{
	json_t *b = json_loads(body, 0, NULL);
	char id[32], rid[32];
	uint64_t t0 = al_now_ms();
	int x;

	if (strlen(body) > AL_SESS_BODY_MAX) {
		json_decref(b);
		return sess__fail(c, -E2BIG, "create: body over %u bytes",
			    AL_SESS_BODY_MAX);
	}
	if (!json_is_object(b)) {
		json_decref(b);
		return sess__fail(c, -EINVAL,
			    "create: the body is not a JSON object");
	}
	if (json_object_get(b, "fork_of")) { /* the host's alone (save.c) */
		json_decref(b);
		return sess__fail(c, -EINVAL,
				  "fork_of: not a field a client sets (POST "
				  "/sessions/{id}/fork makes forks)");
	}
	x = create_push(c, b, timeout_ms, "create", id, rid);
	json_decref(b);
	return x < 0 ? x : create_wait(c, id, rid, t0, timeout_ms, ret);
}

int al_sess_get(struct alq_client *c, const char *id, char **ret)
{
	json_t *rec;
	int x = record(c, id, &rec);

	return x < 0 ? x : dump(rec, ret);
}

/* Does record `rec` have state `state` (NULL: any) and every pair of
 * `meta` (NULL: none asked) in its metadata? */
static bool list_match(json_t *rec, const char *state, json_t *meta)
{
	json_t *have = json_object_get(rec, "metadata"), *v;
	const char *k, *hv;

	if (state && strcmp(state, state_of(rec)))
		return false;
	json_object_foreach(meta, k, v)
	{
		hv = json_string_value(json_object_get(have, k));
		if (!hv || !json_is_string(v) || strcmp(hv, json_string_value(v)))
			return false;
	}
	return true;
}

int al_sess_list(struct alq_client *c, const char *state, json_t *meta,
		 char **ret)
{
	char k[SESS_KEY_MAX];
	json_t *out = json_object(), *arr = json_array(), *stats = NULL;
	redisReply *r;
	int x;

	sess__key(k, sizeof(k), c->queue, "all");
	r = redisCommand(c->rc, "SMEMBERS %s", k);
	x = sess__check(c->rc, r, c->err, sizeof(c->err));
	for (size_t i = 0; x == 0 && r->type == REDIS_REPLY_ARRAY &&
			   i < r->elements && i < 100000;
	     i++) {
		const char *id = r->element[i]->str;
		json_t *rec;
		int y = id ? record_any(c, id, &rec) : -EINVAL;

		if (y == 0 && owns(c, rec) && list_match(rec, state, meta)) {
			json_array_append_new(arr, rec);
		} else if (y == 0) {
			json_decref(rec);
		} else if (y == -ENOENT || y == -EINVAL) {
			redisReply *d =
			    redisCommand(c->rc, "SREM %s %s", k, id ? id : "");
			if (d)
				freeReplyObject(d);
		}
	}
	if (r)
		freeReplyObject(r);
	sess__key(k, sizeof(k), c->queue, "stats");
	r = x == 0 ? redisCommand(c->rc, "HGETALL %s", k) : NULL;
	stats = json_object();
	for (size_t i = 0;
	     !c->principal[0] && /* the queue's: operators' */
	     r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements;
	     i += 2)
		json_object_set_new(
		    stats, r->element[i]->str,
		    json_integer(strtoll(r->element[i + 1]->str, NULL, 10)));
	if (r)
		freeReplyObject(r);
	json_object_set_new(out, "sessions", arr);
	json_object_set_new(out, "stats", stats);
	if (x < 0) {
		json_decref(out);
		return x;
	}
	return dump(out, ret);
}

/* RPUSH req (JSON; consumed, NULL: out of memory) onto list k. */
static int push(struct alq_client *c, const char *k, json_t *req)
{
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	redisReply *r;
	int x;

	json_decref(req);
	if (!text)
		return -ENOMEM;
	r = redisCommand(c->rc, "RPUSH %s %s", k, text);
	free(text);
	x = sess__check(c->rc, r, c->err, sizeof(c->err));
	if (r)
		freeReplyObject(r);
	return x;
}

/* Send {op, id, rid, ...extra} to the session's host; its reply. */
static int to_host(struct alq_client *c, const char *id, const char *op,
		   json_t *extra, json_t **ret)
{
	json_t *rec, *req;
	const char *host;
	char rid[32], k[SESS_KEY_MAX];
	int x = live(c, id, &rec);

	if (x < 0)
		return x;
	host = json_string_value(json_object_get(rec, "host"));
	if (!host || sess__new_id(rid, sizeof(rid), 'r') < 0) {
		json_decref(rec);
		return sess__fail(c, -EAGAIN, "%s: not on a host yet (%s)", id,
			    state_of(rec));
	}
	sess__key(k, sizeof(k), c->queue, "host:%s:ctl", host);
	json_decref(rec);
	req = json_pack("{s:s,s:s,s:s}", "op", op, "id", id, "rid", rid);
	if (extra)
		json_object_update(req, extra);
	x = push(c, k, req);
	if (x == 0)
		x = await(c, rid, id, 10000, ret);
	if (x == 0 && (x = refused(c, *ret)) < 0)
		json_decref(*ret);
	return x;
}

int al_sess_extend(struct alq_client *c, const char *id, uint32_t ttl_s,
		   char **ret)
{
	json_t *extra = json_pack("{s:I}", "ttl_s", (json_int_t)ttl_s), *rep;
	int x = to_host(c, id, "extend", extra, &rep);

	json_decref(extra);
	if (x == -EINVAL && !strncmp(c->err, "extend refused", 14))
		x = -ERANGE;
	return x < 0 ? x : dump(rep, ret);
}

int al_sess_delete(struct alq_client *c, const char *id, char **ret)
{
	uint64_t end;
	json_t *rep, *rec;
	int x = to_host(c, id, "delete", NULL, &rep);

	if (x < 0)
		return x;
	json_decref(rep);
	end = al_now_ms() + SESS_STOP_GRACE_MS + 5000;
	for (;;) {
		x = record(c, id, &rec);
		if (x < 0)
			return x;
		if (!strcmp(state_of(rec), "ended") || al_now_ms() >= end)
			return dump(rec, ret);
		json_decref(rec);
		redisReply *r = redisCommand(c->rc, "PING");
		if (r)
			freeReplyObject(r);
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

int al_sess_exec_start(struct alq_client *c, const char *id, const char *body,
		       uint32_t timeout_ms, uint64_t *ret_n)
{
	json_t *b, *rec, *req, *rep;
	char rid[32], k[SESS_KEY_MAX];
	int x;

	if (strlen(body) > AL_SESS_BODY_MAX)
		return sess__fail(c, -E2BIG, "exec: body over %u bytes",
			    AL_SESS_BODY_MAX);
	/* stdin may be text with NULs (a tar of text files is): JSON
	 * carries them as \u0000, and the job decoder takes them */
	b = json_loads(body, JSON_ALLOW_NUL, NULL);
	if (!json_is_object(b)) {
		json_decref(b);
		return sess__fail(c, -EINVAL, "exec: the body is not a JSON object");
	}
	x = live(c, id, &rec);
	if (x == 0)
		json_decref(rec);
	if (x == 0)
		x = sess__new_id(rid, sizeof(rid), 'r');
	if (x < 0) {
		json_decref(b);
		return x;
	}
	req = json_pack("{s:s,s:s,s:o}", "op", "exec", "rid", rid, "body", b);
	sess__key(k, sizeof(k), c->queue, "%s:req", id);
	x = push(c, k, req);
	if (x == 0)
		x = await(c, rid, id, timeout_ms ? timeout_ms : UINT32_MAX,
			  &rep);
	if (x < 0)
		return x;
	x = refused(c, rep);
	if (x == 0 && !json_is_integer(json_object_get(rep, "exec")))
		x = sess__fail(c, -EBADMSG, "exec: bad reply");
	if (x == 0)
		*ret_n =
		    (uint64_t)json_integer_value(json_object_get(rep, "exec"));
	json_decref(rep);
	return x;
}

int al_sess_exec_signal(struct alq_client *c, const char *id, uint64_t n,
			const char *signal, int64_t grace_ms, char **ret)
{
	const char *sig = signal ? signal : "TERM", *state, *st;
	json_t *x, *rec, *req, *rep;
	char rid[32], k[SESS_KEY_MAX];
	int r;

	if (!al_step_signal_number(sig))
		return sess__fail(c, -EINVAL,
				 "%s: not a signal a session takes (TERM KILL "
				 "INT HUP QUIT USR1 USR2)",
				 sig);
	if (grace_ms > (int64_t)AL_SIGNAL_GRACE_MAX)
		return sess__fail(c, -ERANGE, "grace_ms: at most %u",
				 AL_SIGNAL_GRACE_MAX);
	r = live(c, id, &rec);
	if (r < 0)
		return r;
	json_decref(rec);
	r = sess__exec_json(c->rc, c->queue, id, n, &x, c->err, sizeof(c->err));
	if (r == -ENOENT)
		return sess__fail(c, r, "%s: no exec %llu", id,
				 (unsigned long long)n);
	if (r < 0)
		return r;
	state = json_string_value(json_object_get(x, "state"));
	st = json_string_value(json_object_get(x, "status"));
	if (state && !strcmp(state, "done")) {
		r = sess__fail(c, -EALREADY, "%s: exec %llu has already ended (%s)",
			      id, (unsigned long long)n, st ? st : "?");
		json_decref(x);
		return r;
	}
	json_decref(x);
	if ((r = sess__new_id(rid, sizeof(rid), 'r')) < 0)
		return r;
	req = json_pack("{s:s,s:s,s:I,s:s}", "op", "signal", "rid", rid,
			"exec", (json_int_t)n, "signal", sig);
	if (req && grace_ms >= 0)
		json_object_set_new(req, "grace_ms", json_integer(grace_ms));
	sess__key(k, sizeof(k), c->queue, "%s:sig", id);
	r = push(c, k, req);
	if (r == 0)
		r = await(c, rid, id, 10000, &rep);
	if (r < 0)
		return r;
	if ((r = refused(c, rep)) < 0) {
		if (strstr(c->err, "already ended"))
			r = -EALREADY;
		json_decref(rep);
		return r;
	}
	al_sess_expiry(c, id, rep);
	return dump(rep, ret);
}

int al_sess_exec_get(struct alq_client *c, const char *id, uint64_t n,
		     char **ret)
{
	json_t *x;
	int r;

	if ((r = own(c, id)) < 0)
		return r;
	r = sess__exec_json(c->rc, c->queue, id, n, &x, c->err, sizeof(c->err));
	if (r == -ENOENT)
		return sess__fail(c, r, "%s: no exec %llu", id,
			    (unsigned long long)n);
	if (r == 0)
		al_sess_expiry(c, id, x);
	return r < 0 ? r : dump(x, ret);
}

int al_sess_exec_nap(struct alq_client *c, const char *id, uint64_t n,
		     uint32_t ms)
{
	char k[SESS_KEY_MAX];
	redisReply *r;
	int x;

	sess__key(k, sizeof(k), c->queue, "%s:x:%llu:end", id,
		 (unsigned long long)n);
	r = redisCommand(c->rc, "BLPOP %s %u.%03u", k, ms / 1000, ms % 1000);
	x = sess__check(c->rc, r, c->err, sizeof(c->err));
	if (r)
		freeReplyObject(r);
	return x;
}

int al_sess_exec_read(struct alq_client *c, const char *id, uint64_t n, int fd,
		      uint64_t offset, size_t max, char **ret, size_t *ret_len)
{
	char k[SESS_KEY_MAX];
	redisReply *r;
	int x;

	if ((fd != 1 && fd != 2) || !max || max > (16u << 20))
		return sess__fail(c, -EINVAL, "exec read: bad arguments");
	if ((x = own(c, id)) < 0)
		return x;
	sess__key(k, sizeof(k), c->queue, "%s:x:%llu:%d", id,
		 (unsigned long long)n, fd);
	r = redisCommand(c->rc, "GETRANGE %s %llu %llu", k,
			 (unsigned long long)offset,
			 (unsigned long long)(offset + max - 1));
	x = sess__check(c->rc, r, c->err, sizeof(c->err));
	if (x == 0 && r->type == REDIS_REPLY_STRING && r->len <= max) {
		*ret = malloc(r->len + 1);
		if (!*ret) {
			x = -ENOMEM;
		} else {
			memcpy(*ret, r->str, r->len);
			(*ret)[r->len] = '\0';
			*ret_len = r->len;
		}
	} else if (x == 0) {
		x = sess__fail(c, -EBADMSG, "exec read: bad reply");
	}
	if (r)
		freeReplyObject(r);
	return x;
}

int al_sess_metrics(struct alq_client *c, char *buf, size_t len)
{
	static const char *const reasons[] = {"destroyed", "ttl", "idle",
					      "lost", "failed"};
	long long created = 0, ended[5] = {0}, sum = 0;
	long long le[SESS_EXEC_NBUCKETS + 1] = {0}, exec_sum = 0, cum = 0;
	char k[SESS_KEY_MAX];
	redisReply *r;
	int n, m;

	sess__key(k, sizeof(k), c->queue, "stats");
	r = redisCommand(c->rc, "HGETALL %s", k);
	if (sess__check(c->rc, r, c->err, sizeof(c->err)) < 0) {
		if (r)
			freeReplyObject(r);
		return -EIO;
	}
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements;
	     i += 2) {
		const char *f = r->element[i]->str;
		long long v = strtoll(r->element[i + 1]->str, NULL, 10);

		if (!f)
			continue;
		if (!strcmp(f, "created"))
			created = v;
		else if (!strcmp(f, "exec_ms_sum"))
			exec_sum = v;
		else if (!strcmp(f, "exec_le:inf"))
			le[SESS_EXEC_NBUCKETS] = v;
		for (size_t j = 0; j < SESS_EXEC_NBUCKETS; j++)
			if (!strncmp(f, "exec_le:", 8) &&
			    strtoul(f + 8, NULL, 10) == SESS_EXEC_BUCKETS[j])
				le[j] = v;
		for (size_t j = 0; j < 5; j++)
			if (!strncmp(f, "ended:", 6) &&
			    !strcmp(f + 6, reasons[j]))
				ended[j] = v;
	}
	freeReplyObject(r);
	n = snprintf(buf, len,
		     "# HELP airlock_sessions_created_total Sessions a host "
		     "took on this queue.\n"
		     "# TYPE airlock_sessions_created_total counter\n"
		     "airlock_sessions_created_total %lld\n"
		     "# HELP airlock_sessions_ended_total Sessions ended, by "
		     "reason.\n"
		     "# TYPE airlock_sessions_ended_total counter\n",
		     created);
	for (size_t j = 0; j < 5 && n >= 0 && (size_t)n < len; j++) {
		sum += ended[j];
		m = snprintf(
		    buf + n, len - (size_t)n,
		    "airlock_sessions_ended_total{reason=\"%s\"} %lld\n",
		    reasons[j], ended[j]);
		n = m < 0 ? m : n + m;
	}
	if (n >= 0 && (size_t)n < len) {
		m = snprintf(buf + n, len - (size_t)n,
			     "# HELP airlock_sessions_alive Sessions taken and "
			     "not ended (starting or alive).\n"
			     "# TYPE airlock_sessions_alive gauge\n"
			     "airlock_sessions_alive %lld\n",
			     created > sum ? created - sum : 0);
		n = m < 0 ? m : n + m;
	}
	if (n >= 0 && (size_t)n < len) {
		m = snprintf(buf + n, len - (size_t)n,
			     "# HELP airlock_session_exec_seconds Session "
			     "execs' run time, started to done.\n"
			     "# TYPE airlock_session_exec_seconds histogram\n");
		n = m < 0 ? m : n + m;
	}
	for (size_t j = 0; j <= SESS_EXEC_NBUCKETS && n >= 0 && (size_t)n < len;
	     j++) {
		char bound[16] = "+Inf";

		if (j < SESS_EXEC_NBUCKETS)
			snprintf(bound, sizeof(bound), "%g",
				 SESS_EXEC_BUCKETS[j] / 1000.0);
		cum += le[j];
		m = snprintf(buf + n, len - (size_t)n,
			     "airlock_session_exec_seconds_bucket{le=\"%s\"} "
			     "%lld\n",
			     bound, cum);
		n = m < 0 ? m : n + m;
	}
	if (n >= 0 && (size_t)n < len) {
		m = snprintf(buf + n, len - (size_t)n,
			     "airlock_session_exec_seconds_sum %lld.%03lld\n"
			     "airlock_session_exec_seconds_count %lld\n",
			     exec_sum / 1000, exec_sum % 1000, cum);
		n = m < 0 ? m : n + m;
	}
	return n < 0 || (size_t)n >= len ? -E2BIG : n;
}

/* For save.c (sess_internal.h). */
int sess__live_record(struct alq_client *c, const char *id, json_t **ret)
{
	return live(c, id, ret);
}

int sess__push(struct alq_client *c, const char *k, json_t *req)
{
	return push(c, k, req);
}

int sess__await(struct alq_client *c, const char *rid, const char *id,
	       uint64_t timeout_ms, json_t **ret)
{
	return await(c, rid, id, timeout_ms, ret);
}
