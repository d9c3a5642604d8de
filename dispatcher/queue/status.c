/* status.c: the queue's status through the blocking client: depth,
 * pending, dead letters and live serves, summed over partitions. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "internal.h"
#include "queue.h"

/* Field `name` of a flat [k, v, k, v...] reply. */
static const redisReply *field(const redisReply *r, const char *name)
{
	if (!r || r->type != REDIS_REPLY_ARRAY)
		return NULL;
	for (size_t i = 0; i + 1 < r->elements; i += 2)
		if (alq__str_eq(r->element[i], name))
			return r->element[i + 1];
	return NULL;
}

static int64_t int_or(const redisReply *r, int64_t dflt)
{
	return r && r->type == REDIS_REPLY_INTEGER ? r->integer : dflt;
}

static void status_serves(const redisReply *r, struct alq_status *st)
{
	uint64_t now = al_wall_ms(); /* heartbeats store wall time */

	if (!r || r->type != REDIS_REPLY_ARRAY)
		return;
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		const redisReply *k = r->element[i], *v = r->element[i + 1];
		unsigned workers, busy;
		unsigned long long at;
		char val[64];

		if (!alq__is_str(k) || !alq__is_str(v) ||
		    v->len >= sizeof(val) || st->n_serves == ALQ_STATUS_SERVES)
			continue;
		memcpy(val, v->str, v->len);
		val[v->len] = '\0';
		if (sscanf(val, "%u %u %llu", &workers, &busy, &at) != 3)
			continue;
		snprintf(st->serves[st->n_serves].name,
			 sizeof(st->serves[0].name), "%.*s",
			 (int)(k->len > AL_NAME_MAX ? AL_NAME_MAX : k->len),
			 k->str);
		st->serves[st->n_serves].workers = workers;
		st->serves[st->n_serves].busy = busy;
		st->serves[st->n_serves].age_ms = now > at ? now - at : 0;
		st->n_serves++;
	}
}

/* The status of one partition, queue q. */
static int status_part(struct alq_client *c, const char *q,
		       struct alq_status *ret)
{
	char kjobs[ALQ_KEY_MAX], kdead[ALQ_KEY_MAX], kserves[ALQ_KEY_MAX];
	char ktput[5][ALQ_KEY_MAX], kcancels[ALQ_KEY_MAX], min[24];
	redisReply *rep[9] = {0};
	struct alq_status st;
	uint64_t minute = al_wall_ms() / 60000u;
	int e = 0;

	memset(&st, 0, sizeof(st));
	st.depth = -1;
	alq_key(kjobs, sizeof(kjobs), q, ALQ_KEY_JOBS, NULL);
	alq_key(kdead, sizeof(kdead), q, ALQ_KEY_DEAD, NULL);
	alq_key(kserves, sizeof(kserves), q, ALQ_KEY_SERVES, NULL);
	alq_key(kcancels, sizeof(kcancels), q, ALQ_KEY_CANCELS, NULL);
	for (int i = 0; i < 5; i++) {
		snprintf(min, sizeof(min), "%llu",
			 (unsigned long long)(minute - (uint64_t)i));
		alq_key(ktput[i], sizeof(ktput[i]), q, ALQ_KEY_TPUT, min);
	}
	for (unsigned tries = 0;; tries++) {
		struct alq_redirect rd = {0};

		redisAppendCommand(c->rc, "XLEN %s", kjobs);
		redisAppendCommand(c->rc, "XINFO GROUPS %s", kjobs);
		redisAppendCommand(c->rc, "XPENDING %s %s", kjobs, ALQ_GROUP);
		redisAppendCommand(c->rc, "XLEN %s", kdead);
		redisAppendCommand(c->rc, "HGETALL %s", kserves);
		redisAppendCommand(c->rc, "MGET %s %s %s %s %s", ktput[0],
				   ktput[1], ktput[2], ktput[3], ktput[4]);
		redisAppendCommand(c->rc, "GET %s", kcancels);
		for (int i = 0; i < 7; i++) {
			if (redisGetReply(c->rc, (void **)&rep[i]) !=
			    REDIS_OK) {
				e = alq__client_fail(c, NULL);
				goto out;
			}
		}
		for (int i = 0; i < 7 && rd.kind == ALQ_REDIRECT_NONE; i++)
			alq__redirected(rep[i], &rd);
		if (rd.kind == ALQ_REDIRECT_NONE)
			break;
		/* the slot moved or migrates: every reply is read; again */
		for (int i = 0; i < 7; i++) {
			freeReplyObject(rep[i]);
			rep[i] = NULL;
		}
		if ((e = alq__follow(c, &rd, tries)) < 0)
			goto out;
	}
	st.length = int_or(rep[0], 0);
	/* no stream yet: XINFO/XPENDING answer errors, all counts are 0 */
	st.depth = st.length; /* no group yet: nothing was delivered */
	if (rep[1]->type == REDIS_REPLY_ARRAY) {
		for (size_t i = 0; i < rep[1]->elements; i++) {
			const redisReply *g = rep[1]->element[i];

			if (!alq__str_eq(field(g, "name"), ALQ_GROUP))
				continue;
			st.consumers = int_or(field(g, "consumers"), 0);
			/* lag is unknown (nil) after some deletions */
			st.depth = int_or(field(g, "lag"), -1);
		}
	}
	if (rep[2]->type == REDIS_REPLY_ARRAY && rep[2]->elements >= 1)
		st.pending = int_or(rep[2]->element[0], 0);
	st.dead = int_or(rep[3], 0);
	status_serves(rep[4], &st);
	if (rep[5]->type == REDIS_REPLY_ARRAY && rep[5]->elements == 5)
		for (int i = 0; i < 5; i++)
			if (!alq__reply_u64(rep[5]->element[i], &st.tput[i]))
				st.tput[i] = 0;
	if (!alq__reply_u64(rep[6], &st.cancels))
		st.cancels = 0;
	*ret = st;
out:
	for (int i = 0; i < 9; i++)
		freeReplyObject(rep[i]);
	return e;
}

int alq_client_status(struct alq_client *c, struct alq_status *ret)
{
	char pq[ALQ_PART_NAME_MAX];
	struct alq_status *one;
	int e;

	if ((e = status_part(c, c->queue, ret)) < 0 || c->partitions <= 1)
		return e;
	one = malloc(sizeof(*one)); /* a few KiB: not on the stack */
	if (!one)
		return -ENOMEM;
	for (unsigned p = 1; p < c->partitions && p < ALQ_PARTITIONS_MAX; p++) {
		if ((e = alq_partition_name(pq, sizeof(pq), c->queue, p)) < 0 ||
		    (e = status_part(c, pq, one)) < 0)
			break;
		ret->length += one->length;
		ret->depth = ret->depth < 0 || one->depth < 0
				 ? -1
				 : ret->depth + one->depth;
		ret->pending += one->pending;
		if (one->consumers > ret->consumers)
			ret->consumers = one->consumers;
		ret->dead += one->dead;
		for (int i = 0; i < 5; i++)
			ret->tput[i] += one->tput[i];
		ret->cancels += one->cancels;
	}
	free(one);
	return e;
}
