/* test_serve_snapdef.c: the serve loop hands a snapshot's published
 * definition to the worker with each job naming the snapshot
 * (dispatcher/serve/serve.c, dispatcher/serve/snapdef.c; docs/snapshots.md, "On
 * every host"), against a real redis-server, with real forked workers
 * whose job runner reports what definition it was given instead of
 * starting a VM (the build itself: tests/vm/snapshot_hosts_test.sh).
 *
 *  - published: the worker gets it (its key), and after the job the serve
 *    records its host's build in snaphosts:NAME under that key; a second
 *    job reads only the key (the serve keeps the definition);
 *  - a job naming an image template, or a snapshot with no definition:
 *    no definition handed over;
 *  - a tampered definition (a key not its fields'), or a key of another
 *    type: RJ naming the definition, never run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>

#include <hiredis/hiredis.h>

#include "redisraw.h"
#include "redistest.h"
#include "serve.h"
#include "snapdef.h"

static struct redistest srv;

/* al_proc_run_fn: stdout = "KEY SETUP_BYTES" of the definition handed
 * over, or "none"; the VM "restored" (what a job from a snapshot
 * reports). */
static int report_run(struct al_worker *w, const struct al_job *job,
		      uint64_t queued_ms, uint32_t attempt,
		      struct al_result *res)
{
	char out[64] = "none";

	(void)queued_ms;
	if (w->snapdef)
		snprintf(out, sizeof(out), "%s %zu", w->snapdef->key,
			 w->snapdef->setup_len);
	memset(res, 0, sizeof(*res));
	res->id = strdup(job->id ? job->id : "-");
	res->worker = strdup(w->name);
	res->attempt = attempt;
	res->steps = calloc(1, sizeof(*res->steps));
	res->n_steps = 1;
	if (!res->id || !res->worker || !res->steps)
		return -ENOMEM;
	res->steps[0].stdout_.data = (uint8_t *)strdup(out);
	if (!res->steps[0].stdout_.data)
		return -ENOMEM;
	res->steps[0].stdout_.len = strlen(out);
	res->steps[0].has_exit_code = true;
	res->vm.restored = true;
	res->status = res->steps[0].status = AL_OK;
	return 0;
}

struct served {
	struct al_serve_opts o;
	struct sb_options sb;
	struct al_policy pol;
	pthread_t thread;
	int stop_r, stop_w;
	int rc;
};

static void *serve_main(void *p)
{
	struct served *h = p;

	h->rc = al_serve_run(&h->o);
	return NULL;
}

static void serve_start(struct served *h, const char *queue)
{
	static const char *const snaps[] = {"snap1", NULL};
	int p[2];

	memset(h, 0, sizeof(*h));
	al_serve_opts_init(&h->o);
	assert_int_equal(alq_url_parse(srv.url, &h->o.url), 0);
	snprintf(h->o.queue, sizeof(h->o.queue), "%s", queue);
	h->o.connect_timeout_ms = 1000;
	h->o.command_timeout_ms = 3000;
	h->o.workers = 1;
	h->o.heartbeat_ms = 200;
	h->o.shutdown_grace_ms = 10000;
	sb_options_init(&h->sb);
	snprintf(h->sb.state_dir, sizeof(h->sb.state_dir), "%s", srv.dir);
	h->o.sb = &h->sb;
	h->pol = *al_policy_default();
	h->pol.snapshots = snaps;
	h->o.policy = &h->pol;
	h->o.run = report_run;
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	h->stop_r = h->o.stop_fd = p[0];
	h->stop_w = p[1];
	assert_int_equal(pthread_create(&h->thread, NULL, serve_main, h), 0);
}

static void serve_stop(struct served *h)
{
	assert_int_equal(write(h->stop_w, "x", 1), 1);
	assert_int_equal(pthread_join(h->thread, NULL), 0);
	close(h->stop_r);
	close(h->stop_w);
	assert_int_equal(h->rc, 0);
}

static void submit(struct alq_client *c, const char *id, const char *tmpl)
{
	struct al_job job = {0};
	struct al_diags d;
	char json[256], *mp = NULL;
	size_t len = 0;
	bool dup = true;

	al_diags_init(&d);
	snprintf(json, sizeof(json),
		 "{\"id\":\"%s\",\"template\":\"%s\",\"sh\":\"true\"}", id,
		 tmpl);
	assert_int_equal(al_job_from_json(json, strlen(json), &job, &d), 0);
	assert_int_equal(al_job_to_msgpack(&job, &mp, &len), 0);
	al_job_release(&job);
	assert_int_equal(alq_client_submit(c, id, mp, len, 60000, &dup), 0);
	free(mp);
}

/* id's result: its status, and its stdout into out. */
static enum al_status result_of(struct alq_client *c, const char *id,
				char *out, size_t size, char *err, size_t elen)
{
	struct al_result res = {0};
	struct al_diags d;
	enum al_status st;
	char *mp = NULL;
	size_t len = 0;

	if (alq_client_wait(c, id, 20000) != 0)
		fail_msg("no result for %s within 20 s", id);
	assert_int_equal(alq_client_result(c, id, &mp, &len), 0);
	al_diags_init(&d);
	assert_int_equal(al_result_from_msgpack(mp, len, &res, &d), 0);
	free(mp);
	snprintf(out, size, "%s",
		 res.n_steps && res.steps[0].stdout_.data
			 ? (char *)res.steps[0].stdout_.data
			 : "");
	snprintf(err, elen, "%s", res.error ? res.error : "");
	st = res.status;
	al_result_release(&res);
	return st;
}

static void publish(struct alq_client *c, const char *q, const char *sh,
		    struct al_snapdef *d, char **mp)
{
	struct al_job job = {0};
	struct al_diags diags;
	char json[200], host[ALQ_SNAPDEF_HOST_MAX];
	size_t len;

	snprintf(json, sizeof(json), "{\"template\":\"python\",\"sh\":\"%s\"}",
		 sh);
	memset(d, 0, sizeof(*d));
	al_diags_init(&diags);
	assert_int_equal(al_job_from_json(json, strlen(json), &job, &diags),
			 0);
	assert_int_equal(al_job_to_msgpack(&job, mp, &len), 0);
	assert_int_equal(al_worker_setup_hash(&job, d->setup_sha), 0);
	al_job_release(&job);
	snprintf(d->name, sizeof(d->name), "snap1");
	snprintf(d->base, sizeof(d->base), "python");
	snprintf(d->image, sizeof(d->image), "0123456789abcdef");
	d->setup = *mp;
	d->setup_len = len;
	al_snapdef_key(d, d->key);
	alq_snapdef_host("/elsewhere", host);
	if (alq_snapdef_publish(c, q, d, host) != 0)
		fail_msg("publish: %s", c->err);
}

/* One command (no format directives) that must not fail. */
static void raw_cmd(redisContext *rc, const char *cmd)
{
	redisReply *r = redisCommand(rc, cmd);

	assert_non_null(r);
	assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
	freeReplyObject(r);
}

static void test_handed_over(void **state)
{
	struct alq_snapdef_built built[4];
	struct alq_client c;
	struct al_snapdef d, got;
	struct served h;
	redisContext *rc = redistest_raw(&srv);
	char out[64], err[300], me[ALQ_SNAPDEF_HOST_MAX], *mp, *setup;
	char want[64];
	char names[4][AL_NAME_MAX + 1];
	int n = 0;

	(void)state;
	{
		struct alq_url u;

		assert_int_equal(alq_url_parse(srv.url, &u), 0);
		assert_int_equal(alq_client_open(&c, &u, "s", 2000), 0);
	}
	publish(&c, "s", "echo 1 > /work/m", &d, &mp);
	/* the blocking client's view: names, the definition */
	assert_int_equal(alq_snapdef_names(&c, "s", names, 4), 1);
	assert_string_equal(names[0], "snap1");
	assert_int_equal(alq_snapdef_get(&c, "s", "snap1", &got, &setup), 0);
	assert_string_equal(got.key, d.key);
	assert_memory_equal(got.setup, mp, d.setup_len);
	free(setup);

	serve_start(&h, "s");
	submit(&c, "j1", "snap1");
	assert_int_equal(result_of(&c, "j1", out, sizeof(out), err,
				   sizeof(err)), AL_OK);
	snprintf(want, sizeof(want), "%s %zu", d.key, d.setup_len);
	assert_string_equal(out, want);
	/* the serve records its host's build once the result is in */
	alq_snapdef_host(srv.dir, me);
	for (int i = 0; i < 100; i++) {
		n = alq_snapdef_hosts(&c, "s", "snap1", built, 4);
		if (n == 1)
			break;
		redistest_sleep_ms(20);
	}
	assert_int_equal(n, 1);
	assert_string_equal(built[0].host, me);
	assert_string_equal(built[0].key, d.key);
	/* the same key again: the kept definition, one HGET (the setup
	 * changed under the same key is not read: the worker gets the bytes
	 * read with that key) */
	raw_cmd(rc, "HSET airlock:{s}:snapdef:snap1 setup x");
	submit(&c, "j1b", "snap1");
	assert_int_equal(result_of(&c, "j1b", out, sizeof(out), err,
				   sizeof(err)), AL_OK);
	assert_string_equal(out, want);
	/* an image template: nothing handed over */
	submit(&c, "j2", "python");
	assert_int_equal(result_of(&c, "j2", out, sizeof(out), err,
				   sizeof(err)), AL_OK);
	assert_string_equal(out, "none");
	/* tampered: a key that is not its fields': RJ, never run (a field
	 * changed under an unchanged key would not even be read: the serve
	 * keeps the definition it read for that key) */
	raw_cmd(rc, "HSET airlock:{s}:snapdef:snap1 key "
			  "0123456789abcdef0123456789abcdef");
	submit(&c, "j3", "snap1");
	assert_int_equal(result_of(&c, "j3", out, sizeof(out), err,
				   sizeof(err)), AL_RJ);
	assert_non_null(strstr(err, "published definition is malformed"));
	/* another type at the key: the same */
	raw_cmd(rc, "DEL airlock:{s}:snapdef:snap1");
	raw_cmd(rc, "SET airlock:{s}:snapdef:snap1 x");
	submit(&c, "j4", "snap1");
	assert_int_equal(result_of(&c, "j4", out, sizeof(out), err,
				   sizeof(err)), AL_RJ);
	/* removed: the host's own build, as before (no definition) */
	raw_cmd(rc, "DEL airlock:{s}:snapdef:snap1");
	submit(&c, "j5", "snap1");
	assert_int_equal(result_of(&c, "j5", out, sizeof(out), err,
				   sizeof(err)), AL_OK);
	assert_string_equal(out, "none");
	serve_stop(&h);
	/* rm: definition and records gone, then -ENOENT */
	publish(&c, "s", "echo 2 > /work/m", &d, &setup);
	free(setup);
	assert_int_equal(alq_snapdef_remove(&c, "s", "snap1"), 0);
	assert_int_equal(alq_snapdef_names(&c, "s", names, 4), 0);
	assert_int_equal(alq_snapdef_hosts(&c, "s", "snap1", built, 4), 0);
	assert_int_equal(alq_snapdef_remove(&c, "s", "snap1"), -ENOENT);
	free(mp);
	redisFree(rc);
	alq_client_close(&c);
}

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_handed_over),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
