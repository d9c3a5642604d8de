/* test_result.c: result decoding rules, status names, overall status. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "results.h"

static const struct {
	const char *json;
	const char *path;
	const char *reason;
} rules[] = {
    {"{\"status\":\"OK\"}", "id", "required"},
    {"{\"id\":\"a\"}", "status", "required"},
    {"{\"id\":\"a\",\"status\":\"MAYBE\"}", "status", "unknown value"},
    {"{\"id\":\"a b\",\"status\":\"OK\"}", "id",
     "must match [A-Za-z0-9._:/-]{1,128} with no empty, . or .. part between "
     "slashes"},
    {"{\"id\":\"a\",\"status\":\"OK\",\"verdict\":\"none\"}", "verdict",
     "unknown value"},
    {"{\"id\":\"a\",\"status\":\"OK\",\"steps\":[{}]}", "steps[0].status",
     "required"},
    {"{\"id\":\"a\",\"status\":\"OK\",\"steps\":[{\"status\":\"OK\","
     "\"exit_code\":256}]}",
     "steps[0].exit_code", "must be 0..255"},
    {"{\"id\":\"a\",\"status\":\"OK\",\"steps\":[{\"status\":\"OK\","
     "\"signal\":0}]}",
     "steps[0].signal", "must be 1..127"},
    {"{\"id\":\"a\",\"status\":\"OK\",\"steps\":[{\"status\":\"OK\","
     "\"wall_ms\":-1}]}",
     "steps[0].wall_ms", "must not be negative"},
    {"{\"id\":\"a\",\"status\":\"OK\",\"steps\":[{\"status\":\"OK\","
     "\"expect_ok\":1}]}",
     "steps[0].expect_ok", "must be a boolean"},
    {"{\"id\":\"a\",\"status\":\"OK\",\"vm\":{\"accel\":\"hvf\"}}", "vm.accel",
     "unknown value"},
    {"{\"id\":\"a\",\"status\":\"OK\",\"vm\":{\"jailed\":1}}", "vm.jailed",
     "must be a boolean"},
    {"{\"id\":\"a\",\"status\":\"OK\",\"timing\":{\"x_ms\":1}}", "timing.x_ms",
     "unknown field"},
    {"{\"id\":\"a\",\"status\":\"OK\",\"files\":{\"../x\":\"\"}}",
     "files[\"../x\"]", "must not contain . or .. components"},
    {"{\"id\":\"a\",\"status\":\"OK\",\"attempt\":-1}", "attempt",
     "must be 0..4294967295"},
    {"{\"id\":\"a\",\"status\":\"OK\",\"digest\":\"abc\"}", "digest",
     "must be 64 lowercase hex digits"},
    {"{\"id\":\"a\",\"status\":\"OK\",\"digest\":"
     "\"E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855\"}",
     "digest", "must be 64 lowercase hex digits"},
    {"{\"id\":\"a\",\"status\":\"OK\",\"steps\":[{\"status\":\"OK\","
     "\"tests\":[{\"name\":\"t\",\"status\":\"flaky\"}]}]}",
     "steps[0].tests[0].status", "unknown value"},
    {"{\"id\":\"a\",\"status\":\"OK\",\"steps\":[{\"status\":\"OK\","
     "\"tests\":[{\"status\":\"passed\"}]}]}",
     "steps[0].tests[0].name", "required"},
    {"{\"id\":\"a\",\"status\":\"OK\",\"steps\":[{\"status\":\"OK\","
     "\"tests\":[{\"name\":\"t\",\"status\":\"passed\",\"report\":16}]}]}",
     "steps[0].tests[0].report", "must be 0..15"},
    {"{\"id\":\"a\",\"status\":\"OK\",\"test_counts\":{\"total\":1}}",
     "test_counts.passed", "required"},
};

static void test_rules(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		struct al_result r = {0};
		struct al_diags d;
		bool found = false;

		al_diags_init(&d);
		assert_int_equal(al_result_from_json(rules[i].json,
						     strlen(rules[i].json), &r,
						     &d),
				 -EINVAL);
		for (size_t k = 0; k < d.n; k++)
			found |= !strcmp(d.items[k].path, rules[i].path) &&
				 !strcmp(d.items[k].reason, rules[i].reason);
		if (!found)
			print_message("rule %zu: %s: %s %s\n", i, rules[i].json,
				      d.items[0].path, d.items[0].reason);
		assert_true(found);
	}
}

static void test_names(void **state)
{
	(void)state;
	for (int s = 0; s < AL_STATUS_COUNT; s++) {
		const char *n = al_status_name((enum al_status)s);

		assert_int_equal(al_status_from_name(n, strlen(n)), s);
	}
	assert_int_equal(al_status_from_name("ok", 2), -EINVAL);
	assert_string_equal(al_status_name(AL_STATUS_COUNT), "??");
	assert_string_equal(al_verdict_name(AL_VERDICT_WRONG_ANSWER),
			    "wrong_answer");
	assert_string_equal(al_accel_name(AL_ACCEL_KVM), "kvm");
	assert_string_equal(al_accel_name(AL_ACCEL_TCG), "tcg");
}

/* Judge0 CE's status ids (app/enumerations/status.rb) per verdict. */
static void test_verdicts(void **state)
{
	struct al_step_result st[3] = {
	    {.status = AL_OK, .verdict = AL_VERDICT_ACCEPTED},
	    {.status = AL_SG, .signal = 11,
	     .verdict = AL_VERDICT_RUNTIME_ERROR},
	    {.status = AL_TO, .verdict = AL_VERDICT_TIME_LIMIT}};
	struct al_result r = {.steps = st, .n_steps = 3,
			      .verdict = AL_VERDICT_RUNTIME_ERROR};
	char buf[64];

	(void)state;
	assert_int_equal(al_verdict_judge0(AL_VERDICT_ACCEPTED, 0), 3);
	assert_int_equal(al_verdict_judge0(AL_VERDICT_WRONG_ANSWER, 0), 4);
	assert_int_equal(al_verdict_judge0(AL_VERDICT_TIME_LIMIT, 0), 5);
	assert_int_equal(al_verdict_judge0(AL_VERDICT_COMPILE_ERROR, 0), 6);
	assert_int_equal(al_verdict_judge0(AL_VERDICT_RUNTIME_ERROR, 11), 7);
	assert_int_equal(al_verdict_judge0(AL_VERDICT_RUNTIME_ERROR, 25), 8);
	assert_int_equal(al_verdict_judge0(AL_VERDICT_RUNTIME_ERROR, 8), 9);
	assert_int_equal(al_verdict_judge0(AL_VERDICT_RUNTIME_ERROR, 6), 10);
	assert_int_equal(al_verdict_judge0(AL_VERDICT_RUNTIME_ERROR, 0), 11);
	assert_int_equal(al_verdict_judge0(AL_VERDICT_RUNTIME_ERROR, 9), 12);
	assert_int_equal(al_verdict_judge0(AL_VERDICT_INTERNAL_ERROR, 0), 13);
	assert_int_equal(al_verdict_judge0(AL_VERDICT_SKIPPED, 0), 0);
	assert_string_equal(al_verdict_name(AL_VERDICT_COMPILE_ERROR),
			    "compile_error");
	assert_string_equal(al_verdict_name(AL_VERDICT_COUNT), "??");
	assert_string_equal(al_signal_name(11), "SIGSEGV");
	assert_null(al_signal_name(0));
	assert_null(al_signal_name(64));
	assert_int_equal(al_verdict_of_status(AL_OK, false),
			 AL_VERDICT_WRONG_ANSWER);
	assert_int_equal(al_verdict_of_status(AL_TL, true),
			 AL_VERDICT_TIME_LIMIT);
	assert_int_equal(al_verdict_of_status(AL_XX, true),
			 AL_VERDICT_INTERNAL_ERROR);
	/* the verdict's step is the first failure: its signal is named */
	assert_int_equal(al_result_failed_step(&r), 1);
	assert_int_equal(al_result_verdict_signal(&r), 11);
	al_verdict_text(r.verdict, 11, buf, sizeof(buf));
	assert_string_equal(buf, "runtime error (SIGSEGV)");
	al_verdict_text(AL_VERDICT_RUNTIME_ERROR, 0, buf, sizeof(buf));
	assert_string_equal(buf, "runtime error");
	al_verdict_text(AL_VERDICT_RUNTIME_ERROR, 40, buf, sizeof(buf));
	assert_string_equal(buf, "runtime error (signal 40)");
	st[1].status = AL_OK;
	st[1].verdict = AL_VERDICT_ACCEPTED;
	st[2].status = AL_OK;
	st[2].verdict = AL_VERDICT_SKIPPED;
	assert_int_equal(al_result_failed_step(&r), SIZE_MAX);
}

/* A guest cannot grade itself: what only the host says is cleared. */
static void test_guest_grades(void **state)
{
	struct al_step_result sr = {.status = AL_OK,
				    .verdict = AL_VERDICT_ACCEPTED,
				    .score = 100};

	(void)state;
	sr.compile_output.data = (uint8_t *)strdup("x");
	sr.compile_output.len = 1;
	assert_int_equal(al_step_result_from_guest(&sr), 0);
	assert_int_equal(sr.verdict, AL_VERDICT_NONE);
	assert_int_equal(sr.score, 0);
	assert_null(sr.compile_output.data);
	sr.status = AL_CE; /* the host's to decide */
	assert_int_equal(al_step_result_from_guest(&sr), 0);
	assert_int_equal(sr.status, AL_RE);
	al_step_result_release(&sr);
}

static void test_overall(void **state)
{
	struct al_step_result s[3] = {{.status = AL_OK}, {.status = AL_OK},
				      {.status = AL_OK}};
	struct al_result r = {.steps = s, .n_steps = 3};

	(void)state;
	assert_int_equal(al_result_overall_status(&r), AL_OK);
	s[2].status = AL_SK;
	assert_int_equal(al_result_overall_status(&r), AL_OK);
	s[1].status = AL_TO;
	s[2].status = AL_RE;
	assert_int_equal(al_result_overall_status(&r), AL_TO);
	r.n_steps = 0;
	assert_int_equal(al_result_overall_status(&r), AL_OK);
}

/* vm.jailed (issue 23, finding 5): said when set, both ways, through
 * JSON and msgpack; absent means unset (a result no worker made). */
static void test_jailed(void **state)
{
	static const char *const json[] = {
	    "{\"id\":\"a\",\"status\":\"OK\",\"vm\":{\"jailed\":false}}",
	    "{\"id\":\"a\",\"status\":\"OK\",\"vm\":{\"jailed\":true}}",
	    "{\"id\":\"a\",\"status\":\"OK\",\"vm\":{}}",
	};
	static const enum al_tristate want[] = {AL_FALSE, AL_TRUE, AL_UNSET};

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		struct al_result r = {0}, r2 = {0};
		struct al_diags d;
		char *mp = NULL, *out = NULL;
		size_t len;

		al_diags_init(&d);
		assert_int_equal(
		    al_result_from_json(json[i], strlen(json[i]), &r, &d), 0);
		assert_int_equal(r.vm.jailed, want[i]);
		assert_int_equal(al_result_to_msgpack(&r, &mp, &len), 0);
		assert_int_equal(al_result_from_msgpack(mp, len, &r2, &d), 0);
		assert_int_equal(r2.vm.jailed, want[i]);
		assert_int_equal(al_result_to_json(&r2, &out), 0);
		if (want[i] == AL_UNSET)
			assert_null(strstr(out, "jailed"));
		else
			assert_non_null(strstr(out, want[i] == AL_TRUE
							? "\"jailed\":true"
							: "\"jailed\":false"));
		free(mp);
		free(out);
		al_result_release(&r);
		al_result_release(&r2);
	}
}

/* Output over AL_OUTPUT_MAX in a record is refused before it is copied. */
/* What a guest may report: its XX (or RJ, SK) becomes RE, so the queue
 * never retries on a guest's word; how processes end passes unchanged. */
/* Test records round trip; a name past AL_TEST_NAME_MAX is refused. */
static void test_tests(void **state)
{
	static const char json[] =
	    "{\"id\":\"a\",\"status\":\"OK\",\"steps\":[{\"status\":\"RE\","
	    "\"test_counts\":{\"total\":3,\"passed\":1,\"failed\":1,"
	    "\"error\":0,\"skipped\":1},\"tests\":[{\"name\":\"t1\","
	    "\"suite\":\"s\",\"status\":\"passed\",\"time_ms\":3,"
	    "\"report\":0},{\"name\":\"t2\",\"status\":\"failed\","
	    "\"message\":\"1 != 2\",\"report\":1}],\"reports_error\":"
	    "\"report[1]: planned 3 tests, read 2\"}],"
	    "\"test_counts\":{\"total\":3,\"passed\":1,\"failed\":1,"
	    "\"error\":0,\"skipped\":1}}";
	struct al_result r = {0}, back = {0};
	struct al_diags d;
	char *text, *big, *text2;
	size_t off;

	(void)state;
	al_diags_init(&d);
	assert_int_equal(al_result_from_json(json, strlen(json), &r, &d), 0);
	assert_true(r.has_tests && r.steps[0].has_tests);
	assert_int_equal(r.steps[0].n_tests, 2);
	assert_int_equal(r.steps[0].tests[1].status, AL_TEST_FAILED);
	assert_string_equal(r.steps[0].tests[1].message, "1 != 2");
	assert_int_equal(r.test_counts.skipped, 1);
	assert_int_equal(al_result_to_json(&r, &text), 0);
	assert_int_equal(al_result_from_json(text, strlen(text), &back, &d), 0);
	assert_int_equal(al_result_to_json(&back, &text2), 0);
	assert_string_equal(text, text2);
	/* what only the host reads, a guest cannot send */
	assert_int_equal(al_step_result_from_guest(&back.steps[0]), 0);
	assert_false(back.steps[0].has_tests);
	assert_null(back.steps[0].tests);
	assert_null(back.steps[0].reports_error);
	free(text);
	free(text2);
	al_result_release(&back);
	al_result_release(&r);
	big = malloc(AL_TEST_NAME_MAX + 256);
	assert_non_null(big);
	snprintf(big, 128,
		 "{\"id\":\"a\",\"status\":\"OK\",\"steps\":[{"
		 "\"status\":\"OK\",\"tests\":[{\"status\":"
		 "\"passed\",\"name\":\"");
	off = strlen(big);
	memset(big + off, 'n', AL_TEST_NAME_MAX + 1);
	strcpy(big + off + AL_TEST_NAME_MAX + 1, "\"}]}]}");
	assert_int_equal(al_result_from_json(big, strlen(big), &r, &d),
			 -EINVAL);
	free(big);
}

static void test_from_guest(void **state)
{
	static const enum al_status keep[] = {AL_OK, AL_RE, AL_SG,
					      AL_TO, AL_ML, AL_OL};
	static const enum al_status map[] = {AL_XX, AL_RJ, AL_SK, AL_CX,
					     (enum al_status)77};
	struct al_step_result sr;

	(void)state;
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		memset(&sr, 0, sizeof(sr));
		sr.status = keep[i];
		assert_int_equal(al_step_result_from_guest(&sr), 0);
		assert_int_equal(sr.status, keep[i]);
		assert_null(sr.error);
	}
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		memset(&sr, 0, sizeof(sr));
		sr.status = map[i];
		sr.error = i ? NULL : strdup("fork: Resource unavailable");
		assert_int_equal(al_step_result_from_guest(&sr), 0);
		assert_int_equal(sr.status, AL_RE);
		assert_non_null(sr.error);
		assert_true(!strncmp(sr.error, "guest agent reported ", 21));
		al_step_result_release(&sr);
	}
	memset(&sr, 0, sizeof(sr));
	sr.status = AL_XX;
	sr.error = strdup("fork: Resource unavailable");
	assert_int_equal(al_step_result_from_guest(&sr), 0);
	assert_string_equal(sr.error,
			    "guest agent reported XX: fork: Resource unavailable");
	al_step_result_release(&sr);
}

static void test_stream_cap(void **state)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct al_result r = {0};
	struct al_diags d;
	char *big = calloc(1, AL_OUTPUT_MAX + 1);

	(void)state;
	assert_non_null(big);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	msgpack_pack_str_with_body(&pk, "id", 2);
	msgpack_pack_str_with_body(&pk, "a", 1);
	msgpack_pack_str_with_body(&pk, "status", 6);
	msgpack_pack_str_with_body(&pk, "OK", 2);
	msgpack_pack_str_with_body(&pk, "steps", 5);
	msgpack_pack_array(&pk, 1);
	msgpack_pack_map(&pk, 2);
	msgpack_pack_str_with_body(&pk, "status", 6);
	msgpack_pack_str_with_body(&pk, "OK", 2);
	msgpack_pack_str_with_body(&pk, "stdout", 6);
	msgpack_pack_bin_with_body(&pk, big, AL_OUTPUT_MAX + 1);
	al_diags_init(&d);
	assert_int_equal(al_result_from_msgpack(sb.data, sb.size, &r, &d),
			 -EINVAL);
	assert_string_equal(d.items[0].path, "steps[0].stdout");
	assert_string_equal(d.items[0].reason, "larger than 16777216 bytes");
	msgpack_sbuffer_destroy(&sb);
	free(big);
}

/* `digest`: the payload's SHA-256 in hex, through msgpack and back; a
 * result is its payload's only with that very digest. */
static void test_digest(void **state)
{
	struct al_result res = {0}, back = {0};
	char want[AL_DIGEST_HEX + 1], *mp = NULL;
	struct al_diags d;
	size_t len = 0;

	(void)state;
	al_digest_hex("", 0, want);
	assert_string_equal(want, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b"
				  "934ca495991b7852b855");
	res.id = strdup("a");
	res.digest = strdup(want);
	assert_int_equal(al_result_to_msgpack(&res, &mp, &len), 0);
	al_diags_init(&d);
	assert_int_equal(al_result_from_msgpack(mp, len, &back, &d), 0);
	assert_string_equal(back.digest, want);
	assert_true(al_result_digest_is(&back, want));
	want[0] = '0';
	assert_false(al_result_digest_is(&back, want));
	free(back.digest);
	back.digest = NULL;
	assert_false(al_result_digest_is(&back, want));
	free(mp);
	al_result_release(&res);
	al_result_release(&back);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rules),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_verdicts),
	    cmocka_unit_test(test_guest_grades),
	    cmocka_unit_test(test_overall),
	    cmocka_unit_test(test_jailed),
	    cmocka_unit_test(test_from_guest),
	    cmocka_unit_test(test_tests),
	    cmocka_unit_test(test_stream_cap),
	    cmocka_unit_test(test_digest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
