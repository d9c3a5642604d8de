/* test_opts.c: results/opts.c: getopt_long's long table and short string
 * derived from one table, the limits of both, and a real parse through
 * al_opts_next() (getopt itself, reset between tests).
 */
#include <errno.h>
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "opts.h"

static const struct al_opt table[] = {
    {"template", 't', AL_OPT_ARG | AL_OPT_SHORT},
    {"json", 'j', AL_OPT_SHORT},
    {"jobs", 'n', AL_OPT_ARG},
    {"force", 'f', 0},
    {"redis", 0x100, AL_OPT_ARG},
    {NULL, 'k', AL_OPT_ARG | AL_OPT_SHORT}, /* -k only */
    {NULL, 0, 0},
};

static void test_long(void **state)
{
	struct option lo[6];

	(void)state;
	memset(lo, 0xff, sizeof(lo));
	assert_int_equal(al_opts_long(table, lo, 6), 5); /* not -k */
	assert_string_equal(lo[0].name, "template");
	assert_int_equal(lo[0].has_arg, required_argument);
	assert_int_equal(lo[0].val, 't');
	assert_null(lo[0].flag);
	assert_int_equal(lo[1].has_arg, no_argument);
	assert_int_equal(lo[2].has_arg, required_argument);
	assert_int_equal(lo[3].has_arg, no_argument);
	assert_int_equal(lo[4].val, 0x100);
	assert_null(lo[5].name); /* the end */
	assert_int_equal(lo[5].val, 0);
}

static void test_long_limits(void **state)
{
	static const struct al_opt none[] = {{NULL, 0, 0}};
	struct option lo[6];

	(void)state;
	assert_int_equal(al_opts_long(table, lo, 5), -E2BIG); /* no end */
	assert_int_equal(al_opts_long(table, lo, 6), 5); /* exactly */
	assert_int_equal(al_opts_long(table, lo, 0), -E2BIG);
	assert_int_equal(al_opts_long(none, lo, 1), 0);
	assert_null(lo[0].name);
	assert_int_equal(al_opts_long(NULL, lo, 1), 0);
	assert_int_equal(al_opts_long(none, lo, 0), -E2BIG);
}

static void test_short(void **state)
{
	static const struct al_opt longonly[] = {{"jobs", 'n', AL_OPT_ARG},
						 {NULL, 0, 0}};
	static const struct al_opt notletter[] = {
	    {"redis", 0x100, AL_OPT_ARG | AL_OPT_SHORT}, {NULL, 0, 0}};
	char s[8];

	(void)state;
	assert_int_equal(al_opts_short(table, s, sizeof(s)), 0);
	assert_string_equal(s, "t:jk:");
	assert_int_equal(al_opts_short(table, s, 6), 0); /* exactly */
	assert_string_equal(s, "t:jk:");
	assert_int_equal(al_opts_short(table, s, 5), -E2BIG);
	assert_int_equal(al_opts_short(longonly, s, 1), 0);
	assert_string_equal(s, "");
	assert_int_equal(al_opts_short(longonly, s, 0), -E2BIG);
	assert_int_equal(al_opts_short(notletter, s, sizeof(s)), -EINVAL);
}

/* Parse argv (NULL-ended) with the table; the codes seen into got. */
static int parse(char **argv, int *got, const char **args, int max)
{
	int argc = 0, c, n = 0;

	while (argv[argc])
		argc++;
	optind = 0; /* a fresh getopt scan */
	opterr = 0;
	while ((c = al_opts_next(argc, argv, table)) != -1 && n < max) {
		args[n] = optarg;
		got[n++] = c;
	}
	return n;
}

static void test_next(void **state)
{
	char *argv[] = {"prog", "-t", "py", "--jobs", "3", "-j", "--force",
			"--redis=unix:///r", "--template", "c", "-k1,10",
			"rest", NULL};
	const char *args[10];
	int got[10];

	(void)state;
	assert_int_equal(parse(argv, got, args, 10), 7);
	assert_int_equal(got[0], 't');
	assert_string_equal(args[0], "py");
	assert_int_equal(got[1], 'n');
	assert_string_equal(args[1], "3");
	assert_int_equal(got[2], 'j');
	assert_int_equal(got[3], 'f');
	assert_int_equal(got[4], 0x100);
	assert_string_equal(args[4], "unix:///r");
	assert_int_equal(got[5], 't');
	assert_string_equal(args[5], "c");
	assert_int_equal(got[6], 'k');
	assert_string_equal(args[6], "1,10");
	assert_string_equal(argv[optind], "rest");
}

static void test_next_refuses(void **state)
{
	char *longonly[] = {"prog", "-n", "3", NULL}; /* no short -n */
	char *noarg[] = {"prog", "--jobs", NULL};
	char *unknown[] = {"prog", "--nope", NULL};
	char *nolong[] = {"prog", "--k", "1", NULL}; /* -k has no long name */
	const char *args[4];
	int got[4];

	(void)state;
	assert_int_equal(parse(longonly, got, args, 4), 1);
	assert_int_equal(got[0], '?');
	assert_int_equal(parse(noarg, got, args, 4), 1);
	assert_int_equal(got[0], '?');
	assert_int_equal(parse(unknown, got, args, 4), 1);
	assert_int_equal(got[0], '?');
	assert_int_equal(parse(nolong, got, args, 4), 1);
	assert_int_equal(got[0], '?');
}

static void test_next_too_long(void **state)
{
	static struct al_opt big[AL_OPTS_MAX + 2];
	char *argv[] = {"prog", "--o", NULL};

	(void)state;
	for (int i = 0; i <= AL_OPTS_MAX; i++)
		big[i] = (struct al_opt){"o", 'o', 0};
	optind = 0;
	assert_int_equal(al_opts_next(2, argv, big), -E2BIG);
	big[AL_OPTS_MAX] = (struct al_opt){NULL, 0, 0}; /* exactly the most */
	big[0].flags = AL_OPT_SHORT;
	big[0].code = '-';
	optind = 0;
	assert_int_equal(al_opts_next(2, argv, big), -EINVAL);
	big[0] = (struct al_opt){"o", 'o', 0};
	optind = 0;
	assert_int_equal(al_opts_next(2, argv, big), 'o');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_long),	 cmocka_unit_test(test_long_limits),
	    cmocka_unit_test(test_short),	 cmocka_unit_test(test_next),
	    cmocka_unit_test(test_next_refuses),
	    cmocka_unit_test(test_next_too_long),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
