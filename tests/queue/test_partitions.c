/* test_partitions.c: one logical queue over 4 partitions (queue.h) on a
 * real local Redis Cluster (clustertest.h: 3 masters, 3 replicas). The
 * queue's name is chosen so that its 4 partitions' slots are served by
 * all 3 masters. The dispatcher is serve.c itself with canned workers
 * (al_serve_opts.run, no VM), as in test_cluster.c. Each run leaves a mark
 * file ran.ID.ATTEMPT, created O_EXCL: a second run of the same delivery
 * leaves twice.ID, so "every id exactly once" is read off the files.
 *
 *   guarantees  per partition: status, cancel of a queued job, dead
 *               letters (listed merged over the partitions, oldest
 *               first), reclaim after a serve is SIGKILLed
 *   batch       2000 jobs, 3 serve processes of 2 workers each: every id
 *               has one result and ran once; the share of the commands
 *               and bytes each master carried (INFO commandstats, INFO
 *               stats) is printed, and each carries at least a tenth
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

#define PARTS	     4
#define BATCH_JOBS   2000
#define BATCH_SERVES 3

static struct clustertest ct;
static char mark_dir[64];

/* --- the canned worker -----------------------------------------------------
 */

static bool ran(const char *id, uint32_t attempt)
{
	char p[200];

	snprintf(p, sizeof(p), "%s/ran.%s.%u", mark_dir, id, attempt);
	return access(p, F_OK) == 0;
}

static bool twice(const char *id)
{
	char p[200];

	snprintf(p, sizeof(p), "%s/twice.%s", mark_dir, id);
	return access(p, F_OK) == 0;
}

static void mark(const char *id, uint32_t attempt)
{
	char p[200];
	int fd;

	snprintf(p, sizeof(p), "%s/ran.%s.%u", mark_dir, id, attempt);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) {
		snprintf(p, sizeof(p), "%s/twice.%s", mark_dir, id);
		fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	}
	if (fd >= 0)
		close(fd);
}

static int canned_run(struct al_worker *w, const struct al_job *job,
		      uint64_t queued_ms, uint32_t attempt,
		      struct al_result *res)
{
	const char *sh =
	    job->n_steps && job->steps[0].sh ? job->steps[0].sh : "ok";
	bool xx = !strcmp(sh, "xx");

	mark(job->id ? job->id : "-", attempt);
	while (!strcmp(sh, "hang-once") && attempt == 1)
		pause();
	return servetest_result(w, job, queued_ms, attempt, xx, res);
}

/* --- where things are ---------------------------------------------------- */

static int part_owner(const char *q, unsigned i)
{
	char name[ALQ_PART_NAME_MAX], key[ALQ_KEY_MAX];

	assert_int_equal(alq_partition_name(name, sizeof(name), q, i), 0);
	alq_key(key, sizeof(key), name, ALQ_KEY_JOBS, NULL);
	return ct_owner(&ct, alq_key_slot(key, strlen(key)));
}

/* A queue name (prefix + a number) whose PARTS partitions are served by
 * all 3 masters. */
static void spread_name(char *q, size_t len, const char *prefix)
{
	for (int n = 0; n < 1000; n++) {
		bool seen[CT_NODES] = {false};
		int masters = 0;

		snprintf(q, len, "%s%d", prefix, n);
		for (unsigned i = 0; i < PARTS; i++) {
			int o = part_owner(q, i);

			assert_true(o >= 0);
			masters += !seen[o];
			seen[o] = true;
		}
		if (masters == 3)
			return;
	}
	fail_msg("no queue name spreads over 3 masters");
}

/* An id that lands in partition p. */
static void id_in(char *buf, size_t len, const char *prefix, unsigned p)
{
	for (int n = 0;; n++) {
		snprintf(buf, len, "%s%d", prefix, n);
		if (alq_partition_of(buf, PARTS) == p)
			return;
	}
}

static void url_of(int node, struct alq_url *u)
{
	char url[64];

	snprintf(url, sizeof(url), "redis://127.0.0.1:%d", ct.port[node]);
	assert_int_equal(alq_url_parse(url, u), 0);
}

static void open_client(struct alq_client *c, const char *q)
{
	struct alq_url u;

	url_of(0, &u);
	if (alq_client_open(c, &u, q, 3000) != 0)
		fail_msg("%s", c->err);
	c->partitions = PARTS;
}

static char *payload(const char *id, const char *sh, size_t *ret_len)
{
	struct al_job job = {0};
	struct al_diags d;
	char json[256], *mp = NULL;

	al_diags_init(&d);
	snprintf(json, sizeof(json), "{\"id\":\"%s\",\"sh\":\"%s\"}", id, sh);
	assert_int_equal(al_job_from_json(json, strlen(json), &job, &d), 0);
	assert_int_equal(al_job_to_msgpack(&job, &mp, ret_len), 0);
	al_job_release(&job);
	return mp;
}

static void submit_w(struct alq_client *c, const char *id, const char *sh,
		     uint32_t wall_ms)
{
	size_t len;
	char *mp = payload(id, sh, &len);
	bool dup = true;
	int r = alq_client_submit(c, id, mp, len, wall_ms, &dup);

	if (r != 0)
		fail_msg("submit %s: %d %s", id, r, c->err);
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

/* --- a dispatcher on a thread or in a child ------------------------------- */

static void opts_init(struct servetest *h, const char *q, unsigned workers,
		      int node)
{
	servetest_opts(h, q, workers, canned_run);
	url_of(node, &h->o.url);
	h->o.partitions = PARTS;
	h->o.max_deliveries = 2;
}

static void serve_start(struct servetest *h, const char *q, unsigned workers)
{
	opts_init(h, q, workers, 1);
	assert_int_equal(servetest_start(h), 0);
}

/* A serve in a child process of its own group: SIGTERM drains it,
 * SIGKILL of the group kills it and its workers. */
static pid_t serve_fork(const char *q, unsigned workers, int node)
{
	struct servetest h;
	pid_t pid;

	opts_init(&h, q, workers, node);
	pid = servetest_fork(&h, true);
	assert_true(pid > 0);
	return pid;
}

/* --- tests -----------------------------------------------------------------
 */

static void test_guarantees(void **state)
{
	char q[16], ids[PARTS][32], cx[32], hb[32];
	struct alq_dead dead[16];
	struct alq_job j;
	struct alq_status st;
	enum alq_state was;
	struct alq_client c;
	struct servetest b;
	size_t n;
	pid_t pid;
	int s;

	(void)state;
	spread_name(q, sizeof(q), "pg");
	open_client(&c, q);
	/* no serve yet: a job in the last partition is queued there, and a
	 * cancel there sticks */
	id_in(cx, sizeof(cx), "cx", PARTS - 1);
	submit_w(&c, cx, "ok", 60000);
	assert_int_equal(alq_job_status(&c, cx, &j), 0);
	assert_int_equal(j.state, ALQ_QUEUED);
	assert_int_equal(alq_job_cancel(&c, cx, 600, &was), 0);
	assert_int_equal(was, ALQ_QUEUED);
	assert_int_equal(alq_job_status(&c, cx, &j), 0);
	assert_int_equal(j.state, ALQ_CANCELLED);
	/* a job hangs on its first run in partition 2; its serve is killed */
	id_in(hb, sizeof(hb), "hb", 2);
	pid = serve_fork(q, 1, 2);
	submit_w(&c, hb, "hang-once", 300);
	for (int i = 0; i < 1000 && !ran(hb, 1); i++)
		redistest_sleep_ms(10);
	assert_true(ran(hb, 1));
	assert_int_equal(alq_job_status(&c, hb, &j), 0);
	assert_int_equal(j.state, ALQ_RUNNING);
	assert_int_equal(kill(-pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &s, 0), pid);
	/* another serve reclaims it, and runs a failing job in every
	 * partition to its dead letter */
	serve_start(&b, q, 2);
	for (unsigned p = 0; p < PARTS; p++) {
		id_in(ids[p], sizeof(ids[p]), "xx", p);
		submit_w(&c, ids[p], "xx", 60000);
	}
	expect_result(&c, hb, AL_OK, 2);
	for (unsigned p = 0; p < PARTS; p++) {
		expect_result(&c, ids[p], AL_XX, 2);
		assert_int_equal(alq_job_status(&c, ids[p], &j), 0);
		assert_int_equal(j.state, ALQ_DEAD);
	}
	assert_false(ran(cx, 1)); /* cancelled while queued: never ran */
	assert_int_equal(servetest_stop(&b), 0);
	assert_int_equal(alq_dead_list(&c, "", dead, 16, &n), 0);
	assert_int_equal(n, PARTS);
	for (size_t i = 0; i < n; i++) /* oldest first */
		assert_true(i == 0 || strtoull(dead[i - 1].sid, NULL, 10) <=
					  strtoull(dead[i].sid, NULL, 10));
	assert_int_equal(alq_client_status(&c, &st), 0);
	assert_int_equal(st.dead, PARTS);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.cancels, 1);
	alq_client_close(&c);
}

/* Sum of calls over every command (INFO commandstats) and the bytes in
 * (INFO stats) of node i. */
static void traffic(int i, unsigned long long *calls, unsigned long long *bytes)
{
	char *s = ct_str(ct.port[i], "INFO commandstats"), *p;

	assert_non_null(s);
	*calls = 0;
	for (p = s; (p = strstr(p, "calls=")); p += 6)
		*calls += strtoull(p + 6, NULL, 10);
	free(s);
	s = ct_str(ct.port[i], "INFO stats");
	assert_non_null(s);
	p = strstr(s, "total_net_input_bytes:");
	assert_non_null(p);
	*bytes = strtoull(p + 22, NULL, 10);
	free(s);
}

static void test_batch(void **state)
{
	struct alq_submit *jobs = calloc(BATCH_JOBS, sizeof(*jobs));
	char(*ids)[16] = calloc(BATCH_JOBS, sizeof(*ids));
	const char **ptr = calloc(BATCH_JOBS, sizeof(*ptr));
	bool *done = calloc(BATCH_JOBS, sizeof(*done));
	unsigned long long c0[CT_NODES], b0[CT_NODES], c1, b1;
	unsigned long long dc[CT_NODES] = {0}, db[CT_NODES] = {0}, tc = 0,
			   tb = 0;
	unsigned per_part[PARTS] = {0};
	pid_t pid[BATCH_SERVES];
	struct alq_status st;
	struct alq_client c;
	uint64_t t0, t1;
	char q[16];
	size_t left;
	int s;

	(void)state;
	assert_non_null(jobs);
	assert_non_null(ids);
	assert_non_null(ptr);
	assert_non_null(done);
	spread_name(q, sizeof(q), "pb");
	open_client(&c, q);
	for (int i = 0; i < BATCH_JOBS; i++) {
		snprintf(ids[i], sizeof(ids[i]), "b%04d", i);
		jobs[i] = (struct alq_submit){.id = ids[i], .wall_ms = 60000};
		jobs[i].payload = payload(ids[i], "ok", &jobs[i].len);
		ptr[i] = ids[i];
		per_part[alq_partition_of(ids[i], PARTS)]++;
	}
	for (int i = 0; i < CT_NODES; i++)
		traffic(i, &c0[i], &b0[i]);
	for (int i = 0; i < BATCH_SERVES; i++)
		pid[i] = serve_fork(q, 2, i);
	t0 = al_now_ms();
	assert_int_equal(alq_client_submit_many(&c, jobs, BATCH_JOBS), 0);
	for (int i = 0; i < BATCH_JOBS; i++) {
		assert_int_equal(jobs[i].err, 0);
		assert_false(jobs[i].dup);
	}
	/* poll the ids without a result yet (the client's own commands
	 * count in the masters' traffic too) */
	for (left = BATCH_JOBS; left;) {
		size_t k = 0;

		if (al_now_ms() - t0 > 120000)
			fail_msg("%zu of %d jobs without a result after 120 s",
				 left, BATCH_JOBS);
		redistest_sleep_ms(200);
		assert_int_equal(alq_client_have_results(&c, ptr, left, done),
				 0);
		for (size_t i = 0; i < left; i++)
			if (!done[i])
				ptr[k++] = ptr[i];
		left = k;
	}
	t1 = al_now_ms();
	for (int i = 0; i < BATCH_SERVES; i++) {
		assert_int_equal(kill(pid[i], SIGTERM), 0);
		assert_int_equal(waitpid(pid[i], &s, 0), pid[i]);
		assert_true(WIFEXITED(s) && WEXITSTATUS(s) == 0);
	}
	for (int i = 0; i < CT_NODES; i++) {
		traffic(i, &c1, &b1);
		if (!ct_is_master(&ct, i))
			continue;
		dc[i] = c1 - c0[i];
		db[i] = b1 - b0[i];
		tc += dc[i];
		tb += db[i];
	}
	for (int i = 0; i < BATCH_JOBS; i++) {
		if (i % 97 == 0)
			expect_result(&c, ids[i], AL_OK, 1);
		if (!ran(ids[i], 1) || ran(ids[i], 2) || twice(ids[i]))
			fail_msg("%s ran %s", ids[i],
				 ran(ids[i], 1) ? "twice" : "never");
	}
	assert_int_equal(alq_client_status(&c, &st), 0);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.dead, 0);
	assert_true(st.depth <= 0); /* -1: unknown after a trim */
	fprintf(stderr,
		"batch: %d jobs, %d partitions (%u %u %u %u jobs), %d serves "
		"x 2 workers: %.1f s, %.0f jobs/s\n",
		BATCH_JOBS, PARTS, per_part[0], per_part[1], per_part[2],
		per_part[3], BATCH_SERVES, (double)(t1 - t0) / 1000.0,
		BATCH_JOBS * 1000.0 / (double)(t1 - t0 ? t1 - t0 : 1));
	for (int i = 0; i < CT_NODES; i++) {
		int parts = 0;

		if (!ct_is_master(&ct, i))
			continue;
		for (unsigned p = 0; p < PARTS; p++)
			parts += part_owner(q, p) == i;
		fprintf(stderr,
			"batch: master %d (port %d, %d partition%s): %llu "
			"commands (%.1f%%), %llu bytes in (%.1f%%)\n",
			i, ct.port[i], parts, parts == 1 ? "" : "s", dc[i],
			100.0 * (double)dc[i] / (double)(tc ? tc : 1), db[i],
			100.0 * (double)db[i] / (double)(tb ? tb : 1));
		/* each master carries a share of the traffic */
		assert_true(dc[i] * 10 >= tc);
	}
	for (int i = 0; i < BATCH_JOBS; i++)
		free((char *)jobs[i].payload);
	free(jobs);
	free(ids);
	free(ptr);
	free(done);
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
	    cmocka_unit_test(test_guarantees),
	    cmocka_unit_test(test_batch),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
