/* test_session.c: the pure helpers of dispatcher/session/: ids (what a
 * client may name), keys (capped, under the queue's hash tag), times in
 * records, and guest bytes as JSON (valid UTF-8 as a string, anything
 * else as base64, never invalid JSON).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* `session get --dir` into a directory that holds a file already: a
 * guest's hard link naming that file is refused (issue 34, finding 8:
 * shown with .env), a hard link to a file of the same tar is made. */
static void untar_links(void **state)
{
	static uint8_t b[8192];
	char dir[] = "/tmp/al-untar-XXXXXX", p[64], err[200];
	struct stat st;
	size_t n = 0;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/.env", dir);
	f = fopen(p, "we");
	fputs("SECRET=1\n", f);
	fclose(f);
	assert_int_equal(
	    al_tar_header(b, "x", AL_TAR_HARDLINK, 0644, 0, ".env"), 0);
	memset(b + 512, 0, 1024);
	n = 1536;
	assert_int_not_equal(
	    al_sess_untar(dir, b, n, 1 << 20, 16, err, sizeof(err)), 0);
	snprintf(p, sizeof(p), "%s/x", dir);
	assert_int_equal(stat(p, &st), -1);
	/* a link to the tar's own file is fine */
	memset(b, 0, sizeof(b));
	assert_int_equal(al_tar_header(b, "a", AL_TAR_FILE, 0644, 2, NULL), 0);
	memcpy(b + 512, "hi", 2);
	assert_int_equal(
	    al_tar_header(b + 1024, "b", AL_TAR_HARDLINK, 0644, 0, "a"), 0);
	n = 1536 + 1024;
	assert_int_equal(
	    al_sess_untar(dir, b, n, 1 << 20, 16, err, sizeof(err)), 0);
	snprintf(p, sizeof(p), "%s/b", dir);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_nlink, 2);
	for (const char *const *q =
		 (const char *const[]){".env", "a", "b", NULL};
	     *q; q++) {
		snprintf(p, sizeof(p), "%s/%s", dir, *q);
		unlink(p);
	}
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(ids),	   cmocka_unit_test(keys),
	    cmocka_unit_test(iso),	   cmocka_unit_test(blobs),
	    cmocka_unit_test(untar_links),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
