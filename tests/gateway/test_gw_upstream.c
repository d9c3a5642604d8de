/* test_gw_upstream.c: what an upstream's documents say about one
 * version's files (upstream.h): PEP 691 JSON, PEP 503 HTML, npm package
 * documents, RFC 3339 times; files without a hash are never taken. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "upstream.h"

#define H64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static struct gw_up_file f[GW_UP_FILES_MAX];
static char err[256];

static void test_time(void **state)
{
	int64_t t;

	(void)state;
	assert_int_equal(gw_up_time_parse("2024-01-01T00:00:00Z", &t), 0);
	assert_int_equal(t, 1704067200);
	assert_int_equal(gw_up_time_parse("2024-01-01T00:00:00.123456Z", &t),
			 0);
	assert_int_equal(t, 1704067200);
	assert_int_equal(gw_up_time_parse("2024-01-01T02:00:00+02:00", &t), 0);
	assert_int_equal(t, 1704067200);
	assert_int_equal(gw_up_time_parse("2023-12-31T23:00:00-01:00", &t), 0);
	assert_int_equal(t, 1704067200);
	assert_int_equal(gw_up_time_parse("2024-01-01 00:00:00Z", &t), -EINVAL);
	assert_int_equal(gw_up_time_parse("2024-13-01T00:00:00Z", &t), -EINVAL);
	assert_int_equal(gw_up_time_parse("2024-01-01T00:00:00", &t), -EINVAL);
	assert_int_equal(gw_up_time_parse(NULL, &t), -EINVAL);
}

static void test_pypi_json(void **state)
{
	const char *doc =
	    "{\"meta\":{\"api-version\":\"1.1\"},\"name\":\"Tiny_Pkg\","
	    "\"files\":["
	    "{\"filename\":\"tiny_pkg-1.0-py3-none-any.whl\",\"url\":\"a.whl\","
	    "\"hashes\":{\"sha256\":\"" H64 "\"},\"size\":10,"
	    "\"upload-time\":\"2024-01-01T00:00:00Z\"},"
	    "{\"filename\":\"tiny_pkg-1.0.tar.gz\",\"url\":\"b\","
	    "\"hashes\":{\"sha256\":\"" H64 "\"}},"
	    "{\"filename\":\"tiny_pkg-1.1-py3-none-any.whl\",\"url\":\"c\","
	    "\"hashes\":{}},"
	    "{\"filename\":\"tiny_pkg-1.0.zip\",\"url\":\"d\",\"hashes\":{}},"
	    "{\"filename\":\"../x-1.0-py3-none-any.whl\",\"url\":\"e\"}]}";
	int n;

	(void)state;
	n = gw_up_pypi_files(doc, strlen(doc), true, "tiny-pkg", "1.0", f,
			     GW_UP_FILES_MAX, err, sizeof(err));
	assert_int_equal(n, 2);
	assert_string_equal(f[0].file, "tiny_pkg-1.0-py3-none-any.whl");
	assert_string_equal(f[0].url, "a.whl");
	assert_string_equal(f[0].sha256, H64);
	assert_int_equal(f[0].size, 10);
	assert_int_equal(f[0].time_s, 1704067200);
	assert_string_equal(f[1].file, "tiny_pkg-1.0.tar.gz");
	assert_int_equal(f[1].time_s, 0);
	/* 1.1's file has no sha256: refused, not fetched unchecked */
	n = gw_up_pypi_files(doc, strlen(doc), true, "tiny-pkg", "1.1", f,
			     GW_UP_FILES_MAX, err, sizeof(err));
	assert_int_equal(n, -EBADMSG);
	assert_non_null(strstr(err, "no sha256"));
	assert_int_equal(gw_up_pypi_files(doc, strlen(doc), true, "tiny-pkg",
					  "9", f, GW_UP_FILES_MAX, err,
					  sizeof(err)),
			 0);
	/* at most max files */
	assert_int_equal(gw_up_pypi_files(doc, strlen(doc), true, "tiny-pkg",
					  "1.0", f, 1, err, sizeof(err)),
			 -EBADMSG);
	assert_int_equal(gw_up_pypi_files("[]", 2, true, "x", "1", f,
					  GW_UP_FILES_MAX, err, sizeof(err)),
			 -EBADMSG);
	assert_int_equal(gw_up_pypi_files(doc, GW_UP_DOC_MAX + 1ul, true, "x",
					  "1", f, GW_UP_FILES_MAX, err,
					  sizeof(err)),
			 -EFBIG);
}

static void test_pypi_html(void **state)
{
	const char *doc =
	    "<!DOCTYPE html><html><body>\n"
	    "<a href=\"../../f/tinypkg-1.0-py3-none-any.whl#sha256=" H64
	    "\" data-requires-python=\"&gt;=3.7\">tinypkg-1.0-py3-none-any.whl"
	    "</a><br/>\n"
	    "<A class='x' HREF='q?a=1&amp;b=2#sha256=" H64
	    "'>\n TinyPkg-1.0.tar.gz </A>\n"
	    "<a href=\"nohash\">tinypkg-2.0-py3-none-any.whl</a>\n"
	    "<a href=\"x#sha256=" H64 "\">other-1.0-py3-none-any.whl</a>\n"
	    "</body></html>";
	int n;

	(void)state;
	n = gw_up_pypi_files(doc, strlen(doc), false, "tinypkg", "1.0", f,
			     GW_UP_FILES_MAX, err, sizeof(err));
	assert_int_equal(n, 2);
	assert_string_equal(f[0].file, "tinypkg-1.0-py3-none-any.whl");
	assert_string_equal(f[0].url, "../../f/tinypkg-1.0-py3-none-any.whl");
	assert_string_equal(f[0].sha256, H64);
	assert_string_equal(f[1].file, "TinyPkg-1.0.tar.gz");
	assert_string_equal(f[1].url, "q?a=1&b=2");
	assert_int_equal(gw_up_pypi_files(doc, strlen(doc), false, "tinypkg",
					  "2.0", f, GW_UP_FILES_MAX, err,
					  sizeof(err)),
			 -EBADMSG);
	/* a NUL in a URL or a file name never cuts it short */
	static const char nul[] =
	    "<html><a href=\"\0x#sha256=" H64
	    "\">tinypkg-1.0-py3-none-any.whl</a>"
	    "<a href=\"y#sha256=" H64
	    "\">tinypkg-1.0-py3-none-any.whl\0x</a></html>";
	assert_int_equal(gw_up_pypi_files(nul, sizeof(nul) - 1, false,
					  "tinypkg", "1.0", f, GW_UP_FILES_MAX,
					  err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "not visible ASCII"));
	assert_int_equal(gw_up_pypi_files("{}", 2, false, "tinypkg", "2.0", f,
					  GW_UP_FILES_MAX, err, sizeof(err)),
			 -EBADMSG);
}

static void test_npm(void **state)
{
	const char *doc =
	    "{\"name\":\"@s/tiny\",\"versions\":{"
	    "\"1.0.0\":{\"dist\":{\"tarball\":\"http://r/@s/tiny/-/"
	    "tiny-1.0.0.tgz?x=1\",\"integrity\":\"sha512-"
	    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	    "A"
	    "AAAAAAAAAAAAAAAAAAA==\"}},"
	    "\"2.0.0\":{\"dist\":{\"tarball\":\"http://r/t-2.0.0.tgz\","
	    "\"shasum\":\"abc\"}},"
	    "\"3.0.0\":{\"dist\":{\"tarball\":\"http://r/../\","
	    "\"integrity\":\"sha512-"
	    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	    "A"
	    "AAAAAAAAAAAAAAAAAAA==\"}}},"
	    "\"time\":{\"1.0.0\":\"2024-01-01T00:00:00.000Z\"}}";

	(void)state;
	assert_int_equal(gw_up_npm_file(doc, strlen(doc), "@s/tiny", "1.0.0", f,
					err, sizeof(err)),
			 1);
	assert_string_equal(f[0].file, "tiny-1.0.0.tgz");
	assert_int_equal(f[0].time_s, 1704067200);
	assert_int_equal(strlen(f[0].sha512), GW_SHA512_B64);
	assert_int_equal(gw_up_npm_file(doc, strlen(doc), "@s/tiny", "2.0.0", f,
					err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "no sha512"));
	assert_int_equal(gw_up_npm_file(doc, strlen(doc), "@s/tiny", "3.0.0", f,
					err, sizeof(err)),
			 -EBADMSG);
	assert_int_equal(gw_up_npm_file(doc, strlen(doc), "@s/tiny", "4.0.0", f,
					err, sizeof(err)),
			 0);
	assert_int_equal(gw_up_npm_file("{\"versions\":[]}", 15, "x", "1", f,
					err, sizeof(err)),
			 -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_time),
	    cmocka_unit_test(test_pypi_json),
	    cmocka_unit_test(test_pypi_html),
	    cmocka_unit_test(test_npm),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
