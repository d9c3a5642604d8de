/* testcase.c: the per-test records of a step's test reports in a result
 * (docs/schema.md, "Test reports"): decode, encode, release. The records
 * are made on the host (worker/testreport.c); these codecs read them
 * back from Redis and results files, each string capped before it is
 * copied. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const test_status_names[AL_TEST_STATUS_COUNT] = {
    [AL_TEST_PASSED] = "passed",
    [AL_TEST_FAILED] = "failed",
    [AL_TEST_ERROR] = "error",
    [AL_TEST_SKIPPED] = "skipped",
};

const char *al_test_status_name(enum al_test_status s)
{
	return (unsigned)s < AL_TEST_STATUS_COUNT ? test_status_names[s] : "??";
}

static int tc_name(const msgpack_object *v, const char *path, void *out,
		   struct al_diags *d)
{
	return al__walk_str(v, path, AL_TEST_NAME_MAX, d,
			    &((struct al_test_case *)out)->name);
}

static int tc_suite(const msgpack_object *v, const char *path, void *out,
		    struct al_diags *d)
{
	return al__walk_str(v, path, AL_TEST_NAME_MAX, d,
			    &((struct al_test_case *)out)->suite);
}

static int tc_status(const msgpack_object *v, const char *path, void *out,
		     struct al_diags *d)
{
	for (int i = 0; i < AL_TEST_STATUS_COUNT; i++) {
		if (al__walk_is_str(v, test_status_names[i])) {
			((struct al_test_case *)out)->status =
			    (enum al_test_status)i;
			return 0;
		}
	}
	al_diags_add(d, path, "unknown value");
	return 0;
}

static int tc_time(const msgpack_object *v, const char *path, void *out,
		   struct al_diags *d)
{
	return al__walk_u64(v, path, d, &((struct al_test_case *)out)->time_ms);
}

static int tc_message(const msgpack_object *v, const char *path, void *out,
		      struct al_diags *d)
{
	return al__walk_str(v, path, AL_TEST_MESSAGE_MAX, d,
			    &((struct al_test_case *)out)->message);
}

static int tc_report(const msgpack_object *v, const char *path, void *out,
		     struct al_diags *d)
{
	return al__walk_u32(v, path, 0, AL_REPORTS_MAX - 1, d,
			    &((struct al_test_case *)out)->report);
}

static const struct al__walk_field test_fields[] = {
    {"name", 0, tc_name, true},	       {"suite", 0, tc_suite, false},
    {"status", 0, tc_status, true},    {"time_ms", 0, tc_time, false},
    {"message", 0, tc_message, false}, {"report", 0, tc_report, false},
};
static const struct al__walk_table test_table =
    AL__WALK_TABLE(test_fields, NULL);

static int test_elem(const msgpack_object *v, const char *path, void *out,
		     struct al_diags *d)
{
	return al__walk_map(v, path, &test_table, out, d, NULL);
}

int al__walk_tests(const msgpack_object *v, const char *path,
		   struct al_diags *d, struct al_test_case **ret, size_t *ret_n)
{
	void *tests = NULL;
	int r;

	r = al__walk_array(v, path, 0, AL_TESTS_MAX, sizeof(**ret), test_elem,
			   &tests, ret_n, d);
	if (tests)
		*ret = tests;
	return r;
}

#define COUNT_FIELD(name)                                                      \
	static int cnt_##name(const msgpack_object *v, const char *path,       \
			      void *out, struct al_diags *d)                   \
	{                                                                      \
		return al__walk_u64(v, path, d,                                \
				    &((struct al_test_counts *)out)->name);    \
	}
COUNT_FIELD(total)
COUNT_FIELD(passed)
COUNT_FIELD(failed)
COUNT_FIELD(error)
COUNT_FIELD(skipped)

static const struct al__walk_field count_fields[] = {
    {"total", 0, cnt_total, true},     {"passed", 0, cnt_passed, true},
    {"failed", 0, cnt_failed, true},   {"error", 0, cnt_error, true},
    {"skipped", 0, cnt_skipped, true},
};
static const struct al__walk_table count_table =
    AL__WALK_TABLE(count_fields, NULL);

int al__walk_test_counts(const msgpack_object *v, const char *path,
			 struct al_diags *d, struct al_test_counts *ret)
{
	return al__walk_map(v, path, &count_table, ret, d, NULL);
}

void al__pack_test_counts(msgpack_packer *pk, const struct al_test_counts *c)
{
	const struct {
		const char *key;
		uint64_t v;
	} f[] = {{"total", c->total},
		 {"passed", c->passed},
		 {"failed", c->failed},
		 {"error", c->error},
		 {"skipped", c->skipped}};

	al__pack_key(pk, "test_counts");
	msgpack_pack_map(pk, AL__ARRAY_SIZE(f));
	for (size_t i = 0; i < AL__ARRAY_SIZE(f); i++) {
		al__pack_key(pk, f[i].key);
		msgpack_pack_uint64(pk, f[i].v);
	}
}

void al__pack_tests(msgpack_packer *pk, const struct al_test_case *t, size_t n)
{
	al__pack_key(pk, "tests");
	msgpack_pack_array(pk, n);
	for (size_t i = 0; i < n; i++) {
		msgpack_pack_map(pk, 4 + !!t[i].suite + !!t[i].message);
		al__pack_key(pk, "name");
		al__pack_str(pk, t[i].name ? t[i].name : "");
		if (t[i].suite) {
			al__pack_key(pk, "suite");
			al__pack_str(pk, t[i].suite);
		}
		al__pack_key(pk, "status");
		al__pack_str(pk, al_test_status_name(t[i].status));
		al__pack_key(pk, "time_ms");
		msgpack_pack_uint64(pk, t[i].time_ms);
		if (t[i].message) {
			al__pack_key(pk, "message");
			al__pack_str(pk, t[i].message);
		}
		al__pack_key(pk, "report");
		msgpack_pack_uint32(pk, t[i].report);
	}
}

void al_tests_release(struct al_test_case *t, size_t n)
{
	for (size_t i = 0; t && i < n; i++) {
		free(t[i].name);
		free(t[i].suite);
		free(t[i].message);
	}
	free(t);
}
