/* test_blob.c: UTF-8 validation and base64 through the public decoders. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "results.h"

static void test_utf8(void **state)
{
	static const struct {
		const char *s;
		size_t len;
		bool ok;
	} cases[] = {
		{"", 0, true},
		{"plain", 5, true},
		{"\xc3\xa9", 2, true},           /* é */
		{"\xe2\x82\xac", 3, true},       /* € */
		{"\xf0\x9f\x98\x80", 4, true},   /* 😀 */
		{"\xf4\x8f\xbf\xbf", 4, true},   /* U+10FFFF */
		{"\x00", 1, true},
		{"\xc0\xaf", 2, false},          /* overlong / */
		{"\xe0\x80\xaf", 3, false},      /* overlong */
		{"\xed\xa0\x80", 3, false},      /* surrogate */
		{"\xf4\x90\x80\x80", 4, false},  /* > U+10FFFF */
		{"\xc3", 1, false},              /* truncated */
		{"\xe2\x82", 2, false},
		{"\x80", 1, false},              /* lone continuation */
		{"\xff", 1, false},
		{"\xc3\x28", 2, false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(al_utf8_valid((const uint8_t *)cases[i].s,
					       cases[i].len),
				 cases[i].ok);
}

static int decode_stdin(const char *b64, struct al_job *job)
{
	char json[512];

	snprintf(json, sizeof(json),
		 "{\"sh\":\"cat\",\"stdin\":{\"base64\":\"%s\"}}", b64);
	return al_job_from_json(json, strlen(json), job, NULL);
}

static void test_base64(void **state)
{
	static const struct {
		const char *b64;
		const char *bytes;
		size_t len;
	} ok[] = {
		{"", "", 0},
		{"Zg==", "f", 1},
		{"Zg", "f", 1},
		{"Zm8=", "fo", 2},
		{"Zm9v", "foo", 3},
		{"Zm9vYg==", "foob", 4},
		{"AP8A", "\x00\xff\x00", 3},
		{"+/+/", "\xfb\xff\xbf", 3},
	};
	static const char *const bad[] = {
		"Z", "Zm9v\n", "Zm 9", "Zh==", "Zm9=", "====", "Zg=a", "-_",
	};
	struct al_job job = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(decode_stdin(ok[i].b64, &job), 0);
		assert_int_equal(job.steps[0].stdin_.len, ok[i].len);
		assert_memory_equal(job.steps[0].stdin_.data, ok[i].bytes,
				    ok[i].len);
		al_job_release(&job);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(decode_stdin(bad[i], &job), -EINVAL);
}

/* Binary bytes leave as {"base64"} in JSON and come back identical. */
static void test_binary_roundtrip(void **state)
{
	struct al_job job = {0}, back = {0};
	uint8_t bytes[256];
	char *json;

	(void)state;
	for (int i = 0; i < 256; i++)
		bytes[i] = (uint8_t)i;
	assert_int_equal(decode_stdin("", &job), 0);
	free(job.steps[0].stdin_.data);
	job.steps[0].stdin_.data = malloc(sizeof(bytes));
	memcpy(job.steps[0].stdin_.data, bytes, sizeof(bytes));
	job.steps[0].stdin_.len = sizeof(bytes);
	assert_int_equal(al_job_to_json(&job, &json), 0);
	assert_non_null(strstr(json, "\"stdin\":{\"base64\":\"AAECAwQF"));
	assert_int_equal(al_job_from_json(json, strlen(json), &back, NULL), 0);
	assert_int_equal(back.steps[0].stdin_.len, sizeof(bytes));
	assert_memory_equal(back.steps[0].stdin_.data, bytes, sizeof(bytes));
	free(json);
	al_job_release(&job);
	al_job_release(&back);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_binary_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
