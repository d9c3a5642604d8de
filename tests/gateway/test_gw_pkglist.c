/* test_gw_pkglist.c: a job's installs read back from the gateway's audit
 * records (worker/pkglist.h) into its result's network.packages, and that
 * field through the result's JSON and msgpack forms (results.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "audit.h"
#include "pkglist.h"
#include "results.h"

/* One record as the gateway writes it, appended to b. */
static void rec(struct gw_buf *b, const char *job, enum gw_eco eco,
		const char *name, const char *version, const char *route,
		bool allowed)
{
	struct gw_audit a = {.time_ms = 1, .eco = eco, .allowed = allowed};

	snprintf(a.job, sizeof(a.job), "%s", job);
	snprintf(a.peer, sizeof(a.peer), "10.201.0.2");
	snprintf(a.name, sizeof(a.name), "%s", name);
	snprintf(a.version, sizeof(a.version), "%s", version);
	snprintf(a.file, sizeof(a.file), "%s-%s.whl", name, version);
	snprintf(a.route, sizeof(a.route), "%s", route);
	snprintf(a.reason, sizeof(a.reason), "%s", allowed ? "" : "no");
	assert_int_equal(gw_audit_format(&a, b), 0);
}

static void test_scan(void **state)
{
	struct gw_buf b = {0};
	struct al_net_info *n = calloc(1, sizeof(*n));
	char longline[GW_AUDIT_LINE_MAX + 64];

	(void)state;
	rec(&b, "j1", GW_PYTHON, "tinypkg", "1.0", "file", true);
	rec(&b, "j1", GW_PYTHON, "tinypkg", "1.0", "file", true); /* again */
	rec(&b, "j1", GW_PYTHON, "other", "2.0", "metadata", true);
	rec(&b, "j1", GW_PYTHON, "denied", "1.0", "file", false);
	rec(&b, "j2", GW_PYTHON, "theirs", "1.0", "file", true);
	rec(&b, "j10", GW_PYTHON, "prefix", "1.0", "file", true);
	rec(&b, "j1", GW_NPMJS, "leftpad", "1.3.0", "tarball", true);
	{
		static const char junk[] = "not json\n{\"job\": \"j1\"}\n\xff\xfe\n";

		gw_buf_add(&b, junk, sizeof(junk) - 1);
	}
	/* a record too long to be one, naming j1: skipped */
	memset(longline, ' ', sizeof(longline));
	memcpy(longline, "{\"job\":\"j1\",", 12);
	gw_buf_add(&b, longline, sizeof(longline));
	gw_buf_add(&b, "\n", 1);
	rec(&b, "j1", GW_PYTHON, "anyio", "4.0", "file", true);
	al_pkglist_scan(b.data, b.len, "j1", n);
	assert_int_equal(n->n_packages, 3);
	assert_string_equal(n->packages[0], "npm:leftpad==1.3.0");
	assert_string_equal(n->packages[1], "python:anyio==4.0");
	assert_string_equal(n->packages[2], "python:tinypkg==1.0");
	gw_buf_release(&b);
	free(n);
}

static void test_cap(void **state)
{
	struct gw_buf b = {0};
	struct al_net_info *n = calloc(1, sizeof(*n));
	char name[32];

	(void)state;
	for (int i = 0; i < AL_NET_PACKAGES_MAX + 8; i++) {
		snprintf(name, sizeof(name), "p%02d", i);
		rec(&b, "j", GW_PYTHON, name, "1", "file", true);
	}
	al_pkglist_scan(b.data, b.len, "j", n);
	assert_int_equal(n->n_packages, AL_NET_PACKAGES_MAX);
	assert_string_equal(n->packages[0], "python:p00==1");
	gw_buf_release(&b);
	free(n);
}

/* From the mark on only: the records before the job began are not its. */
static void test_read_from_mark(void **state)
{
	char dir[] = "/tmp/al-pkglist-XXXXXX", path[128];
	struct al_net_info *n = calloc(1, sizeof(*n));
	struct gw_buf b = {0};
	off_t mark;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(al_pkglist_mark(dir), 0);
	assert_int_equal(al_pkglist_read(dir, 0, "j", n), 0); /* no file */
	assert_int_equal(n->n_packages, 0);
	snprintf(path, sizeof(path), "%s/packages", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/packages/audit.jsonl", dir);
	rec(&b, "j", GW_PYTHON, "before", "1", "file", true);
	f = fopen(path, "w");
	assert_non_null(f);
	fwrite(b.data, 1, b.len, f);
	fclose(f);
	mark = al_pkglist_mark(dir);
	assert_int_equal(mark, (off_t)b.len);
	gw_buf_release(&b);
	memset(&b, 0, sizeof(b));
	rec(&b, "j", GW_PYTHON, "after", "1", "file", true);
	f = fopen(path, "a");
	fwrite(b.data, 1, b.len, f);
	fclose(f);
	assert_int_equal(al_pkglist_read(dir, mark, "j", n), 0);
	assert_int_equal(n->n_packages, 1);
	assert_string_equal(n->packages[0], "python:after==1");
	gw_buf_release(&b);
	unlink(path);
	snprintf(path, sizeof(path), "%s/packages", dir);
	rmdir(path);
	rmdir(dir);
	free(n);
}

/* A packages-policy job's dropped connections as deny records in the
 * audit file (al_pkglist_dropped): one per destination, ecosystem `net`,
 * read back by the audit parser, never counted as installs; no audit
 * file (no gateway here): nothing created. */
static void test_dropped(void **state)
{
	char dir[] = "/tmp/al-pkglist-XXXXXX", path[128], line[4096];
	struct al_net_info *n = calloc(1, sizeof(*n));
	struct gw_audit a;
	size_t got = 0;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	n->n_dropped = 2;
	snprintf(n->dropped[0], sizeof(n->dropped[0]), "10.202.0.1:3141");
	snprintf(n->dropped[1], sizeof(n->dropped[1]), "10.202.0.2:22");
	assert_int_equal(al_pkglist_dropped(dir, "j-1", "10.201.0.2", n),
			 -ENOENT);
	snprintf(path, sizeof(path), "%s/packages", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/packages/audit.jsonl", dir);
	assert_int_equal(al_pkglist_dropped(dir, "j-1", "10.201.0.2", n),
			 -ENOENT);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(al_pkglist_dropped(dir, "j-1", "10.201.0.2", n), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		assert_int_equal(gw_audit_parse(line, strlen(line) - 1, &a), 0);
		assert_int_equal(a.eco, GW_NET);
		assert_false(a.allowed);
		assert_false(a.pending);
		assert_string_equal(a.job, "j-1");
		assert_string_equal(a.peer, "10.201.0.2");
		assert_string_equal(a.route, "net");
		assert_string_equal(a.file, n->dropped[got]);
		assert_non_null(strstr(a.reason, n->dropped[got]));
		assert_non_null(strstr(line, "\"ecosystem\":\"net\""));
		got++;
	}
	fclose(f);
	assert_int_equal(got, 2);
	n->n_dropped = 0;
	assert_int_equal(al_pkglist_read(dir, 0, "j-1", n), 0);
	assert_int_equal(n->n_packages, 0);
	unlink(path);
	snprintf(path, sizeof(path), "%s/packages", dir);
	rmdir(path);
	rmdir(dir);
	free(n);
}

/* network.packages through JSON and msgpack, and its caps. */
static void test_result_field(void **state)
{
	static const char base[] =
	    "{\"id\":\"j\",\"status\":\"OK\",\"steps\":[],"
	    "\"vm\":{\"accel\":\"tcg\",\"restored\":false,\"restore_ms\":0},"
	    "\"network\":{\"policy\":\"packages\",\"bytes_in\":1,"
	    "\"bytes_out\":2,\"dropped\":[],\"packages\":%s},"
	    "\"timing\":{\"queued_ms\":0,\"run_ms\":0,\"total_ms\":0},"
	    "\"attempt\":1}";
	char text[8192], *json = NULL, *mp = NULL, many[4096] = "[";
	struct al_result r = {0}, r2 = {0};
	struct al_diags d;
	size_t mplen;

	(void)state;
	snprintf(text, sizeof(text), base, "[\"python:tinypkg==1.0\"]");
	al_diags_init(&d);
	assert_int_equal(al_result_from_json(text, strlen(text), &r, &d), 0);
	assert_int_equal(r.network.n_packages, 1);
	assert_string_equal(r.network.packages[0], "python:tinypkg==1.0");
	assert_int_equal(al_result_to_msgpack(&r, &mp, &mplen), 0);
	assert_int_equal(al_result_from_msgpack(mp, mplen, &r2, &d), 0);
	assert_int_equal(r2.network.n_packages, 1);
	assert_int_equal(al_result_to_json(&r2, &json), 0);
	assert_non_null(strstr(json, "\"packages\":[\"python:tinypkg==1.0\"]"));
	al_result_release(&r);
	al_result_release(&r2);
	free(json);
	free(mp);
	/* more than AL_NET_PACKAGES_MAX entries: refused */
	for (int i = 0; i <= AL_NET_PACKAGES_MAX; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many),
			 "%s\"python:p%d==1\"", i ? "," : "", i);
	strcat(many, "]");
	snprintf(text, sizeof(text), base, many);
	memset(&r, 0, sizeof(r));
	al_diags_init(&d);
	assert_true(al_result_from_json(text, strlen(text), &r, &d) < 0);
	al_result_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scan),
	    cmocka_unit_test(test_cap),
	    cmocka_unit_test(test_read_from_mark),
	    cmocka_unit_test(test_dropped),
	    cmocka_unit_test(test_result_field),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
