/* test_gw_relay.c: the audit relay (tools/cli/gwrelay.h) against a real
 * redis-server: what the gateway appends to its file reaches the stream
 * as records with their job, decision and reason; what a compromised
 * gateway could append instead (lines that are no record, over-long
 * lines, a job that is no id, fields of its own, Redis commands as text)
 * adds nothing else and trims nothing; a record written while Redis is
 * down arrives once it is back. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis.h>

#include "../queue/redistest.h"
#include "gwrelay.h"

static struct redistest rt = {.pid = -1};
static char dir[] = "/tmp/test_gw_relay.XXXXXX";
static char path[128];

static int setup(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN); /* as serve and the keeper */
	if (!mkdtemp(dir) || redistest_start(&rt) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/audit.jsonl", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	redistest_stop(&rt);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* n bytes of s (0: all of it) */
static void append(const char *s, size_t n)
{
	if (!n)
		n = strlen(s);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, s, n), (ssize_t)n);
	close(fd);
}

static void record(const char *job, const char *name, bool allowed)
{
	struct gw_audit a = {
	    .time_ms = 1, .eco = GW_PYTHON, .allowed = allowed};
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);

	snprintf(a.job, sizeof(a.job), "%s", job);
	snprintf(a.name, sizeof(a.name), "%s", name);
	snprintf(a.route, sizeof(a.route), "project");
	snprintf(a.reason, sizeof(a.reason), "why %s", name);
	assert_true(fd >= 0);
	assert_int_equal(gw_audit_write(fd, &a), 0);
	close(fd);
}

static redisReply *R(const char *fmt, const char *arg)
{
	redisContext *c = redisConnectUnix(rt.sock);
	redisReply *r;

	assert_non_null(c);
	r = redisCommand(c, fmt, arg);
	redisFree(c);
	assert_non_null(r);
	return r;
}

static long long xlen(void)
{
	redisReply *r = R("XLEN %s", GW_AUDIT_STREAM);
	long long n = r->integer;

	freeReplyObject(r);
	return n;
}

/* Poll until nothing more is added. */
static int drain(struct al_gw_relay *r)
{
	int n = 0, k;

	while ((k = al_gw_relay_poll(r)) > 0)
		n += k;
	assert_true(k >= 0);
	return n;
}

static void test_relay(void **state)
{
	struct al_gw_relay r;
	struct alq_url u;
	char big[GW_AUDIT_LINE_MAX + 64];
	redisReply *x;

	(void)state;
	record("old", "before", true); /* there before the relay: not sent */
	assert_int_equal(alq_url_parse(rt.url, &u), 0);
	assert_int_equal(al_gw_relay_init(&r, dir, &u), 0);
	record("job-1", "one", true);
	record(GW_HOST_JOB, "two", false);
	/* what a compromised gateway might write */
	append("XTRIM airlock:packages:audit MAXLEN 0\n", 0);
	append("{\"ecosystem\":\"python\",\"decision\":\"deny\",\"job\":\"a "
	       "b\"}\n",
	       0);
	append("{\"ecosystem\":\"python\",\"decision\":\"deny\",\"job\":\"j2\","
	       "\"evil\":\"FLUSHALL\"}\n",
	       0);
	memset(big, 'x', sizeof(big));
	big[sizeof(big) - 1] = '\n';
	append(big, sizeof(big));
	record("job-3", "three", true);
	assert_int_equal(drain(&r), 4);
	assert_int_equal(xlen(), 4);
	x = R("XRANGE %s - +", GW_AUDIT_STREAM);
	assert_int_equal(x->elements, 4);
	/* job, decision, record: the record encoded again, with its reason */
	assert_string_equal(x->element[0]->element[1]->element[1]->str,
			    "job-1");
	assert_string_equal(x->element[1]->element[1]->element[1]->str,
			    "@host");
	assert_string_equal(x->element[1]->element[1]->element[3]->str, "deny");
	assert_non_null(
	    strstr(x->element[0]->element[1]->element[5]->str, "\"why one\""));
	assert_string_equal(x->element[2]->element[1]->element[1]->str, "j2");
	assert_null(strstr(x->element[2]->element[1]->element[5]->str, "evil"));
	freeReplyObject(x);
	assert_int_equal(r.skipped, 3);
	/* Redis down: the record waits in the file */
	redistest_kill(&rt, false);
	record("job-4", "four", true);
	assert_int_equal(al_gw_relay_poll(&r), 0);
	assert_int_equal(redistest_start(&rt), 0);
	r.retry_ms = 0;
	assert_int_equal(drain(&r), 1);
	al_gw_relay_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_relay),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
