/* job.c: one job's operations: its state, cancel, and the dead letters
 * (list, requeue one or all). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "internal.h"
#include "queue.h"

/* --- one job: status, cancel, dead letters ----------------------------------
 */

static const char *const state_names[] = {
    [ALQ_UNKNOWN] = "unknown", [ALQ_QUEUED] = "queued",
    [ALQ_RUNNING] = "running", [ALQ_DONE] = "done",
    [ALQ_DEAD] = "dead",       [ALQ_CANCELLED] = "cancelled",
};

const char *alq_state_name(enum alq_state s)
{
	return (unsigned)s <= ALQ_CANCELLED ? state_names[s] : "??";
}

/* The state a script's reply names, "unknown" to "done" (the states the
 * scripts tell apart), or -1. */
static int reply_state(const redisReply *r)
{
	for (int s = ALQ_UNKNOWN; s <= ALQ_DONE; s++)
		if (alq__str_eq(r, state_names[s]))
			return s;
	return -1;
}

/* EVAL script `s` with the keys of `kinds` for `id`, then args; the
 * reply, or NULL with c->err set (*ret_err = -errno). */
static redisReply *eval_job(struct alq_client *c, enum alq_script s,
			    const enum alq_key_kind *kinds, int nkeys,
			    const char *id, int nargs, const char **args,
			    const size_t *arglens, int *ret_err)
{
	char keys[8][ALQ_KEY_MAX], nk[12], pq[ALQ_PART_NAME_MAX];
	const char *q = alq__qof(c, id, pq);
	const char *argv[3 + 8 + 512];
	size_t lens[3 + 8 + 512];
	redisReply *r;
	int n = 0;

	if (nkeys > 8 || nargs > 512) {
		*ret_err = -EINVAL;
		return NULL;
	}
	snprintf(nk, sizeof(nk), "%d", nkeys);
	argv[n] = "EVAL", lens[n++] = 4;
	argv[n] = alq_script_text(s), lens[n++] = strlen(alq_script_text(s));
	argv[n] = nk, lens[n++] = strlen(nk);
	for (int i = 0; i < nkeys; i++) {
		if (alq_key(keys[i], sizeof(keys[i]), q, kinds[i], id) < 0) {
			*ret_err = -ENAMETOOLONG;
			return NULL;
		}
		argv[n] = keys[i], lens[n++] = strlen(keys[i]);
	}
	for (int i = 0; i < nargs; i++)
		argv[n] = args[i],
		lens[n++] = arglens ? arglens[i] : strlen(args[i]);
	r = alq__cmd_argv(c, n, argv, lens);
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
	    !alq__is_str(r->element[0])) {
		*ret_err = alq__client_fail(c, r);
		freeReplyObject(r);
		return NULL;
	}
	*ret_err = 0;
	return r;
}

static void copy_str(char *dst, size_t size, const redisReply *r)
{
	size_t n = 0;

	if (alq__is_str(r)) {
		n = r->len < size - 1 ? r->len : size - 1;
		memcpy(dst, r->str, n);
	}
	dst[n] = '\0';
}

/* A stored result's facts: DONE, DEAD (XX) or CANCELLED (CX). */
static int status_done(struct alq_client *c, const char *id,
		       struct alq_job *j)
{
	struct al_result res = {0};
	struct al_diags d;
	size_t len;
	char *mp;
	int r;

	r = alq_client_result(c, id, &mp, &len);
	if (r == -ENOENT) { /* expired in between */
		j->state = ALQ_UNKNOWN;
		return 0;
	}
	if (r < 0)
		return r;
	al_diags_init(&d);
	r = al_result_from_msgpack(mp, len, &res, &d);
	free(mp);
	if (r < 0) {
		snprintf(c->err, sizeof(c->err),
			 "%s: stored result does not "
			 "decode",
			 id);
		return -EPROTO;
	}
	j->status = res.status;
	j->attempt = res.attempt;
	j->state = res.status == AL_XX	 ? ALQ_DEAD
		   : res.status == AL_CX ? ALQ_CANCELLED
					 : ALQ_DONE;
	snprintf(j->worker, sizeof(j->worker), "%s",
		 res.worker ? res.worker : "");
	snprintf(j->error, sizeof(j->error), "%s", res.error ? res.error : "");
	al_result_release(&res);
	return 0;
}

int alq_job_status(struct alq_client *c, const char *id,
		    struct alq_job *ret)
{
	static const enum alq_key_kind k[] = {ALQ_KEY_JOB, ALQ_KEY_RESULT,
					      ALQ_KEY_SID, ALQ_KEY_JOBS};
	struct alq_job j;
	redisReply *r;
	uint64_t n;
	int e;

	memset(&j, 0, sizeof(j));
	r = eval_job(c, ALQ_JOB_STATUS, k, 4, id, 0, NULL, NULL, &e);
	if (!r)
		return e;
	if (alq__str_eq(r->element[0], "done")) {
		e = status_done(c, id, &j);
	} else if (alq__str_eq(r->element[0], "unknown")) {
		j.state = ALQ_UNKNOWN;
	} else if (alq__str_eq(r->element[0], "queued") && r->elements == 2) {
		j.state = ALQ_QUEUED;
		copy_str(j.sid, sizeof(j.sid), r->element[1]);
	} else if (alq__str_eq(r->element[0], "running") && r->elements == 4 &&
		   alq__reply_u64(r->element[3], &n)) {
		j.state = ALQ_RUNNING;
		copy_str(j.sid, sizeof(j.sid), r->element[1]);
		copy_str(j.consumer, sizeof(j.consumer), r->element[2]);
		j.attempt = (uint32_t)n;
	} else {
		e = alq__client_fail(c, NULL);
	}
	freeReplyObject(r);
	if (e == 0)
		*ret = j;
	return e;
}

/* The CX result of `id`, msgpack (malloc'd). */
static int cx_result(const char *id, const char *why, char **ret,
		     size_t *ret_len)
{
	struct al_result res = {0};

	res.id = (char *)id;
	res.status = AL_CX;
	res.error = (char *)why;
	res.attempt = 1;
	return al_result_to_msgpack(&res, ret, ret_len);
}

int alq_job_cancel(struct alq_client *c, const char *id, uint32_t ttl_s,
		    enum alq_state *ret_was)
{
	static const enum alq_key_kind k[] = {
	    ALQ_KEY_JOB,  ALQ_KEY_RESULT, ALQ_KEY_DONE,	  ALQ_KEY_SID,
	    ALQ_KEY_JOBS, ALQ_KEY_CANCEL, ALQ_KEY_CANCELS};
	char *q = NULL, *run = NULL, ttl[16];
	const char *args[4];
	size_t lens[4];
	redisReply *r = NULL;
	int e, was;

	if ((e = cx_result(id, "cancelled before it ran (airlock cancel)", &q,
			   &lens[0])) < 0 ||
	    (e = cx_result(id,
			   "cancelled while running (airlock cancel): "
			   "its VM was killed",
			   &run, &lens[1])) < 0)
		goto out;
	snprintf(ttl, sizeof(ttl), "%u", ttl_s ? ttl_s : 1);
	args[0] = q, args[1] = run, args[2] = ttl, args[3] = id;
	lens[2] = strlen(ttl), lens[3] = strlen(id);
	r = eval_job(c, ALQ_CANCEL, k, 7, id, 4, args, lens, &e);
	if (!r)
		goto out;
	was = reply_state(r->element[0]);
	if (was >= 0)
		*ret_was = (enum alq_state)was;
	else
		e = alq__client_fail(c, NULL);
out:
	freeReplyObject(r);
	free(q);
	free(run);
	return e;
}

/* One dead letter [sid, [k, v...]] into *d; false when unusable. */
static bool dead_parse(const redisReply *r, struct alq_dead *d)
{
	const redisReply *f;
	uint64_t n;

	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    !alq__is_str(r->element[0]))
		return false;
	memset(d, 0, sizeof(*d));
	copy_str(d->sid, sizeof(d->sid), r->element[0]);
	f = r->element[1];
	if (!f || f->type != REDIS_REPLY_ARRAY)
		return true;
	for (size_t i = 0; i + 1 < f->elements; i += 2) {
		const redisReply *k = f->element[i], *v = f->element[i + 1];

		if (alq__str_eq(k, "id"))
			copy_str(d->id, sizeof(d->id), v);
		else if (alq__str_eq(k, "entry"))
			copy_str(d->entry, sizeof(d->entry), v);
		else if (alq__str_eq(k, "reason"))
			copy_str(d->reason, sizeof(d->reason), v);
		else if (alq__str_eq(k, "deliveries") && alq__reply_u64(v, &n))
			d->deliveries =
			    n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
	}
	return true;
}

static int dead_list_part(struct alq_client *c, const char *q,
			  const char *after, struct alq_dead *ret,
			  size_t max, size_t *ret_n)
{
	char key[ALQ_KEY_MAX], start[ALQ_SID_MAX + 1], count[24];
	const char *argv[6];
	redisReply *r;
	size_t n = 0;

	if (alq_key(key, sizeof(key), q, ALQ_KEY_DEAD, NULL) < 0)
		return -ENAMETOOLONG;
	snprintf(start, sizeof(start), "%s%s", after && *after ? "(" : "",
		 after && *after ? after : "-");
	snprintf(count, sizeof(count), "%zu", max);
	argv[0] = "XRANGE", argv[1] = key, argv[2] = start, argv[3] = "+";
	argv[4] = "COUNT", argv[5] = count;
	r = alq__cmd_argv(c, 6, argv, NULL);
	if (!r || r->type != REDIS_REPLY_ARRAY) {
		int e = alq__client_fail(c, r);

		freeReplyObject(r);
		return e;
	}
	for (size_t i = 0; i < r->elements && n < max; i++)
		if (dead_parse(r->element[i], &ret[n]))
			n++;
	freeReplyObject(r);
	*ret_n = n;
	return 0;
}

/* Stream ids "MS-SEQ" in order; a malformed one sorts first. */
static int sid_cmp(const char *a, const char *b)
{
	unsigned long long am = 0, as = 0, bm = 0, bs = 0;

	sscanf(a, "%llu-%llu", &am, &as);
	sscanf(b, "%llu-%llu", &bm, &bs);
	return am != bm	  ? (am < bm ? -1 : 1)
	       : as != bs ? (as < bs ? -1 : 1)
			  : 0;
}

static int dead_cmp(const void *a, const void *b)
{
	return sid_cmp(((const struct alq_dead *)a)->sid,
		       ((const struct alq_dead *)b)->sid);
}

/* With partitions: the first `max` letters after `after` of every
 * partition, merged by entry id, the first `max` kept. (Two partitions'
 * letters of the same millisecond and sequence page as one.) */
int alq_dead_list(struct alq_client *c, const char *after,
		       struct alq_dead *ret, size_t max, size_t *ret_n)
{
	struct alq_dead *all;
	char pq[ALQ_PART_NAME_MAX];
	size_t n = 0, got;
	unsigned np = c->partitions > ALQ_PARTITIONS_MAX ? ALQ_PARTITIONS_MAX
							 : c->partitions;
	int e = 0;

	if (np <= 1)
		return dead_list_part(c, c->queue, after, ret, max, ret_n);
	if (max > SIZE_MAX / sizeof(*all) / np)
		return -E2BIG;
	all = calloc(max * np + 1, sizeof(*all));
	if (!all)
		return -ENOMEM;
	for (unsigned p = 0; p < np && e == 0; p++) {
		if ((e = alq_partition_name(pq, sizeof(pq), c->queue, p)) < 0)
			break;
		e = dead_list_part(c, pq, after, all + n, max, &got);
		if (e == 0)
			n += got;
	}
	if (e == 0) {
		qsort(all, n, sizeof(*all), dead_cmp);
		*ret_n = n < max ? n : max;
		memcpy(ret, all, *ret_n * sizeof(*all));
	}
	free(all);
	return e;
}

#define DEAD_PAGE 256

/* REQUEUE `id` with the dead letters sids[0..n). */
static int requeue(struct alq_client *c, const char *id, const char **sids,
		   size_t n)
{
	static const enum alq_key_kind k[] = {ALQ_KEY_JOB,  ALQ_KEY_RESULT,
					      ALQ_KEY_DONE, ALQ_KEY_SID,
					      ALQ_KEY_JOBS, ALQ_KEY_DEAD};
	const char *args[2 + DEAD_PAGE];
	char t[24];
	redisReply *r;
	int e;

	snprintf(t, sizeof(t), "%llu", (unsigned long long)al_wall_ms());
	args[0] = id, args[1] = t;
	for (size_t i = 0; i < n; i++)
		args[2 + i] = sids[i];
	r = eval_job(c, ALQ_REQUEUE, k, 6, id, 2 + (int)n, args, NULL, &e);
	if (!r)
		return e;
	e = alq__str_eq(r->element[0], "ok")	 ? 0
	    : alq__str_eq(r->element[0], "gone") ? -ESTALE
	    : alq__str_eq(r->element[0], "dup")	 ? -EALREADY
						 : -ENOENT;
	freeReplyObject(r);
	return e;
}

/* Requeue the dead jobs whose id is `id` (NULL: every one), page by page
 * through the dead letter stream. */
static int requeue_scan(struct alq_client *c, const char *id, size_t *ret_n,
			size_t *ret_failed)
{
	struct alq_dead *page = calloc(DEAD_PAGE, sizeof(*page));
	char after[ALQ_SID_MAX] = "";
	const char *sids[1];
	size_t got;
	int e;

	if (!page)
		return -ENOMEM;
	*ret_n = *ret_failed = 0;
	do {
		e = alq_dead_list(c, after, page, DEAD_PAGE, &got);
		for (size_t i = 0; e == 0 && i < got; i++) {
			int r;

			if (id && strcmp(page[i].id, id))
				continue;
			sids[0] = page[i].sid;
			r = requeue(c, page[i].id, sids, 1);
			if (r == 0)
				++*ret_n;
			else if (r == -EALREADY)
				continue; /* an older letter of a requeued job
					   */
			else if (r == -ESTALE || r == -ENOENT)
				++*ret_failed;
			else
				e = r;
		}
		if (got)
			snprintf(after, sizeof(after), "%s", page[got - 1].sid);
	} while (e == 0 && got == DEAD_PAGE);
	free(page);
	return e;
}

int alq_dead_requeue(struct alq_client *c, const char *id)
{
	size_t n, failed;
	int e = requeue_scan(c, id, &n, &failed);

	if (e < 0)
		return e;
	if (n == 0 && failed) {
		snprintf(c->err, sizeof(c->err),
			 "%s: its payload expired; submit it again", id);
		return -ESTALE;
	}
	if (n == 0) {
		snprintf(c->err, sizeof(c->err), "%s: no dead letter", id);
		return -ENOENT;
	}
	return 0;
}

int alq_dead_requeue_all(struct alq_client *c, size_t *ret_n,
			      size_t *ret_failed)
{
	return requeue_scan(c, NULL, ret_n, ret_failed);
}
