/* fuzz_report.c: libFuzzer target for a step's test reports
 * (worker/testreport.c): JUnit XML through expat (fuzz_junit) or TAP
 * (fuzz_tap, built with -DFUZZ_TAP). Whatever the bytes, it returns, every
 * record it keeps keeps the rules (valid UTF-8 within the caps, a known
 * status), the counts add up, and the caps on records hold. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testreport.h"

#ifdef FUZZ_TAP
#define FORMAT AL_REPORT_TAP
#define NAME   "fuzz_tap"
#else
#define FORMAT AL_REPORT_JUNIT
#define NAME   "fuzz_junit"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const char *s, size_t max, bool may_be_null)
{
	if (!s) {
		if (!may_be_null)
			abort();
		return;
	}
	if (strlen(s) > max || !al_utf8_valid((const uint8_t *)s, strlen(s)))
		abort();
}

static void check(const struct al_report_out *o)
{
	const struct al_test_counts *c = &o->counts;
	uint64_t bytes = 0;

	if (c->total != c->passed + c->failed + c->error + c->skipped ||
	    o->n_tests > o->max_tests || o->n_tests > c->total ||
	    o->n_tests + o->dropped != c->total ||
	    memchr(o->error, '\0', sizeof(o->error)) == NULL)
		abort();
	for (size_t i = 0; i < o->n_tests; i++) {
		const struct al_test_case *t = &o->tests[i];

		check_str(t->name, AL_TEST_NAME_MAX, false);
		check_str(t->suite, AL_TEST_NAME_MAX, true);
		check_str(t->message, AL_TEST_MESSAGE_MAX, true);
		if ((unsigned)t->status >= AL_TEST_STATUS_COUNT ||
		    t->report != 1)
			abort();
		bytes += al_report_record_bytes(t);
	}
	if (bytes > o->max_bytes)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct al_report_out o = {.max_tests = 50, .max_bytes = 8192};
	uint8_t *copy = malloc(size ? size : 1); /* exactly size */

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (al_report_parse(FORMAT, 1, copy, size, &o) == 0)
		check(&o);
	al_report_out_release(&o);
	free(copy);
	return 0;
}

#ifdef FUZZ_SMOKE
#include "smoke.h"

int main(int argc, char **argv)
{
#ifdef FUZZ_TAP
	static const char alphabet[] = "ok not#SKIPTODO1..-\n \t\\\0\xff";
	static const char splice[] = "\nnot ok 7 - x # TODO y\n  ---\n";
#else
	static const char alphabet[] = "<>/=\"'&;!?[]tesuicaf \n\0\xff";
	static const char splice[] = "<testcase name=\"x\"><error/>";
#endif
	static const struct smoke s = {
	    .name = NAME,
	    .rounds = 20000,
	    .max_seeds = 32,
	    .seed_bytes = 8192,
	    .alphabet = alphabet,
	    .n_alphabet = sizeof(alphabet) - 1,
	    .splice = splice,
	    .n_splice = sizeof(splice) - 1,
	};

	return smoke_main(&s, argc, argv);
}
#endif
