/* test_tar.c: the session tar decoder and header encoder (results/tar.c):
 * archives made with al_tar_header decode back; each rule refuses its
 * entry with its reason; caps, checksum and truncation. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "results.h"

struct ar {
	uint8_t b[16384];
	size_t n;
};

static void add(struct ar *a, const char *path, enum al_tar_type t,
		const char *data, const char *link)
{
	size_t len = data ? strlen(data) : 0;

	assert_int_equal(al_tar_header(a->b + a->n, path, t, 0644, len, link),
			 0);
	a->n += 512;
	if (len) {
		memcpy(a->b + a->n, data, len);
		a->n += (len + 511) / 512 * 512;
	}
}

static void end(struct ar *a)
{
	memset(a->b + a->n, 0, 1024);
	a->n += 1024;
}

/* Set byte `at` of header `k` (0-based block) and fix its checksum. */
static void poke(struct ar *a, size_t blk, size_t at, uint8_t v)
{
	uint8_t *h = a->b + blk * 512;
	unsigned sum = 0;

	h[at] = v;
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
}

static const char *why(struct ar *a, uint64_t max_bytes, uint32_t max_files)
{
	static char err[200];

	err[0] = 0;
	if (al_tar_check(a->b, a->n, max_bytes, max_files, err, sizeof(err)) ==
	    0)
		return NULL;
	return err;
}

static void test_roundtrip(void **state)
{
	struct ar a = {0};
	struct al_tar t;
	struct al_tar_entry e;
	char longp[300];

	(void)state;
	memset(longp, 'd', sizeof(longp));
	memcpy(longp + 150, "/", 1);
	longp[241] = 0; /* 150 + '/' + 90: needs the prefix field */
	add(&a, "dir", AL_TAR_DIR, NULL, NULL);
	add(&a, "dir/f.txt", AL_TAR_FILE, "hello", NULL);
	add(&a, "dir/l", AL_TAR_SYMLINK, NULL, "f.txt");
	add(&a, "h", AL_TAR_HARDLINK, NULL, "dir/f.txt");
	add(&a, longp, AL_TAR_FILE, "x", NULL);
	end(&a);
	al_tar_init(&t, a.b, a.n, 1000, 10);
	assert_int_equal(al_tar_next(&t, &e), 1);
	assert_int_equal(e.type, AL_TAR_DIR);
	assert_string_equal(e.path, "dir");
	assert_int_equal(al_tar_next(&t, &e), 1);
	assert_int_equal(e.type, AL_TAR_FILE);
	assert_int_equal(e.size, 5);
	assert_memory_equal(e.data, "hello", 5);
	assert_int_equal(al_tar_next(&t, &e), 1);
	assert_string_equal(e.link, "f.txt");
	assert_int_equal(al_tar_next(&t, &e), 1);
	assert_int_equal(e.type, AL_TAR_HARDLINK);
	assert_int_equal(al_tar_next(&t, &e), 1);
	assert_string_equal(e.path, longp);
	assert_int_equal(al_tar_next(&t, &e), 0);
	assert_int_equal(al_tar_next(&t, &e), 0);
}

static void test_dot_prefix(void **state)
{
	struct ar a = {0};
	struct al_tar t;
	struct al_tar_entry e;

	(void)state;
	add(&a, "./", AL_TAR_DIR, NULL, NULL);
	add(&a, "./a/", AL_TAR_DIR, NULL, NULL);
	add(&a, "./a/b", AL_TAR_FILE, "z", NULL);
	end(&a);
	al_tar_init(&t, a.b, a.n, 10, 10);
	assert_int_equal(al_tar_next(&t, &e), 1);
	assert_string_equal(e.path, "a");
	assert_int_equal(al_tar_next(&t, &e), 1);
	assert_string_equal(e.path, "a/b");
	assert_int_equal(al_tar_next(&t, &e), 0);
}

static void refused(const char *path, enum al_tar_type t, const char *link,
		    const char *want)
{
	struct ar a = {0};
	const char *w;

	add(&a, "ok", AL_TAR_FILE, "fine", NULL);
	add(&a, path, t, NULL, link);
	end(&a);
	w = why(&a, 1000, 10);
	assert_non_null(w);
	if (!strstr(w, want))
		fail_msg("%s: '%s' lacks '%s'", path, w, want);
}

static void test_rules(void **state)
{
	(void)state;
	refused("../x", AL_TAR_FILE, NULL, ". or .. part");
	refused("a/../../x", AL_TAR_FILE, NULL, ". or .. part");
	refused("/etc/x", AL_TAR_FILE, NULL, "relative");
	refused("a//b", AL_TAR_FILE, NULL, "empty");
	refused("l", AL_TAR_SYMLINK, "/etc", "point down");
	refused("l", AL_TAR_SYMLINK, "../x", "point down");
	refused("l", AL_TAR_SYMLINK, "a/../..", "point down");
	refused("l", AL_TAR_SYMLINK, "", "point down");
	refused("h", AL_TAR_HARDLINK, "../x", "hard link");
	refused("h", AL_TAR_HARDLINK, "/etc/passwd", "hard link");
}

static void test_types(void **state)
{
	static const struct {
		char type;
		const char *want;
	} cases[] = {
	    {'3', "device nodes"},   {'4', "device nodes"},
	    {'6', "device nodes"},   {'x', "entry type 'x'"},
	    {'g', "entry type 'g'"}, {'L', "entry type 'L'"},
	    {'K', "entry type 'K'"}, {'S', "entry type 'S'"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ar a = {0};
		const char *w;

		add(&a, "n", AL_TAR_FILE, NULL, NULL);
		poke(&a, 0, 156, (uint8_t)cases[i].type);
		end(&a);
		w = why(&a, 1000, 10);
		assert_non_null(w);
		if (!strstr(w, cases[i].want))
			fail_msg("type %c: '%s'", cases[i].type, w);
	}
}

static void test_caps_and_damage(void **state)
{
	struct ar a = {0};
	const char *w;

	(void)state;
	for (int i = 0; i < 5; i++) {
		char p[8];

		snprintf(p, sizeof(p), "f%d", i);
		add(&a, p, AL_TAR_FILE, "0123456789", NULL);
	}
	end(&a);
	assert_null(why(&a, 50, 5));
	w = why(&a, 50, 4);
	assert_non_null(strstr(w, "cap of 4 entries"));
	w = why(&a, 49, 5);
	assert_non_null(strstr(w, "cap of 49 bytes"));
	/* a flipped byte: the checksum */
	a.b[10] ^= 1;
	assert_non_null(strstr(why(&a, 50, 5), "checksum"));
	a.b[10] ^= 1;
	/* cut: truncated */
	a.n = 512 * 3 + 100;
	assert_non_null(strstr(why(&a, 50, 5), "truncated"));
	/* a size that the bytes do not hold */
	a.n = 0;
	add(&a, "big", AL_TAR_FILE, "x", NULL);
	snprintf((char *)a.b + 124, 12, "%011o", 0777777);
	poke(&a, 0, 0, 'b');
	end(&a);
	assert_non_null(strstr(why(&a, 1u << 30, 5), "truncated contents"));
	/* garbage after the end */
	a.n = 0;
	add(&a, "f", AL_TAR_FILE, "x", NULL);
	end(&a);
	a.b[a.n] = 'z';
	a.n += 512;
	assert_non_null(strstr(why(&a, 10, 5), "after the end"));
	/* not ustar */
	a.n = 0;
	add(&a, "f", AL_TAR_FILE, "x", NULL);
	poke(&a, 0, 257, 'v');
	end(&a);
	assert_non_null(strstr(why(&a, 10, 5), "not a ustar"));
	/* nothing at all */
	assert_int_equal(al_tar_check(a.b, 0, 10, 5, NULL, 0), -EINVAL);
}

static void test_encoder_limits(void **state)
{
	uint8_t h[512];
	char p[400];

	(void)state;
	memset(p, 'a', sizeof(p));
	p[399] = 0; /* no '/' to split at */
	assert_int_equal(al_tar_header(h, p, AL_TAR_FILE, 0644, 1, NULL),
			 -ENAMETOOLONG);
	assert_int_equal(
	    al_tar_header(h, "f", AL_TAR_FILE, 0644, 1ull << 33, NULL), -EFBIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip),
	    cmocka_unit_test(test_dot_prefix),
	    cmocka_unit_test(test_rules),
	    cmocka_unit_test(test_types),
	    cmocka_unit_test(test_caps_and_damage),
	    cmocka_unit_test(test_encoder_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
