/* snapdef.c: snapshot definitions published through Redis (snapdef.h).
 *
 * Callers: the CLI (`airlock snapshot create|list|rm`: publish, names,
 * get, hosts, remove on its blocking client) and serve.c (the parse of
 * its own async HGETALL, the host name it records builds under).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "snapdef.h"

#define FIELDS_MAX 16 /* a definition has 8 fields; more is not ours */

void alq_snapdef_host(const char *state_dir, char out[ALQ_SNAPDEF_HOST_MAX])
{
	char hn[65] = "host";

	gethostname(hn, sizeof(hn) - 1);
	hn[sizeof(hn) - 1] = 0;
	snprintf(out, ALQ_SNAPDEF_HOST_MAX, "%s:%s", hn, state_dir);
}

static bool is_str(const redisReply *r)
{
	return r && (r->type == REDIS_REPLY_STRING ||
		     r->type == REDIS_REPLY_STATUS);
}

/* A string element into out (it and its NUL must fit, no NUL inside). */
static bool copy(const redisReply *v, char *out, size_t size)
{
	if (!is_str(v) || v->len >= size || memchr(v->str, 0, v->len))
		return false;
	memcpy(out, v->str, v->len);
	out[v->len] = 0;
	return true;
}

static bool field_is(const redisReply *k, const char *name)
{
	return is_str(k) && k->len == strlen(name) &&
	       !memcmp(k->str, name, k->len);
}

int alq_snapdef_parse(const redisReply *r, struct al_snapdef *ret,
		      char **ret_setup)
{
	struct al_snapdef d = {0};
	const redisReply *setup = NULL;
	bool ok = true;
	char *buf;

	*ret_setup = NULL;
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements % 2)
		return -EBADMSG;
	if (!r->elements)
		return -ENOENT;
	if (r->elements > 2 * FIELDS_MAX)
		return -EBADMSG;
	for (size_t i = 0; i < r->elements && ok; i += 2) {
		const redisReply *k = r->element[i], *v = r->element[i + 1];

		if (field_is(k, "name"))
			ok = copy(v, d.name, sizeof(d.name));
		else if (field_is(k, "base"))
			ok = copy(v, d.base, sizeof(d.base));
		else if (field_is(k, "image"))
			ok = copy(v, d.image, sizeof(d.image));
		else if (field_is(k, "sha"))
			ok = copy(v, d.setup_sha, sizeof(d.setup_sha));
		else if (field_is(k, "key"))
			ok = copy(v, d.key, sizeof(d.key));
		else if (field_is(k, "setup") && is_str(v) &&
			 v->len <= AL_JOB_MAX_BYTES)
			setup = v;
		else if (field_is(k, "setup"))
			ok = false;
	}
	if (!ok || !setup || !setup->len)
		return -EBADMSG;
	d.setup = setup->str;
	d.setup_len = setup->len;
	if (!al_snapdef_valid(&d))
		return -EBADMSG;
	buf = malloc(setup->len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, setup->str, setup->len);
	d.setup = buf;
	*ret = d;
	*ret_setup = buf;
	return 0;
}

/* Run one command; 0, or -EIO with c->err saying why. */
static int run(struct alq_client *c, int argc, const char **argv,
	       const size_t *lens, redisReply **ret)
{
	redisReply *r = alq_client_command(c, argc, argv, lens);

	if (!r)
		return -EIO;
	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(c->err, sizeof(c->err), "redis: %.200s", r->str);
		freeReplyObject(r);
		return -EIO;
	}
	if (ret)
		*ret = r;
	else
		freeReplyObject(r);
	return 0;
}

int alq_snapdef_publish(struct alq_client *c, const char *q,
			const struct al_snapdef *d, const char *by)
{
	char kdef[ALQ_KEY_MAX], knames[ALQ_KEY_MAX], at[24];
	const char *argv[18];
	size_t lens[18];
	int n = 0, r;

	if (!al_snapdef_valid(d))
		return -EINVAL;
	if (alq_key(kdef, sizeof(kdef), q, ALQ_KEY_SNAPDEF, d->name) < 0 ||
	    alq_key(knames, sizeof(knames), q, ALQ_KEY_SNAPDEFS, NULL) < 0)
		return -ENAMETOOLONG;
	snprintf(at, sizeof(at), "%llu", (unsigned long long)al_wall_ms());
	argv[n++] = "HSET";
	argv[n++] = kdef;
#define PAIR(f, v) (argv[n++] = (f), argv[n++] = (v))
	PAIR("name", d->name);
	PAIR("base", d->base);
	PAIR("image", d->image);
	PAIR("sha", d->setup_sha);
	PAIR("key", d->key);
	PAIR("by", by);
	PAIR("at", at);
	PAIR("setup", d->setup);
#undef PAIR
	for (int i = 0; i < n; i++)
		lens[i] = strlen(argv[i]);
	lens[n - 1] = d->setup_len; /* bytes, not a C string */
	r = run(c, n, argv, lens, NULL);
	if (r == 0)
		r = run(c, 3, (const char *[]){"SADD", knames, d->name}, NULL,
			NULL);
	return r;
}

int alq_snapdef_get(struct alq_client *c, const char *q, const char *name,
		    struct al_snapdef *ret, char **ret_setup)
{
	char k[ALQ_KEY_MAX];
	redisReply *r = NULL;
	int e;

	*ret_setup = NULL;
	if (alq_key(k, sizeof(k), q, ALQ_KEY_SNAPDEF, name) < 0)
		return -ENAMETOOLONG;
	e = run(c, 2, (const char *[]){"HGETALL", k}, NULL, &r);
	if (e == 0) {
		e = alq_snapdef_parse(r, ret, ret_setup);
		freeReplyObject(r);
	}
	return e;
}

int alq_snapdef_names(struct alq_client *c, const char *q,
		      char (*ret)[AL_NAME_MAX + 1], size_t max)
{
	char k[ALQ_KEY_MAX];
	redisReply *r = NULL;
	size_t n = 0;
	int e;

	if (alq_key(k, sizeof(k), q, ALQ_KEY_SNAPDEFS, NULL) < 0)
		return -ENAMETOOLONG;
	e = run(c, 2, (const char *[]){"SMEMBERS", k}, NULL, &r);
	if (e < 0)
		return e;
	if (r->type != REDIS_REPLY_ARRAY) {
		freeReplyObject(r);
		return -EBADMSG;
	}
	for (size_t i = 0; i < r->elements && n < max; i++)
		if (copy(r->element[i], ret[n], sizeof(ret[n])) &&
		    al_name_valid(ret[n]))
			n++;
	freeReplyObject(r);
	return (int)n;
}

int alq_snapdef_hosts(struct alq_client *c, const char *q, const char *name,
		      struct alq_snapdef_built *ret, size_t max)
{
	char k[ALQ_KEY_MAX], val[64];
	redisReply *r = NULL;
	size_t n = 0;
	int e;

	if (alq_key(k, sizeof(k), q, ALQ_KEY_SNAPHOSTS, name) < 0)
		return -ENAMETOOLONG;
	e = run(c, 2, (const char *[]){"HGETALL", k}, NULL, &r);
	if (e < 0)
		return e;
	if (r->type != REDIS_REPLY_ARRAY || r->elements % 2) {
		freeReplyObject(r);
		return -EBADMSG;
	}
	for (size_t i = 0; i < r->elements && n < max; i += 2) {
		struct alq_snapdef_built *b = &ret[n];
		unsigned long long at;

		if (!copy(r->element[i], b->host, sizeof(b->host)) ||
		    !copy(r->element[i + 1], val, sizeof(val)) ||
		    sscanf(val, "%32[0-9a-f] %llu", b->key, &at) != 2)
			continue;
		b->at_ms = at;
		n++;
	}
	freeReplyObject(r);
	return (int)n;
}

int alq_snapdef_record(struct alq_client *c, const char *q, const char *name,
		       const char *host, const char *key)
{
	char k[ALQ_KEY_MAX], val[64];

	if (alq_key(k, sizeof(k), q, ALQ_KEY_SNAPHOSTS, name) < 0)
		return -ENAMETOOLONG;
	snprintf(val, sizeof(val), "%.32s %llu", key,
		 (unsigned long long)al_wall_ms());
	return run(c, 4, (const char *[]){"HSET", k, host, val}, NULL, NULL);
}

int alq_snapdef_remove(struct alq_client *c, const char *q, const char *name)
{
	char kdef[ALQ_KEY_MAX], khosts[ALQ_KEY_MAX], knames[ALQ_KEY_MAX];
	redisReply *r = NULL;
	long long gone;
	int e;

	if (alq_key(kdef, sizeof(kdef), q, ALQ_KEY_SNAPDEF, name) < 0 ||
	    alq_key(khosts, sizeof(khosts), q, ALQ_KEY_SNAPHOSTS, name) < 0 ||
	    alq_key(knames, sizeof(knames), q, ALQ_KEY_SNAPDEFS, NULL) < 0)
		return -ENAMETOOLONG;
	e = run(c, 3, (const char *[]){"DEL", kdef, khosts}, NULL, &r);
	if (e < 0)
		return e;
	gone = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
	freeReplyObject(r);
	e = run(c, 3, (const char *[]){"SREM", knames, name}, NULL, NULL);
	return e < 0 ? e : gone ? 0 : -ENOENT;
}
