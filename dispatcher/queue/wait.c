/* wait.c: waiting for jobs' results through the blocking client (BLPOP
 * on their completion signals, per partition) and reading one result
 * (STRLEN before GET). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "cluster.h"
#include "internal.h"
#include "queue.h"

static int have_results(struct alq_client *c, const char *const *ids, size_t n,
			bool *done);

/* With partitions, one pipeline per partition (one node each). */
int alq_client_have_results(struct alq_client *c, const char *const *ids,
			    size_t n, bool *done)
{
	const char **sub;
	bool *got;
	size_t *where;
	int e = 0;

	if (c->partitions <= 1 || n <= 1)
		return have_results(c, ids, n, done);
	sub = calloc(n, sizeof(*sub));
	got = calloc(n, sizeof(*got));
	where = calloc(n, sizeof(*where));
	for (unsigned p = 0; sub && got && where && p < c->partitions && !e;
	     p++) {
		size_t m = 0;

		for (size_t i = 0; i < n; i++)
			if (alq_partition_of(ids[i], c->partitions) == p) {
				where[m] = i;
				sub[m++] = ids[i];
			}
		if (m && (e = have_results(c, sub, m, got)) == 0)
			for (size_t i = 0; i < m; i++)
				done[where[i]] = got[i];
	}
	if (!sub || !got || !where)
		e = -ENOMEM;
	free(sub);
	free(got);
	free(where);
	return e;
}

static int have_results(struct alq_client *c, const char *const *ids, size_t n,
			bool *done)
{
	char key[ALQ_KEY_MAX], pq[ALQ_PART_NAME_MAX];
	bool again = false;
	int e = 0;

	for (size_t i = 0; i < n; i++) {
		if (alq_key(key, sizeof(key), alq__qof(c, ids[i], pq),
			    ALQ_KEY_RESULT, ids[i]) < 0)
			return -ENAMETOOLONG;
		if (redisAppendCommand(c->rc, "EXISTS %s", key) != REDIS_OK)
			return -ENOMEM;
	}
	/* read every reply (the pipeline stays in order); a redirection is
	 * asked again on its own below */
	for (size_t i = 0; i < n; i++) {
		struct alq_redirect rd;
		redisReply *r = NULL;

		if (redisGetReply(c->rc, (void **)&r) != REDIS_OK)
			return alq__client_fail(c, NULL);
		if (alq__redirected(r, &rd)) {
			again = true;
			done[i] = false;
		} else if (r->type != REDIS_REPLY_INTEGER) {
			if (!e)
				e = alq__client_fail(c, r);
		} else {
			done[i] = r->integer == 1;
		}
		freeReplyObject(r);
	}
	for (size_t i = 0; again && !e && i < n; i++) {
		redisReply *r;

		alq_key(key, sizeof(key), alq__qof(c, ids[i], pq),
			ALQ_KEY_RESULT, ids[i]);
		r = alq__cmd_argv(c, 2, (const char *[]){"EXISTS", key}, NULL);
		if (!r || r->type != REDIS_REPLY_INTEGER)
			e = alq__client_fail(c, r);
		else
			done[i] = r->integer == 1;
		freeReplyObject(r);
	}
	return e;
}

/* BLPOP on the done keys of ids[0..n) for up to `ms`; *ret_index = which
 * one fired, -ETIMEDOUT when none did. */
static int blpop(struct alq_client *c, const char *const *ids, size_t n,
		 uint32_t ms, size_t *ret_index)
{
	/* argv (BLPOP key... timeout), then the n keys, in one block; n is
	 * at most ALQ_WAIT_MANY (alq_client_wait_any) */
	const char **argv =
	    calloc(1, (n + 2) * sizeof(*argv) + n * ALQ_KEY_MAX);
	char(*keys)[ALQ_KEY_MAX] = argv ? (void *)(argv + n + 2) : NULL;
	char secs[32], pq[ALQ_PART_NAME_MAX];
	redisReply *r = NULL;
	int ret = -ENOMEM;

	if (!argv)
		goto out;
	argv[0] = "BLPOP";
	for (size_t i = 0; i < n; i++) {
		if (alq_key(keys[i], sizeof(keys[i]), alq__qof(c, ids[i], pq),
			    ALQ_KEY_DONE, ids[i]) < 0) {
			ret = -ENAMETOOLONG;
			goto out;
		}
		argv[i + 1] = keys[i];
	}
	snprintf(secs, sizeof(secs), "%u.%03u", ms / 1000, ms % 1000);
	argv[n + 1] = secs;
	c->extra_ms = ms; /* a reconnect after MOVED keeps it */
	redisSetTimeout(c->rc, alq__tv_ms(ms + c->timeout_ms));
	r = alq__cmd_argv(c, (int)n + 2, argv, NULL);
	c->extra_ms = 0;
	redisSetTimeout(c->rc, alq__tv_ms(c->timeout_ms));
	if (r && r->type == REDIS_REPLY_NIL) {
		ret = -ETIMEDOUT;
	} else if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
		   alq__is_str(r->element[0])) {
		ret = -EPROTO;
		for (size_t i = 0; i < n; i++) {
			if (alq__str_eq(r->element[0], keys[i])) {
				*ret_index = i;
				ret = 0;
				break;
			}
		}
	} else {
		ret = alq__client_fail(c, r);
	}
out:
	freeReplyObject(r);
	free(argv);
	return ret;
}

/* Are ids[0..n) all in one partition (one BLPOP waits for them all)? */
static bool one_partition(const struct alq_client *c, const char *const *ids,
			  size_t n)
{
	unsigned p = alq_partition_of(ids[0], c->partitions);

	for (size_t i = 1; i < n; i++)
		if (alq_partition_of(ids[i], c->partitions) != p)
			return false;
	return true;
}

/* A BLPOP's keys must share a slot, so with partitions the ids of one
 * partition are waited for at a time, 100 ms each in turn, until one is
 * done or timeout_ms passed (a result in another partition is seen
 * within a round). */
static int blpop_parts(struct alq_client *c, const char *const *ids, size_t n,
		       uint32_t timeout_ms, size_t *ret_index)
{
	const char *sub[ALQ_WAIT_MANY];
	size_t map[ALQ_WAIT_MANY];
	uint64_t end = al_now_ms() + timeout_ms;
	unsigned p = 0;

	for (;;) {
		uint64_t now = al_now_ms();
		uint32_t slice = 100;
		size_t m = 0, idx;
		int r;

		if (now >= end)
			return -ETIMEDOUT;
		if (end - now < slice)
			slice = (uint32_t)(end - now);
		for (unsigned tries = 0; m == 0 && tries < c->partitions;
		     tries++, p = (p + 1) % c->partitions)
			for (size_t i = 0; i < n; i++)
				if (alq_partition_of(ids[i], c->partitions) ==
				    p) {
					map[m] = i;
					sub[m++] = ids[i];
				}
		r = blpop(c, sub, m, slice, &idx);
		if (r == 0) {
			*ret_index = map[idx];
			return 0;
		}
		if (r != -ETIMEDOUT)
			return r;
	}
}

int alq_client_wait_any(struct alq_client *c, const char *const *ids, size_t n,
			uint32_t timeout_ms, size_t *ret_index)
{
	bool done[ALQ_WAIT_MANY] = {false};
	int r;

	if (n == 0 || n > ALQ_WAIT_MANY)
		return -EINVAL;
	r = alq_client_have_results(c, ids, n, done);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		if (done[i]) {
			*ret_index = i;
			return 0;
		}
	}
	if (timeout_ms == 0)
		return -ETIMEDOUT;
	if (c->partitions <= 1 || one_partition(c, ids, n))
		return blpop(c, ids, n, timeout_ms, ret_index);
	return blpop_parts(c, ids, n, timeout_ms, ret_index);
}

int alq_client_wait(struct alq_client *c, const char *id, uint32_t timeout_ms)
{
	uint64_t end = al_now_ms() + timeout_ms;
	size_t idx;

	for (;;) {
		uint64_t now = al_now_ms();
		uint32_t slice = 5000;
		int r;

		if (timeout_ms) {
			if (now >= end)
				slice = 0;
			else if (end - now < slice)
				slice = (uint32_t)(end - now);
		}
		r = alq_client_wait_any(c, &id, 1, slice, &idx);
		if (r != -ETIMEDOUT || (timeout_ms && al_now_ms() >= end))
			return r;
	}
}

int alq_client_result(struct alq_client *c, const char *id, char **ret,
		      size_t *ret_len)
{
	char key[ALQ_KEY_MAX], pq[ALQ_PART_NAME_MAX];
	redisReply *r;
	int e;

	if (alq_key(key, sizeof(key), alq__qof(c, id, pq), ALQ_KEY_RESULT, id) <
	    0)
		return -ENAMETOOLONG;
	r = alq__cmd_argv(c, 2, (const char *[]){"STRLEN", key}, NULL);
	if (!r || r->type != REDIS_REPLY_INTEGER) {
		e = alq__client_fail(c, r);
		freeReplyObject(r);
		return e;
	}
	e = r->integer == 0				  ? -ENOENT
	    : r->integer > (long long)AL_RESULT_MAX_BYTES ? -E2BIG
							  : 0;
	freeReplyObject(r);
	if (e < 0)
		return e;
	r = alq__cmd_argv(c, 2, (const char *[]){"GET", key}, NULL);
	if (r && r->type == REDIS_REPLY_NIL) {
		e = -ENOENT;
	} else if (!r || r->type != REDIS_REPLY_STRING ||
		   r->len > AL_RESULT_MAX_BYTES) {
		e = alq__client_fail(c, r);
	} else if (!(*ret = malloc(r->len + 1))) {
		e = -ENOMEM;
	} else {
		memcpy(*ret, r->str, r->len);
		(*ret)[r->len] = '\0';
		*ret_len = r->len;
	}
	freeReplyObject(r);
	return e;
}
