/* test_session.c: the pure helpers of dispatcher/session/: ids (what a
 * client may name), keys (capped, under the queue's hash tag), times in
 * records, and guest bytes as JSON (valid UTF-8 as a string, anything
 * else as base64, never invalid JSON).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sess_internal.h"

static void ids(void **state)
{
	char a[32], b[32];

	(void)state;
	assert_int_equal(sess__new_id(a, sizeof(a), 's'), 0);
	assert_int_equal(sess__new_id(b, sizeof(b), 's'), 0);
	assert_true(sess__id_valid(a));
	assert_string_not_equal(a, b);
	assert_int_equal(strlen(a), 26);
	assert_int_equal(sess__new_id(a, 20, 's'), -ENAMETOOLONG);
	assert_false(sess__id_valid(""));
	assert_false(sess__id_valid("s-../../../etc/passwd00000"));
	assert_false(sess__id_valid("s-0123456789ABCDEF01234567"));
	assert_false(sess__id_valid("x-0123456789abcdef01234567"));
	assert_false(sess__id_valid("s-0123456789abcdef012345678"));
	assert_true(sess__id_valid("s-0123456789abcdef01234567"));
	assert_true(sess__id_valid("r-0123456789abcdef01234567"));
}

static void keys(void **state)
{
	char k[SESS_KEY_MAX], small[24];

	(void)state;
	assert_int_equal(sess__key(k, sizeof(k), "default", "%s:x:%d",
				  "s-0123456789abcdef01234567", 3),
			 0);
	assert_string_equal(k, "airlock:{default}:sess:"
			       "s-0123456789abcdef01234567:x:3");
	assert_int_equal(sess__key(small, sizeof(small), "default", "%s",
				  "s-0123456789abcdef01234567"),
			 -ENAMETOOLONG);
}

static void iso(void **state)
{
	char t[32];

	(void)state;
	sess__iso(0, t);
	assert_string_equal(t, "1970-01-01T00:00:00.000Z");
	sess__iso(1795568399123ull, t);
	assert_string_equal(t, "2026-11-25T00:59:59.123Z");
}

static void blobs(void **state)
{
	json_t *j;
	char *s;

	(void)state;
	j = al_sess_blob_json("plain\n", 6);
	assert_true(json_is_string(j));
	assert_string_equal(json_string_value(j), "plain\n");
	json_decref(j);
	j = al_sess_blob_json("\xff\x00\x01", 3);
	assert_true(json_is_object(j));
	assert_string_equal(json_string_value(json_object_get(j, "base64")),
			    "/wAB");
	s = json_dumps(j, JSON_COMPACT);
	assert_string_equal(s, "{\"base64\":\"/wAB\"}");
	free(s);
	json_decref(j);
	j = al_sess_blob_json("\xc3", 1);
	assert_string_equal(json_string_value(json_object_get(j, "base64")),
			    "ww==");
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(ids),
	    cmocka_unit_test(keys),
	    cmocka_unit_test(iso),
	    cmocka_unit_test(blobs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
