/* test_serve.c: the serve loop (dispatcher/serve/serve.c) in-process, against a
 * real redis-server, with real forked worker processes whose job runner
 * (al_serve_opts.run) returns canned results instead of starting VMs.
 *
 * Each test runs al_serve_run() on a thread of its own (it owns its loop)
 * while the test thread submits jobs with the blocking client, watches
 * Redis, and finally writes to stop_fd; al_serve_run() returning 0 means it
 * drained and uv_loop_close() succeeded (it returns -EBUSY when a handle
 * was left open), which every test asserts.
 *
 * What a canned worker does is chosen by the job's `sh` (table `acts`),
 * per attempt, so retries are deterministic across worker processes. Each
 * run leaves a mark file `ran.ID.ATTEMPT` in the server's temp dir, which
 * tells the test which deliveries actually reached a worker.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "redisraw.h"
#include "redistest.h"
#include "servetest.h"

static struct redistest srv;

/* --- the canned worker ---------------------------------------------------- */

enum act {
	ACT_OK = 0, /* an OK result */
	ACT_XX,	    /* an XX result: our own failure, retried */
	ACT_DIE,    /* the worker process exits mid-job */
	ACT_HANG,   /* never answers (until killed) */
	ACT_SLOW,   /* an OK result after SLOW_MS */
};

#define SLOW_MS 1500u

static const struct {
	const char *sh; /* the job's `sh` */
	enum act first; /* on attempt 1 */
	enum act later; /* on attempts 2.. */
} acts[] = {
    {"ok", ACT_OK, ACT_OK},	   {"xx", ACT_XX, ACT_XX},
    {"xx-once", ACT_XX, ACT_OK},   {"die", ACT_DIE, ACT_DIE},
    {"die-once", ACT_DIE, ACT_OK}, {"hang-once", ACT_HANG, ACT_OK},
    {"slow", ACT_SLOW, ACT_SLOW},
};

static void mark_path(char *buf, size_t len, const char *id, uint32_t attempt)
{
	snprintf(buf, len, "%s/ran.%s.%u", srv.dir, id, attempt);
}

static bool ran(const char *id, uint32_t attempt)
{
	char p[200];

	mark_path(p, sizeof(p), id, attempt);
	return access(p, F_OK) == 0;
}

static enum act act_of(const struct al_job *job, uint32_t attempt)
{
	const char *sh =
	    job->n_steps && job->steps[0].sh ? job->steps[0].sh : "ok";

	for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++)
		if (!strcmp(acts[i].sh, sh))
			return attempt <= 1 ? acts[i].first : acts[i].later;
	return ACT_OK;
}

/* al_proc_run_fn: runs in the worker process, in place of a VM. */
static int canned_run(struct al_worker *w, const struct al_job *job,
		      uint64_t queued_ms, uint32_t attempt,
		      struct al_result *res)
{
	enum act a = act_of(job, attempt);
	char p[200];
	int fd;

	mark_path(p, sizeof(p), job->id ? job->id : "-", attempt);
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	if (a == ACT_DIE)
		_exit(3);
	while (a == ACT_HANG)
		pause();
	if (a == ACT_SLOW)
		redistest_sleep_ms(SLOW_MS);
	return servetest_result(w, job, queued_ms, attempt, a == ACT_XX, res);
}

/* --- a dispatcher on a thread (servetest.h) ------------------------------ */

static void opts_init(struct servetest *h, const char *queue, unsigned workers)
{
	servetest_opts(h, queue, workers, canned_run);
	assert_int_equal(alq_url_parse(srv.url, &h->o.url), 0);
}

static void serve_start(struct servetest *h, const char *queue,
			unsigned workers)
{
	opts_init(h, queue, workers);
	assert_int_equal(servetest_start(h), 0);
}

/* --- Redis helpers -------------------------------------------------------- */

/* Entries delivered and not acknowledged in queue q's group. */
static long long pending(redisContext *rc, const char *q)
{
	redisReply *r =
	    redisCommand(rc, "XPENDING airlock:{%s}:jobs workers", q);
	long long n;

	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	n = r->element[0]->integer;
	freeReplyObject(r);
	return n;
}

static void open_client(struct alq_client *c, const char *q)
{
	struct alq_url u;

	assert_int_equal(alq_url_parse(srv.url, &u), 0);
	if (alq_client_open(c, &u, q, 2000) != 0)
		fail_msg("%s", c->err);
}

/* Submit {"id": id, "sh": sh} with `w` (the entry's wall ms) = wall_ms. */
static void submit(struct alq_client *c, const char *id, const char *sh,
		   uint32_t wall_ms)
{
	struct al_job job = {0};
	struct al_diags d;
	char json[256], *mp = NULL;
	size_t len = 0;
	bool dup = true;

	al_diags_init(&d);
	snprintf(json, sizeof(json), "{\"id\":\"%s\",\"sh\":\"%s\"}", id, sh);
	assert_int_equal(al_job_from_json(json, strlen(json), &job, &d), 0);
	assert_int_equal(al_job_to_msgpack(&job, &mp, &len), 0);
	al_job_release(&job);
	assert_int_equal(alq_client_submit(c, id, mp, len, wall_ms, &dup), 0);
	assert_false(dup);
	free(mp);
}

/* Wait up to 20 s for id's result and decode it into *ret. */
static void result_of(struct alq_client *c, const char *id,
		      struct al_result *ret)
{
	struct al_diags d;
	char *mp = NULL;
	size_t len = 0;

	if (alq_client_wait(c, id, 20000) != 0)
		fail_msg("no result for %s within 20 s", id);
	assert_int_equal(alq_client_result(c, id, &mp, &len), 0);
	al_diags_init(&d);
	assert_int_equal(al_result_from_msgpack(mp, len, ret, &d), 0);
	free(mp);
}

static void expect_result(struct alq_client *c, const char *id,
			  enum al_status status, uint32_t attempt)
{
	struct al_result res = {0};

	result_of(c, id, &res);
	if (res.status != status || res.attempt != attempt)
		fail_msg("%s: status %s attempt %u, expected %s attempt %u", id,
			 al_status_name(res.status), res.attempt,
			 al_status_name(status), attempt);
	al_result_release(&res);
}

static void wait_ran(const char *id, uint32_t attempt)
{
	for (int i = 0; i < 1000 && !ran(id, attempt); i++)
		redistest_sleep_ms(10);
	if (!ran(id, attempt))
		fail_msg("%s attempt %u never reached a worker", id, attempt);
}

/* --- tests ---------------------------------------------------------------- */

static int setup(void **state)
{
	(void)state;
	return redistest_start(&srv);
}

static int teardown(void **state)
{
	(void)state;
	redistest_stop(&srv);
	return 0;
}

/* A worker that answers XX, and one that dies mid-job: the job runs again
 * (delivery 2) and its OK result is stored; a good job runs once. */
static void test_retry(void **state)
{
	struct alq_client c;
	struct servetest h;
	redisContext *rc = redistest_raw(&srv);

	(void)state;
	open_client(&c, "r");
	serve_start(&h, "r", 1);
	submit(&c, "xx1", "xx-once", 60000);
	submit(&c, "die1", "die-once", 60000);
	submit(&c, "ok1", "ok", 60000);
	expect_result(&c, "xx1", AL_OK, 2);
	expect_result(&c, "die1", AL_OK, 2);
	expect_result(&c, "ok1", AL_OK, 1);
	assert_true(ran("xx1", 1) && ran("xx1", 2) && !ran("xx1", 3));
	assert_true(ran("die1", 1) && ran("die1", 2) && !ran("die1", 3));
	assert_true(ran("ok1", 1) && !ran("ok1", 2));
	assert_int_equal(servetest_request_stop(&h), 0);
	assert_int_equal(servetest_join(&h), 0);
	assert_int_equal(pending(rc, "r"), 0);
	assert_int_equal(redistest_int(rc, "XLEN airlock:{r}:dead"), 0);
	redisFree(rc);
	alq_client_close(&c);
}

/* The dead letter of `id` (XRANGE of :dead): its reason into buf. */
static void dead_reason(redisContext *rc, const char *q, const char *id,
			char *buf, size_t len)
{
	redisReply *r = redisCommand(rc, "XRANGE airlock:{%s}:dead - +", q);

	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	buf[0] = '\0';
	for (size_t i = 0; i < r->elements; i++) {
		redisReply *f = r->element[i]->element[1];
		const char *got_id = "", *reason = "";

		for (size_t k = 0; k + 1 < f->elements; k += 2) {
			if (!strcmp(f->element[k]->str, "id"))
				got_id = f->element[k + 1]->str;
			else if (!strcmp(f->element[k]->str, "reason"))
				reason = f->element[k + 1]->str;
		}
		if (!strcmp(got_id, id))
			snprintf(buf, len, "%s", reason);
	}
	freeReplyObject(r);
	if (!buf[0])
		fail_msg("no dead letter with a reason for %s", id);
}

/* Jobs that fail on our side every time (XX, a dying worker) run
 * max_deliveries (3) times, then end as XX results and dead letters that
 * say why. */
static void test_dead_letter(void **state)
{
	struct alq_client c;
	struct al_result res = {0};
	struct servetest h;
	char why[300];
	redisContext *rc = redistest_raw(&srv);

	(void)state;
	open_client(&c, "d");
	serve_start(&h, "d", 1);
	submit(&c, "xx3", "xx", 60000);
	submit(&c, "die3", "die", 60000);
	expect_result(&c, "xx3", AL_XX, 3);
	result_of(&c, "die3", &res);
	assert_int_equal(res.status, AL_XX);
	assert_int_equal(res.attempt, 3);
	assert_non_null(strstr(res.error, "worker process exited with 3"));
	al_result_release(&res);
	assert_true(ran("xx3", 3) && !ran("xx3", 4));
	assert_true(ran("die3", 3) && !ran("die3", 4));
	assert_int_equal(servetest_request_stop(&h), 0);
	assert_int_equal(servetest_join(&h), 0);
	assert_int_equal(pending(rc, "d"), 0);
	assert_int_equal(redistest_int(rc, "XLEN airlock:{d}:dead"), 2);
	dead_reason(rc, "d", "xx3", why, sizeof(why));
	assert_string_equal(why, "XX: canned failure");
	dead_reason(rc, "d", "die3", why, sizeof(why));
	assert_string_equal(why, "worker process exited with 3 (delivery 3, "
				 "max_deliveries 3)");
	redisFree(rc);
	alq_client_close(&c);
}

/* XPENDING's one entry of queue q: its consumer into buf; returns its
 * delivery count. */
static long long owner(redisContext *rc, const char *q, char *buf, size_t len)
{
	redisReply *r = redisCommand(rc,
				     "XPENDING airlock:{%s}:jobs workers "
				     "- + 10",
				     q);
	long long n;

	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, 1);
	snprintf(buf, len, "%s", r->element[0]->element[1]->str);
	n = r->element[0]->element[3]->integer;
	freeReplyObject(r);
	return n;
}

/* Dispatcher A (a forked process) claims a job whose worker hangs. While
 * A heartbeats, dispatcher B does not take the job although it is far past
 * the entry's visibility time (w 300 + slack 500 ms); once A is killed
 * (its workers die with it) and stops heartbeating, B reclaims the job
 * and runs it (delivery 2). */
static void test_lost_heartbeat(void **state)
{
	char a_name[AL_NAME_MAX + 1], now_name[AL_NAME_MAX + 1];
	struct al_result res = {0};
	struct alq_client c;
	struct servetest a, b;
	redisContext *rc = redistest_raw(&srv);
	pid_t pid;
	int st;

	(void)state;
	open_client(&c, "h");
	opts_init(&a, "h", 1);
	pid = servetest_fork(&a, false);
	assert_true(pid > 0);
	submit(&c, "hb", "hang-once", 300);
	wait_ran("hb", 1);
	assert_int_equal(owner(rc, "h", a_name, sizeof(a_name)), 1);
	serve_start(&b, "h", 1);
	redistest_sleep_ms(2000);
	assert_int_equal(redistest_int(rc, "EXISTS airlock:{h}:result:hb"), 0);
	assert_int_equal(owner(rc, "h", now_name, sizeof(now_name)), 1);
	assert_string_equal(now_name, a_name);
	assert_false(ran("hb", 2));
	/* A dies without a word */
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	result_of(&c, "hb", &res);
	assert_int_equal(res.status, AL_OK);
	assert_int_equal(res.attempt, 2);
	assert_true(strncmp(res.worker, a_name, strlen(a_name)) != 0);
	al_result_release(&res);
	assert_int_equal(servetest_request_stop(&b), 0);
	assert_int_equal(servetest_join(&b), 0);
	assert_int_equal(pending(rc, "h"), 0);
	redisFree(rc);
	alq_client_close(&c);
}

/* Stop requested while a job runs: it finishes, its result is stored and
 * acknowledged before al_serve_run returns, and a job submitted after the
 * stop is never taken (the stream still has it undelivered). */
static void test_drain(void **state)
{
	struct alq_client c;
	struct servetest h;
	redisContext *rc = redistest_raw(&srv);
	redisReply *r;
	uint64_t t0;

	(void)state;
	open_client(&c, "s");
	serve_start(&h, "s", 1);
	submit(&c, "slow1", "slow", 60000);
	wait_ran("slow1", 1);
	t0 = al_now_ms();
	assert_int_equal(servetest_request_stop(&h), 0);
	submit(&c, "after", "ok", 60000);
	assert_int_equal(redistest_int(rc, "HLEN airlock:{s}:serves"), 1);
	assert_int_equal(servetest_join(&h), 0);
	/* a clean stop leaves the dispatchers' hash (airlock_dispatchers) */
	assert_int_equal(redistest_int(rc, "HLEN airlock:{s}:serves"), 0);
	/* the drain waited for the job (most of SLOW_MS was still to go) */
	assert_true(al_now_ms() - t0 >= SLOW_MS / 2);
	assert_int_equal(redistest_int(rc, "EXISTS airlock:{s}:result:slow1"), 1);
	assert_int_equal(pending(rc, "s"), 0);
	expect_result(&c, "slow1", AL_OK, 1);
	assert_false(ran("after", 1));
	assert_int_equal(redistest_int(rc, "EXISTS airlock:{s}:result:after"), 0);
	r = redisCommand(rc, "XREADGROUP GROUP workers probe COUNT 10 STREAMS "
			     "airlock:{s}:jobs >");
	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->element[0]->element[1]->elements, 1);
	assert_string_equal(
	    r->element[0]->element[1]->element[0]->element[1]->element[1]->str,
	    "after");
	freeReplyObject(r);
	redisFree(rc);
	alq_client_close(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_retry),
	    cmocka_unit_test(test_dead_letter),
	    cmocka_unit_test(test_lost_heartbeat),
	    cmocka_unit_test(test_drain),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
