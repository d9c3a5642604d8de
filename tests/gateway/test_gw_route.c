/* test_gw_route.c: request routes and Accept negotiation (route.h), the
 * look-alike check (lookalike.h), npm version order (pages.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lookalike.h"
#include "pages.h"
#include "route.h"

static void test_routes(void **state)
{
	struct gw_route r;

	(void)state;
	assert_int_equal(gw_route_parse("GET", "/pypi/simple/", &r), 0);
	assert_int_equal(r.kind, GW_R_PY_INDEX);
	assert_int_equal(
	    gw_route_parse("GET", "/pypi/simple/Zope.Interface/", &r), 0);
	assert_int_equal(r.kind, GW_R_PY_PROJECT);
	assert_string_equal(r.key, "zope-interface");
	assert_int_equal(gw_route_parse("HEAD", "/pypi/simple/a_b", &r), 0);
	assert_string_equal(r.key, "a-b");
	assert_int_equal(
	    gw_route_parse("GET", "/pypi/files/x-1.0-py3-none-any.whl.metadata",
			   &r),
	    0);
	assert_int_equal(r.kind, GW_R_PY_META);
	assert_string_equal(r.file, "x-1.0-py3-none-any.whl");
	assert_int_equal(gw_route_parse("GET", "/left-pad", &r), 0);
	assert_int_equal(r.kind, GW_R_NPM_DOC);
	assert_int_equal(gw_route_parse("GET", "/@types%2fnode", &r), 0);
	assert_string_equal(r.key, "@types/node");
	assert_int_equal(
	    gw_route_parse("GET", "/@types/node/-/node-1.0.0.tgz", &r), 0);
	assert_int_equal(r.kind, GW_R_NPM_TARBALL);
	assert_string_equal(r.file, "node-1.0.0.tgz");
	/* refused */
	assert_int_equal(gw_route_parse("POST", "/pypi/simple/", &r),
			 -EOPNOTSUPP);
	assert_int_equal(gw_route_parse("GET", "/pypi/files/../x.whl", &r),
			 -EINVAL);
	assert_int_equal(gw_route_parse("GET", "/pypi/files/%2e%2e/x.whl", &r),
			 -EINVAL);
	assert_int_equal(gw_route_parse("GET", "/pypi/files/a%2fb.whl", &r),
			 -ENOENT);
	assert_int_equal(gw_route_parse("GET", "/pypi/simple/a%00/", &r),
			 -EINVAL);
	assert_int_equal(gw_route_parse("GET", "/pypi/simple/%c3%a9/", &r),
			 -EINVAL);
	assert_int_equal(gw_route_parse("GET", "/pypi/simple/%4", &r), -EINVAL);
	assert_int_equal(gw_route_parse("GET", "//pypi/simple/", &r), -EINVAL);
	assert_int_equal(gw_route_parse("GET", "/-/npm/v1/security/audits", &r),
			 -ENOENT);
	assert_int_equal(gw_route_parse("GET", "/Upper", &r), -EINVAL);
	assert_int_equal(gw_route_parse("GET", "/x/-/.hidden.tgz", &r),
			 -EINVAL);
	assert_int_equal(gw_route_parse("GET", "/x/-/x.zip", &r), -EINVAL);
	char big[GW_PATH_MAX + 2];
	memset(big, 'a', sizeof(big));
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(gw_route_parse("GET", big, &r), -EMSGSIZE);
}

static void test_accept(void **state)
{
	(void)state;
	assert_int_equal(gw_accept(NULL), GW_FMT_HTML);
	assert_int_equal(gw_accept(""), GW_FMT_HTML);
	/* what pip sends */
	assert_int_equal(
	    gw_accept("application/vnd.pypi.simple.v1+json, "
		      "application/vnd.pypi.simple.v1+html; q=0.1, "
		      "text/html; q=0.01"),
	    GW_FMT_JSON);
	assert_int_equal(gw_accept("application/vnd.pypi.simple.v1+json;q=0.2, "
				   "text/html"),
			 GW_FMT_HTML);
	assert_int_equal(gw_accept("application/vnd.pypi.simple.latest+json"),
			 GW_FMT_JSON);
	assert_int_equal(gw_accept("*/*"), GW_FMT_HTML);
	assert_int_equal(gw_accept("image/png"), GW_FMT_NONE);
	assert_int_equal(gw_accept("application/vnd.pypi.simple.v1+json;q=0"),
			 GW_FMT_NONE);
	assert_true(gw_accept_npm_abbreviated(
	    "application/vnd.npm.install-v1+json; q=1.0, */*"));
	assert_false(gw_accept_npm_abbreviated("application/json"));
}

static void test_lookalike(void **state)
{
	static const struct {
		const char *name, *near;
	} hits[] = {
	    {"reqeusts", "requests"},	   {"colourama", "colorama"},
	    {"python-jwt2", "python-jwt"}, {"jwt-python", "python-jwt"},
	    {"djang0", "django"},	   {"nurnpy", "numpy"},
	    {"requests-dev", "requests"},  {"lodahs", "lodash"},
	};
	char near[GW_NAME_MAX + 1], why[GW_LOOKALIKE_WHY_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(hits) / sizeof(hits[0]); i++) {
		enum gw_eco eco =
		    strcmp(hits[i].near, "lodash") ? GW_PYTHON : GW_NPMJS;

		assert_true(gw_lookalike(NULL, eco, hits[i].name, near, why));
		assert_string_equal(near, hits[i].near);
	}
	assert_false(gw_lookalike(NULL, GW_PYTHON, "requests", near, why));
	assert_false(gw_lookalike(NULL, GW_PYTHON, "tinypkg", near, why));
	assert_false(gw_lookalike(NULL, GW_PYTHON, "httpie", near, why));
	assert_true(gw_lookalike_pair("lo_dash", "lo-dash", why));
	assert_string_equal(why, "same name once normalised");
}

static void test_semver(void **state)
{
	(void)state;
	assert_true(gw_semver_cmp("1.10.0", "1.9.0") > 0);
	assert_true(gw_semver_cmp("2.0.0-rc.1", "2.0.0") < 0);
	assert_true(gw_semver_cmp("1.0.0", "1.0.0") == 0);
	assert_true(gw_semver_cmp("0.9.9", "1.0.0") < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_routes),
	    cmocka_unit_test(test_accept),
	    cmocka_unit_test(test_lookalike),
	    cmocka_unit_test(test_semver),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
