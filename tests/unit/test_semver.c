/* test_semver.c: Piston's `version` selector (tools/api/doors/semver.c)
 * against tests/compat/semver_table.tsv, the table semver_check.mjs
 * checks against npm's own semver package. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "semver.h"

static void test_table(void **state)
{
	FILE *f = fopen(AL_SOURCE_DIR "/tests/compat/semver_table.tsv", "re");
	char line[512];
	int rows = 0, bad = 0;

	(void)state;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *range = line, *ver, *want;

		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		ver = strchr(range, '\t');
		assert_non_null(ver);
		*ver++ = 0;
		want = strchr(ver, '\t');
		assert_non_null(want);
		*want++ = 0;
		rows++;
		if (al_semver_fits(range, ver) != (want[0] == '1')) {
			printf("range \"%s\" %s: want %s\n", range, ver, want);
			bad++;
		}
	}
	fclose(f);
	assert_true(rows > 40);
	assert_int_equal(bad, 0);
}

/* Lengths and odd bytes: no read past the end, a too long range fits
 * nothing. */
static void test_caps(void **state)
{
	char big[300];

	(void)state;
	memset(big, ' ', sizeof(big) - 2);
	big[sizeof(big) - 2] = '*';
	big[sizeof(big) - 1] = 0;
	assert_false(al_semver_fits(big, "3.11.2"));
	assert_false(al_semver_fits(NULL, "3.11.2"));
	assert_false(al_semver_fits("*", NULL));
	assert_true(al_semver_fits("||", "3.11.2"));
	assert_false(al_semver_fits("3.11.2", "3.11"));
	assert_false(al_semver_fits("9999999999999999", "3.11.2"));
	assert_false(al_semver_fits("3 -", "3.11.2"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_caps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
