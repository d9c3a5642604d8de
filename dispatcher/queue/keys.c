/* keys.c: the queue's Redis keys, its partitions, job ids, and a job
 * prepared for submission (queue.h). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "internal.h"
#include "queue.h"

/* --- keys ------------------------------------------------------------------
 */

int alq_key(char *buf, size_t len, const char *q, enum alq_key_kind kind,
	    const char *id)
{
	static const char *const kinds[] = {
	    [ALQ_KEY_JOBS] = "jobs",	    [ALQ_KEY_JOB] = "job:",
	    [ALQ_KEY_RESULT] = "result:",   [ALQ_KEY_DONE] = "done:",
	    [ALQ_KEY_DEAD] = "dead",	    [ALQ_KEY_SERVES] = "serves",
	    [ALQ_KEY_TPUT] = "tput:",	    [ALQ_KEY_SID] = "sid:",
	    [ALQ_KEY_CANCEL] = "cancel",    [ALQ_KEY_DIGEST] = "digest:",
	    [ALQ_KEY_CANCELS] = "cancels",  [ALQ_KEY_SNAPDEFS] = "snapdefs",
	    [ALQ_KEY_SNAPDEF] = "snapdef:", [ALQ_KEY_SNAPHOSTS] = "snaphosts:",
	};
	bool with_id = kind == ALQ_KEY_JOB || kind == ALQ_KEY_RESULT ||
		       kind == ALQ_KEY_DONE || kind == ALQ_KEY_TPUT ||
		       kind == ALQ_KEY_SID || kind == ALQ_KEY_DIGEST ||
		       kind == ALQ_KEY_SNAPDEF || kind == ALQ_KEY_SNAPHOSTS;
	int n = snprintf(buf, len, "airlock:{%s}:%s%s", q, kinds[kind],
			 with_id && id ? id : "");

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* --- partitions --------------------------------------------------------- */

int alq_partition_name(char *buf, size_t len, const char *q, unsigned i)
{
	int n = i ? snprintf(buf, len, "%s~p%u", q, i)
		  : snprintf(buf, len, "%s", q);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

unsigned alq_partition_of(const char *id, unsigned n)
{
	uint32_t h = 2166136261u; /* FNV-1a 32 */

	if (n <= 1)
		return 0;
	for (; *id; id++)
		h = (h ^ (uint8_t)*id) * 16777619u;
	return h % n;
}

/* The queue (partition) that holds job `id` for client c. */
const char *alq__qof(const struct alq_client *c, const char *id,
		     char buf[ALQ_PART_NAME_MAX])
{
	if (c->partitions <= 1 || !id ||
	    alq_partition_name(buf, ALQ_PART_NAME_MAX, c->queue,
			       alq_partition_of(id, c->partitions)) < 0)
		return c->queue;
	return buf;
}

void alq_new_id(char buf[AL_ID_MAX + 1])
{
	uint8_t rnd[10];

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		for (size_t i = 0; i < sizeof(rnd); i++)
			rnd[i] = (uint8_t)(ts.tv_nsec >> (i % 4 * 8)) ^
				 (uint8_t)(i * 151u);
	}
	strcpy(buf, "j-");
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(buf + 2 + 2 * i, 3, "%02x", rnd[i]);
}

int alq_prepare(struct al_job *job, const struct al_policy *policy,
		const char *id_if_none, struct alq_prepared *ret)
{
	struct al_limits lim;

	memset(ret, 0, sizeof(*ret));
	if (!job->id) {
		if (id_if_none)
			snprintf(ret->id, sizeof(ret->id), "%s", id_if_none);
		else
			alq_new_id(ret->id);
		job->id = strdup(ret->id);
		if (!job->id)
			return -ENOMEM;
	} else {
		snprintf(ret->id, sizeof(ret->id), "%s", job->id);
	}
	al_job_limits(job, policy, &lim);
	ret->wall_ms = lim.wall_ms;
	return al_job_to_msgpack(job, &ret->payload, &ret->len);
}
