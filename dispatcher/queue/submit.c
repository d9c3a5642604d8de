/* submit.c: submitting jobs through the blocking client: the SUBMIT
 * script by SHA (loaded once), pipelined in windows, one pipeline per
 * partition, conflicts named. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "cluster.h"
#include "internal.h"
#include "queue.h"

static int load_submit(struct alq_client *c)
{
	const char *argv[] = {"SCRIPT", "LOAD", alq_script_text(ALQ_SUBMIT)};
	redisReply *r;
	int ret = 0;

	r = alq__cmd_argv(c, 3, argv, NULL);
	if (r && r->type == REDIS_REPLY_STRING && r->len == 40)
		memcpy(c->submit_sha, r->str, 41);
	else
		ret = alq__client_fail(c, r);
	freeReplyObject(r);
	return ret;
}

/* One SUBMIT's command line: EVALSHA (sha) or EVAL, its keys and args. */
struct submit_cmd {
	char kjob[ALQ_KEY_MAX], kjobs[ALQ_KEY_MAX], ksid[ALQ_KEY_MAX];
	char kdig[ALQ_KEY_MAX], t[24], w[16];
	const char *argv[12];
	size_t lens[12];
};

static int submit_cmd(struct alq_client *c, const struct alq_submit *s,
		      bool sha, struct submit_cmd *m)
{
	char pq[ALQ_PART_NAME_MAX];
	const char *q = alq__qof(c, s->id, pq);

	if (alq_key(m->kjob, sizeof(m->kjob), q, ALQ_KEY_JOB, s->id) < 0 ||
	    alq_key(m->kjobs, sizeof(m->kjobs), q, ALQ_KEY_JOBS, NULL) < 0 ||
	    alq_key(m->ksid, sizeof(m->ksid), q, ALQ_KEY_SID, s->id) < 0 ||
	    alq_key(m->kdig, sizeof(m->kdig), q, ALQ_KEY_DIGEST, s->id) < 0)
		return -ENAMETOOLONG;
	snprintf(m->t, sizeof(m->t), "%llu", (unsigned long long)al_wall_ms());
	snprintf(m->w, sizeof(m->w), "%u", s->wall_ms);
	m->argv[0] = sha ? "EVALSHA" : "EVAL";
	m->argv[1] = sha ? c->submit_sha : alq_script_text(ALQ_SUBMIT);
	m->argv[2] = "4";
	m->argv[3] = m->kjob;
	m->argv[4] = m->kjobs;
	m->argv[5] = m->ksid;
	m->argv[6] = m->kdig;
	m->argv[7] = s->payload;
	m->argv[8] = s->id;
	m->argv[9] = m->t;
	m->argv[10] = m->w;
	m->argv[11] = s->digest;
	for (int i = 0; i < 12; i++)
		m->lens[i] = i == 7 ? s->len : strlen(m->argv[i]);
	return 0;
}

static bool noscript(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_ERROR &&
	       !strncmp(r->str, "NOSCRIPT", 8);
}

/* SUBMIT's {'conflict', digest} reply: -EEXIST, the stored digest in
 * s->stored_digest ("" when the queue had none: an older submit); any
 * other reply is the client's failure. */
static int submit_conflict(struct alq_client *c, const redisReply *r,
			   struct alq_submit *s)
{
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING ||
	    strcmp(r->element[0]->str, "conflict") != 0 ||
	    r->element[1]->type != REDIS_REPLY_STRING)
		return alq__client_fail(c, r);
	if (r->element[1]->len == AL_DIGEST_HEX)
		memcpy(s->stored_digest, r->element[1]->str, AL_DIGEST_HEX + 1);
	snprintf(c->err, sizeof(c->err),
		 "id %.128s: submitted before with another payload", s->id);
	return -EEXIST;
}

static void submit_reply(struct alq_client *c, const redisReply *rep,
			 struct alq_submit *s)
{
	s->dup = rep->type == REDIS_REPLY_NIL;
	s->err = rep->type == REDIS_REPLY_STRING || s->dup
		     ? 0
		     : submit_conflict(c, rep, s);
}

/* WAIT for c->wait_replicas replicas to have the window's writes: when
 * fewer acknowledge within wait_ms, each job enqueued now (not a
 * duplicate, no error) gets -EAGAIN: it is on the master, and a failover
 * may lose it; submitting it again by its id is safe. */
static int submit_wait(struct alq_client *c, struct alq_submit *w, size_t m)
{
	char n[16], ms[16];
	redisReply *r;
	long long got;

	snprintf(n, sizeof(n), "%u", c->wait_replicas);
	snprintf(ms, sizeof(ms), "%u", c->wait_ms ? c->wait_ms : 1000);
	r = alq__cmd_argv(c, 3, (const char *[]){"WAIT", n, ms}, NULL);
	if (!r || r->type != REDIS_REPLY_INTEGER) {
		int e = alq__client_fail(c, r);

		freeReplyObject(r);
		return e;
	}
	got = r->integer;
	freeReplyObject(r);
	if (got >= (long long)c->wait_replicas)
		return 0;
	for (size_t i = 0; i < m; i++)
		if (!w[i].err && !w[i].dup)
			w[i].err = -EAGAIN;
	snprintf(c->err, sizeof(c->err),
		 "acknowledged by %lld of %u "
		 "replicas within %s ms: submit again by id",
		 got, c->wait_replicas, ms);
	return 0;
}

/* A window of up to 64 SUBMITs as one pipeline (EVALSHA). A reply that
 * is NOSCRIPT (the script cache was flushed, or a MOVED took us to a node
 * that never loaded it) or a cluster redirection is sent again on its
 * own, as EVAL, after every reply of the window is read: the pipeline's
 * replies stay in order. */
static int submit_window(struct alq_client *c, struct alq_submit *w, size_t m)
{
	redisReply *rep[64] = {0};
	struct submit_cmd cmd;
	int r = 0;

	for (size_t i = 0; i < m; i++) {
		if ((r = submit_cmd(c, &w[i], c->submit_sha[0], &cmd)) < 0)
			return r;
		if (redisAppendCommandArgv(c->rc, 12, cmd.argv, cmd.lens) !=
		    REDIS_OK)
			return -ENOMEM;
	}
	for (size_t i = 0; i < m; i++) {
		if (redisGetReply(c->rc, (void **)&rep[i]) != REDIS_OK) {
			r = alq__client_fail(c, NULL);
			goto out;
		}
	}
	for (size_t i = 0; i < m; i++) {
		struct alq_redirect rd;

		if (noscript(rep[i]) || alq__redirected(rep[i], &rd)) {
			freeReplyObject(rep[i]);
			if ((r = submit_cmd(c, &w[i], false, &cmd)) < 0)
				goto out;
			rep[i] = alq__cmd_argv(c, 12, cmd.argv, cmd.lens);
			if (!rep[i]) {
				r = alq__client_fail(c, NULL);
				goto out;
			}
		}
		submit_reply(c, rep[i], &w[i]);
	}
	if (c->wait_replicas)
		r = submit_wait(c, w, m);
out:
	for (size_t i = 0; i < m; i++)
		freeReplyObject(rep[i]);
	return r;
}

static int submit_run(struct alq_client *c, struct alq_submit *jobs, size_t n);

/* With partitions, the jobs of one partition go together (one slot, one
 * node: a pipeline is not broken up by redirections), partition by
 * partition, their outcomes copied back. */
int alq_client_submit_many(struct alq_client *c, struct alq_submit *jobs,
			   size_t n)
{
	struct alq_submit *part;
	size_t *where;
	int r = 0;

	if (c->partitions <= 1 || n <= 1)
		return submit_run(c, jobs, n);
	part = calloc(n, sizeof(*part));
	where = calloc(n, sizeof(*where));
	if (!part || !where) {
		free(part);
		free(where);
		return -ENOMEM;
	}
	for (unsigned p = 0; p < c->partitions && r == 0; p++) {
		size_t m = 0;

		for (size_t i = 0; i < n; i++)
			if (alq_partition_of(jobs[i].id, c->partitions) == p) {
				where[m] = i;
				part[m++] = jobs[i];
			}
		if (m && (r = submit_run(c, part, m)) == 0)
			for (size_t i = 0; i < m; i++)
				jobs[where[i]] = part[i];
	}
	free(part);
	free(where);
	return r;
}

static int submit_run(struct alq_client *c, struct alq_submit *jobs, size_t n)
{
	const size_t window = 64;
	int r;

	for (size_t base = 0; base < n; base += window) {
		size_t m = n - base < window ? n - base : window;

		if (!c->submit_sha[0] && (r = load_submit(c)) < 0)
			return r;
		for (size_t i = 0; i < m; i++) {
			al_digest_hex(jobs[base + i].payload,
				      jobs[base + i].len,
				      jobs[base + i].digest);
			jobs[base + i].stored_digest[0] = '\0';
		}
		if ((r = submit_window(c, jobs + base, m)) < 0)
			return r;
	}
	return 0;
}

int alq_client_submit(struct alq_client *c, const char *id, const char *payload,
		      size_t len, uint32_t wall_ms, bool *ret_dup)
{
	struct alq_submit s = {
	    .id = id, .payload = payload, .len = len, .wall_ms = wall_ms};
	int r = alq_client_submit_many(c, &s, 1);

	if (r == 0 && s.err == 0)
		*ret_dup = s.dup;
	if (r == 0 && s.err == -EEXIST)
		snprintf(c->err, sizeof(c->err),
			 "id %.128s: submitted before "
			 "with another payload (digest %.12s, ours %.12s)",
			 id, s.stored_digest[0] ? s.stored_digest : "unknown",
			 s.digest);
	return r < 0 ? r : s.err;
}
