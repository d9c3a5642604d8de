/* test_blob.c: UTF-8 validation, base64, hex digits and port numbers
 * through the public decoders. */
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

/* The one codec, strict and lax (the doors': Judge0's clients break
 * lines as Ruby's encode64 does), directly. */
static void test_base64_modes(void **state)
{
	struct al_blob b = {0};
	char enc[16];

	(void)state;
	al_base64_encode((const uint8_t *)"hi!?", 4, enc);
	assert_string_equal(enc, "aGkhPw==");
	assert_int_equal(al_base64_encoded_len(4), 8);
	assert_int_equal(al_base64_decode("aGkhPw==", 8, 0, &b), 0);
	assert_int_equal(b.len, 4);
	assert_memory_equal(b.data, "hi!?", 4);
	assert_int_equal(al_base64_decode("aGkhPw", 6, 0, &b), 0);
	assert_int_equal(b.len, 4);
	/* a line break: lax only */
	assert_int_equal(al_base64_decode("aGkh\nPw==", 9, 0, &b), -EINVAL);
	assert_int_equal(al_base64_decode("aGkh\r\nPw==", 10, AL_BASE64_LAX,
					  &b),
			 0);
	assert_memory_equal(b.data, "hi!?", 4);
	/* unused bits set: strict refuses, lax takes */
	assert_int_equal(al_base64_decode("aGkhPx==", 8, 0, &b), -EINVAL);
	assert_int_equal(al_base64_decode("aGkhPx==", 8, AL_BASE64_LAX, &b),
			 0);
	/* refused by both: a lone symbol, data after padding, three pads */
	for (unsigned f = 0; f <= AL_BASE64_LAX; f++) {
		assert_int_equal(al_base64_decode("aGkhP", 5, f, &b), -EINVAL);
		assert_int_equal(al_base64_decode("aG=k", 4, f, &b), -EINVAL);
		assert_int_equal(al_base64_decode("aG===", 5, f, &b), -EINVAL);
		assert_int_equal(al_base64_decode("a b=", 4, f, &b), -EINVAL);
	}
	free(b.data);
}

/* Binary bytes leave as {"base64"} in JSON and come back identical. */
static void test_hex_digit(void **state)
{
	(void)state;
	assert_int_equal(al_hex_digit('0'), 0);
	assert_int_equal(al_hex_digit('9'), 9);
	assert_int_equal(al_hex_digit('a'), 10);
	assert_int_equal(al_hex_digit('F'), 15);
	assert_int_equal(al_hex_digit('g'), -1);
	assert_int_equal(al_hex_digit('\0'), -1);
	assert_int_equal(al_hex_digit((char)0xe9), -1);
}

static void test_port_parse(void **state)
{
	static const struct {
		const char *s;
		int want; /* -1: rejected */
	} cases[] = {
		{"1", 1},        {"80", 80},   {"65535", 65535}, {"00080", 80},
		{"0", -1},       {"65536", -1}, {"99999", -1},   {"", -1},
		{"123456", -1},  {"-1", -1},    {"+80", -1},     {" 80", -1},
		{"8o", -1},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint16_t v = 7;
		int rc = al_port_parse(cases[i].s, strlen(cases[i].s), &v);

		if (cases[i].want < 0) {
			assert_int_equal(rc, -EINVAL);
			assert_int_equal(v, 7); /* untouched */
		} else {
			assert_int_equal(rc, 0);
			assert_int_equal(v, cases[i].want);
		}
	}
	/* n bounds the digits: "8080" read as its first two. */
	uint16_t v = 0;
	assert_int_equal(al_port_parse("8080", 2, &v), 0);
	assert_int_equal(v, 80);
}

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

/* The one strict decimal parser: digits only, overflow and max caught. */
static void test_decimal_parse(void **state)
{
	static const struct {
		const char *s;
		uint64_t max;
		int rc;
		uint64_t v;
	} cases[] = {
	    {"0", 10, 0, 0},
	    {"007", 10, 0, 7},
	    {"10", 10, 0, 10},
	    {"11", 10, -ERANGE, 0},
	    {"18446744073709551615", UINT64_MAX, 0, UINT64_MAX},
	    {"18446744073709551616", UINT64_MAX, -ERANGE, 0},
	    {"99999999999999999999", UINT64_MAX, -ERANGE, 0},
	    {"123456789012345678901", UINT64_MAX, -EINVAL, 0},
	    {"", 10, -EINVAL, 0},
	    {"+1", 10, -EINVAL, 0},
	    {"-1", 10, -EINVAL, 0},
	    {" 1", 10, -EINVAL, 0},
	    {"1 ", 10, -EINVAL, 0},
	    {"0x1", 10, -EINVAL, 0},
	    {"1/", 10, -EINVAL, 0},
	    {"1:", 10, -EINVAL, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 42;
		int rc = al_decimal_parse(cases[i].s, strlen(cases[i].s),
					  cases[i].max, &v);

		if (rc != cases[i].rc)
			fail_msg("\"%s\": %d, want %d", cases[i].s, rc,
				 cases[i].rc);
		assert_true(rc == 0 ? v == cases[i].v : v == 42);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_base64_modes),
		cmocka_unit_test(test_hex_digit),
		cmocka_unit_test(test_port_parse),
		cmocka_unit_test(test_decimal_parse),
		cmocka_unit_test(test_binary_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
