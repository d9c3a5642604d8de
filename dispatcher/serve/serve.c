/* serve.c: the dispatcher loop (serve.h).
 *
 * Theory of operation.
 *
 * Every stream entry this process claims becomes a `struct task` and stays
 * one until its entry is acknowledged (by the COMPLETE script, together
 * with storing the result) or handed back. A task moves
 *
 *   FETCH -> QUEUED -> RUNNING -> STORING -> (freed)
 *     \________________________________/
 *            (bad payload, duplicate, dead letter: straight to STORING)
 *
 * and while it exists its entry's claim is kept fresh: every heartbeat_ms
 * the HEARTBEAT script re-claims (XCLAIM JUSTID, which resets the idle time
 * without counting a delivery) every entry we hold, if we still own it.
 * Another dispatcher therefore only reclaims entries of a process that
 * stopped heartbeating: RECLAIM takes pending entries idle for longer than
 * the job's own wall_ms (from the entry) plus visibility_slack_ms.
 *
 * Reading: the blocking connection issues XREADGROUP ... COUNT k BLOCK
 * only while k = idle workers - claimed-but-unstarted tasks > 0, so a
 * process never claims more than it can start now: jobs it cannot run stay
 * in the stream for other dispatchers.
 *
 * Retries: only Airlock's own failures are retried, never a job's verdict:
 * a worker that dies mid-job, a worker killed past its job's wall_ms +
 * slack, a result the worker could not produce (status XX). A retry counts
 * a delivery (XCLAIM without JUSTID, so the count survives our own death);
 * past max_deliveries the job gets an XX result and a dead letter.
 *
 * Cancel (`airlock cancel`): the CANCEL script stores a CX result and, for
 * a pending entry, puts it in the cancel hash. With each heartbeat we ask
 * (CANCEL_POLL) which of our entries are there: a queued task is
 * acknowledged unrun; a running one's worker is killed (its VM with it),
 * and when it is reaped the entry is acknowledged, not retried.
 *
 * Bad payloads: entries without a valid id, missing or oversized payloads,
 * payloads that do not decode: an RJ result naming the fields (under
 * `entry-SID` when the entry has no usable id), stored and acknowledged
 * like any other. Nothing a submitter writes can crash the loop or leave an
 * entry stuck.
 *
 * Redis outages: both connections reconnect on their own (conn.c). A
 * result that could not be stored waits in memory (STORE_WAIT) and is
 * stored when the command connection is back; its entry stays pending
 * meanwhile, and the heartbeat keeps it ours.
 *
 * Leftovers: a worker killed mid-job destroys nothing; its QEMU dies by
 * PDEATHSIG but the VM's run dir and host cgroup stay. sb_sweep() removes
 * those of dead processes (and kills anything still in such a cgroup):
 * at start-up, for a serve or worker killed before us on this host, and
 * each time one of our workers dies. VMs of live processes, another
 * serve's included, are left alone.
 *
 * Shutdown (SIGTERM, SIGINT, stop_fd): stop reading; hand claimed but
 * unstarted tasks back (XCLAIM IDLE <a year>: the next RECLAIM anywhere
 * takes them at once); let running jobs finish and store for up to
 * shutdown_grace_ms; then kill what still runs and hand those back too;
 * close idle workers' sockets (they exit on EOF); reap everything; close
 * every handle so the loop ends. A second signal cuts the grace short.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "clock.h"
#include "conn.h"
#include "log.h"
#include "metrics.h"
#include "proc.h"
#include "proto.h"
#include "serve.h"
#include "workers.h"
#include "snapdef.h"

static void pump(struct serve_state *s);
static void dispatch(struct serve_state *s);
static void fetch_snapdef(struct task *t, const char *name);
static void store(struct task *t);
static void maybe_finish(struct serve_state *s);

/* --- tasks -------------------------------------------------------------------
 */

static struct task *task_find(struct part *p, const char *sid)
{
	struct serve_state *s = p->s;

	for (struct task *t = s->tasks.next; t != &s->tasks; t = t->next)
		if (t->p == p && !strcmp(t->e.sid, sid))
			return t;
	return NULL;
}

static struct task *task_new(struct part *p, const struct alq_entry *e)
{
	struct serve_state *s = p->s;
	struct task *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->s = s;
	t->p = p;
	t->e = *e;
	if (e->id[0])
		snprintf(t->id, sizeof(t->id), "%s", e->id);
	else
		snprintf(t->id, sizeof(t->id), "entry-%s", e->sid);
	t->next = &s->tasks;
	t->prev = s->tasks.prev;
	s->tasks.prev->next = t;
	s->tasks.prev = t;
	s->n_tasks++;
	return t;
}

static void task_free(struct task *t)
{
	struct serve_state *s = t->s;

	t->prev->next = t->next;
	t->next->prev = t->prev;
	s->n_tasks--;
	free(t->payload);
	free(t->result);
	free(t->snap);
	free(t->snap_setup);
	free(t);
}

static unsigned count_state(struct serve_state *s, enum task_state st)
{
	unsigned n = 0;

	for (struct task *t = s->tasks.next; t != &s->tasks; t = t->next)
		n += t->state == st;
	return n;
}

static unsigned idle_workers(struct serve_state *s)
{
	unsigned n = 0;

	for (unsigned i = 0; i < s->n_w; i++)
		n += s->w[i].alive && !s->w[i].task;
	return n;
}

/* How many more entries we could start right now. */
static unsigned free_slots(struct serve_state *s)
{
	unsigned idle = idle_workers(s);
	unsigned held = count_state(s, T_QUEUED) + count_state(s, T_FETCH) +
			count_state(s, T_FETCH_WAIT);

	return idle > held ? idle - held : 0;
}

/* Free slots not yet promised to the reads (reclaim: to the reclaims)
 * in flight: reads and reclaims each ask for at most the free slots, as
 * with one partition. */
static unsigned avail(struct serve_state *s, bool reclaim)
{
	unsigned n = free_slots(s), asked = 0;

	for (unsigned i = 0; i < s->n_p; i++)
		asked += reclaim ? s->p[i].reclaim_n : s->p[i].asked;
	return n > asked ? n - asked : 0;
}

static bool any_reading(const struct serve_state *s)
{
	for (unsigned i = 0; i < s->n_p; i++)
		if (s->p[i].reading)
			return true;
	return false;
}

/* --- small Redis commands ---------------------------------------------------
 */

static void ignore_reply(struct alq_conn *c, redisReply *r, void *priv)
{
	(void)c;
	(void)priv;
	if (r && r->type == REDIS_REPLY_ERROR)
		al_warn("redis: %.200s", r->str);
}

/* Give an entry back to the group: idle for a year, so whoever reclaims
 * next takes it at once. The delivery is not counted again (JUSTID). */
static void release_entry(struct part *p, const char *sid)
{
	const char *argv[] = {"XCLAIM", p->k_jobs, ALQ_GROUP, p->s->consumer,
			      "0",	sid,	   "IDLE",    RELEASE_IDLE_MS,
			      "JUSTID"};

	if (alq_conn_cmd(&p->cmd, ignore_reply, NULL, 9, argv, NULL) < 0)
		al_warn("job entry=%s: not handed back (redis down); it is "
			"reclaimed after its visibility time",
			sid);
}

/* Count one more delivery for an entry we retry ourselves. */
static void count_delivery(struct part *p, const char *sid)
{
	const char *argv[] = {"XCLAIM",	      p->k_jobs, ALQ_GROUP,
			      p->s->consumer, "0",	 sid};

	alq_conn_cmd(&p->cmd, ignore_reply, NULL, 6, argv, NULL);
}

/* Drop a task locally and leave its entry pending (reclaimed later). */
static void abandon(struct task *t, const char *why)
{
	al_warn("job=%s entry=%s: %s; left pending for redelivery", t->id,
		t->e.sid, why);
	task_free(t);
}

/* --- results ----------------------------------------------------------------
 */

/* Store `res` (encoded) for t, with a dead-letter reason or none. */
static void finish_with(struct task *t, struct al_result *res,
			const char *reason)
{
	char *buf = NULL;
	size_t len = 0;

	if (t->digest[0] && !res->digest)
		res->digest = strdup(t->digest); /* NULL: stored without */
	if (al_result_to_msgpack(res, &buf, &len) < 0) {
		al_result_release(res);
		abandon(t, "out of memory encoding a result");
		return;
	}
	snprintf(t->status, sizeof(t->status), "%s",
		 al_status_name(res->status));
	al_result_release(res);
	free(t->result);
	t->result = buf;
	t->result_len = len;
	snprintf(t->reason, sizeof(t->reason), "%s", reason ? reason : "");
	store(t);
}

/* RJ for a payload we cannot run; `d` names the fields. */
static void reject(struct task *t, const struct al_diags *d)
{
	struct al_result res;
	char buf[512];

	al_diags_format(d, buf, sizeof(buf));
	al_info("job=%s entry=%s: rejected: %s", t->id, t->e.sid, buf);
	if (al_worker_reject(t->id, d, &res) < 0) {
		al_result_release(&res);
		abandon(t, "out of memory building an RJ result");
		return;
	}
	res.attempt = t->e.deliveries;
	t->s->rejected++;
	finish_with(t, &res, NULL);
}

static void reject1(struct task *t, const char *path, const char *reason)
{
	struct al_diags d;

	al_diags_init(&d);
	al_diags_add(&d, path, "%s", reason);
	reject(t, &d);
}

/* XX result + dead letter: the job used up its deliveries. */
static void dead_letter(struct task *t, const char *why)
{
	struct al_result res = {0};
	char reason[200];

	snprintf(reason, sizeof(reason), "%s (delivery %u, max_deliveries %u)",
		 why, t->e.deliveries, t->s->o->max_deliveries);
	al_warn("job=%s entry=%s: dead letter: %s", t->id, t->e.sid, reason);
	res.id = strdup(t->id);
	res.error = strdup(reason);
	res.status = AL_XX;
	res.attempt = t->e.deliveries;
	if (!res.id || !res.error) {
		al_result_release(&res);
		abandon(t, "out of memory building an XX result");
		return;
	}
	t->s->dead++;
	finish_with(t, &res, t->s->o->dead_letter ? reason : NULL);
}

/* A stored result into the metrics (o->metrics, when there are any). */
static void count_job(const struct task *t)
{
	struct al_metrics *m = t->s->o->metrics;
	uint64_t now = al_wall_ms(), lat = AL_METRICS_UNKNOWN;
	int st;

	if (!m)
		return;
	st = al_status_from_name(t->status, strlen(t->status));
	/* A result stored in the millisecond of its submit is a latency of 0,
	 * not an unknown one; a submit time ahead of this host's clock (another
	 * host's skew) counts as 0 too rather than being dropped. */
	if (t->e.submit_ms)
		lat = now > t->e.submit_ms ? now - t->e.submit_ms : 0;
	al_metrics_job(m, st < 0 ? AL_XX : (enum al_status)st, lat, t->run_ms,
		       t->restore_ms);
}

static void store_cb(struct alq_conn *c, redisReply *r, void *priv)
{
	struct task *t = priv;
	struct serve_state *s = ((struct part *)c->data)->s;

	if (!r) {
		t->state = T_STORE_WAIT; /* again when Redis is back */
		return;
	}
	if (r->type != REDIS_REPLY_INTEGER) {
		char why[300];

		snprintf(why, sizeof(why), "storing the result failed: %.200s",
			 r->type == REDIS_REPLY_ERROR ? r->str : "bad reply");
		abandon(t, why);
	} else {
		if (r->integer == 1) {
			s->stored++;
			count_job(t);
			al_info("job=%s status=%s attempt=%u: result stored",
				t->id, t->status, t->e.deliveries);
		} else {
			al_info("job=%s: a result was stored before; this one "
				"is dropped (the first write wins)",
				t->id);
		}
		task_free(t);
	}
	pump(s);
	maybe_finish(s);
}

static void store(struct task *t)
{
	struct serve_state *s = t->s;
	const char *q = t->p->q;
	char k[7][ALQ_KEY_MAX], ttl[16], n[16], minute[24];
	const char *argv[13];
	size_t lens[13];

	t->state = T_STORING;
	snprintf(minute, sizeof(minute), "%llu",
		 (unsigned long long)(al_wall_ms() / 60000u));
	alq_key(k[0], sizeof(k[0]), q, ALQ_KEY_RESULT, t->id);
	alq_key(k[1], sizeof(k[1]), q, ALQ_KEY_DONE, t->id);
	alq_key(k[2], sizeof(k[2]), q, ALQ_KEY_JOBS, NULL);
	alq_key(k[3], sizeof(k[3]), q, ALQ_KEY_JOB, t->id);
	alq_key(k[4], sizeof(k[4]), q, ALQ_KEY_TPUT, minute);
	alq_key(k[5], sizeof(k[5]), q, ALQ_KEY_DEAD, NULL);
	alq_key(k[6], sizeof(k[6]), q, ALQ_KEY_SID, t->id);
	snprintf(ttl, sizeof(ttl), "%u", s->o->result_ttl_s);
	snprintf(n, sizeof(n), "%u", t->e.deliveries);
	for (int i = 0; i < 7; i++)
		argv[i] = k[i];
	argv[7] = t->result;
	argv[8] = ttl;
	argv[9] = t->e.sid;
	argv[10] = t->reason;
	argv[11] = t->id;
	argv[12] = n;
	for (int i = 0; i < 13; i++)
		lens[i] = i == 7 ? t->result_len : strlen(argv[i]);
	if (alq_conn_eval(&t->p->cmd, ALQ_COMPLETE, store_cb, t, 7, 13, argv,
			  lens) < 0)
		t->state = T_STORE_WAIT;
}

/* --- fetching payloads
 * -------------------------------------------------------- */

/* --- snapshot definitions (snapdef.h)
 * A job naming a snapshot that snapshots.allowed lists goes to its worker
 * with the snapshot's published definition, read when the job is fetched
 * (so never an older one than Redis holds then): the worker builds the
 * snapshot from it when its host's build differs, or refuses the job
 * (worker/snapdef.c). No definition: the host's own build, as before. */

/* Give t a copy of cached definition i; 0 or -ENOMEM. */
static int snap_give(struct task *t, unsigned i)
{
	struct serve_state *s = t->s;

	free(t->snap); /* from an earlier fetch of t, if any */
	free(t->snap_setup);
	t->snap = malloc(sizeof(*t->snap));
	t->snap_setup = malloc(s->snapc[i].d.setup_len);
	if (!t->snap || !t->snap_setup)
		return -ENOMEM;
	memcpy(t->snap_setup, s->snapc[i].setup, s->snapc[i].d.setup_len);
	*t->snap = s->snapc[i].d;
	t->snap->setup = t->snap_setup;
	t->build_ms = s->snapc[i].build_ms;
	return 0;
}

/* Keep definition d (its setup malloc'd, handed over) under its name;
 * the slot it went to. */
static unsigned snap_keep(struct serve_state *s, const struct al_snapdef *d,
			  char *setup)
{
	struct al_job job = {0};
	struct al_limits lim;
	struct al_diags diags;
	unsigned i;

	for (i = 0; i < SNAP_CACHE; i++)
		if (!strcmp(s->snapc[i].d.name, d->name))
			break;
	if (i == SNAP_CACHE)
		i = s->snapc_next++ % SNAP_CACHE;
	free(s->snapc[i].setup);
	s->snapc[i].d = *d;
	s->snapc[i].setup = setup;
	/* its worker may build it first: the setup's own wall time, the
	 * base template's cold boot and the save on top */
	s->snapc[i].build_ms = 0;
	al_diags_init(&diags);
	if (al_job_from_msgpack(d->setup, d->setup_len, &job, &diags) == 0) {
		al_job_limits(&job, s->o->policy, &lim);
		s->snapc[i].build_ms = lim.wall_ms + 120000;
	}
	al_job_release(&job);
	return i;
}

/* Redis could not answer: fetch the job again later (no reply), or leave
 * it for redelivery (an error that is Redis's, not the job's). True when
 * the reply was such; t may be gone then. */
static bool snap_trouble(struct task *t, redisReply *r)
{
	struct serve_state *s = t->s;
	char why[160];

	if (r && !s->draining && (r->type != REDIS_REPLY_ERROR ||
				  !strncmp(r->str, "WRONGTYPE", 9)))
		return false;
	if (!r || s->draining) {
		free(t->payload); /* fetched again, from the start */
		t->payload = NULL;
		t->state = T_FETCH_WAIT;
		if (s->draining) {
			release_entry(t->p, t->e.sid);
			task_free(t);
			maybe_finish(s);
		}
		return true;
	}
	snprintf(why, sizeof(why), "reading the snapshot's definition failed: "
		 "%.100s", r->str);
	abandon(t, why);
	pump(s);
	return true;
}

static void snap_ready(struct task *t, int e)
{
	struct serve_state *s = t->s;

	if (e == -EBADMSG) {
		reject1(t, "template", "the snapshot's published definition is "
		       "malformed (airlock snapshot create it again)");
		pump(s);
		return;
	}
	if (e < 0 && e != -ENOENT) {
		abandon(t, "out of memory");
		return;
	}
	t->state = T_QUEUED;
	dispatch(s);
	pump(s);
}

/* The whole definition (HGETALL): kept, and a copy given to t. */
static void snapdef_cb(struct alq_conn *c, redisReply *r, void *priv)
{
	struct task *t = priv;
	struct al_snapdef d;
	char *setup = NULL;
	int e;

	(void)c;
	if (snap_trouble(t, r))
		return;
	e = alq_snapdef_parse(r, &d, &setup);
	if (e == 0)
		e = snap_give(t, snap_keep(t->s, &d, setup));
	snap_ready(t, e);
}

/* The definition's key (HGET): the kept definition when it is the same,
 * else the whole one. */
static void snapkey_cb(struct alq_conn *c, redisReply *r, void *priv)
{
	struct task *t = priv;
	struct serve_state *s = t->s;
	char k[ALQ_KEY_MAX];

	(void)c;
	if (snap_trouble(t, r))
		return;
	if (r->type == REDIS_REPLY_NIL) {
		snap_ready(t, -ENOENT); /* none published */
		return;
	}
	for (unsigned i = 0; r->type == REDIS_REPLY_STRING && i < SNAP_CACHE;
	     i++)
		if (s->snapc[i].d.name[0] &&
		    !strcmp(s->snapc[i].d.name, t->snap_name) &&
		    r->len == strlen(s->snapc[i].d.key) &&
		    !memcmp(r->str, s->snapc[i].d.key, r->len)) {
			snap_ready(t, snap_give(t, i));
			return;
		}
	alq_key(k, sizeof(k), s->o->queue, ALQ_KEY_SNAPDEF, t->snap_name);
	if (alq_conn_cmd(&s->p[0].cmd, snapdef_cb, t, 2,
			 (const char *[]){"HGETALL", k}, NULL) < 0)
		snap_trouble(t, NULL);
}

static void fetch_snapdef(struct task *t, const char *name)
{
	char k[ALQ_KEY_MAX];

	snprintf(t->snap_name, sizeof(t->snap_name), "%s", name);
	alq_key(k, sizeof(k), t->s->o->queue, ALQ_KEY_SNAPDEF, name);
	t->state = T_FETCH;
	if (alq_conn_cmd(&t->s->p[0].cmd, snapkey_cb, t, 3,
			 (const char *[]){"HGET", k, "key"}, NULL) < 0)
		snap_trouble(t, NULL);
}

/* After a job ran from t->snap on this host: record the key built here. */
static void snapdef_record(struct task *t, const struct al_result *res)
{
	struct serve_state *s = t->s;
	char k[ALQ_KEY_MAX], val[64];

	if (!t->snap || !res->vm.restored || res->status == AL_RJ)
		return;
	if (!s->snap_host[0])
		alq_snapdef_host(s->o->sb->state_dir, s->snap_host);
	alq_key(k, sizeof(k), s->o->queue, ALQ_KEY_SNAPHOSTS, t->snap->name);
	snprintf(val, sizeof(val), "%s %llu", t->snap->key,
		 (unsigned long long)al_wall_ms());
	alq_conn_cmd(&s->p[0].cmd, ignore_reply, NULL, 4,
		     (const char *[]){"HSET", k, s->snap_host, val}, NULL);
}

/* The payload is here: decode it enough to know it can run. */
static void got_payload(struct task *t, const char *p, size_t len)
{
	struct serve_state *s = t->s;
	struct al_job job = {0};
	struct al_limits lim;
	struct al_diags d;
	char snap[AL_NAME_MAX + 1]; /* a snapshot it names, "" = none */

	al_diags_init(&d);
	al_digest_hex(p, len, t->digest);
	if (al_job_from_msgpack(p, len, &job, &d) < 0) {
		reject(t, &d);
		return;
	}
	if (job.id && strcmp(job.id, t->id)) {
		al_job_release(&job);
		reject1(t, "id",
			"does not match the id it was submitted "
			"under");
		return;
	}
	al_job_limits(&job, s->o->policy, &lim);
	snprintf(snap, sizeof(snap), "%s",
		 job.template_ ? job.template_ : s->o->policy->template_);
	if (!al_policy_snapshot(s->o->policy, snap))
		snap[0] = 0;
	al_job_release(&job);
	t->wall_ms = lim.wall_ms;
	t->payload = malloc(len ? len : 1);
	if (!t->payload) {
		abandon(t, "out of memory");
		return;
	}
	memcpy(t->payload, p, len);
	t->len = len;
	if (t->e.deliveries > s->o->max_deliveries) {
		dead_letter(t, "delivered too often");
		return;
	}
	if (snap[0]) {
		fetch_snapdef(t, snap);
		return;
	}
	t->state = T_QUEUED;
	dispatch(s);
}

/* XACK without a result: one is stored already (cancelled, redelivered). */
static void ack_entry(struct part *p, const char *sid)
{
	const char *ack[] = {"XACK", p->k_jobs, ALQ_GROUP, sid};

	alq_conn_cmd(&p->cmd, ignore_reply, NULL, 4, ack, NULL);
}

static void fetch_cb(struct alq_conn *c, redisReply *r, void *priv)
{
	struct task *t = priv;
	struct serve_state *s = ((struct part *)c->data)->s;
	enum alq_fetch kind;
	const char *payload;
	char why[160];
	size_t len;

	if (!r) {
		t->state = T_FETCH_WAIT;
		return;
	}
	if (s->draining) {
		release_entry(t->p, t->e.sid);
		task_free(t);
		maybe_finish(s);
		return;
	}
	if (alq_fetch_parse(r, &kind, &payload, &len) < 0) {
		snprintf(why, sizeof(why),
			 "fetching the payload failed: %.100s",
			 r->type == REDIS_REPLY_ERROR ? r->str : "bad reply");
		abandon(t, why);
		pump(s);
		return;
	}
	switch (kind) {
	case ALQ_FETCH_OK:
		got_payload(t, payload, len);
		break;
	case ALQ_FETCH_DONE: /* redelivered, or cancelled before it ran */
		ack_entry(t->p, t->e.sid);
		al_info("job=%s: has a result already; acknowledged", t->id);
		task_free(t);
		break;
	case ALQ_FETCH_MISSING:
		reject1(t, "", "no job payload stored under this id");
		break;
	case ALQ_FETCH_TYPE:
		reject1(t, "", "the job payload key is not a string");
		break;
	case ALQ_FETCH_BIG:
		snprintf(why, sizeof(why), "%zu bytes, over the cap of %u", len,
			 AL_JOB_MAX_BYTES);
		reject1(t, "", why);
		break;
	}
	pump(s);
}

static void fetch(struct task *t)
{
	char kjob[ALQ_KEY_MAX], kres[ALQ_KEY_MAX], cap[16];
	const char *argv[3];

	t->state = T_FETCH;
	alq_key(kjob, sizeof(kjob), t->p->q, ALQ_KEY_JOB, t->id);
	alq_key(kres, sizeof(kres), t->p->q, ALQ_KEY_RESULT, t->id);
	snprintf(cap, sizeof(cap), "%u", AL_JOB_MAX_BYTES);
	argv[0] = kjob;
	argv[1] = kres;
	argv[2] = cap;
	if (alq_conn_eval(&t->p->cmd, ALQ_FETCH, fetch_cb, t, 2, 3, argv,
			  NULL) < 0)
		t->state = T_FETCH_WAIT;
}

/* A claimed entry (read, reclaimed): make it a task. */
static void claimed(struct part *p, const struct alq_entry *e)
{
	struct task *t;

	if (task_find(p, e->sid))
		return; /* ours already (a reclaim of our own claim) */
	if (p->s->draining) {
		release_entry(p, e->sid);
		return;
	}
	t = task_new(p, e);
	if (!t) {
		al_err("entry=%s: out of memory; left pending", e->sid);
		return;
	}
	if (!e->id[0]) {
		reject1(t, "id",
			e->id_bad ? "must be [A-Za-z0-9._:/-]{1,128}, no "
				    "empty, . or .. part between slashes"
				  : "missing from the stream entry");
		return;
	}
	fetch(t);
}

/* --- workers
 * -------------------------------------------------------------------- */

static void retry_or_dead(struct task *t, const char *why)
{
	struct serve_state *s = t->s;

	if (t->e.deliveries >= s->o->max_deliveries) {
		dead_letter(t, why);
		return;
	}
	t->e.deliveries++;
	s->retried++;
	if (s->o->metrics)
		atomic_fetch_add(&s->o->metrics->retries, 1);
	al_warn("job=%s: %s; retrying (delivery %u of %u)", t->id, why,
		t->e.deliveries, s->o->max_deliveries);
	count_delivery(t->p, t->e.sid);
	/* to the front: it has waited longest */
	t->prev->next = t->next;
	t->next->prev = t->prev;
	t->next = s->tasks.next;
	t->prev = &s->tasks;
	s->tasks.next->prev = t;
	s->tasks.next = t;
	t->state = T_QUEUED;
}

static void on_result(struct wslot *w, uint8_t *body, size_t len)
{
	struct task *t = w->task;
	struct al_result res = {0};
	struct al_diags d;

	w->task = NULL;
	if (!t) {
		free(body);
		al_err("worker=%u: sent a result nobody asked for; killing it",
		       w->index);
		kill(-w->proc.pid, SIGKILL);
		return;
	}
	if (t->cancelled) { /* finished as we killed it: CX stands */
		free(body);
		ack_entry(t->p, t->e.sid);
		task_free(t);
		return;
	}
	al_diags_init(&d);
	if (al_result_from_msgpack(body, len, &res, &d) < 0) {
		free(body);
		retry_or_dead(t, "the worker sent a malformed result");
		return;
	}
	if (res.status == AL_XX && t->e.deliveries < t->s->o->max_deliveries) {
		char why[200];

		snprintf(why, sizeof(why), "XX: %.150s",
			 res.error ? res.error : "no reason given");
		al_result_release(&res);
		free(body);
		if (t->s->draining) { /* another dispatcher retries it */
			release_entry(t->p, t->e.sid);
			task_free(t);
		} else {
			retry_or_dead(t, why);
		}
		return;
	}
	snapdef_record(t, &res);
	snprintf(t->status, sizeof(t->status), "%s",
		 al_status_name(res.status));
	t->run_ms = res.timing.run_ms;
	t->restore_ms = res.vm.restore_ms;
	if (res.status == AL_XX) {
		char why[200];

		snprintf(why, sizeof(why), "XX: %.150s",
			 res.error ? res.error : "no reason given");
		snprintf(t->reason, sizeof(t->reason), "%s", why);
		al_warn("job=%s entry=%s: dead letter: %s (delivery %u)", t->id,
			t->e.sid, why, t->e.deliveries);
		t->s->dead++;
		if (!t->s->o->dead_letter)
			t->reason[0] = '\0';
	}
	al_result_release(&res);
	free(t->result);
	t->result = (char *)body; /* hand-off: stored as the worker made it */
	t->result_len = len;
	store(t);
}

static void dispatch(struct serve_state *s)
{
	for (unsigned i = 0; i < s->n_w && !s->closing; i++) {
		struct wslot *w = &s->w[i];
		struct task *t;

		if (!w->alive || w->task || s->draining)
			continue;
		for (t = s->tasks.next; t != &s->tasks; t = t->next)
			if (t->state == T_QUEUED)
				break;
		if (t == &s->tasks)
			return;
		if (serve__send_job(w, t) < 0) {
			al_err("worker=%u: could not send job=%s; killing it",
			       i, t->id);
			kill(-w->proc.pid, SIGKILL);
			continue;
		}
		t->state = T_RUNNING;
		w->task = t;
		w->deadline = mono(s) + t->wall_ms + t->build_ms +
			      s->o->visibility_slack_ms;
		al_debug("job=%s worker=%u attempt=%u: started", t->id, i,
			 t->e.deliveries);
	}
}

/* --- reading the stream
 * ------------------------------------------------------- */

static void group_cb(struct alq_conn *c, redisReply *r, void *priv)
{
	struct part *p = c->data;

	(void)priv;
	p->group_pending = false;
	if (!r)
		return; /* on_up tries again */
	if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSYGROUP", 9)) {
		al_err("redis: creating the consumer group of %s: %.200s", p->q,
		       r->str);
		return;
	}
	p->group_ready = true;
	pump(p->s);
}

static void ensure_group(struct part *p)
{
	const char *argv[] = {"XGROUP",	 "CREATE", p->k_jobs,
			      ALQ_GROUP, "0",	   "MKSTREAM"};

	if (p->group_pending)
		return;
	if (alq_conn_cmd(&p->cmd, group_cb, NULL, 6, argv, NULL) == 0)
		p->group_pending = true;
}

/* Entries of an XREADGROUP reply: [[stream, [entry...]]]. */
static void read_cb_redis(struct alq_conn *c, redisReply *r, void *priv)
{
	struct part *p = c->data;

	(void)priv;
	p->reading = false;
	p->asked = 0;
	if (!r)
		return;
	if (r->type == REDIS_REPLY_ERROR) {
		if (!strncmp(r->str, "NOGROUP", 7)) {
			al_warn("redis: the consumer group of %s is gone "
				"(server restarted without its data?); "
				"recreating it",
				p->q);
			p->group_ready = false;
			ensure_group(p);
		} else {
			al_err("redis: XREADGROUP: %.200s", r->str);
		}
		return;
	}
	if (r->type == REDIS_REPLY_NIL)
		p->s->empty_reads++;
	if (r->type == REDIS_REPLY_ARRAY) {
		p->s->empty_reads = 0;
		for (size_t i = 0; i < r->elements; i++) {
			redisReply *st = r->element[i];

			if (st->type != REDIS_REPLY_ARRAY ||
			    st->elements != 2 ||
			    st->element[1]->type != REDIS_REPLY_ARRAY)
				continue;
			for (size_t k = 0; k < st->element[1]->elements; k++) {
				struct alq_entry e;

				if (alq_entry_parse(st->element[1]->element[k],
						    &e) == 0)
					claimed(p, &e);
			}
		}
	}
	pump(p->s);
}

/* Read partition p for up to n entries. */
static void read_part(struct part *p, unsigned n, unsigned block_ms)
{
	char count[16], block[16];
	const char *argv[] = {
	    "XREADGROUP", "GROUP", ALQ_GROUP, p->s->consumer, "COUNT", count,
	    "BLOCK",	  block,   "STREAMS", p->k_jobs,      ">"};


	snprintf(count, sizeof(count), "%u", n);
	snprintf(block, sizeof(block), "%u", block_ms);
	if (!block_ms) { /* no BLOCK: the reply comes at once */
		argv[6] = "STREAMS", argv[7] = p->k_jobs, argv[8] = ">";
		if (alq_conn_cmd(&p->blk, read_cb_redis, NULL, 9, argv,
				 NULL) == 0) {
			p->reading = true;
			p->asked = n;
		}
		return;
	}
	if (alq_conn_cmd(&p->blk, read_cb_redis, NULL, 11, argv, NULL) == 0) {
		p->reading = true;
		p->asked = n;
	}
}

/* Read while there are free slots: each partition that can read (group
 * made, connection up, no read in flight) gets an equal share, the first
 * of them in turn (next_read: the one after the last read), so no
 * partition waits behind another. When the slots are fewer than the
 * partitions, reads do not block: an empty partition answers at once and
 * the next is read, until a whole round of partitions came back empty;
 * then each read blocks briefly (BLOCK_SHORT_MS), so idle partitions
 * cost a few reads a second, and a busy one is found within a round. */
#define BLOCK_SHORT_MS 100u
static void pump(struct serve_state *s)
{
	unsigned n, ready = 0, block, last = s->next_read;

	if (s->draining || s->closing)
		return;
	n = avail(s, false);
	if (!n)
		return;
	for (unsigned i = 0; i < s->n_p; i++) {
		struct part *p = &s->p[i];

		ready += !p->reading && p->group_ready && alq_conn_up(&p->blk);
	}
	if (!ready)
		return;
	block = n >= ready			? BLOCK_MS
		: s->empty_reads >= s->n_p	? BLOCK_SHORT_MS
						: 0;
	for (unsigned k = 0; k < s->n_p && n; k++) {
		struct part *p = &s->p[(s->next_read + k) % s->n_p];
		unsigned share;

		if (p->reading || !p->group_ready || !alq_conn_up(&p->blk))
			continue;
		share = n / ready + (n % ready ? 1 : 0);
		if (share > n)
			share = n;
		read_part(p, share, block);
		n -= p->reading ? share : 0;
		ready--;
		last = p->index;
	}
	s->next_read = (last + 1) % s->n_p;
}

/* --- timers
 * ------------------------------------------------------------------------ */

static void hb_cb(struct alq_conn *c, redisReply *r, void *priv)
{
	(void)c;
	(void)priv;
	if (!r || r->type != REDIS_REPLY_ARRAY)
		return;
	for (size_t i = 0; i < r->elements; i++)
		if (r->element[i]->type == REDIS_REPLY_STRING)
			al_warn("entry=%.60s: claim lost to another "
				"dispatcher (we were too slow); the first "
				"result stored wins",
				r->element[i]->str);
}

/* Job `t` was cancelled (its CX result is stored): never run it; if it
 * runs, kill its worker (on_exit_ acknowledges it, no retry). */
static void cancel_task(struct serve_state *s, struct task *t)
{
	if (t->state == T_QUEUED || t->state == T_FETCH_WAIT) {
		al_info("job=%s: cancelled before it ran", t->id);
		ack_entry(t->p, t->e.sid);
		task_free(t);
		return;
	}
	if (t->state != T_RUNNING)
		return; /* fetching (it sees the result) or storing */
	for (unsigned i = 0; i < s->n_w; i++) {
		if (s->w[i].task == t && s->w[i].alive) {
			t->cancelled = true;
			al_info("job=%s worker=%u: cancelled; killing it",
				t->id, i);
			kill(-s->w[i].proc.pid, SIGKILL);
		}
	}
}

static void cancel_cb(struct alq_conn *c, redisReply *r, void *priv)
{
	struct part *p = c->data;
	struct serve_state *s = p->s;
	struct task *t;
	char sid[ALQ_SID_MAX];

	(void)priv;
	if (!r || r->type != REDIS_REPLY_ARRAY)
		return;
	for (size_t i = 0; i < r->elements; i++) {
		if (r->element[i]->type != REDIS_REPLY_STRING ||
		    r->element[i]->len >= sizeof(sid))
			continue;
		memcpy(sid, r->element[i]->str, r->element[i]->len);
		sid[r->element[i]->len] = '\0';
		if ((t = task_find(p, sid)))
			cancel_task(s, t);
	}
	dispatch(s);
	pump(s);
}

/* Re-claim the entries we hold in partition p, and ask which of them
 * were cancelled. */
static void heartbeat_part(struct part *p)
{
	struct serve_state *s = p->s;
	const char *argv[2 + HB_BATCH];
	int n = 2;

	if (!alq_conn_up(&p->cmd))
		return;
	argv[0] = p->k_jobs;
	argv[1] = s->consumer;
	for (struct task *t = s->tasks.next;; t = t->next) {
		bool end = t == &s->tasks;

		if (!end && t->p == p)
			argv[n++] = t->e.sid;
		if (n > 2 && (n == 2 + (int)HB_BATCH || end)) {
			alq_conn_eval(&p->cmd, ALQ_HEARTBEAT, hb_cb, NULL, 1, n,
				      argv, NULL);
			argv[1] = p->k_cancel;
			alq_conn_eval(&p->cmd, ALQ_CANCEL_POLL, cancel_cb, NULL,
				      1, n - 1, argv + 1, NULL);
			argv[1] = s->consumer;
			n = 2;
		}
		if (end)
			break;
	}
}

static void heartbeat(uv_timer_t *h)
{
	struct serve_state *s = h->data;
	char val[64];
	unsigned busy = 0, alive = 0;

	for (unsigned i = 0; i < s->n_p; i++)
		heartbeat_part(&s->p[i]);
	if (!alq_conn_up(&s->p[0].cmd))
		return;
	for (unsigned i = 0; i < s->n_w; i++) {
		alive += s->w[i].alive;
		busy += s->w[i].task != NULL;
	}
	snprintf(val, sizeof(val), "%u %u %llu", alive, busy,
		 (unsigned long long)al_wall_ms());
	alq_conn_cmd(&s->p[0].cmd, ignore_reply, NULL, 4,
		     (const char *[]){"HSET", s->k_serves, s->consumer, val},
		     NULL);
}

static void reclaim_cb(struct alq_conn *c, redisReply *r, void *priv)
{
	struct part *p = c->data;

	(void)priv;
	p->reclaiming = false;
	p->reclaim_n = 0;
	if (!r || r->type != REDIS_REPLY_ARRAY) {
		if (r && r->type == REDIS_REPLY_ERROR)
			al_warn("redis: reclaim: %.200s", r->str);
		return;
	}
	for (size_t i = 0; i < r->elements; i++) {
		redisReply *x = r->element[i];
		struct alq_entry e;

		if (x->type != REDIS_REPLY_ARRAY || x->elements != 3 ||
		    alq_entry_parse(x, &e) < 0)
			continue;
		if (x->element[2]->type == REDIS_REPLY_INTEGER &&
		    x->element[2]->integer > 0)
			e.deliveries = (uint32_t)x->element[2]->integer;
		al_info("job=%s entry=%s: reclaimed from a silent consumer "
			"(delivery %u)",
			e.id[0] ? e.id : "?", e.sid, e.deliveries);
		claimed(p, &e);
	}
	pump(p->s);
}

/* Reclaim in every partition, with the slots not promised to reclaims
 * in flight: an equal share each, the first in turn (next_reclaim). */
static void reclaim(uv_timer_t *h)
{
	struct serve_state *s = h->data;
	char slack[16], count[16], dflt[16], maxw[16];
	const char *argv[6];
	unsigned n, ready = 0;

	if (s->draining || !s->n_p)
		return;
	snprintf(slack, sizeof(slack), "%u", s->o->visibility_slack_ms);
	snprintf(dflt, sizeof(dflt), "%u", s->o->policy->defaults.wall_ms);
	snprintf(maxw, sizeof(maxw), "%u", s->o->policy->max.wall_ms);
	n = avail(s, true);

	for (unsigned i = 0; i < s->n_p; i++)
		ready += s->p[i].group_ready && !s->p[i].reclaiming &&
			 alq_conn_up(&s->p[i].cmd);
	for (unsigned k = 0; k < s->n_p && n && ready; k++) {
		struct part *p = &s->p[(s->next_reclaim + k) % s->n_p];
		unsigned share = n / ready + (n % ready ? 1 : 0);

		if (!p->group_ready || p->reclaiming || !alq_conn_up(&p->cmd))
			continue;
		ready--;
		if (share > n)
			share = n;
		snprintf(count, sizeof(count), "%u", share);
		argv[0] = p->k_jobs;
		argv[1] = s->consumer;
		argv[2] = slack;
		argv[3] = count;
		argv[4] = dflt;
		argv[5] = maxw;
		if (alq_conn_eval(&p->cmd, ALQ_RECLAIM, reclaim_cb, NULL, 1, 6,
				  argv, NULL) == 0) {
			p->reclaiming = true;
			p->reclaim_n = share;
			n -= share;
		}
	}
	s->next_reclaim = (s->next_reclaim + 1) % s->n_p;
}

static void trim_cb(struct alq_conn *c, redisReply *r, void *priv)
{
	(void)c;
	(void)priv;
	if (r && r->type == REDIS_REPLY_INTEGER && r->integer > 0)
		al_debug("stream trimmed by %lld entries", r->integer);
	else if (r && r->type == REDIS_REPLY_ERROR)
		al_warn("redis: trim: %.200s", r->str);
}

static void trim(uv_timer_t *h)
{
	struct serve_state *s = h->data;

	for (unsigned i = 0; i < s->n_p; i++) {
		struct part *p = &s->p[i];
		/* consumers idle for a day with nothing pending are
		 * forgotten */
		const char *argv[] = {p->k_jobs, p->k_cancel, "86400000"};

		if (alq_conn_up(&p->cmd))
			alq_conn_eval(&p->cmd, ALQ_TRIM, trim_cb, NULL, 2, 3,
				      argv, NULL);
	}
}

/* --- shutdown
 * ------------------------------------------------------------------------ */

static void begin_drain(struct serve_state *s, const char *why)
{
	if (s->draining) {
		al_warn("%s again: stopping running jobs now", why);
		s->drain_deadline = mono(s);
		return;
	}
	s->draining = true;
	s->drain_deadline = mono(s) + s->o->shutdown_grace_ms;
	sd_notify(0, "STOPPING=1\nSTATUS=draining");
	al_info("%s: draining (%u jobs held, grace %u ms)", why, s->n_tasks,
		s->o->shutdown_grace_ms);
	for (struct task *t = s->tasks.next, *nx; t != &s->tasks; t = nx) {
		nx = t->next;
		if (t->state == T_QUEUED || t->state == T_FETCH_WAIT) {
			release_entry(t->p, t->e.sid);
			task_free(t);
		}
	}
	for (unsigned i = 0; i < s->n_w; i++)
		if (!s->w[i].task)
			serve__stop_worker(&s->w[i]);
	maybe_finish(s);
}

static void on_signal(uv_signal_t *h, int sig)
{
	begin_drain(h->data, sig == SIGINT ? "SIGINT" : "SIGTERM");
}

static void on_stop_fd(uv_poll_t *p, int status, int events)
{
	(void)status;
	(void)events;
	uv_poll_stop(p);
	begin_drain(p->data, "stop requested");
}

static void conn_closed(struct alq_conn *c)
{
	maybe_finish(((struct part *)c->data)->s);
}

static void close_rest(struct serve_state *s)
{
	for (unsigned i = 0; i < s->n_p; i++) {
		alq_conn_close(&s->p[i].cmd);
		alq_conn_close(&s->p[i].blk);
	}
	uv_close((uv_handle_t *)&s->tick, NULL);
	uv_close((uv_handle_t *)&s->hb, NULL);
	uv_close((uv_handle_t *)&s->reclaim, NULL);
	uv_close((uv_handle_t *)&s->trim, NULL);
	uv_close((uv_handle_t *)&s->sigterm, NULL);
	uv_close((uv_handle_t *)&s->sigint, NULL);
	if (s->stop_open)
		uv_close((uv_handle_t *)&s->stop, NULL);
	al_info("stopped: %llu results stored (%llu rejected, %llu dead "
		"letters), %llu retries",
		(unsigned long long)s->stored, (unsigned long long)s->rejected,
		(unsigned long long)s->dead, (unsigned long long)s->retried);
}

/* Leave the dispatchers' hash (the airlock_dispatchers gauge, `airlock
 * status`) before closing: the HDEL must reach Redis, so the connections
 * close once it is answered, or failed, or timed out (command_timeout_ms),
 * never with it still in hiredis's output buffer. */
static void farewell_cb(struct alq_conn *c, redisReply *r, void *priv)
{
	(void)r;
	(void)priv;
	close_rest(((struct part *)c->data)->s);
}

static void close_all(struct serve_state *s)
{
	s->closing = true;
	uv_timer_stop(&s->hb); /* no HSET after the HDEL */
	uv_timer_stop(&s->reclaim);
	uv_timer_stop(&s->trim);
	if (s->n_p && alq_conn_up(&s->p[0].cmd) &&
	    alq_conn_cmd(&s->p[0].cmd, farewell_cb, NULL, 3,
			 (const char *[]){"HDEL", s->k_serves, s->consumer},
			 NULL) == 0)
		return;
	close_rest(s);
}

/* Done draining when no worker is left and nothing waits to be stored
 * (or Redis stayed away past the grace period). */
static void maybe_finish(struct serve_state *s)
{
	bool late;

	if (!s->draining || s->closing)
		return;
	late = mono(s) >= s->drain_deadline;
	for (unsigned i = 0; i < s->n_w; i++) {
		struct wslot *w = &s->w[i];

		if (w->alive && (late || !w->task)) {
			if (late && w->task)
				kill(-w->proc.pid, SIGKILL);
			else
				serve__stop_worker(w);
		}
		if (w->alive || w->open_handles)
			return;
	}
	for (struct task *t = s->tasks.next, *nx; t != &s->tasks; t = nx) {
		nx = t->next;
		if (t->state == T_QUEUED || t->state == T_FETCH_WAIT) {
			release_entry(t->p, t->e.sid);
			task_free(t);
		}
	}
	if ((s->n_tasks || any_reading(s)) && !late)
		return; /* results being stored, a read to answer */
	if (s->n_tasks)
		al_warn("%u results could not be stored before the deadline; "
			"their jobs stay pending and run again elsewhere",
			s->n_tasks);
	while (s->tasks.next != &s->tasks)
		task_free(s->tasks.next);
	close_all(s);
}

/* The gauges of o->metrics, from the loop's own state. */
static void gauges(struct serve_state *s)
{
	struct al_metrics *m = s->o->metrics;
	uint64_t alive = 0, busy = 0, reconnects = 0;

	if (!m)
		return;
	for (unsigned i = 0; i < s->n_p; i++)
		reconnects += s->p[i].cmd.reconnects + s->p[i].blk.reconnects;
	for (unsigned i = 0; i < s->n_w; i++) {
		alive += s->w[i].alive;
		busy += s->w[i].alive && s->w[i].task;
	}
	atomic_store(&m->workers, alive);
	atomic_store(&m->vms_alive, busy);
	atomic_store(&m->redis_reconnects, reconnects);
}

static void tick(uv_timer_t *h)
{
	struct serve_state *s = h->data;
	uint64_t now = mono(s);

	gauges(s);
	for (unsigned i = 0; i < s->n_w; i++) {
		struct wslot *w = &s->w[i];

		if (w->alive && w->task && now > w->deadline) {
			al_warn("job=%s worker=%u: past wall_ms + slack; "
				"killing the worker",
				w->task->id, i);
			kill(-w->proc.pid, SIGKILL);
			w->deadline = UINT64_MAX;
		}
		if (!w->alive && !w->open_handles && w->respawn_at &&
		    now >= w->respawn_at && !s->draining) {
			int r = serve__spawn(w);

			if (r < 0) {
				al_err("worker=%u: spawn failed: %s", i,
				       strerror(-r));
				w->respawn_at = now + w->backoff_ms;
			}
		}
	}
	/* stores and fetches that waited for Redis */
	for (struct task *t = s->tasks.next, *nx; t != &s->tasks; t = nx) {
		nx = t->next;
		if (!alq_conn_up(&t->p->cmd))
			continue;
		if (t->state == T_STORE_WAIT)
			store(t);
		else if (t->state == T_FETCH_WAIT && !s->draining)
			fetch(t);
	}
	dispatch(s);
	pump(s);
	maybe_finish(s);
}

static void cmd_up(struct alq_conn *c)
{
	struct part *p = c->data;

	ensure_group(p);
	/* re-assert our claims right away (partition 0: and our liveness) */
	if (p->index == 0)
		heartbeat(&p->s->hb);
	else
		heartbeat_part(p);
}

static void blk_up(struct alq_conn *c)
{
	pump(((struct part *)c->data)->s);
}

static void blk_down(struct alq_conn *c)
{
	struct part *p = c->data;

	p->reading = false;
	p->asked = 0;
}

/* --- the loop's side of the worker seam (serve_worker_ops)
 * ------------------------------------------------------------------ */

/* w's worker was reaped with the job it ran, if any. */
static void worker_died(struct wslot *w, const char *why)
{
	struct task *t = w->task;

	if (!t)
		return;
	w->task = NULL;
	if (t->cancelled) { /* its CX result is stored */
		ack_entry(t->p, t->e.sid);
		al_info("job=%s worker=%u: cancelled; VM killed", t->id,
			w->index);
		task_free(t);
	} else if (w->s->draining) {
		release_entry(t->p, t->e.sid);
		task_free(t);
	} else {
		retry_or_dead(t, why);
	}
}

static void worker_turn(struct serve_state *s)
{
	dispatch(s);
	pump(s);
	maybe_finish(s);
}

/* --- setup
 * ------------------------------------------------------------------------- */

/* The dispatcher's own defaults, for callers without a config; the config's
 * key table writes the same numbers (test_defaults holds them together). */
void al_serve_opts_init(struct al_serve_opts *o)
{
	*o = (struct al_serve_opts){
	    .queue = "default",
	    .connect_timeout_ms = 2000,
	    .command_timeout_ms = 5000,
	    .workers = 1,
	    .max_deliveries = 3,
	    .result_ttl_s = 604800,
	    .visibility_slack_ms = 30000,
	    .heartbeat_ms = 5000,
	    .trim_interval_ms = 60000,
	    .dead_letter = true,
	    .shutdown_grace_ms = 30000,
	    .policy = al_policy_default(),
	    .stop_fd = -1,
	};
}

/* One of a partition's connections, named `base` (partition 0) or
 * `base.pN` in `name` (kept in p: the connection logs by it). */
static int init_conn(struct part *p, struct alq_conn *c, char *name, size_t len,
		     const char *base)
{
	struct serve_state *s = p->s;

	snprintf(name, len, p->index ? "%s.p%u" : "%s", base, p->index);
	memset(c, 0, sizeof(*c));
	c->connect_timeout_ms = s->o->connect_timeout_ms;
	c->command_timeout_ms = s->o->command_timeout_ms;
	c->on_closed = conn_closed;
	c->data = p;
	return alq_conn_init(c, &s->loop, &s->o->url, name);
}

static int timer(struct serve_state *s, uv_timer_t *t, uv_timer_cb cb, uint64_t every)
{
	uv_timer_init(&s->loop, t);
	t->data = s;
	return uv_timer_start(t, cb, every, every);
}

static int setup(struct serve_state *s)
{
	char host[41] = "host";
	unsigned n;
	int r;

	s->ops = (struct serve_worker_ops){.result = on_result,
					   .died = worker_died,
					   .turn = worker_turn,
					   .closed = maybe_finish};
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	for (char *p = host; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'))
			*p = '_';
	{
		uint32_t rnd = (uint32_t)al_wall_ms() ^ (uint32_t)getpid() << 8;

		snprintf(s->consumer, sizeof(s->consumer), "%s-%d-%04x", host,
			 (int)getpid(), rnd & 0xffff);
	}
	alq_key(s->k_serves, sizeof(s->k_serves), s->o->queue, ALQ_KEY_SERVES,
		NULL);
	s->tasks.next = s->tasks.prev = &s->tasks;
	n = s->o->partitions > 1 ? s->o->partitions : 1;
	if (n > ALQ_PARTITIONS_MAX)
		return -EINVAL;
	s->p = calloc(n, sizeof(*s->p));
	if (!s->p)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) /* closing one not made is a no-op */
		s->p[i].cmd.state = s->p[i].blk.state = ALQ_CONN_CLOSED;
	s->n_p = n;
	for (unsigned i = 0; i < n; i++) {
		struct part *p = &s->p[i];

		p->s = s;
		p->index = i;
		if (alq_partition_name(p->q, sizeof(p->q), s->o->queue, i) <
			0 ||
		    alq_key(p->k_jobs, sizeof(p->k_jobs), p->q, ALQ_KEY_JOBS,
			    NULL) < 0 ||
		    alq_key(p->k_dead, sizeof(p->k_dead), p->q, ALQ_KEY_DEAD,
			    NULL) < 0 ||
		    alq_key(p->k_cancel, sizeof(p->k_cancel), p->q,
			    ALQ_KEY_CANCEL, NULL) < 0)
			return -ENAMETOOLONG;
		r = init_conn(p, &p->cmd, p->cmd_name, sizeof(p->cmd_name),
			      "cmd");
		if (r < 0)
			return r;
		p->cmd.on_up = cmd_up;
		r = init_conn(p, &p->blk, p->blk_name, sizeof(p->blk_name),
			      "blocking");
		if (r < 0)
			return r;
		p->blk.block_ms = BLOCK_MS;
		p->blk.on_up = blk_up;
		p->blk.on_down = blk_down;
	}
	timer(s, &s->tick, tick, TICK_MS);
	timer(s, &s->hb, heartbeat, s->o->heartbeat_ms);
	timer(s, &s->reclaim, reclaim,
	      s->o->visibility_slack_ms / 4 < 250
		  ? 250
		  : (s->o->visibility_slack_ms / 4 > 5000
			 ? 5000
			 : s->o->visibility_slack_ms / 4));
	timer(s, &s->trim, trim, s->o->trim_interval_ms);
	uv_signal_init(&s->loop, &s->sigterm);
	uv_signal_init(&s->loop, &s->sigint);
	s->sigterm.data = s->sigint.data = s;
	uv_signal_start(&s->sigterm, on_signal, SIGTERM);
	uv_signal_start(&s->sigint, on_signal, SIGINT);
	if (s->o->stop_fd >= 0) {
		r = uv_poll_init(&s->loop, &s->stop, s->o->stop_fd);
		if (r < 0)
			return r;
		s->stop.data = s;
		s->stop_open = true;
		uv_poll_start(&s->stop, UV_READABLE | UV_DISCONNECT,
			      on_stop_fd);
	}
	return 0;
}

static int spawn_all(struct serve_state *s)
{
	s->w = calloc(s->o->workers, sizeof(*s->w));
	if (!s->w)
		return -ENOMEM;
	s->n_w = s->o->workers;
	for (unsigned i = 0; i < s->n_w; i++) {
		struct wslot *w = &s->w[i];
		int r;

		w->s = s;
		w->index = i;
		w->proc.pid = -1;
		w->proc.fd = w->proc.pidfd = -1;
		w->backoff_ms = RESPAWN_MIN_MS;
		snprintf(w->name, sizeof(w->name), "%.50s/w%u", s->consumer, i);
		al_frame_reader_init(&w->fr, AL_RESULT_MAX_BYTES);
		w->rbuf = malloc(READ_BUF);
		if (!w->rbuf)
			return -ENOMEM;
		r = serve__spawn(w);
		if (r < 0)
			return r;
	}
	return 0;
}

int al_serve_run(const struct al_serve_opts *o)
{
	struct serve_state *s;
	char where[300];
	int r;

	if (!o->workers || !o->max_deliveries || !o->sb || !o->policy)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = o;
	signal(SIGPIPE, SIG_IGN);
	r = uv_loop_init(&s->loop);
	if (r < 0) {
		free(s);
		return r;
	}
	r = setup(s);
	if (r == 0) {
		serve__sweep(s, "at start-up", true);
		r = spawn_all(s);
	}
	alq_url_display(&o->url, where, sizeof(where));
	if (r < 0) {
		al_err("serve: cannot start: %s", strerror(-r));
		s->draining = true;
		s->drain_deadline = 0;
		maybe_finish(s);
	} else {
		al_info("serving queue %s (%u partition%s) on %s as %s with "
			"%u workers",
			o->queue, s->n_p, s->n_p == 1 ? "" : "s", where,
			s->consumer, s->n_w);
		/* systemd's Type=notify: up once the workers are spawned */
		sd_notifyf(0, "READY=1\nSTATUS=serving queue %s on %s, %u "
			   "workers", o->queue, where, s->n_w);
	}
	uv_run(&s->loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&s->loop) != 0) {
		al_err("serve: handles left open at exit");
		if (r == 0)
			r = -EBUSY;
	}
	for (unsigned i = 0; s->w && i < s->n_w; i++) {
		al_frame_reader_release(&s->w[i].fr);
		free(s->w[i].rbuf);
	}
	for (unsigned i = 0; i < SNAP_CACHE; i++)
		free(s->snapc[i].setup);
	free(s->w);
	free(s->p);
	free(s);
	return r;
}
