/* test_queue.c: the queue protocol (dispatcher/queue/, conn.c) against a
 * real redis-server: URLs, keys, the scripts' guarantees (submit once,
 * result once, acknowledge after storing, trim never drops pending,
 * reclaim only past the visibility time), the blocking client and the
 * async connection's watchdog and reconnects. No VMs, no workers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sys/socket.h>
#include <sys/un.h>

#include "clock.h"
#include "conn.h"
#include "queue.h"
#include "redisraw.h"
#include "redistest.h"

static struct redistest srv;

static void raw_ok(redisContext *rc, const char *fmt, ...)
{
	redisReply *r;
	va_list ap;

	va_start(ap, fmt);
	r = redisvCommand(rc, fmt, ap);
	va_end(ap);
	assert_non_null(r);
	if (r->type == REDIS_REPLY_ERROR)
		fail_msg("redis: %s", r->str);
	freeReplyObject(r);
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

static void flush(void)
{
	redisContext *rc = redistest_raw(&srv);

	raw_ok(rc, "FLUSHALL");
	redisFree(rc);
}

static void open_client(struct alq_client *c, const char *q)
{
	struct alq_url u;

	assert_int_equal(alq_url_parse(srv.url, &u), 0);
	if (alq_client_open(c, &u, q, 2000) != 0)
		fail_msg("%s", c->err);
}

/* --- URLs and keys -------------------------------------------------------- */

static void test_url(void **state)
{
	struct alq_url u;

	(void)state;
	assert_int_equal(alq_url_parse("redis://localhost", &u), 0);
	assert_string_equal(u.host, "localhost");
	assert_int_equal(u.port, 6379);
	assert_int_equal(alq_url_parse("redis://:s%40cret@10.0.0.1:7000/3", &u),
			 0);
	assert_string_equal(u.host, "10.0.0.1");
	assert_string_equal(u.pass, "s@cret");
	assert_string_equal(u.user, "");
	assert_int_equal(u.port, 7000);
	assert_int_equal(u.db, 3);
	assert_int_equal(alq_url_parse("redis://al:pw@[::1]:6380", &u), 0);
	assert_string_equal(u.host, "::1");
	assert_string_equal(u.user, "al");
	assert_int_equal(u.port, 6380);
	assert_int_equal(alq_url_parse("unix:///run/r.sock?db=2", &u), 0);
	assert_true(u.unix_);
	assert_string_equal(u.path, "/run/r.sock");
	assert_int_equal(u.db, 2);
	assert_int_equal(alq_url_parse("unix://:pw@/r.sock", &u), 0);
	assert_string_equal(u.pass, "pw");

	assert_int_equal(alq_url_parse("http://x", &u), -EINVAL);
	assert_int_equal(alq_url_parse("redis://", &u), -EINVAL);
	assert_int_equal(alq_url_parse("redis://h:0", &u), -EINVAL);
	assert_int_equal(alq_url_parse("redis://h:65536", &u), -EINVAL);
	assert_int_equal(alq_url_parse("redis://h:12x", &u), -EINVAL);
	assert_int_equal(alq_url_parse("redis://h/x", &u), -EINVAL);
	assert_int_equal(alq_url_parse("redis://user@h", &u), -EINVAL);
	assert_int_equal(alq_url_parse("redis://:%zz@h", &u), -EINVAL);
	assert_int_equal(alq_url_parse("redis://:%00@h", &u), -EINVAL);
	assert_int_equal(alq_url_parse("unix://relative", &u), -EINVAL);
	assert_int_equal(alq_url_parse("unix:///a?db=x", &u), -EINVAL);
}

static void test_keys(void **state)
{
	char k[ALQ_KEY_MAX], small[8];

	(void)state;
	assert_int_equal(alq_key(k, sizeof(k), "q1", ALQ_KEY_JOBS, NULL), 0);
	assert_string_equal(k, "airlock:{q1}:jobs");
	assert_int_equal(alq_key(k, sizeof(k), "q1", ALQ_KEY_RESULT, "a.b"), 0);
	assert_string_equal(k, "airlock:{q1}:result:a.b");
	assert_int_equal(alq_key(k, sizeof(k), "q", ALQ_KEY_DONE, "x"), 0);
	assert_string_equal(k, "airlock:{q}:done:x");
	assert_int_equal(alq_key(small, sizeof(small), "q", ALQ_KEY_DEAD, NULL),
			 -ENAMETOOLONG);
}

/* --- blocking client + scripts, driven synchronously ---------------------- */

/* EVAL a queue script through a raw connection. */
/* EVAL; lens may be NULL (C strings) */
static redisReply *eval_len(redisContext *rc, enum alq_script s, int nkeys,
			    int argc, const char **argv, const size_t *lens)
{
	const char *a[24];
	size_t l[24];
	char nk[8];

	snprintf(nk, sizeof(nk), "%d", nkeys);
	a[0] = "EVAL";
	a[1] = alq_script_text(s);
	a[2] = nk;
	for (int i = 0; i < argc; i++)
		a[i + 3] = argv[i];
	for (int i = 0; i < argc + 3; i++)
		l[i] = i >= 3 && lens ? lens[i - 3] : strlen(a[i]);
	return redisCommandArgv(rc, argc + 3, a, l);
}

static redisReply *eval(redisContext *rc, enum alq_script s, int nkeys,
			int argc, const char **argv)
{
	return eval_len(rc, s, nkeys, argc, argv, NULL);
}

static void group(redisContext *rc, const char *q)
{
	char k[ALQ_KEY_MAX];

	alq_key(k, sizeof(k), q, ALQ_KEY_JOBS, NULL);
	raw_ok(rc, "XGROUP CREATE %s workers 0 MKSTREAM", k);
}

/* XREADGROUP one entry for `consumer`; fills *e. */
static void read_one(redisContext *rc, const char *q, const char *consumer,
		     struct alq_entry *e)
{
	char k[ALQ_KEY_MAX];
	redisReply *r;

	alq_key(k, sizeof(k), q, ALQ_KEY_JOBS, NULL);
	r = redisCommand(rc, "XREADGROUP GROUP workers %s COUNT 1 STREAMS %s >",
			 consumer, k);
	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(
	    alq_entry_parse(r->element[0]->element[1]->element[0], e), 0);
	freeReplyObject(r);
}

/* COMPLETE for job `id` at entry `sid`; returns 1 stored / 0 not. */
static long long complete_bin(redisContext *rc, const char *q,
			      const char *id, const char *sid,
			      const char *result, size_t len,
			      const char *reason)
{
	char k[6][ALQ_KEY_MAX];
	const char *argv[12];
	size_t lens[12];
	redisReply *r;
	long long v;

	alq_key(k[0], sizeof(k[0]), q, ALQ_KEY_RESULT, id);
	alq_key(k[1], sizeof(k[1]), q, ALQ_KEY_DONE, id);
	alq_key(k[2], sizeof(k[2]), q, ALQ_KEY_JOBS, NULL);
	alq_key(k[3], sizeof(k[3]), q, ALQ_KEY_JOB, id);
	alq_key(k[4], sizeof(k[4]), q, ALQ_KEY_TPUT, "1");
	alq_key(k[5], sizeof(k[5]), q, ALQ_KEY_DEAD, NULL);
	for (int i = 0; i < 6; i++)
		argv[i] = k[i];
	argv[6] = result;
	argv[7] = "600";
	argv[8] = sid;
	argv[9] = reason;
	argv[10] = id;
	argv[11] = "1";
	for (int i = 0; i < 12; i++)
		lens[i] = i == 6 ? len : strlen(argv[i]);
	r = eval_len(rc, ALQ_COMPLETE, 6, 12, argv, lens);
	assert_non_null(r);
	if (r->type != REDIS_REPLY_INTEGER)
		fail_msg("complete: %s",
			 r->type == REDIS_REPLY_ERROR ? r->str : "?");
	v = r->integer;
	freeReplyObject(r);
	return v;
}

static long long complete(redisContext *rc, const char *q, const char *id,
			  const char *sid, const char *result,
			  const char *reason)
{
	return complete_bin(rc, q, id, sid, result, strlen(result), reason);
}

static void test_submit_once(void **state)
{
	struct alq_client c;
	struct alq_submit many[3] = {
	    {.id = "a", .payload = "pa", .len = 2, .wall_ms = 1000},
	    {.id = "b", .payload = "pb", .len = 2, .wall_ms = 1000},
	    {.id = "a", .payload = "px", .len = 2, .wall_ms = 1000},
	};
	redisContext *rc;
	bool dup = true;

	(void)state;
	flush();
	open_client(&c, "t1");
	assert_int_equal(alq_client_submit(&c, "j1", "payload", 7, 5000, &dup),
			 0);
	assert_false(dup);
	assert_int_equal(alq_client_submit(&c, "j1", "payload", 7, 5000, &dup),
			 0);
	assert_true(dup); /* the same payload: a no-op */
	/* another payload under a taken id: refused, the first's digest */
	dup = false;
	assert_int_equal(alq_client_submit(&c, "j1", "other", 5, 5000, &dup),
			 -EEXIST);
	assert_false(dup);
	assert_non_null(strstr(c.err, "another payload"));
	assert_int_equal(alq_client_submit_many(&c, many, 3), 0);
	assert_int_equal(many[0].err, 0);
	assert_false(many[0].dup);
	assert_false(many[1].dup);
	assert_int_equal(many[2].err, -EEXIST);
	assert_string_equal(many[2].stored_digest, many[0].digest);
	rc = redistest_raw(&srv);
	assert_int_equal(redistest_int(rc, "XLEN airlock:{t1}:jobs"), 3);
	/* the payload of a refused submit never replaces the first */
	{
		char want[AL_DIGEST_HEX + 1];
		redisReply *r = redisCommand(rc, "GET airlock:{t1}:job:j1");

		assert_string_equal(r->str, "payload");
		freeReplyObject(r);
		al_digest_hex("payload", 7, want);
		r = redisCommand(rc, "GET airlock:{t1}:digest:j1");
		assert_string_equal(r->str, want);
		freeReplyObject(r);
	}
	/* without the digest key (its own TTL) the bytes decide */
	raw_ok(rc, "DEL airlock:{t1}:digest:j1");
	assert_int_equal(alq_client_submit(&c, "j1", "other", 5, 5000, &dup),
			 -EEXIST);
	assert_int_equal(alq_client_submit(&c, "j1", "payload", 7, 5000, &dup),
			 0);
	assert_true(dup);
	/* the script cache flushed: EVALSHA falls back to EVAL */
	raw_ok(rc, "SCRIPT FLUSH");
	assert_int_equal(alq_client_submit(&c, "j2", "p", 1, 1, &dup), 0);
	assert_false(dup);
	assert_int_equal(redistest_int(rc, "XLEN airlock:{t1}:jobs"), 4);
	redisFree(rc);
	alq_client_close(&c);
}

static void test_entry_and_fetch(void **state)
{
	const char *keys[3];
	char kjob[ALQ_KEY_MAX], kres[ALQ_KEY_MAX];
	struct alq_client c;
	struct alq_entry e;
	enum alq_fetch kind;
	const char *payload;
	redisContext *rc;
	redisReply *r;
	size_t len;
	bool dup;

	(void)state;
	flush();
	open_client(&c, "t2");
	rc = redistest_raw(&srv);
	group(rc, "t2");
	assert_int_equal(
	    alq_client_submit(&c, "job.1", "PAYLOAD", 7, 4321, &dup), 0);
	read_one(rc, "t2", "c1", &e);
	assert_string_equal(e.id, "job.1");
	assert_false(e.id_bad);
	assert_int_equal(e.wall_ms, 4321);
	assert_true(e.submit_ms > 0);
	assert_int_equal(e.deliveries, 1);

	alq_key(kjob, sizeof(kjob), "t2", ALQ_KEY_JOB, "job.1");
	alq_key(kres, sizeof(kres), "t2", ALQ_KEY_RESULT, "job.1");
	keys[0] = kjob;
	keys[1] = kres;
	keys[2] = "100";
	r = eval(rc, ALQ_FETCH, 2, 3, keys);
	assert_int_equal(alq_fetch_parse(r, &kind, &payload, &len), 0);
	assert_int_equal(kind, ALQ_FETCH_OK);
	assert_int_equal(len, 7);
	assert_memory_equal(payload, "PAYLOAD", 7);
	freeReplyObject(r);
	/* over the cap: only the length comes back */
	keys[2] = "3";
	r = eval(rc, ALQ_FETCH, 2, 3, keys);
	assert_int_equal(alq_fetch_parse(r, &kind, &payload, &len), 0);
	assert_int_equal(kind, ALQ_FETCH_BIG);
	assert_int_equal(len, 7);
	assert_null(payload);
	freeReplyObject(r);
	/* wrong type, missing */
	raw_ok(rc, "DEL %s", kjob);
	raw_ok(rc, "HSET %s a b", kjob);
	keys[2] = "100";
	r = eval(rc, ALQ_FETCH, 2, 3, keys);
	assert_int_equal(alq_fetch_parse(r, &kind, &payload, &len), 0);
	assert_int_equal(kind, ALQ_FETCH_TYPE);
	freeReplyObject(r);
	raw_ok(rc, "DEL %s", kjob);
	r = eval(rc, ALQ_FETCH, 2, 3, keys);
	assert_int_equal(alq_fetch_parse(r, &kind, &payload, &len), 0);
	assert_int_equal(kind, ALQ_FETCH_MISSING);
	freeReplyObject(r);
	raw_ok(rc, "SET %s R", kres);
	r = eval(rc, ALQ_FETCH, 2, 3, keys);
	assert_int_equal(alq_fetch_parse(r, &kind, &payload, &len), 0);
	assert_int_equal(kind, ALQ_FETCH_DONE);
	freeReplyObject(r);

	/* entries with a bad id, no fields at all */
	raw_ok(rc, "XADD airlock:{t2}:jobs * id ../../x t 12");
	read_one(rc, "t2", "c1", &e);
	assert_true(e.id_bad);
	assert_string_equal(e.id, "");
	assert_int_equal(e.submit_ms, 12);
	raw_ok(rc, "XADD airlock:{t2}:jobs * w notanumber");
	read_one(rc, "t2", "c1", &e);
	assert_false(e.id_bad);
	assert_string_equal(e.id, "");
	assert_int_equal(e.wall_ms, 0);
	redisFree(rc);
	alq_client_close(&c);
}

static void test_complete_once(void **state)
{
	struct alq_client c;
	struct alq_entry e;
	redisContext *rc;
	char *res = NULL;
	size_t len = 0;
	bool dup;

	(void)state;
	flush();
	open_client(&c, "t3");
	rc = redistest_raw(&srv);
	group(rc, "t3");
	assert_int_equal(alq_client_submit(&c, "k", "P", 1, 1000, &dup), 0);
	assert_int_equal(alq_client_result(&c, "k", &res, &len), -ENOENT);
	assert_int_equal(alq_client_wait(&c, "k", 200), -ETIMEDOUT);
	read_one(rc, "t3", "c1", &e);
	/* the first write wins; both acknowledge */
	assert_int_equal(complete(rc, "t3", "k", e.sid, "FIRST", ""), 1);
	assert_int_equal(complete(rc, "t3", "k", e.sid, "SECOND", ""), 0);
	assert_int_equal(alq_client_wait(&c, "k", 1000), 0);
	assert_int_equal(alq_client_result(&c, "k", &res, &len), 0);
	assert_int_equal(len, 5);
	assert_string_equal(res, "FIRST");
	free(res);
	/* one signal only, and the result is still there for a 2nd waiter */
	assert_int_equal(redistest_int(rc, "LLEN airlock:{t3}:done:k"), 1);
	assert_int_equal(alq_client_wait(&c, "k", 100), 0);
	assert_true(redistest_int(rc, "TTL airlock:{t3}:result:k") > 0);
	assert_true(redistest_int(rc, "TTL airlock:{t3}:job:k") > 0);
	{
		redisReply *r = redisCommand(rc, "XPENDING airlock:{t3}:jobs "
						 "workers");

		assert_int_equal(r->element[0]->integer, 0);
		freeReplyObject(r);
	}
	/* a dead letter goes to :dead with its reason */
	assert_int_equal(alq_client_submit(&c, "d", "P", 1, 1000, &dup), 0);
	read_one(rc, "t3", "c1", &e);
	assert_int_equal(complete(rc, "t3", "d", e.sid, "XX", "too many"), 1);
	assert_int_equal(redistest_int(rc, "XLEN airlock:{t3}:dead"), 1);
	/* wait_any picks the finished one among many */
	{
		const char *ids[3] = {"nope", "d", "k"};
		size_t idx = 99;

		assert_int_equal(alq_client_wait_any(&c, ids, 3, 100, &idx), 0);
		assert_true(idx == 1 || idx == 2);
	}
	redisFree(rc);
	alq_client_close(&c);
}

/* A dataset id with slashes goes through the stream, the worker side's
 * entry parse, the result key and the done list unchanged. */
static void test_slash_id_roundtrip(void **state)
{
	static const char id[] = "HumanEval/0:s1";
	struct alq_client c;
	struct alq_entry e;
	redisContext *rc;
	char *res = NULL;
	size_t len = 0;
	bool dup = true, have = false;
	const char *ids[1] = {id};

	(void)state;
	flush();
	open_client(&c, "t9");
	rc = redistest_raw(&srv);
	group(rc, "t9");
	assert_int_equal(alq_client_submit(&c, id, "P", 1, 1000, &dup), 0);
	assert_false(dup);
	read_one(rc, "t9", "c1", &e);
	assert_false(e.id_bad);
	assert_string_equal(e.id, id);
	assert_int_equal(complete(rc, "t9", id, e.sid, "R", ""), 1);
	assert_int_equal(alq_client_have_results(&c, ids, 1, &have), 0);
	assert_true(have);
	assert_int_equal(alq_client_wait(&c, id, 1000), 0);
	assert_int_equal(alq_client_result(&c, id, &res, &len), 0);
	assert_int_equal(len, 1);
	assert_memory_equal(res, "R", 1);
	free(res);
	assert_int_equal(
	    redistest_int(rc, "EXISTS airlock:{t9}:result:HumanEval/0:s1"), 1);
	/* a climbing id is refused by the worker side's parse */
	raw_ok(rc, "XADD airlock:{t9}:jobs * id HumanEval/../x t 12");
	read_one(rc, "t9", "c1", &e);
	assert_true(e.id_bad);
	redisFree(rc);
	alq_client_close(&c);
}

static void test_trim_keeps_pending(void **state)
{
	const char *argv[2] = {"airlock:{t4}:jobs", "3600000"};
	struct alq_client c;
	struct alq_entry e[5];
	redisContext *rc;
	redisReply *r;
	char id[8];
	bool dup;

	(void)state;
	flush();
	open_client(&c, "t4");
	rc = redistest_raw(&srv);
	group(rc, "t4");
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof(id), "j%d", i);
		assert_int_equal(alq_client_submit(&c, id, "P", 1, 1000, &dup),
				 0);
	}
	for (int i = 0; i < 4; i++)
		read_one(rc, "t4", "c1", &e[i]);
	/* ack 0, 2, 3; 1 stays pending; 4 is undelivered */
	complete(rc, "t4", "j0", e[0].sid, "R", "");
	complete(rc, "t4", "j2", e[2].sid, "R", "");
	complete(rc, "t4", "j3", e[3].sid, "R", "");
	r = eval(rc, ALQ_TRIM, 1, 2, argv);
	assert_int_equal(r->type, REDIS_REPLY_INTEGER);
	assert_int_equal(r->integer, 1); /* only j0 */
	freeReplyObject(r);
	complete(rc, "t4", "j1", e[1].sid, "R", "");
	r = eval(rc, ALQ_TRIM, 1, 2, argv);
	assert_int_equal(r->integer, 2); /* j1, j2; j3 = last delivered */
	freeReplyObject(r);
	assert_int_equal(redistest_int(rc, "XLEN airlock:{t4}:jobs"), 2);
	read_one(rc, "t4", "c1", &e[4]);
	assert_string_equal(e[4].id, "j4"); /* undelivered survived */
	/* idle consumers without pending entries are removed */
	argv[1] = "0";
	raw_ok(rc, "XGROUP CREATECONSUMER airlock:{t4}:jobs workers gone");
	redistest_sleep_ms(5);
	r = eval(rc, ALQ_TRIM, 1, 2, argv);
	freeReplyObject(r);
	r = redisCommand(rc, "XINFO CONSUMERS airlock:{t4}:jobs workers");
	assert_int_equal(r->elements, 1); /* c1 still holds j4 */
	freeReplyObject(r);
	/* no stream at all: nothing to do, no error */
	argv[0] = "airlock:{none}:jobs";
	r = eval(rc, ALQ_TRIM, 1, 2, argv);
	assert_int_equal(r->integer, 0);
	freeReplyObject(r);
	redisFree(rc);
	alq_client_close(&c);
}

static void test_heartbeat_and_reclaim(void **state)
{
	const char *hb[4], *rc_args[6];
	struct alq_client c;
	struct alq_entry e[2], got;
	redisContext *rc;
	redisReply *r;
	bool dup;

	(void)state;
	flush();
	open_client(&c, "t5");
	rc = redistest_raw(&srv);
	group(rc, "t5");
	assert_int_equal(alq_client_submit(&c, "a", "P", 1, 100, &dup), 0);
	assert_int_equal(alq_client_submit(&c, "b", "P", 1, 5000, &dup), 0);
	read_one(rc, "t5", "old", &e[0]);
	read_one(rc, "t5", "old", &e[1]);
	redistest_sleep_ms(400);
	/* the owner refreshes b; a is someone else's now? no: still old's */
	hb[0] = "airlock:{t5}:jobs";
	hb[1] = "old";
	hb[2] = e[1].sid;
	r = eval(rc, ALQ_HEARTBEAT, 1, 3, hb);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, 0);
	freeReplyObject(r);
	/* reclaim: slack 200 ms; a (wall 100) is idle 400 >= 300: taken; b
	 * (wall 5000, just refreshed) is not */
	rc_args[0] = "airlock:{t5}:jobs";
	rc_args[1] = "new";
	rc_args[2] = "200";
	rc_args[3] = "10";
	rc_args[4] = "60000";
	rc_args[5] = "3600000";
	r = eval(rc, ALQ_RECLAIM, 1, 6, rc_args);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, 1);
	assert_int_equal(alq_entry_parse(r->element[0], &got), 0);
	assert_string_equal(got.sid, e[0].sid);
	assert_string_equal(got.id, "a");
	assert_int_equal(r->element[0]->element[2]->integer, 2);
	freeReplyObject(r);
	/* the old owner's heartbeat now reports a as lost */
	hb[2] = e[0].sid;
	hb[3] = e[1].sid;
	r = eval(rc, ALQ_HEARTBEAT, 1, 4, hb);
	assert_int_equal(r->elements, 1);
	assert_string_equal(r->element[0]->str, e[0].sid);
	freeReplyObject(r);
	/* count caps what one pass takes */
	redistest_sleep_ms(400);
	rc_args[3] = "0";
	r = eval(rc, ALQ_RECLAIM, 1, 6, rc_args);
	assert_int_equal(r->elements, 0);
	freeReplyObject(r);
	redisFree(rc);
	alq_client_close(&c);
}

/* A `w` Lua's tonumber() would take (nan, inf, hex, exponent) or none
 * at all: a NaN wall made an entry never reclaimable. Bad values count as
 * 0, reclaimable once idle past the slack; a valid long wall still holds
 * its entry. */
static void test_reclaim_bad_wall(void **state)
{
	static const char *const bad[] = {"nan", "-nan", "inf", "-5",
					  "1e3", "0x10", "", " 7",
					  "-0"};
	const size_t n_bad = sizeof(bad) / sizeof(bad[0]);
	const char *rc_args[6];
	struct alq_entry e;
	redisContext *rc;
	redisReply *r;

	(void)state;
	flush();
	rc = redistest_raw(&srv);
	group(rc, "t8");
	for (size_t i = 0; i < n_bad; i++)
		raw_ok(rc, "XADD airlock:{t8}:jobs * id b%d t 1 w %s", (int)i,
		       bad[i]);
	raw_ok(rc, "XADD airlock:{t8}:jobs * id good t 1 w 60000");
	for (size_t i = 0; i <= n_bad; i++)
		read_one(rc, "t8", "old", &e);
	redistest_sleep_ms(300);
	rc_args[0] = "airlock:{t8}:jobs";
	rc_args[1] = "new";
	rc_args[2] = "200";	/* slack */
	rc_args[3] = "100";	/* want */
	rc_args[4] = "600000";	/* default wall: would hold them all */
	rc_args[5] = "3600000"; /* max wall */
	r = eval(rc, ALQ_RECLAIM, 1, 6, rc_args);
	assert_non_null(r);
	if (r->type != REDIS_REPLY_ARRAY)
		fail_msg("reclaim: %s",
			 r->type == REDIS_REPLY_ERROR ? r->str : "?");
	assert_int_equal(r->elements, n_bad);
	for (size_t i = 0; i < r->elements; i++) {
		assert_int_equal(alq_entry_parse(r->element[i], &e), 0);
		assert_true(e.id[0] == 'b');
		assert_int_equal(e.wall_ms, 0); /* and the C side agrees */
	}
	freeReplyObject(r);
	redisFree(rc);
}

static void test_status(void **state)
{
	struct alq_client c;
	struct alq_status st;
	struct alq_entry e;
	redisContext *rc;
	bool dup;

	(void)state;
	flush();
	open_client(&c, "t6");
	assert_int_equal(alq_client_status(&c, &st), 0);
	assert_int_equal(st.length, 0);
	assert_int_equal(st.depth, 0);
	rc = redistest_raw(&srv);
	group(rc, "t6");
	for (int i = 0; i < 3; i++) {
		char id[4];

		snprintf(id, sizeof(id), "s%d", i);
		alq_client_submit(&c, id, "P", 1, 1, &dup);
	}
	read_one(rc, "t6", "c1", &e);
	{
		char v[64];

		snprintf(v, sizeof(v), "2 1 %llu",
			 (unsigned long long)al_wall_ms());
		raw_ok(rc, "HSET airlock:{t6}:serves host-1 %s", v);
	}
	assert_int_equal(alq_client_status(&c, &st), 0);
	assert_int_equal(st.length, 3);
	assert_int_equal(st.depth, 2);
	assert_int_equal(st.pending, 1);
	assert_int_equal(st.consumers, 1);
	assert_int_equal(st.n_serves, 1);
	assert_int_equal(st.serves[0].workers, 2);
	assert_int_equal(st.serves[0].busy, 1);
	redisFree(rc);
	alq_client_close(&c);
}

/* A result record of `status` for `id`, msgpack (malloc'd). */
static char *mk_result(const char *id, enum al_status status, size_t *len)
{
	struct al_result res = {0};
	char *mp;

	res.id = (char *)id;
	res.status = status;
	res.error = status == AL_XX ? (char *)"no image" : NULL;
	res.attempt = 3;
	assert_int_equal(al_result_to_msgpack(&res, &mp, len), 0);
	return mp;
}

static enum alq_state state_of(struct alq_client *c, const char *id,
				    struct alq_job *j)
{
	if (alq_job_status(c, id, j) != 0)
		fail_msg("status %s: %s", id, c->err);
	return j->state;
}

/* Poll the cancel hash as a dispatcher holding `sid` does. */
static size_t cancel_poll(redisContext *rc, const char *q, const char *sid)
{
	char k[ALQ_KEY_MAX];
	const char *argv[2] = {k, sid};
	redisReply *r;
	size_t n;

	alq_key(k, sizeof(k), q, ALQ_KEY_CANCEL, NULL);
	r = eval(rc, ALQ_CANCEL_POLL, 1, 2, argv);
	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	n = r->elements;
	if (n)
		assert_string_equal(r->element[0]->str, sid);
	freeReplyObject(r);
	return n;
}

/* status ID through every state; cancel queued, running, done, unknown;
 * dead letters listed and requeued (once), an expired one refused. */
static void test_job_management(void **state)
{
	struct alq_client c;
	struct alq_job j;
	struct alq_dead dl[8];
	enum alq_state was;
	struct alq_entry e;
	redisContext *rc;
	size_t n, failed, len;
	char *xx;
	bool dup;

	(void)state;
	flush();
	open_client(&c, "t9");
	rc = redistest_raw(&srv);
	group(rc, "t9");
	assert_int_equal(state_of(&c, "nope", &j), ALQ_UNKNOWN);
	alq_client_submit(&c, "a", "P", 1, 1000, &dup);
	alq_client_submit(&c, "b", "P", 1, 1000, &dup);
	alq_client_submit(&c, "c", "P", 1, 1000, &dup);
	assert_int_equal(state_of(&c, "a", &j), ALQ_QUEUED);
	read_one(rc, "t9", "host-1", &e);
	assert_string_equal(e.id, "a");
	assert_int_equal(state_of(&c, "a", &j), ALQ_RUNNING);
	assert_string_equal(j.consumer, "host-1");
	assert_int_equal(j.attempt, 1);
	assert_string_equal(j.sid, e.sid);
	assert_int_equal(state_of(&c, "b", &j), ALQ_QUEUED);

	/* cancel: queued, again (done), unknown, running */
	assert_int_equal(alq_job_cancel(&c, "b", 600, &was), 0);
	assert_int_equal(was, ALQ_QUEUED);
	assert_int_equal(state_of(&c, "b", &j), ALQ_CANCELLED);
	assert_int_equal(j.status, AL_CX);
	assert_string_equal(alq_state_name(j.state), "cancelled");
	assert_int_equal(alq_client_wait(&c, "b", 1000), 0);
	assert_int_equal(alq_job_cancel(&c, "b", 600, &was), 0);
	assert_int_equal(was, ALQ_DONE);
	assert_int_equal(alq_job_cancel(&c, "nope", 600, &was), 0);
	assert_int_equal(was, ALQ_UNKNOWN);
	assert_int_equal(cancel_poll(rc, "t9", e.sid), 0);
	assert_int_equal(alq_job_cancel(&c, "a", 600, &was), 0);
	assert_int_equal(was, ALQ_RUNNING);
	assert_int_equal(cancel_poll(rc, "t9", e.sid), 1);
	assert_int_equal(cancel_poll(rc, "t9", e.sid), 0); /* once */
	/* the dispatcher's late result loses to CX */
	xx = mk_result("a", AL_OK, &len);
	assert_int_equal(complete_bin(rc, "t9", "a", e.sid, xx, len, ""), 0);
	free(xx);
	assert_int_equal(state_of(&c, "a", &j), ALQ_CANCELLED);
	/* two cancels took effect (b queued, a running): both counted, the
	 * refused ones (done, unknown) not; status reads the counter */
	{
		struct alq_status st;

		assert_int_equal(alq_client_status(&c, &st), 0);
		assert_int_equal(st.cancels, 2);
	}

	/* a dead letter: listed, requeued once, runs again from attempt 1 */
	read_one(rc, "t9", "host-1", &e); /* b: its FETCH would say done */
	read_one(rc, "t9", "host-1", &e);
	assert_string_equal(e.id, "c");
	xx = mk_result("c", AL_XX, &len);
	assert_int_equal(
	    complete_bin(rc, "t9", "c", e.sid, xx, len, "too often"), 1);
	free(xx);
	assert_int_equal(state_of(&c, "c", &j), ALQ_DEAD);
	assert_string_equal(j.error, "no image");
	assert_int_equal(alq_dead_list(&c, "", dl, 8, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(dl[0].id, "c");
	assert_string_equal(dl[0].entry, e.sid);
	assert_string_equal(dl[0].reason, "too often");
	assert_int_equal(alq_dead_list(&c, dl[0].sid, dl, 8, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(alq_dead_requeue(&c, "c"), 0);
	assert_int_equal(state_of(&c, "c", &j), ALQ_QUEUED);
	assert_string_not_equal(j.sid, e.sid);
	assert_int_equal(alq_dead_list(&c, "", dl, 8, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(alq_dead_requeue(&c, "c"), -ENOENT);
	read_one(rc, "t9", "host-2", &e);
	assert_string_equal(e.id, "c");
	assert_int_equal(e.wall_ms, 1000); /* kept from the first entry */
	assert_int_equal(e.deliveries, 1);

	/* --all: one requeued, one whose payload expired is refused */
	xx = mk_result("c", AL_XX, &len);
	assert_int_equal(complete_bin(rc, "t9", "c", e.sid, xx, len, "again"),
			 1);
	free(xx);
	raw_ok(rc, "XADD airlock:{t9}:dead * id gone entry 1-1 reason x "
		   "deliveries 3");
	assert_int_equal(alq_dead_requeue_all(&c, &n, &failed), 0);
	assert_int_equal(n, 1);
	assert_int_equal(failed, 1);
	assert_int_equal(state_of(&c, "c", &j), ALQ_QUEUED);
	assert_int_equal(alq_dead_requeue(&c, "gone"), -ESTALE);

	/* dataset ids with `/` */
	alq_client_submit(&c, "HumanEval/0", "P", 1, 1000, &dup);
	assert_int_equal(state_of(&c, "HumanEval/0", &j), ALQ_QUEUED);
	assert_int_equal(alq_job_cancel(&c, "HumanEval/0", 600, &was), 0);
	assert_int_equal(was, ALQ_QUEUED);
	assert_int_equal(state_of(&c, "HumanEval/0", &j), ALQ_CANCELLED);
	redisFree(rc);
	alq_client_close(&c);
}

static void test_client_errors(void **state)
{
	struct alq_client c;
	struct alq_url u;

	(void)state;
	assert_int_equal(alq_url_parse("unix:///nonexistent/redis.sock", &u),
			 0);
	assert_true(alq_client_open(&c, &u, "q", 500) < 0);
	assert_non_null(strstr(c.err, "redis"));
	alq_client_close(&c);
	/* wrong password */
	snprintf(u.path, sizeof(u.path), "%s", srv.sock);
	snprintf(u.pass, sizeof(u.pass), "wrong");
	assert_int_equal(alq_client_open(&c, &u, "q", 500), -EPROTO);
	alq_client_close(&c);
}

/* --- the async connection ------------------------------------------------- */

struct actx {
	struct alq_conn conn;
	int ups, downs, replies, nulls;
	bool closed;
	long long last;
};

static void a_up(struct alq_conn *c)
{
	((struct actx *)c->data)->ups++;
}

static void a_down(struct alq_conn *c)
{
	((struct actx *)c->data)->downs++;
}

static void a_closed(struct alq_conn *c)
{
	((struct actx *)c->data)->closed = true;
}

static void a_reply(struct alq_conn *c, redisReply *r, void *priv)
{
	struct actx *a = c->data;

	(void)priv;
	if (!r) {
		a->nulls++;
		return;
	}
	a->replies++;
	a->last = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
}

/* Run the loop until *flag >= want or ms pass; true if reached. */
static bool run_until(uv_loop_t *loop, int *flag, int want, unsigned ms)
{
	uint64_t end = uv_now(loop) + ms;

	while (*flag < want && uv_now(loop) < end) {
		uv_run(loop, UV_RUN_ONCE);
		uv_update_time(loop);
	}
	return *flag >= want;
}

static void aconn_start(struct actx *a, uv_loop_t *loop, const char *url,
			uint32_t connect_ms, uint32_t cmd_ms)
{
	struct alq_url u;

	memset(a, 0, sizeof(*a));
	assert_int_equal(alq_url_parse(url, &u), 0);
	a->conn.connect_timeout_ms = connect_ms;
	a->conn.command_timeout_ms = cmd_ms;
	a->conn.on_up = a_up;
	a->conn.on_down = a_down;
	a->conn.on_closed = a_closed;
	a->conn.data = a;
	assert_int_equal(alq_conn_init(&a->conn, loop, &u, "test"), 0);
}

static void aconn_close(struct actx *a, uv_loop_t *loop)
{
	int closed = 0;

	alq_conn_close(&a->conn);
	while (!a->closed)
		uv_run(loop, UV_RUN_ONCE);
	(void)closed;
	/* let the adapter's poll handle close too */
	uv_run(loop, UV_RUN_NOWAIT);
}

static void test_conn_commands_and_restart(void **state)
{
	uv_loop_t loop;
	struct actx a;
	const char *incr[] = {"INCR", "ctr"};
	const char *ev[] = {"airlock:{t7}:jobs", "0"};

	(void)state;
	flush();
	assert_int_equal(uv_loop_init(&loop), 0);
	aconn_start(&a, &loop, srv.url, 1000, 2000);
	assert_int_equal(alq_conn_cmd(&a.conn, a_reply, NULL, 2, incr, NULL),
			 -ENOTCONN);
	assert_true(run_until(&loop, &a.ups, 1, 3000));
	assert_int_equal(alq_conn_cmd(&a.conn, a_reply, NULL, 2, incr, NULL),
			 0);
	assert_true(run_until(&loop, &a.replies, 1, 2000));
	assert_int_equal(a.last, 1);
	/* scripts: EVALSHA, and EVAL after the cache is flushed */
	assert_int_equal(
	    alq_conn_eval(&a.conn, ALQ_TRIM, a_reply, NULL, 1, 2, ev, NULL), 0);
	assert_true(run_until(&loop, &a.replies, 2, 2000));
	assert_int_equal(a.last, 0);
	{
		redisContext *rc = redistest_raw(&srv);

		raw_ok(rc, "SCRIPT FLUSH");
		redisFree(rc);
	}
	assert_int_equal(
	    alq_conn_eval(&a.conn, ALQ_TRIM, a_reply, NULL, 1, 2, ev, NULL), 0);
	assert_true(run_until(&loop, &a.replies, 3, 2000));
	assert_int_equal(a.last, 0);

	/* the server dies with a command in flight: NULL reply, down, and
	 * back up once it returns */
	assert_int_equal(alq_conn_cmd(&a.conn, a_reply, NULL, 3,
				      (const char *[]){"BLPOP", "nothing", "5"},
				      NULL),
			 0);
	redistest_kill(&srv, false);
	assert_true(run_until(&loop, &a.downs, 1, 3000));
	assert_int_equal(a.nulls, 1);
	assert_false(alq_conn_up(&a.conn));
	run_until(&loop, &a.ups, 99, 600); /* a few failed attempts */
	assert_int_equal(redistest_start(&srv), 0);
	assert_true(run_until(&loop, &a.ups, 2, 8000));
	assert_int_equal(alq_conn_cmd(&a.conn, a_reply, NULL, 2, incr, NULL),
			 0);
	assert_true(run_until(&loop, &a.replies, 4, 2000));
	aconn_close(&a, &loop);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* A server that accepts and never answers: hiredis's libuv adapter never
 * reports anything, the watchdog must give up and retry. */
static void test_conn_watchdog(void **state)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	char url[160], path[100];
	uv_loop_t loop;
	struct actx a;
	int lfd;

	(void)state;
	snprintf(path, sizeof(path), "%s/blackhole.sock", srv.dir);
	snprintf(url, sizeof(url), "unix://%s", path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	assert_int_equal(bind(lfd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(listen(lfd, 16), 0);
	assert_int_equal(uv_loop_init(&loop), 0);
	aconn_start(&a, &loop, url, 200, 200);
	run_until(&loop, &a.ups, 1, 1500);
	assert_int_equal(a.ups, 0);
	assert_int_equal(a.conn.state == ALQ_CONN_UP, 0);
	/* it kept trying: the backoff grew past its first step */
	assert_true(a.conn.backoff_ms > 200);
	aconn_close(&a, &loop);
	assert_int_equal(uv_loop_close(&loop), 0);
	close(lfd);
	unlink(path);
}

/* A reply that never comes on an established connection. */
static void test_conn_command_timeout(void **state)
{
	uv_loop_t loop;
	struct actx a;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	aconn_start(&a, &loop, srv.url, 1000, 300);
	assert_true(run_until(&loop, &a.ups, 1, 3000));
	assert_int_equal(alq_conn_cmd(&a.conn, a_reply, NULL, 3,
				      (const char *[]){"BLPOP", "never", "0"},
				      NULL),
			 0);
	assert_true(run_until(&loop, &a.nulls, 1, 3000));
	assert_int_equal(a.downs, 1);
	assert_true(run_until(&loop, &a.ups, 2, 3000));
	/* a blocking connection gets its block time on top */
	a.conn.block_ms = 1000;
	assert_int_equal(alq_conn_cmd(&a.conn, a_reply, NULL, 3,
				      (const char *[]){"BLPOP", "never", "0.6"},
				      NULL),
			 0);
	assert_true(run_until(&loop, &a.replies, 1, 3000));
	assert_int_equal(a.downs, 1);
	aconn_close(&a, &loop);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_url),
	    cmocka_unit_test(test_keys),
	    cmocka_unit_test(test_submit_once),
	    cmocka_unit_test(test_entry_and_fetch),
	    cmocka_unit_test(test_complete_once),
	    cmocka_unit_test(test_slash_id_roundtrip),
	    cmocka_unit_test(test_trim_keeps_pending),
	    cmocka_unit_test(test_heartbeat_and_reclaim),
	    cmocka_unit_test(test_reclaim_bad_wall),
	    cmocka_unit_test(test_status),
	    cmocka_unit_test(test_job_management),
	    cmocka_unit_test(test_client_errors),
	    cmocka_unit_test(test_conn_commands_and_restart),
	    cmocka_unit_test(test_conn_watchdog),
	    cmocka_unit_test(test_conn_command_timeout),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
