/* test_roundtrip.c: JSON -> struct -> msgpack -> struct -> JSON is identity.
 *
 * The corpora in tests/data/roundtrip/ are written in canonical form (schema
 * field order, defaults omitted), so each line must come back byte for byte.
 * Maximal documents (every cap reached) are built here in code.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "results.h"

#define CORPUS AL_SOURCE_DIR "/tests/data/roundtrip/"

static char *job_trip(const char *line, size_t len)
{
	struct al_job a = {0}, b = {0};
	struct al_diags d;
	char *mp, *json;
	size_t mp_len;

	al_diags_init(&d);
	if (al_job_from_json(line, len, &a, &d) != 0) {
		char buf[1024];

		al_diags_format(&d, buf, sizeof(buf));
		fail_msg("decode: %s", buf);
	}
	assert_int_equal(al_job_to_msgpack(&a, &mp, &mp_len), 0);
	assert_int_equal(al_job_from_msgpack(mp, mp_len, &b, NULL), 0);
	assert_int_equal(al_job_to_json(&b, &json), 0);
	free(mp);
	al_job_release(&a);
	al_job_release(&b);
	return json;
}

static char *result_trip(const char *line, size_t len)
{
	struct al_result a = {0}, b = {0};
	struct al_diags d;
	char *mp, *json;
	size_t mp_len;

	al_diags_init(&d);
	if (al_result_from_json(line, len, &a, &d) != 0) {
		char buf[1024];

		al_diags_format(&d, buf, sizeof(buf));
		fail_msg("decode: %s", buf);
	}
	assert_int_equal(al_result_to_msgpack(&a, &mp, &mp_len), 0);
	assert_int_equal(al_result_from_msgpack(mp, mp_len, &b, NULL), 0);
	assert_int_equal(al_result_to_json(&b, &json), 0);
	free(mp);
	al_result_release(&a);
	al_result_release(&b);
	return json;
}

static size_t corpus(const char *name, char *(*trip)(const char *, size_t))
{
	FILE *f = fopen(name, "r");
	char *line = NULL;
	size_t cap = 0, n = 0;
	ssize_t len;

	assert_non_null(f);
	while ((len = getline(&line, &cap, f)) > 0) {
		char *out;

		if (line[len - 1] == '\n')
			line[--len] = 0;
		out = trip(line, (size_t)len);
		if (strcmp(out, line) != 0)
			fail_msg("line %zu:\n in: %s\nout: %s", n + 1, line,
				 out);
		free(out);
		n++;
	}
	free(line);
	fclose(f);
	return n;
}

static void test_job_corpus(void **state)
{
	(void)state;
	assert_true(corpus(CORPUS "jobs.jsonl", job_trip) >= 20);
}

static void test_result_corpus(void **state)
{
	(void)state;
	assert_true(corpus(CORPUS "results.jsonl", result_trip) >= 12);
}

/* A job at every count cap: 256 steps, 1024 files, 4096 argv entries. */
static void test_job_maximal(void **state)
{
	size_t cap = 8u << 20, o = 0;
	char *json = malloc(cap), *out;

	(void)state;
	assert_non_null(json);
	o += (size_t)snprintf(json + o, cap - o, "{\"id\":\"%0128d\",\"files\":{",
			      7);
	for (int i = 0; i < AL_FILES_MAX; i++)
		o += (size_t)snprintf(json + o, cap - o, "%s\"f/%04d\":\"%d\"",
				      i ? "," : "", i, i);
	o += (size_t)snprintf(json + o, cap - o, "},\"steps\":[");
	for (int i = 0; i < AL_STEPS_MAX; i++)
		o += (size_t)snprintf(json + o, cap - o, "%s{\"sh\":\"s%d\"}",
				      i ? "," : "", i);
	o += (size_t)snprintf(json + o, cap - o, "]}");
	out = job_trip(json, o);
	assert_string_equal(out, json);
	free(out);

	o = (size_t)snprintf(json, cap, "{\"steps\":[{\"cmd\":[");
	for (int i = 0; i < AL_ARGV_MAX; i++)
		o += (size_t)snprintf(json + o, cap - o, "%s\"a%d\"",
				      i ? "," : "", i);
	o += (size_t)snprintf(json + o, cap - o, "]}]}");
	out = job_trip(json, o);
	assert_string_equal(out, json);
	free(out);
	free(json);
}

/* A result with AL_OUTPUT_MAX bytes of binary stdout survives both ways. */
static void test_result_maximal(void **state)
{
	struct al_result r = {0}, back = {0};
	struct al_step_result s = {0};
	char *mp, *json;
	size_t mp_len;

	(void)state;
	s.stdout_.len = AL_OUTPUT_MAX;
	s.stdout_.data = malloc(AL_OUTPUT_MAX + 1);
	assert_non_null(s.stdout_.data);
	for (size_t i = 0; i < AL_OUTPUT_MAX; i++)
		s.stdout_.data[i] = (uint8_t)(i * 7 + (i >> 8));
	s.stdout_truncated = true;
	s.stdout_bytes = INT64_MAX; /* JSON integers stop at 2^63-1 */
	r.id = strdup("big");
	r.steps = &s;
	r.n_steps = 1;
	assert_int_equal(al_result_to_msgpack(&r, &mp, &mp_len), 0);
	{
		struct al_diags d;
		char buf[512];

		al_diags_init(&d);
		if (al_result_from_msgpack(mp, mp_len, &back, &d) != 0) {
			al_diags_format(&d, buf, sizeof(buf));
			fail_msg("%s", buf);
		}
	}
	assert_int_equal(back.steps[0].stdout_.len, AL_OUTPUT_MAX);
	assert_memory_equal(back.steps[0].stdout_.data, s.stdout_.data,
			    AL_OUTPUT_MAX);
	assert_true(back.steps[0].stdout_bytes == INT64_MAX);
	assert_int_equal(al_result_to_json(&back, &json), 0);
	al_result_release(&back);
	assert_int_equal(al_result_from_json(json, strlen(json), &back, NULL),
			 0);
	assert_memory_equal(back.steps[0].stdout_.data, s.stdout_.data,
			    AL_OUTPUT_MAX);
	free(json);
	free(mp);
	al_result_release(&back);
	r.steps = NULL;
	r.n_steps = 0;
	al_step_result_release(&s);
	al_result_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_corpus),
		cmocka_unit_test(test_result_corpus),
		cmocka_unit_test(test_job_maximal),
		cmocka_unit_test(test_result_maximal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
