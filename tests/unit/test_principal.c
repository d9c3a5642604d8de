/* test_principal.c: tokens files to principals (tools/config/principal.c):
 * every refused line, lookups, the operator role, the file's mode, and
 * the single http.token_file as the operator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "principal.h"

#define TA "tok-alice-0123456789"
#define TB "tok-bob-0123456789ab"
#define TO "tok-ops-0123456789ab"

static void test_parse(void **state)
{
	struct al_principals p;
	char err[256];
	const struct al_principal *w;

	(void)state;
	assert_int_equal(al_principals_parse("# tenants\n\nalice " TA "\n"
					     "bob\t" TB "  # second\n"
					     "ops " TO " operator\n",
					     "t", &p, err, sizeof(err)),
			 0);
	assert_int_equal(p.n, 3);
	w = al_principals_find(&p, TA);
	assert_non_null(w);
	assert_string_equal(w->name, "alice");
	assert_false(w->operator);
	assert_string_equal(al_principal_session_name(w), "alice");
	w = al_principals_find(&p, TB);
	assert_string_equal(w->name, "bob");
	w = al_principals_find(&p, TO);
	assert_true(w->operator);
	assert_string_equal(al_principal_session_name(w), "");
	assert_null(al_principals_find(&p, "tok-alice-012345678"));
	assert_null(al_principals_find(&p, TA "x"));
	assert_null(al_principals_find(&p, ""));
	assert_null(al_principals_find(&p, NULL));
	al_principals_release(&p);
	assert_int_equal(p.n, 0);
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
	    "alice\n",			       /* no token */
	    "alice " TA " admin\n",	       /* not the operator word */
	    "alice " TA " operator x\n",       /* too many words */
	    "al/ice " TA "\n",		       /* name */
	    "alice short\n",		       /* token too short */
	    "alice " TA "\nalice " TB "\n",    /* name twice */
	    "alice " TA "\nbob " TA "\n",      /* token twice */
	    "alice tok\x01-0123456789abcdef\n" /* token bytes */
	};
	struct al_principals p;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(
		    al_principals_parse(bad[i], "t", &p, err, sizeof(err)),
		    -EINVAL);
		assert_int_equal(p.n, 0);
		assert_non_null(strstr(err, "t line "));
	}
}

static void test_load(void **state)
{
	char dir[] = "/tmp/al-principal-XXXXXX", path[64], err[256];
	struct al_config cfg;
	struct al_principals p;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	al_config_init(&cfg);
	/* nothing configured: no principal (loopback acts as operator) */
	assert_int_equal(al_principals_load(&cfg, &p, err, sizeof(err)), 0);
	assert_int_equal(p.n, 0);
	assert_true(al_principal_operator()->operator);
	/* the one token of token_file is the operator */
	snprintf(path, sizeof(path), "%s/token", dir);
	f = fopen(path, "we");
	fputs(TO "\n", f);
	fclose(f);
	chmod(path, 0600);
	snprintf(cfg.http.token_file, sizeof(cfg.http.token_file), "%s", path);
	assert_int_equal(al_principals_load(&cfg, &p, err, sizeof(err)), 0);
	assert_int_equal(p.n, 1);
	assert_true(al_principals_find(&p, TO)->operator);
	al_principals_release(&p);
	/* tokens_file wins, and must not be readable by others */
	snprintf(path, sizeof(path), "%s/tokens", dir);
	f = fopen(path, "we");
	fputs("alice " TA "\n", f);
	fclose(f);
	chmod(path, 0644);
	snprintf(cfg.http.tokens_file, sizeof(cfg.http.tokens_file), "%s",
		 path);
	assert_int_equal(al_principals_load(&cfg, &p, err, sizeof(err)),
			 -EPERM);
	chmod(path, 0600);
	assert_int_equal(al_principals_load(&cfg, &p, err, sizeof(err)), 0);
	assert_int_equal(p.n, 1);
	assert_null(al_principals_find(&p, TO));
	assert_false(al_principals_find(&p, TA)->operator);
	al_principals_release(&p);
	unlink(path);
	snprintf(path, sizeof(path), "%s/token", dir);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
