/* test_e2b_connect.c: E2B's Connect-RPC framing on untrusted bytes
 * (tools/api/doors/e2b_connect.c): routes, unary and enveloped requests,
 * every refusal with Connect's code and HTTP status, and the envelopes
 * of an answer. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "e2b_connect.h"

static void test_route(void **state)
{
	enum al_e2b_rpc r;

	(void)state;
	assert_int_equal(al_e2b_rpc_route("/process.Process/Start", &r), 0);
	assert_int_equal(r, AL_E2B_PROC_START);
	assert_true(al_e2b_rpc_streaming(r));
	assert_int_equal(al_e2b_rpc_route("/filesystem.Filesystem/Stat", &r),
			 0);
	assert_int_equal(r, AL_E2B_FS_STAT);
	assert_false(al_e2b_rpc_streaming(r));
	/* a method of a known service: unimplemented, not a 404 */
	assert_int_equal(
	    al_e2b_rpc_route("/filesystem.Filesystem/WatchDir", &r), 0);
	assert_int_equal(r, AL_E2B_RPC_UNIMPLEMENTED);
	assert_int_equal(al_e2b_rpc_route("/process.Process/", &r), -ENOENT);
	assert_int_equal(al_e2b_rpc_route("/process.Process/Start/x", &r),
			 -ENOENT);
	assert_int_equal(al_e2b_rpc_route("/nope.Nope/Start", &r), -ENOENT);
}

/* Decode and expect code k (and http when non-zero). */
static json_t *dec(enum al_e2b_rpc r, const char *ct, const char *ver,
		   const void *b, size_t n, enum al_connect_code k,
		   unsigned http)
{
	char msg[160];
	unsigned h = 0;
	json_t *j = (json_t *)1;

	assert_int_equal(
	    al_connect_decode(r, ct, ver, b, n, &j, &h, msg, sizeof(msg)), k);
	if (http)
		assert_int_equal(h, http);
	if (k != AL_CONNECT_OK)
		assert_null(j);
	return j;
}

static void test_unary(void **state)
{
	const char *ok = "{\"path\":\"/tmp\"}";
	json_t *j;

	(void)state;
	j = dec(AL_E2B_FS_STAT, "application/json", "1", ok, strlen(ok),
		AL_CONNECT_OK, 200);
	assert_string_equal(json_string_value(json_object_get(j, "path")),
			    "/tmp");
	json_decref(j);
	dec(AL_E2B_FS_STAT, "application/proto", NULL, ok, strlen(ok),
	    AL_CONNECT_UNKNOWN, 415);
	dec(AL_E2B_FS_STAT, NULL, NULL, ok, strlen(ok), AL_CONNECT_UNKNOWN,
	    415);
	dec(AL_E2B_FS_STAT, "application/json", "2", ok, strlen(ok),
	    AL_CONNECT_INVALID_ARGUMENT, 400);
	dec(AL_E2B_FS_STAT, "application/json", NULL, "[1]", 3,
	    AL_CONNECT_INVALID_ARGUMENT, 400);
	dec(AL_E2B_FS_STAT, "application/json", NULL, "{\"a\":1,\"a\":2}", 13,
	    AL_CONNECT_INVALID_ARGUMENT, 400);
	dec(AL_E2B_RPC_UNIMPLEMENTED, "application/json", NULL, ok, strlen(ok),
	    AL_CONNECT_UNIMPLEMENTED, 501);
}

static void test_deep_and_big(void **state)
{
	size_t n = AL_CONNECT_MSG_MAX + 10;
	char *b = malloc(n);

	(void)state;
	memset(b, '[', 100);
	dec(AL_E2B_FS_STAT, "application/json", NULL, b, 100,
	    AL_CONNECT_INVALID_ARGUMENT, 400);
	memset(b, ' ', n);
	b[0] = '{';
	b[n - 1] = '}';
	dec(AL_E2B_FS_STAT, "application/json", NULL, b, n,
	    AL_CONNECT_RESOURCE_EXHAUSTED, 429);
	free(b);
}

static void env(uint8_t *b, uint8_t flag, uint32_t n)
{
	b[0] = flag;
	b[1] = (uint8_t)(n >> 24);
	b[2] = (uint8_t)(n >> 16);
	b[3] = (uint8_t)(n >> 8);
	b[4] = (uint8_t)n;
}

static void test_envelope(void **state)
{
	const char *ct = "application/connect+json";
	uint8_t b[64];
	json_t *j;

	(void)state;
	env(b, 0, 2);
	memcpy(b + 5, "{}", 2);
	j = dec(AL_E2B_PROC_START, ct, "1", b, 7, AL_CONNECT_OK, 200);
	json_decref(j);
	/* unary type on a stream, short header, compressed, end flag, length
	 * past the body, before it, over the cap */
	dec(AL_E2B_PROC_START, "application/json", NULL, b, 7,
	    AL_CONNECT_UNKNOWN, 415);
	dec(AL_E2B_PROC_START, ct, NULL, b, 4, AL_CONNECT_INVALID_ARGUMENT,
	    400);
	env(b, 1, 2);
	dec(AL_E2B_PROC_START, ct, NULL, b, 7, AL_CONNECT_INVALID_ARGUMENT,
	    400);
	env(b, 2, 2);
	dec(AL_E2B_PROC_START, ct, NULL, b, 7, AL_CONNECT_INVALID_ARGUMENT,
	    400);
	env(b, 0, 3);
	dec(AL_E2B_PROC_START, ct, NULL, b, 7, AL_CONNECT_INVALID_ARGUMENT,
	    400);
	env(b, 0, 1);
	dec(AL_E2B_PROC_START, ct, NULL, b, 7, AL_CONNECT_INVALID_ARGUMENT,
	    400);
	env(b, 0, 0xffffffffu);
	dec(AL_E2B_PROC_START, ct, NULL, b, 7, AL_CONNECT_RESOURCE_EXHAUSTED,
	    429);
}

static void test_answer(void **state)
{
	uint8_t *b = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(
	    al_connect_envelope(0, json_pack("{si}", "a", 1), &b, &n), 0);
	assert_int_equal(
	    al_connect_envelope(
		2,
		json_pack("{so}", "error",
			  al_connect_error(AL_CONNECT_NOT_FOUND, "gone")),
		&b, &n),
	    0);
	assert_int_equal(n, 5 + 7 + 5 + 47);
	assert_memory_equal(b, "\0\0\0\0\x07{\"a\":1}\x02\0\0\0\x2f", 17);
	assert_memory_equal(b + 17,
			    "{\"error\":{\"code\":\"not_found\",\"message\":"
			    "\"gone\"}}",
			    47);
	free(b);
	assert_string_equal(al_connect_code_name(AL_CONNECT_UNAUTHENTICATED),
			    "unauthenticated");
	assert_int_equal(al_connect_http_status(AL_CONNECT_UNAUTHENTICATED),
			 401);
	assert_string_equal(al_connect_code_name(99), "unknown");
}

static void test_key(void **state)
{
	(void)state;
	assert_true(al_e2b_key_valid("e2b_0123abcdef"));
	assert_false(al_e2b_key_valid("e2b_"));
	assert_false(al_e2b_key_valid("e2b_xyz"));
	assert_false(al_e2b_key_valid("E2B_00"));
	assert_false(al_e2b_key_valid("e2b_00 "));
	assert_false(al_e2b_key_valid(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_route),
	    cmocka_unit_test(test_unary),
	    cmocka_unit_test(test_deep_and_big),
	    cmocka_unit_test(test_envelope),
	    cmocka_unit_test(test_answer),
	    cmocka_unit_test(test_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
