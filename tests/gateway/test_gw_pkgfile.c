/* test_gw_pkgfile.c: package files read from their bytes (pkgfile.h), the
 * allowlist parser (allow.h) and the mirror (mirror.h), on packages that
 * mkpkg.py makes at set-up: real wheels, an sdist, npm tarballs. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "allow.h"
#include "mirror.h"
#include "pkgfile.h"

static char dir[] = "/tmp/test_gw_pkgfile.XXXXXX";

static int setup(void **state)
{
	char cmd[1024];

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "python3 %s/tests/gateway/mkpkg.py %s/pk && "
		 "python3 %s/tests/gateway/mkpkg.py --crafted %s/pk/evil",
		 AL_SOURCE_DIR, dir, AL_SOURCE_DIR, dir);
	return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[512];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static uint8_t *slurp_in(const char *sub, const char *name, size_t *len)
{
	char path[512];
	uint8_t *buf = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s/pk%s", dir, sub);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(
	    gw_mirror_read(fd, name, GW_PKG_FILE_MAX, &buf, len, NULL), 0);
	close(fd);
	return buf;
}

static uint8_t *slurp(const char *name, size_t *len)
{
	return slurp_in("", name, len);
}

/* sha256 by another implementation than ours */
static void sha256sum(const char *name, char out[65])
{
	char cmd[512];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "sha256sum %s/pk/%s", dir, name);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(out, 65, p));
	pclose(p);
}

static void check(const char *file, enum gw_kind kind, const char *name,
		  const char *version, bool script)
{
	struct gw_pkg pkg;
	size_t len;
	uint8_t *data = slurp(file, &len);
	char want[65];

	assert_int_equal(gw_pkg_parse(file, data, len, &pkg), 0);
	assert_int_equal(pkg.kind, kind);
	assert_string_equal(pkg.name, name);
	assert_string_equal(pkg.version, version);
	assert_int_equal(pkg.install_script, script);
	assert_int_equal(pkg.size, len);
	sha256sum(file, want);
	assert_string_equal(pkg.sha256, want);
	assert_non_null(pkg.meta);
	assert_int_equal(strlen(pkg.meta), pkg.meta_len);
	if (kind == GW_WHEEL)
		assert_string_equal(pkg.requires_python, ">=3.7");
	gw_pkg_release(&pkg);
	free(data);
}

static void test_kinds(void **state)
{
	(void)state;
	check("tinypkg-1.0-py3-none-any.whl", GW_WHEEL, "tinypkg", "1.0",
	      false);
	check("tiny_dep-0.1-py3-none-any.whl", GW_WHEEL, "tiny_dep", "0.1",
	      false);
	check("onlysdist-1.0.tar.gz", GW_SDIST, "onlysdist", "1.0", false);
	check("tiny-npm-1.0.0.tgz", GW_NPM, "tiny-npm", "1.0.0", false);
	check("tiny-hook-1.0.0.tgz", GW_NPM, "tiny-hook", "1.0.0", true);
}

/* every prefix of a wheel and a tarball, and every byte flipped in a
 * wheel: refused or read, never a crash (ASan/UBSan builds check) */
static void test_damaged(void **state)
{
	static const char *const files[] = {"tinypkg-1.0-py3-none-any.whl",
					    "tiny-npm-1.0.0.tgz"};
	struct gw_pkg pkg;
	size_t len;

	(void)state;
	for (size_t f = 0; f < 2; f++) {
		uint8_t *data = slurp(files[f], &len);

		for (size_t n = 0; n < len; n++)
			if (gw_pkg_parse(files[f], data, n, &pkg) == 0)
				gw_pkg_release(&pkg);
		for (size_t i = 0; i < len; i++) {
			data[i] ^= 0x5a;
			if (gw_pkg_parse(files[f], data, len, &pkg) == 0)
				gw_pkg_release(&pkg);
			data[i] ^= 0x5a;
		}
		/* the short ones are refused, not read */
		assert_int_equal(gw_pkg_parse(files[f], data, len / 2, &pkg),
				 -EBADMSG);
		free(data);
	}
}

/* the name in the file name must be the one inside */
static void test_renamed(void **state)
{
	struct gw_pkg pkg;
	size_t len;
	uint8_t *data = slurp("tinypkg-1.0-py3-none-any.whl", &len);

	(void)state;
	assert_int_equal(
	    gw_pkg_parse("requests-1.0-py3-none-any.whl", data, len, &pkg),
	    -EBADMSG);
	assert_int_equal(
	    gw_pkg_parse("tinypkg-1.1-py3-none-any.whl", data, len, &pkg),
	    -EBADMSG);
	assert_int_equal(
	    gw_pkg_parse("TinyPkg-1.0-py3-none-any.whl", data, len, &pkg), 0);
	gw_pkg_release(&pkg);
	assert_int_equal(gw_pkg_parse("tinypkg-1.0.zip", data, len, &pkg),
			 -EINVAL);
	assert_int_equal(
	    gw_pkg_parse("../tinypkg-1.0-py3-none-any.whl", data, len, &pkg),
	    -EINVAL);
	free(data);
}

static void test_normalize(void **state)
{
	char out[GW_NAME_MAX + 1];

	(void)state;
	assert_int_equal(gw_pep503_normalize("Friendly-Bard", out), 0);
	assert_string_equal(out, "friendly-bard");
	assert_int_equal(gw_pep503_normalize("FRIENDLY._-BARD", out), 0);
	assert_string_equal(out, "friendly-bard");
	assert_int_equal(gw_pep503_normalize("zope.interface", out), 0);
	assert_string_equal(out, "zope-interface");
	assert_int_equal(gw_pep503_normalize("a/b", out), -EINVAL);
	assert_int_equal(gw_pep503_normalize("", out), -EINVAL);
	assert_int_equal(gw_pep503_normalize("---", out), -EINVAL);
	assert_true(gw_npm_name_valid("@scope/pkg"));
	assert_false(gw_npm_name_valid("@scope/pkg/x"));
	assert_false(gw_npm_name_valid("Upper"));
	assert_false(gw_npm_name_valid(".hidden"));
	assert_false(gw_file_name_valid(".."));
	assert_false(gw_file_name_valid("a/b.whl"));
}

#define SHA "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_allow(void **state)
{
	const char text[] =
	    "# comment\n\noption python.wheels-only\n"
	    "option min-age-days=7\n"
	    "python Tiny_Pkg 1.0 tinypkg-1.0-py3-none-any.whl " SHA "\n"
	    "npm    tiny-npm 1.0.0 tiny-npm-1.0.0.tgz\t" SHA "\n"
	    "allow-scripts tiny-npm 1.0.0\nallow-scripts tiny-npm 1.0.0\n";
	struct gw_allow a;
	char err[256], line[512];

	(void)state;
	assert_int_equal(
	    gw_allow_parse("t", text, sizeof(text) - 1, &a, err, sizeof(err)),
	    0);
	assert_int_equal(a.n, 2);
	assert_true(a.wheels_only);
	assert_false(a.npm_scripts_denied);
	assert_int_equal(a.min_age_days, 7);
	assert_true(gw_allow_project(&a, GW_PYTHON, "tiny-pkg"));
	assert_false(gw_allow_project(&a, GW_NPMJS, "tiny-pkg"));
	assert_true(gw_allow_has(&a, GW_NPMJS, "tiny-npm", "1.0.0"));
	assert_false(gw_allow_has(&a, GW_NPMJS, "tiny-npm", "1.1.0"));
	assert_non_null(
	    gw_allow_file(&a, GW_PYTHON, "tinypkg-1.0-py3-none-any.whl"));
	assert_null(
	    gw_allow_file(&a, GW_NPMJS, "tinypkg-1.0-py3-none-any.whl"));
	assert_int_equal(a.n_scripts_ok, 1);
	assert_true(gw_allow_scripts(&a, "tiny-npm", "1.0.0"));
	assert_false(gw_allow_scripts(&a, "tiny-npm", "1.1.0"));
	assert_true(gw_allow_format(&a.pins[0], line, sizeof(line)) > 0);
	assert_string_equal(
	    line, "python Tiny_Pkg 1.0 tinypkg-1.0-py3-none-any.whl " SHA "\n");
	gw_allow_release(&a);

	static const struct {
		const char *text, *err;
	} bad[] = {
	    {"python a 1.0 a-1.0.whl\n",
	     "t:1: want ECOSYSTEM NAME VERSION FILE SHA256"},
	    {"\ngo a 1.0 a-1.0.whl " SHA, "t:2: ecosystem is python or npm"},
	    {"python a/b 1.0 a-1.0.whl " SHA, "t:1: not a valid python name"},
	    {"python a 1.0 ../a.whl " SHA, "t:1: not a valid file name"},
	    {"python a 1.0 a.whl " SHA "0",
	     "t:1: sha256 is 64 lowercase hex digits"},
	    {"python a 1.0 a.whl " SHA "\npython a 1.0 a.whl " SHA,
	     "t:2: file pinned twice"},
	    {"option everything", "t:1: unknown option"},
	    {"option min-age-days=0", "t:1: min-age-days=N takes 1..3650"},
	    {"option min-age-days=7d", "t:1: min-age-days=N takes 1..3650"},
	    {"option min-age-days=-1", "t:1: min-age-days=N takes 1..3650"},
	    {"option min-age-days=", "t:1: min-age-days=N takes 1..3650"},
	    {"allow-scripts tiny-npm", "t:1: want allow-scripts NAME VERSION"},
	    {"allow-scripts tiny-npm 1.0.0 x",
	     "t:1: want allow-scripts NAME VERSION"},
	    {"allow-scripts ../x 1.0.0", "t:1: not a valid npm name"},
	    {"allow-scripts tiny 1.0/0", "t:1: not a valid version"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(gw_allow_parse("t", bad[i].text,
						strlen(bad[i].text), &a, err,
						sizeof(err)),
				 -EINVAL);
		assert_string_equal(err, bad[i].err);
	}
	char big[GW_ALLOW_LINE_MAX + 2];
	memset(big, '#', sizeof(big));
	assert_int_equal(
	    gw_allow_parse("t", big, sizeof(big), &a, err, sizeof(err)),
	    -EINVAL);
	assert_string_equal(err, "t:1: line over 1024 bytes");
}

static void test_mirror(void **state)
{
	char mirror[512], src[512], err[256], path[600];
	struct gw_pkg pkg;
	int fd;

	(void)state;
	snprintf(mirror, sizeof(mirror), "%s/mirror", dir);
	snprintf(src, sizeof(src), "%s/pk/tinypkg-1.0-py3-none-any.whl", dir);
	assert_int_equal(gw_mirror_add(mirror, src, &pkg, err, sizeof(err)), 0);
	gw_pkg_release(&pkg);
	/* the same bytes again: fine */
	assert_int_equal(gw_mirror_add(mirror, src, &pkg, err, sizeof(err)), 0);
	gw_pkg_release(&pkg);
	snprintf(path, sizeof(path),
		 "%s/python/tinypkg-1.0-py3-none-any.whl.metadata", mirror);
	assert_int_equal(access(path, R_OK), 0);
	/* a symlink in the mirror is never followed */
	snprintf(path, sizeof(path), "%s/python/evil.whl", mirror);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	snprintf(path, sizeof(path), "%s/python", mirror);
	fd = open(path, O_RDONLY | O_DIRECTORY);
	uint8_t *buf;
	size_t len;
	assert_int_equal(
	    gw_mirror_read(fd, "evil.whl", 1 << 20, &buf, &len, NULL), -EINVAL);
	close(fd);
	/* not a package */
	snprintf(src, sizeof(src), "%s/pk/junk-1.0-py3-none-any.whl", dir);
	fd = open(src, O_WRONLY | O_CREAT, 0644);
	assert_int_equal(write(fd, "PK\x03\x04junk", 8), 8);
	close(fd);
	assert_int_equal(gw_mirror_add(mirror, src, &pkg, err, sizeof(err)),
			 -EBADMSG);
}

/* npm tarballs that npm (node-tar, shown with npm 11: dup, duptop, zero,
 * pax, dotpath, member ran the second package.json's postinstall) reads
 * otherwise than a first-match reader: every one refused, and so never
 * judged scriptless (mkpkg.py, crafted()). */
static void test_npm_crafted(void **state)
{
	static const char *const cases[] = {
	    "dup",     "duptop",  "zero",    "after", "pax",
	    "gnulong", "dotpath", "symlink", "cksum", "member",
	};
	char name[64];
	struct gw_pkg pkg;
	uint8_t *buf;
	size_t len;
	int rc;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(name, sizeof(name), "evil-%s-1.0.0.tgz", cases[i]);
		buf = slurp_in("/evil", name, &len);
		rc = gw_pkg_parse(name, buf, len, &pkg);
		if (rc == 0) {
			print_error("%s: parsed, install_script %d\n", name,
				    pkg.install_script);
			gw_pkg_release(&pkg);
		}
		assert_int_equal(rc, -EBADMSG);
		free(buf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kinds),
	    cmocka_unit_test(test_damaged),
	    cmocka_unit_test(test_renamed),
	    cmocka_unit_test(test_normalize),
	    cmocka_unit_test(test_allow),
	    cmocka_unit_test(test_mirror),
	    cmocka_unit_test(test_npm_crafted),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
