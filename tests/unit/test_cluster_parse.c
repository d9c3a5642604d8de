/* test_cluster_parse.c: dispatcher/queue/cluster.c, the Redis Cluster
 * redirection parser and the hash slot, against the values the cluster
 * specification and CLUSTER KEYSLOT give (test_cluster checks the slot
 * against a live cluster too). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "cluster.h"

static void parse(const char *s, struct alq_redirect *r)
{
	alq_redirect_parse(s, strlen(s), r);
}

static void test_redirects(void **state)
{
	struct alq_redirect r;
	char big[400];

	(void)state;
	parse("MOVED 3999 127.0.0.1:6381", &r);
	assert_int_equal(r.kind, ALQ_REDIRECT_MOVED);
	assert_int_equal(r.slot, 3999);
	assert_string_equal(r.host, "127.0.0.1");
	assert_int_equal(r.port, 6381);
	parse("ASK 16383 10.0.0.2:7000", &r);
	assert_int_equal(r.kind, ALQ_REDIRECT_ASK);
	assert_int_equal(r.slot, 16383);
	parse("MOVED 1 :6380", &r); /* the same host (Redis 7 may omit it) */
	assert_int_equal(r.kind, ALQ_REDIRECT_MOVED);
	assert_string_equal(r.host, "");
	parse("MOVED 1 ::1:6380", &r); /* IPv6: the last ':' splits */
	assert_string_equal(r.host, "::1");
	assert_int_equal(r.port, 6380);
	parse("TRYAGAIN Multiple keys request during rehashing of slot", &r);
	assert_int_equal(r.kind, ALQ_REDIRECT_TRYAGAIN);
	parse("CLUSTERDOWN The cluster is down", &r);
	assert_int_equal(r.kind, ALQ_REDIRECT_DOWN);
	/* not redirections */
	static const char *const bad[] = {
	    "MOVED",
	    "MOVED ",
	    "MOVED 16384 h:1",
	    "MOVED 1 h:0",
	    "MOVED 1 h:65536",
	    "MOVED 1 h",
	    "MOVED x h:1",
	    "MOVED 1 h:1 x",
	    "MOVEDX 1 h:1",
	    "ASK 1 h:",
	    "ERR unknown command",
	    "NOSCRIPT",
	    "MOVED 1 h\x01:1",
	    "TRYAGAINX",
	    "MOVED 123456 h:1",
	    "",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		parse(bad[i], &r);
		if (r.kind != ALQ_REDIRECT_NONE)
			fail_msg("'%s' parsed as kind %d", bad[i], r.kind);
	}
	alq_redirect_parse(NULL, 0, &r);
	assert_int_equal(r.kind, ALQ_REDIRECT_NONE);
	/* a host over ALQ_HOST_MAX is refused, not truncated */
	memset(big, 'a', sizeof(big));
	memcpy(big, "MOVED 1 ", 8);
	snprintf(big + 8 + ALQ_HOST_MAX + 1, 16, ":6379");
	parse(big, &r);
	assert_int_equal(r.kind, ALQ_REDIRECT_NONE);
	/* not NUL-terminated: only len bytes are read */
	alq_redirect_parse("MOVED 7 h:12345678", 15, &r);
	assert_int_equal(r.kind, ALQ_REDIRECT_MOVED);
	assert_int_equal(r.port, 12345);
}

static void test_slots(void **state)
{
	(void)state;
	/* the specification's CRC16 check value: 0x31C3 */
	assert_int_equal(alq_key_slot("123456789", 9), 0x31C3 % ALQ_SLOTS);
	assert_int_equal(alq_key_slot("foo", 3), 12182);
	assert_int_equal(alq_key_slot("somekey", 7), 11058);
	/* a hash tag: only what is inside the first {...} counts */
	assert_int_equal(alq_key_slot("{user1000}.following", 20),
			 alq_key_slot("user1000", 8));
	assert_int_equal(alq_key_slot("airlock:{q}:jobs", 16),
			 alq_key_slot("airlock:{q}:result:x", 20));
	/* empty tags, unclosed braces: test_cluster compares them with the
	 * live cluster's CLUSTER KEYSLOT */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_redirects),
	    cmocka_unit_test(test_slots),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
