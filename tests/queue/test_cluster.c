/* test_cluster.c: the queue on a real local Redis Cluster (clustertest.h:
 * 3 masters, 3 replicas), through the redirection layer of queue.c and
 * conn.c (dispatcher/queue/cluster.h).
 *
 * Every client is pointed at a node that does NOT serve the queue's slot,
 * so each starts with a MOVED. The dispatcher is serve.c itself with
 * canned workers (al_serve_opts.run, no VM), as in test_serve.c: on a
 * thread of its own, or in a forked child for the SIGKILL case. Each run
 * appends a line to a mark file ran.ID.ATTEMPT, which tells which
 * deliveries reached a worker and how often: "doubled" means a job that
 * ran twice (with the same attempt number or not).
 *
 *   client     submit (and a resubmit: idempotent), status, job state,
 *              cancel (counted), wait, result, through MOVED
 *   serve      ok, retried (xx-once), dead letter (xx), cancelled while
 *              queued; status afterwards
 *   reclaim    a serve SIGKILLed with a job running: another reclaims it
 *   reshard    a batch of 300 runs on 2 serves while the queue's slot
 *              moves key by key to another master, its second half
 *              submitted by a thread while the slot migrates (the
 *              client's ASK and TRYAGAIN paths): every id has one result
 *              and ran once; nothing pending, no dead letters
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>

#include "clock.h"
#include "cluster.h"
#include "clustertest.h"
#include "servetest.h"

static struct clustertest ct;
static char mark_dir[64];

/* --- the canned worker (as in test_serve.c) ------------------------------ */

static void mark_path(char *buf, size_t len, const char *id, uint32_t attempt)
{
	snprintf(buf, len, "%s/ran.%s.%u", mark_dir, id, attempt);
}

static bool ran(const char *id, uint32_t attempt)
{
	char p[200];

	mark_path(p, sizeof(p), id, attempt);
	return access(p, F_OK) == 0;
}

/* How many times id ran, over attempts 1..8 (a line a run). */
static unsigned runs(const char *id)
{
	unsigned n = 0;

	for (uint32_t a = 1; a <= 8; a++) {
		char p[200];
		FILE *f;
		int ch;

		mark_path(p, sizeof(p), id, a);
		if (!(f = fopen(p, "re")))
			continue;
		while ((ch = fgetc(f)) != EOF)
			n += ch == '\n';
		fclose(f);
	}
	return n;
}

static int canned_run(struct al_worker *w, const struct al_job *job,
		      uint64_t queued_ms, uint32_t attempt,
		      struct al_result *res)
{
	const char *sh =
	    job->n_steps && job->steps[0].sh ? job->steps[0].sh : "ok";
	bool xx = !strcmp(sh, "xx") || (!strcmp(sh, "xx-once") && attempt == 1);
	char p[200];
	int fd;

	mark_path(p, sizeof(p), job->id ? job->id : "-", attempt);
	fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd >= 0) { /* workers are processes: one appended line a run */
		if (write(fd, "r\n", 2) != 2)
			fprintf(stderr, "%s: short write\n", p);
		close(fd);
	}
	while (!strcmp(sh, "hang-once") && attempt == 1)
		pause();
	if (!strcmp(sh, "brief"))
		redistest_sleep_ms(15);
	return servetest_result(w, job, queued_ms, attempt, xx, res);
}

/* --- where things are ---------------------------------------------------- */

static unsigned queue_slot(const char *q)
{
	char key[ALQ_KEY_MAX];

	alq_key(key, sizeof(key), q, ALQ_KEY_JOBS, NULL);
	return alq_key_slot(key, strlen(key));
}

/* A master that does not serve q's slot: every client starts there. */
static int elsewhere(const char *q)
{
	int owner = ct_owner(&ct, queue_slot(q));

	assert_true(owner >= 0);
	for (int i = 0; i < CT_NODES; i++)
		if (i != owner && ct_is_master(&ct, i))
			return i;
	fail_msg("no other master");
	return -1;
}

static void url_of(int node, struct alq_url *u)
{
	char url[64];

	snprintf(url, sizeof(url), "redis://127.0.0.1:%d", ct.port[node]);
	assert_int_equal(alq_url_parse(url, u), 0);
}

/* A command on the master of q's slot whose reply is an integer. */
static long long owner_int(const char *q, const char *fmt, ...)
{
	redisContext *rc = ct_conn(ct.port[ct_owner(&ct, queue_slot(q))]);
	redisReply *r;
	long long v;
	va_list ap;

	assert_non_null(rc);
	va_start(ap, fmt);
	r = redisvCommand(rc, fmt, ap);
	va_end(ap);
	assert_non_null(r);
	if (r->type != REDIS_REPLY_INTEGER)
		fail_msg("expected an integer, got %d (%s)", r->type,
			 r->type == REDIS_REPLY_ERROR ? r->str : "");
	v = r->integer;
	freeReplyObject(r);
	redisFree(rc);
	return v;
}

static void open_client(struct alq_client *c, const char *q)
{
	struct alq_url u;

	url_of(elsewhere(q), &u);
	if (alq_client_open(c, &u, q, 3000) != 0)
		fail_msg("%s", c->err);
}

static void submit_w(struct alq_client *c, const char *id, const char *sh,
		     uint32_t wall_ms, bool *ret_dup)
{
	struct al_job job = {0};
	struct al_diags d;
	char json[256], *mp = NULL;
	size_t len = 0;
	bool dup = false;
	int r;

	al_diags_init(&d);
	snprintf(json, sizeof(json), "{\"id\":\"%s\",\"sh\":\"%s\"}", id, sh);
	assert_int_equal(al_job_from_json(json, strlen(json), &job, &d), 0);
	assert_int_equal(al_job_to_msgpack(&job, &mp, &len), 0);
	al_job_release(&job);
	r = alq_client_submit(c, id, mp, len, wall_ms, &dup);
	if (r != 0)
		fail_msg("submit %s: %d %s", id, r, c->err);
	if (ret_dup)
		*ret_dup = dup;
	else
		assert_false(dup);
	free(mp);
}

static void expect_result(struct alq_client *c, const char *id,
			  enum al_status status, uint32_t attempt)
{
	struct al_result res = {0};
	struct al_diags d;
	char *mp = NULL;
	size_t len = 0;

	if (alq_client_wait(c, id, 30000) != 0)
		fail_msg("no result for %s within 30 s: %s", id, c->err);
	assert_int_equal(alq_client_result(c, id, &mp, &len), 0);
	al_diags_init(&d);
	assert_int_equal(al_result_from_msgpack(mp, len, &res, &d), 0);
	free(mp);
	if (res.status != status || res.attempt != attempt)
		fail_msg("%s: status %s attempt %u, expected %s attempt %u", id,
			 al_status_name(res.status), res.attempt,
			 al_status_name(status), attempt);
	al_result_release(&res);
}

static void submit(struct alq_client *c, const char *id, const char *sh,
		   bool *ret_dup)
{
	submit_w(c, id, sh, 60000, ret_dup);
}

/* --- a dispatcher on a thread (or in a child) ----------------------------- */

static void opts_init(struct servetest *h, const char *q, unsigned workers)
{
	servetest_opts(h, q, workers, canned_run);
	url_of(elsewhere(q), &h->o.url);
	h->o.max_deliveries = 2;
}

static void serve_start(struct servetest *h, const char *q, unsigned workers)
{
	opts_init(h, q, workers);
	assert_int_equal(servetest_start(h), 0);
}

/* --- tests -----------------------------------------------------------------
 */

static void test_client(void **state)
{
	enum alq_state was;
	struct alq_job j;
	struct alq_client c;
	struct alq_status st;
	bool dup;

	static const char *const keys[] = {
	    "foo", "{}x",	    "a{}b",	    "{",
	    "}{",  "foo{bar}{zap}", "{user1000}.x", "airlock:{c1}:jobs",
	};

	(void)state;
	/* our slot is the cluster's */
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		redisContext *rc = ct_conn(ct.port[0]);
		redisReply *r = redisCommand(rc, "CLUSTER KEYSLOT %s", keys[i]);

		assert_non_null(r);
		assert_int_equal(r->type, REDIS_REPLY_INTEGER);
		if ((unsigned)r->integer !=
		    alq_key_slot(keys[i], strlen(keys[i])))
			fail_msg("slot of %s: %lld, ours %u", keys[i],
				 r->integer,
				 alq_key_slot(keys[i], strlen(keys[i])));
		freeReplyObject(r);
		redisFree(rc);
	}
	open_client(&c, "c1");
	submit(&c, "a", "ok", NULL);
	assert_true(c.redirects >= 1); /* it started on the wrong master */
	submit(&c, "a", "ok", &dup);   /* the same payload: idempotent */
	assert_true(dup);
	submit(&c, "b", "ok", NULL);
	assert_int_equal(alq_client_status(&c, &st), 0);
	assert_int_equal(st.length, 2);
	assert_int_equal(alq_job_status(&c, "b", &j), 0);
	assert_int_equal(j.state, ALQ_QUEUED);
	assert_int_equal(alq_job_cancel(&c, "b", 600, &was), 0);
	assert_int_equal(was, ALQ_QUEUED);
	assert_int_equal(alq_client_wait(&c, "b", 2000), 0);
	expect_result(&c, "b", AL_CX, 1);
	assert_int_equal(alq_client_status(&c, &st), 0);
	assert_int_equal(st.cancels, 1);
	assert_int_equal(owner_int("c1", "XLEN airlock:{c1}:jobs"), 2);
	alq_client_close(&c);
}

static void test_serve(void **state)
{
	struct alq_client c;
	struct alq_status st;
	enum alq_state was;
	struct servetest h;

	(void)state;
	open_client(&c, "s1");
	submit(&c, "x-cancel", "ok", NULL);
	assert_int_equal(alq_job_cancel(&c, "x-cancel", 600, &was), 0);
	serve_start(&h, "s1", 2);
	submit(&c, "ok1", "ok", NULL);
	submit(&c, "retry", "xx-once", NULL);
	submit(&c, "dead", "xx", NULL);
	expect_result(&c, "ok1", AL_OK, 1);
	expect_result(&c, "retry", AL_OK, 2);
	expect_result(&c, "dead", AL_XX, 2);
	expect_result(&c, "x-cancel", AL_CX, 1);
	assert_false(ran("x-cancel", 1));
	assert_int_equal(alq_client_status(&c, &st), 0);
	assert_int_equal(st.dead, 1);
	assert_int_equal(st.n_serves, 1);
	assert_int_equal(servetest_stop(&h), 0);
	assert_int_equal(owner_int("s1", "XLEN airlock:{s1}:dead"), 1);
	assert_int_equal(owner_int("s1", "HLEN airlock:{s1}:serves"), 0);
	alq_client_close(&c);
}

static void test_reclaim(void **state)
{
	struct alq_client c;
	struct servetest a, b;
	pid_t pid;
	int st;

	(void)state;
	open_client(&c, "r1");
	opts_init(&a, "r1", 1);
	pid = servetest_fork(&a, true);
	assert_true(pid > 0);
	submit_w(&c, "hb", "hang-once", 300, NULL); /* reclaimed soon */
	for (int i = 0; i < 1000 && !ran("hb", 1); i++)
		redistest_sleep_ms(10);
	assert_true(ran("hb", 1));
	assert_int_equal(kill(-pid, SIGKILL), 0); /* serve and its workers */
	assert_int_equal(waitpid(pid, &st, 0), pid);
	serve_start(&b, "r1", 1);
	expect_result(&c, "hb", AL_OK, 2);
	assert_int_equal(servetest_stop(&b), 0);
	assert_int_equal(owner_int("r1", "XLEN airlock:{r1}:dead"), 0);
	alq_client_close(&c);
}

#define RESHARD_JOBS   300
#define RESHARD_WINDOW 5 /* submits a pipeline during the move */

/* Is slot migrating on node `from` (CLUSTER NODES shows [SLOT->-ID])? */
static bool migrating(int from, unsigned slot)
{
	char *s = ct_str(ct.port[from], "CLUSTER NODES"), tag[24];
	bool m;

	snprintf(tag, sizeof(tag), "[%u->-", slot);
	m = s && strstr(s, tag);
	free(s);
	return m;
}

/* The second half of the reshard's batch, submitted in pipelined windows
 * of RESHARD_WINDOW by a thread of its own while the main thread moves
 * the slot, the first window as soon as the source says MIGRATING. A
 * submit of a new id cannot complete while the slot migrates (its job key
 * is on neither node: TRYAGAIN from the source while the stream is still
 * there, ASK to the target once it has moved, TRYAGAIN there), so the
 * first window's submits wait in the client's redirection loop until the
 * move ends, then follow the MOVED. A submit the client gives up on (its
 * redirections exhausted) is sent again by id, as a client would: ids are
 * idempotent. No cmocka in here. */
struct reshard_sub {
	struct alq_client c; /* opened by the main thread */
	struct alq_submit *jobs;
	size_t n;
	int from; /* the slot's old master */
	unsigned slot;
	volatile bool go;	   /* set by the main thread: the move starts */
	unsigned during;	   /* submits in windows sent while migrating */
	unsigned retried;	   /* submits refused, sent again by id */
	uint64_t redirects_during; /* ASK and MOVED followed meanwhile */
	uint64_t slowest_ms;	   /* the longest window, retries included */
	int err;		   /* 0, or the first submit that never took */
};

static void *reshard_submitter(void *arg)
{
	struct reshard_sub *r = arg;

	while (!r->go)
		redistest_sleep_ms(1);
	/* the first submit goes once the source says MIGRATING */
	for (int k = 0; k < 5000 && !migrating(r->from, r->slot); k++)
		redistest_sleep_ms(1);
	for (size_t i = 0; i < r->n; i += RESHARD_WINDOW) {
		size_t m =
		    r->n - i < RESHARD_WINDOW ? r->n - i : RESHARD_WINDOW;
		bool during = migrating(r->from, r->slot);
		uint64_t red = r->c.redirects, t0 = al_now_ms(), dt;

		for (size_t j = i; j < i + m; j++) {
			int e = -1;

			/* j's submit: the first try is the window's pipeline */
			if (j == i &&
			    alq_client_submit_many(&r->c, &r->jobs[i], m) < 0)
				r->retried++;
			e = r->jobs[j].err;
			for (int t = 0; t < 20 && e != 0; t++) {
				r->retried++;
				redistest_sleep_ms(50);
				if ((e = alq_client_submit_many(
					 &r->c, &r->jobs[j], 1)) == 0)
					e = r->jobs[j].err;
			}
			if (e != 0 && !r->err)
				r->err = e;
		}
		dt = al_now_ms() - t0;
		if (dt > r->slowest_ms)
			r->slowest_ms = dt;
		if (during) {
			r->during += (unsigned)m;
			r->redirects_during += r->c.redirects - red;
		}
		redistest_sleep_ms(3); /* spread over the move */
	}
	return NULL;
}

static void test_reshard(void **state)
{
	struct alq_submit *jobs = calloc(RESHARD_JOBS, sizeof(*jobs));
	char(*ids)[16] = calloc(RESHARD_JOBS, sizeof(*ids));
	char *mp = NULL;
	unsigned slot = queue_slot("rs");
	struct alq_client c;
	struct servetest a, b;
	struct al_job job = {0};
	struct al_diags d;
	struct reshard_sub sub = {0};
	pthread_t th;
	size_t len = 0;
	int from, to = -1;
	long moved;
	const char *json = "{\"sh\":\"brief\"}";

	(void)state;
	assert_non_null(jobs);
	assert_non_null(ids);
	open_client(&c, "rs");
	al_diags_init(&d);
	assert_int_equal(al_job_from_json(json, strlen(json), &job, &d), 0);
	for (int i = 0; i < RESHARD_JOBS; i++) {
		snprintf(ids[i], sizeof(ids[i]), "j%04d", i);
		free(job.id);
		job.id = strdup(ids[i]);
		assert_int_equal(al_job_to_msgpack(&job, &mp, &len), 0);
		jobs[i] = (struct alq_submit){
		    .id = ids[i], .payload = mp, .len = len, .wall_ms = 60000};
		mp = NULL;
	}
	al_job_release(&job);
	serve_start(&a, "rs", 2);
	serve_start(&b, "rs", 2);
	assert_int_equal(alq_client_submit_many(&c, jobs, RESHARD_JOBS / 2), 0);
	/* the batch is running: 30 done, 120 to go */
	if (alq_client_wait(&c, ids[30], 30000) != 0)
		fail_msg("the batch did not start: %s", c.err);
	from = ct_owner(&ct, slot);
	for (int i = 0; i < CT_NODES && to < 0; i++)
		if (i != from && ct_is_master(&ct, i))
			to = i;
	/* the second half is submitted while the slot moves */
	open_client(&sub.c, "rs");
	sub.jobs = jobs + RESHARD_JOBS / 2;
	sub.n = RESHARD_JOBS - RESHARD_JOBS / 2;
	sub.from = from;
	sub.slot = slot;
	assert_int_equal(pthread_create(&th, NULL, reshard_submitter, &sub), 0);
	sub.go = true;
	moved = ct_move_slot(&ct, slot, from, to, 10, 15);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_true(moved > 0);
	assert_int_equal(ct_owner(&ct, slot), to);
	if (sub.err)
		fail_msg("a submit during the move never took: %d (%s)",
			 sub.err, sub.c.err);
	/* the migration was met: submits sent while the slot migrated,
	 * following at least one redirection (ASK, or MOVED at its end) */
	assert_true(sub.during > 0);
	assert_true(sub.redirects_during > 0);
	for (int i = 0; i < RESHARD_JOBS; i++) {
		unsigned n;

		assert_int_equal(jobs[i].err, 0);
		/* a resubmit by id after a refusal may find the job there */
		if (i < RESHARD_JOBS / 2 || !sub.retried)
			assert_false(jobs[i].dup);
		expect_result(&c, ids[i], AL_OK, 1);
		if ((n = runs(ids[i])) != 1 || !ran(ids[i], 1))
			fail_msg("%s ran %u times", ids[i], n);
	}
	assert_int_equal(servetest_stop(&a), 0);
	assert_int_equal(servetest_stop(&b), 0);
	assert_int_equal(owner_int("rs", "XLEN airlock:{rs}:dead"), 0);
	assert_int_equal(owner_int("rs", "XLEN airlock:{rs}:jobs") >= 0, 1);
	fprintf(stderr,
		"reshard: %ld keys moved from node %d to node %d "
		"while %d jobs ran; client redirections %llu; %u of %zu "
		"submits sent while the slot migrated, %llu redirections "
		"followed by them, %u refused and sent again by id, slowest "
		"window %llu ms\n",
		moved, from, to, RESHARD_JOBS, (unsigned long long)c.redirects,
		sub.during, sub.n, (unsigned long long)sub.redirects_during,
		sub.retried, (unsigned long long)sub.slowest_ms);
	alq_client_close(&sub.c);
	for (int i = 0; i < RESHARD_JOBS; i++)
		free((char *)jobs[i].payload);
	free(jobs);
	free(ids);
	alq_client_close(&c);
}

static int setup(void **state)
{
	int r;

	(void)state;
	r = clustertest_start_or_skip(&ct);
	snprintf(mark_dir, sizeof(mark_dir), "%s", ct.dir);
	return r;
}

static int teardown(void **state)
{
	(void)state;
	clustertest_stop(&ct);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_client),
	    cmocka_unit_test(test_serve),
	    cmocka_unit_test(test_reclaim),
	    cmocka_unit_test(test_reshard),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
