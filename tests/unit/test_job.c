/* test_job.c: job decoding, every validation rule, canonical encoding. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "results.h"

/* One rule each: the job, the path and the reason it must produce. Remove
 * a rule from the library and its row fails. */
static const struct {
	const char *json;
	const char *path;
	const char *reason;
} rules[] = {
    {"{\"sh\":\"x\",\"bogus\":1}", "bogus", "unknown field"},
    {"{\"steps\":[{\"sh\":\"x\",\"timeot_ms\":1}]}", "steps[0].timeot_ms",
     "unknown field"},
#define ID_RULE							       \
	"must match [A-Za-z0-9._:/-]{1,128} with no empty, . or .. part "      \
	"between slashes"
    {"{\"sh\":\"x\",\"id\":\"a b\"}", "id", ID_RULE},
    {"{\"sh\":\"x\",\"id\":\"/etc\"}", "id", ID_RULE},
    {"{\"sh\":\"x\",\"id\":\"a//b\"}", "id", ID_RULE},
    {"{\"sh\":\"x\",\"id\":\"a/../b\"}", "id", ID_RULE},
    {"{\"sh\":\"x\",\"id\":\"a/.\"}", "id", ID_RULE},
    {"{\"sh\":\"x\",\"id\":\"a/\"}", "id", ID_RULE},
    {"{\"sh\":\"x\",\"id\":\"..\"}", "id", ID_RULE},
    {"{\"sh\":\"x\",\"id\":7}", "id", "must be a string"},
    {"{\"sh\":\"x\",\"template\":\"Py\"}", "template",
     "must match [a-z0-9][a-z0-9_.-]{0,63}"},
    {"{\"sh\":\"x\",\"network\":\"-x\"}", "network",
     "must match [a-z0-9][a-z0-9_.-]{0,63}"},
    {"{\"steps\":[]}", "steps", "must have 1..256 entries"},
    {"{\"steps\":{}}", "steps", "must be an array"},
    {"{}", "steps", "required (or give cmd or sh at top level)"},
    {"{\"steps\":[{\"sh\":\"x\"}],\"sh\":\"y\"}", "",
     "cannot give both steps and a top-level cmd/sh"},
    {"{\"steps\":[{\"sh\":\"x\"}],\"env\":{}}", "",
     "step fields at top level need a top-level cmd or sh instead of "
     "steps"},
    {"{\"cmd\":[\"a\"],\"sh\":\"y\"}", "",
     "must have exactly one of cmd or sh"},
    {"{\"steps\":[{\"cmd\":[\"a\"],\"sh\":\"y\"}]}", "steps[0]",
     "must have exactly one of cmd or sh"},
    {"{\"steps\":[{\"env\":{}}]}", "steps[0]",
     "must have exactly one of cmd or sh"},
    {"{\"steps\":[{\"name\":\"\\u0001\",\"sh\":\"x\"}]}", "steps[0].name",
     "must be 1..64 printable characters"},
    {"{\"cmd\":[]}", "cmd", "must have 1..4096 entries"},
    {"{\"cmd\":[\"\"]}", "cmd[0]", "must not be empty"},
    {"{\"cmd\":[\"a\",\"b\",\"c\\u0000\"]}", "cmd[2]", "must not contain NUL"},
    {"{\"cmd\":[\"a\",3]}", "cmd[1]", "must be a string"},
    {"{\"cmd\":\"ls\"}", "cmd", "must be an array"},
    {"{\"sh\":\"\"}", "sh", "must not be empty"},
    {"{\"sh\":\"x\",\"stdin\":5}", "stdin",
     "must be a string or {\"base64\": ...}"},
    {"{\"sh\":\"x\",\"stdin\":{\"base64\":\"a\"}}", "stdin.base64",
     "invalid base64"},
    {"{\"sh\":\"x\",\"files\":{\"/etc/passwd\":\"\"}}",
     "files[\"/etc/passwd\"]", "must be a relative path"},
    {"{\"sh\":\"x\",\"files\":{\"a/../b\":\"\"}}", "files[\"a/../b\"]",
     "must not contain . or .. components"},
    {"{\"sh\":\"x\",\"files\":{\"./b\":\"\"}}", "files[\"./b\"]",
     "must not contain . or .. components"},
    {"{\"sh\":\"x\",\"files\":{\"a//b\":\"\"}}", "files[\"a//b\"]",
     "must not contain empty components"},
    {"{\"sh\":\"x\",\"files\":{\"a/\":\"\"}}", "files[\"a/\"]",
     "must not contain empty components"},
    {"{\"sh\":\"x\",\"files\":{\"\":\"\"}}", "files[\"\"]",
     "must not be empty"},
    {"{\"sh\":\"x\",\"files\":{\"a\":\"\",\"a/b\":\"\"}}", "files[\"a/b\"]",
     "conflicts with files[\"a\"]"},
    {"{\"sh\":\"x\",\"files\":{\"x\":{\"base64\":\"AA==\",\"y\":1}}}",
     "files[\"x\"]", "must be a string or {\"base64\": ...}"},
    {"{\"sh\":\"x\",\"files\":[]}", "files", "must be an object"},
    {"{\"sh\":\"x\",\"cwd\":\"/tmp\"}", "cwd", "must be a relative path"},
    {"{\"sh\":\"x\",\"collect\":[\"a\",\"../b\"]}", "collect[1]",
     "must not contain . or .. components"},
    {"{\"sh\":\"x\",\"collect\":\"a\"}", "collect", "must be an array"},
    {"{\"sh\":\"x\",\"env\":{\"1X\":\"y\"}}", "env[\"1X\"]",
     "must match [A-Za-z_][A-Za-z0-9_]*"},
    {"{\"sh\":\"x\",\"env\":{\"X\":\"a\\u0000\"}}", "env[\"X\"]",
     "must not contain NUL"},
    {"{\"sh\":\"x\",\"env\":{\"X\":1}}", "env[\"X\"]", "must be a string"},
    {"{\"sh\":\"x\",\"timeout_ms\":0}", "timeout_ms", "must be 1..600000"},
    {"{\"steps\":[{\"sh\":\"x\"},{\"sh\":\"x\",\"timeout_ms\":600001}]}",
     "steps[1].timeout_ms", "must be 1..600000"},
    {"{\"sh\":\"x\",\"timeout_ms\":1.5}", "timeout_ms", "must be an integer"},
    {"{\"sh\":\"x\",\"timeout_ms\":-1}", "timeout_ms", "must be 1..600000"},
    {"{\"sh\":\"x\",\"cpu_ms\":0}", "cpu_ms", "must be 1..600000"},
    {"{\"steps\":[{\"sh\":\"x\",\"cpu_ms\":600001}]}", "steps[0].cpu_ms",
     "must be 1..600000"},
    {"{\"sh\":\"x\",\"cpu_ms\":\"1000\"}", "cpu_ms", "must be an integer"},
    {"{\"steps\":[{\"sh\":\"x\",\"if\":\"never\"}]}", "steps[0].if",
     "must be \"always\", \"success\" or \"setup_ok\""},
    {"{\"sh\":\"x\",\"expect\":{\"stdout\":\"1\",\"compare\":\"fuzzy\"}}",
     "expect.compare",
     "must be \"exact\", \"trim\", \"lines\", \"tokens\" or \"numbers\""},
    {"{\"sh\":\"x\",\"expect\":{}}", "expect.stdout", "required"},
    {"{\"sh\":\"x\",\"expect\":\"1\"}", "expect", "must be an object"},
    {"{\"sh\":\"x\",\"limits\":{\"memory_mb\":32}}", "limits.memory_mb",
     "must be 64..65536"},
    {"{\"sh\":\"x\",\"limits\":{\"vcpus\":0}}", "limits.vcpus",
     "must be 1..64"},
    {"{\"sh\":\"x\",\"limits\":{\"wall_ms\":3600001}}", "limits.wall_ms",
     "must be 1..3600000"},
    {"{\"sh\":\"x\",\"limits\":{\"output_bytes\":0}}", "limits.output_bytes",
     "must be 1..16777216"},
    {"{\"sh\":\"x\",\"limits\":{\"pids\":0}}", "limits.pids",
     "must be 1..65536"},
    {"{\"sh\":\"x\",\"limits\":{\"disk_mb\":0}}", "limits.disk_mb",
     "must be 1..65536"},
    {"{\"sh\":\"x\",\"limits\":{\"file_size_mb\":0}}", "limits.file_size_mb",
     "must be 1..65536"},
    {"{\"sh\":\"x\",\"limits\":{\"cpus\":1}}", "limits.cpus", "unknown field"},
    {"{\"sh\":\"x\",\"meta\":[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]}", "meta",
     "nests deeper than 16"},
    {"[1]", "", "must be an object"},
    {"{\"sh\":\"x\",\"sh\":\"y\"}", "",
     "invalid JSON at line 1 column 14: duplicate object key near "
     "'\"sh\"'"},
    {"{", "",
     "invalid JSON at line 1 column 1: string or '}' expected "
     "near end of file"},
    {"{\"sh\":\"x\",\"template\":\"\\u00ff\"}", "template",
     "must match [a-z0-9][a-z0-9_.-]{0,63}"},
    {"{\"sh\":\"x\",\"reports\":[\"out.txt\"]}", "reports[0]",
     "say its format: \"junit:PATH\" or \"tap:PATH\" (or a .xml/.tap "
     "name)"},
    {"{\"sh\":\"x\",\"reports\":[\"junit:../r.xml\"]}", "reports[0]",
     "must not contain . or .. components"},
    {"{\"sh\":\"x\",\"reports\":[\"/tmp/r.xml\"]}", "reports[0]",
     "must be a relative path"},
    {"{\"sh\":\"x\",\"reports\":[]}", "reports", "must have 1..16 entries"},
    {"{\"steps\":[{\"sh\":\"x\",\"reports\":[1]}]}", "steps[0].reports[0]",
     "must be a string"},
    {"{\"sh\":\"x\",\"reports\":\"r.xml\"}", "reports", "must be an array"},
};

static bool has_diag(const struct al_diags *d, const char *path,
		     const char *reason)
{
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->items[i].path, path) &&
		    !strcmp(d->items[i].reason, reason))
			return true;
	return false;
}

static void print_diags(const struct al_diags *d)
{
	char buf[4096];

	al_diags_format(d, buf, sizeof(buf));
	print_message("diags: %s\n", buf);
}

static void test_rules(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		struct al_job job = {0};
		struct al_diags d;
		int r;

		al_diags_init(&d);
		r = al_job_from_json(rules[i].json, strlen(rules[i].json), &job,
				     &d);
		if (r != -EINVAL || !has_diag(&d, rules[i].path,
					      rules[i].reason)) {
			print_message("rule %zu: %s\n", i, rules[i].json);
			print_diags(&d);
		}
		assert_int_equal(r, -EINVAL);
		assert_true(has_diag(&d, rules[i].path, rules[i].reason));
		assert_null(job.steps); /* ret untouched on failure */
	}
}

/* Every problem is reported, not only the first. */
static void test_all_errors(void **state)
{
	const char *j = "{\"id\":\"!\",\"steps\":[{\"sh\":\"\"},{\"cmd\":[]}],"
			"\"limits\":{\"pids\":0},\"x\":1}";
	struct al_job job = {0};
	struct al_diags d;

	(void)state;
	al_diags_init(&d);
	assert_int_equal(al_job_from_json(j, strlen(j), &job, &d), -EINVAL);
	assert_int_equal(d.n, 5);
}

static void test_diags_cap(void **state)
{
	char json[8192] = "{\"sh\":\"x\",\"files\":{";
	struct al_job job = {0};
	struct al_diags d;
	char buf[256];

	(void)state;
	for (int i = 0; i < 100; i++)
		snprintf(json + strlen(json), sizeof(json) - strlen(json),
			 "%s\"/f%d\":\"\"", i ? "," : "", i);
	strcat(json, "}}");
	al_diags_init(&d);
	assert_int_equal(al_job_from_json(json, strlen(json), &job, &d),
			 -EINVAL);
	assert_int_equal(d.n, AL_DIAGS_MAX);
	assert_int_equal(d.dropped, 100 - AL_DIAGS_MAX);
	al_diags_format(&d, buf, sizeof(buf)); /* truncates safely */
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
}

static void test_size_cap(void **state)
{
	size_t n = AL_JOB_MAX_BYTES + 1;
	char *big = malloc(n);
	struct al_job job = {0};
	struct al_diags d;

	(void)state;
	assert_non_null(big);
	memset(big, ' ', n);
	al_diags_init(&d);
	assert_int_equal(al_job_from_json(big, n, &job, &d), -E2BIG);
	assert_string_equal(d.items[0].reason, "larger than 16777216 bytes");
	al_diags_init(&d);
	assert_int_equal(al_job_from_msgpack(big, n, &job, &d), -E2BIG);
	free(big);
}

static void test_shorthand(void **state)
{
	const char *j = "{\"cmd\":[\"python3\",\"-c\",\"print(6*7)\"],"
			"\"timeout_ms\":2000,\"cpu_ms\":500,\"stdin\":\"x\"}";
	struct al_job job = {0};
	char *out;

	(void)state;
	assert_int_equal(al_job_from_json(j, strlen(j), &job, NULL), 0);
	assert_int_equal(job.n_steps, 1);
	assert_int_equal(job.steps[0].argc, 3);
	assert_string_equal(job.steps[0].argv[2], "print(6*7)");
	assert_null(job.steps[0].argv[3]);
	assert_int_equal(job.steps[0].timeout_ms, 2000);
	assert_int_equal(job.steps[0].cpu_ms, 500);
	assert_true(job.steps[0].has_stdin);
	assert_int_equal(al_job_to_json(&job, &out), 0);
	assert_string_equal(out, "{\"steps\":[{\"cmd\":[\"python3\",\"-c\","
				 "\"print(6*7)\"],\"stdin\":\"x\","
				 "\"timeout_ms\":2000,\"cpu_ms\":500}]}");
	free(out);
	al_job_release(&job);
}

/* Dataset ids are accepted as given; the path-unsafe ones are not. */
static void test_id_charset(void **state)
{
	static const char *const good[] = {"HumanEval/0", "Mbpp/2", "a:b.c-d_e",
					   "x/y/z:1", "...", "a/.b/..c"};
	static const char *const bad[] = {"/a", "a/", "a//b", "a/./b",
					  "a/../b", ".", "..", "a b", "a\\b"};
	char longid[AL_ID_MAX + 2];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(al_id_valid(good[i], strlen(good[i])));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(al_id_valid(bad[i], strlen(bad[i])));
	memset(longid, 'a', sizeof(longid));
	assert_true(al_id_valid(longid, AL_ID_MAX));
	assert_false(al_id_valid(longid, AL_ID_MAX + 1));
}

static void test_id_reported(void **state)
{
	const char *j = "{\"id\":\"job-1\",\"sh\":\"\"}";
	struct al_job job = {0};
	struct al_diags d;

	(void)state;
	al_diags_init(&d);
	assert_int_equal(al_job_from_json(j, strlen(j), &job, &d), -EINVAL);
	assert_string_equal(d.id, "job-1");
}

static void test_policy(void **state)
{
	const char *const nets[] = {"pypi", NULL};
	const char *const tmpl[] = {"python", "c", NULL};
	struct al_policy p = *al_policy_default();
	const char *j = "{\"sh\":\"x\",\"timeout_ms\":9000,\"template\":\"go\","
			"\"network\":\"web\",\"limits\":{\"memory_mb\":8192,"
			"\"vcpus\":8,\"wall_ms\":700000,\"pids\":2000,"
			"\"disk_mb\":5000,\"file_size_mb\":5000,"
			"\"output_bytes\":1000}}";
	struct al_job job = {0};
	struct al_limits l;
	struct al_diags d;

	(void)state;
	p.networks = nets;
	p.templates = tmpl;
	p.step_timeout_max_ms = 5000;
	p.max.output_bytes = 999;
	assert_int_equal(al_job_from_json(j, strlen(j), &job, NULL), 0);
	al_diags_init(&d);
	assert_int_equal(al_job_check_policy(&job, &p, &d), -EINVAL);
	assert_true(has_diag(&d, "limits.memory_mb", "must be 64..4096"));
	assert_true(has_diag(&d, "limits.vcpus", "must be 1..4"));
	assert_true(has_diag(&d, "limits.wall_ms", "must be 1..600000"));
	assert_true(has_diag(&d, "limits.pids", "must be 1..1024"));
	assert_true(has_diag(&d, "limits.disk_mb", "must be 1..4096"));
	assert_true(has_diag(&d, "limits.file_size_mb", "must be 1..4096"));
	assert_true(has_diag(&d, "limits.output_bytes", "must be 1..999"));
	assert_true(has_diag(&d, "steps[0].timeout_ms", "must be 1..5000"));
	assert_true(has_diag(&d, "template",
			     "template \"go\" is not in templates.allowed "
			     "(python c): add it there in the config file"));
	assert_true(has_diag(&d, "network", "unknown network policy \"web\""));
	assert_int_equal(d.n, 10);
	al_job_limits(&job, &p, &l);
	assert_int_equal(l.memory_mb, 8192);
	assert_int_equal(l.disk_mb, 5000);
	al_job_release(&job);

	j = "{\"sh\":\"x\",\"network\":\"pypi\",\"template\":\"c\"}";
	assert_int_equal(al_job_from_json(j, strlen(j), &job, NULL), 0);
	al_diags_init(&d);
	assert_int_equal(al_job_check_policy(&job, &p, &d), 0);
	assert_int_equal(al_job_check_policy(&job, al_policy_default(), &d),
			 -EINVAL); /* default policy has no networks */
	al_job_limits(&job, &p, &l);
	assert_int_equal(l.memory_mb, 512);
	assert_int_equal(l.output_bytes, 1u << 20);
	assert_int_equal(al_job_step_timeout(&job, 0, &p), 10000);
	al_job_release(&job);
}

/* Without limits.wall_ms the job's wall follows its steps' timeouts, up
 * to the policy's maximum; a wall_ms the job sets stands (issue 38). */
static void test_wall_follows_steps(void **state)
{
	const struct al_policy *p = al_policy_default();
	struct al_limits l;
	struct al_job job;
	const char *j;

	(void)state;
	j = "{\"steps\":[{\"sh\":\"./configure\",\"timeout_ms\":200000},"
	    "{\"sh\":\"make\",\"timeout_ms\":300000},{\"sh\":\"t\"}]}";
	assert_int_equal(al_job_from_json(j, strlen(j), &job, NULL), 0);
	al_job_limits(&job, p, &l);
	assert_int_equal(l.wall_ms, 500000);
	al_job_release(&job);
	j = "{\"steps\":[{\"sh\":\"a\",\"timeout_ms\":500000},"
	    "{\"sh\":\"b\",\"timeout_ms\":500000}]}";
	assert_int_equal(al_job_from_json(j, strlen(j), &job, NULL), 0);
	al_job_limits(&job, p, &l);
	assert_int_equal(l.wall_ms, p->max.wall_ms);
	al_job_release(&job);
	j = "{\"sh\":\"a\",\"timeout_ms\":1000}";
	assert_int_equal(al_job_from_json(j, strlen(j), &job, NULL), 0);
	al_job_limits(&job, p, &l);
	assert_int_equal(l.wall_ms, p->defaults.wall_ms);
	al_job_release(&job);
	j = "{\"sh\":\"a\",\"timeout_ms\":300000,"
	    "\"limits\":{\"wall_ms\":150000}}";
	assert_int_equal(al_job_from_json(j, strlen(j), &job, NULL), 0);
	al_job_limits(&job, p, &l);
	assert_int_equal(l.wall_ms, 150000);
	al_job_release(&job);
}

/* A snapshot name is allowed when snapshots lists it, and only then. */
static void test_policy_snapshots(void **state)
{
	const char *const tmpl[] = {"python", NULL};
	const char *const snaps[] = {"deps", NULL};
	struct al_policy p = *al_policy_default();
	const char *j = "{\"sh\":\"x\",\"template\":\"deps\"}";
	struct al_job job = {0};
	struct al_diags d;

	(void)state;
	p.templates = tmpl;
	assert_int_equal(al_job_from_json(j, strlen(j), &job, NULL), 0);
	al_diags_init(&d);
	assert_int_equal(al_job_check_policy(&job, &p, &d), -EINVAL);
	assert_false(al_policy_snapshot(&p, "deps"));
	p.snapshots = snaps;
	al_diags_init(&d);
	assert_int_equal(al_job_check_policy(&job, &p, &d), 0);
	assert_true(al_policy_snapshot(&p, "deps"));
	assert_false(al_policy_snapshot(&p, "python"));
	al_job_release(&job);
}

/* msgpack input: bin contents, str contents, and what JSON cannot say. */
static void test_msgpack_input(void **state)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct al_job job = {0};
	struct al_diags d;

	(void)state;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	msgpack_pack_str_with_body(&pk, "sh", 2);
	msgpack_pack_str_with_body(&pk, "cat", 3);
	msgpack_pack_str_with_body(&pk, "stdin", 5);
	msgpack_pack_bin_with_body(&pk, "\xff\x00\x01", 3);
	msgpack_pack_str_with_body(&pk, "meta", 4);
	msgpack_pack_map(&pk, 1);
	msgpack_pack_int(&pk, 1); /* non-string key: no JSON form */
	msgpack_pack_nil(&pk);
	al_diags_init(&d);
	assert_int_equal(al_job_from_msgpack(sb.data, sb.size, &job, &d),
			 -EINVAL);
	assert_true(has_diag(&d, "meta", "keys must be strings"));
	msgpack_sbuffer_clear(&sb);

	msgpack_pack_map(&pk, 2);
	msgpack_pack_str_with_body(&pk, "sh", 2);
	msgpack_pack_str_with_body(&pk, "cat", 3);
	msgpack_pack_str_with_body(&pk, "stdin", 5);
	msgpack_pack_bin_with_body(&pk, "\xff\x00\x01", 3);
	assert_int_equal(al_job_from_msgpack(sb.data, sb.size, &job, NULL), 0);
	assert_int_equal(job.steps[0].stdin_.len, 3);
	assert_memory_equal(job.steps[0].stdin_.data, "\xff\x00\x01", 3);
	al_job_release(&job);

	/* a NUL in a path: JSON cannot carry it in a key, msgpack can */
	msgpack_sbuffer_clear(&sb);
	msgpack_pack_map(&pk, 2);
	msgpack_pack_str_with_body(&pk, "sh", 2);
	msgpack_pack_str_with_body(&pk, "cat", 3);
	msgpack_pack_str_with_body(&pk, "files", 5);
	msgpack_pack_map(&pk, 1);
	msgpack_pack_str_with_body(&pk, "a\0b", 3);
	msgpack_pack_str_with_body(&pk, "", 0);
	al_diags_init(&d);
	assert_int_equal(al_job_from_msgpack(sb.data, sb.size, &job, &d),
			 -EINVAL);
	assert_true(has_diag(&d, "files[\"a\\x00b\"]", "must not contain NUL"));

	/* fuzz findings: meta must have a JSON form */
	msgpack_sbuffer_clear(&sb);
	msgpack_pack_map(&pk, 2);
	msgpack_pack_str_with_body(&pk, "sh", 2);
	msgpack_pack_str_with_body(&pk, "cat", 3);
	msgpack_pack_str_with_body(&pk, "meta", 4);
	msgpack_pack_array(&pk, 1);
	msgpack_pack_double(&pk, NAN);
	al_diags_init(&d);
	assert_int_equal(al_job_from_msgpack(sb.data, sb.size, &job, &d),
			 -EINVAL);
	assert_true(has_diag(&d, "meta", "must not hold NaN or infinity"));
	msgpack_sbuffer_clear(&sb);
	msgpack_pack_map(&pk, 2);
	msgpack_pack_str_with_body(&pk, "sh", 2);
	msgpack_pack_str_with_body(&pk, "cat", 3);
	msgpack_pack_str_with_body(&pk, "meta", 4);
	msgpack_pack_map(&pk, 1);
	msgpack_pack_str_with_body(&pk, "\xff", 1);
	msgpack_pack_nil(&pk);
	al_diags_init(&d);
	assert_int_equal(al_job_from_msgpack(sb.data, sb.size, &job, &d),
			 -EINVAL);
	assert_true(has_diag(&d, "meta", "keys must be strings"));
	msgpack_sbuffer_clear(&sb);
	msgpack_pack_map(&pk, 1);
	msgpack_pack_str_with_body(&pk, "sh", 2);
	msgpack_pack_str_with_body(&pk, "cat", 3);

	/* trailing bytes after the document */
	msgpack_pack_nil(&pk);
	al_diags_init(&d);
	assert_int_equal(al_job_from_msgpack(sb.data, sb.size, &job, &d),
			 -EINVAL);
	assert_string_equal(d.items[0].reason,
			    "not a well-formed msgpack document");
	msgpack_sbuffer_destroy(&sb);
}

/* `reports`: a prefix or the extension says the format; the encoding
 * writes a prefix only where reading back needs it. */
static void test_reports(void **state)
{
	static const char json[] =
	    "{\"steps\":[{\"sh\":\"x\",\"reports\":[\"build/junit.xml\","
	    "\"tap:out.txt\",\"t.tap\",\"junit:r.tap\",\"junit:tap:a.xml\"]}"
	    "]}";
	struct al_job job = {0}, back = {0};
	struct al_diags d;
	char *text;
	const struct al_step *s;

	(void)state;
	al_diags_init(&d);
	assert_int_equal(al_job_from_json(json, strlen(json), &job, &d), 0);
	s = &job.steps[0];
	assert_int_equal(s->n_reports, 5);
	assert_string_equal(s->reports[0].path, "build/junit.xml");
	assert_int_equal(s->reports[0].format, AL_REPORT_JUNIT);
	assert_string_equal(s->reports[1].path, "out.txt");
	assert_int_equal(s->reports[1].format, AL_REPORT_TAP);
	assert_int_equal(s->reports[2].format, AL_REPORT_TAP);
	assert_string_equal(s->reports[3].path, "r.tap");
	assert_int_equal(s->reports[3].format, AL_REPORT_JUNIT);
	assert_string_equal(s->reports[4].path, "tap:a.xml");
	assert_int_equal(s->reports[4].format, AL_REPORT_JUNIT);
	assert_int_equal(al_job_to_json(&job, &text), 0);
	assert_non_null(strstr(text,
			       "\"reports\":[\"build/junit.xml\","
			       "\"tap:out.txt\",\"t.tap\",\"junit:r.tap\","
			       "\"junit:tap:a.xml\"]"));
	assert_int_equal(al_job_from_json(text, strlen(text), &back, &d), 0);
	assert_string_equal(back.steps[0].reports[4].path, "tap:a.xml");
	free(text);
	al_job_release(&back);
	al_job_release(&job);
	/* the one-step shorthand takes it too; a session's exec does not */
	assert_int_equal(al_job_from_json("{\"sh\":\"x\",\"reports\":"
					  "[\"r.xml\"]}",
					  30, &job, &d),
			 0);
	assert_int_equal(job.steps[0].n_reports, 1);
	al_job_release(&job);
	{
		struct al_step st = {0};
		static const char ex[] =
		    "{\"sh\":\"x\",\"reports\":[\"r.xml\"]}";

		assert_int_equal(al_step_from_json(ex, strlen(ex), &st, &d),
				 -EINVAL);
		assert_true(has_diag(&d, "reports",
				     "a job's steps only, not "
				     "a session's exec"));
	}
}

static void test_release_zeroed(void **state)
{
	struct al_job job = {0};

	(void)state;
	al_job_release(&job);
	al_job_release(&job);
}

/* One step alone (a session's exec): a job's step rules, problems named
 * by the step's own fields, no "steps[0]." to cut out. */
static void test_step_alone(void **state)
{
	static const struct {
		const char *json, *want;
	} bad[] = {
		{"{\"sh\":\"x\",\"cmd\":[\"y\"]}",
		 "must have exactly one of cmd or sh"},
		{"{\"sh\":\"x\",\"timeot_ms\":1}", "timeot_ms: unknown field"},
		{"{\"sh\":\"x\",\"env\":{\"A=B\":\"1\"}}", "env[\"A=B\"]"},
		{"[1]", "must be an object"},
		{"{\"sh\":", "invalid JSON"},
	};
	struct al_step st = {0};
	struct al_diags d;
	char buf[512];
	const char *ok = "{\"sh\":\"echo hi\",\"timeout_ms\":1500,"
			 "\"env\":{\"A\":\"1\"}}";

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		al_diags_init(&d);
		assert_int_equal(al_step_from_json(bad[i].json,
						   strlen(bad[i].json), &st,
						   &d),
				 -EINVAL);
		al_diags_format(&d, buf, sizeof(buf));
		if (!strstr(buf, bad[i].want) || strstr(buf, "steps"))
			fail_msg("%s: %s, want %s", bad[i].json, buf,
				 bad[i].want);
		assert_null(st.sh);
	}
	al_diags_init(&d);
	assert_int_equal(al_step_from_json(ok, strlen(ok), &st, &d), 0);
	assert_string_equal(st.sh, "echo hi");
	assert_int_equal(st.timeout_ms, 1500);
	assert_int_equal(st.n_env, 1);
	al_step_release(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rules),
	    cmocka_unit_test(test_id_charset),
	    cmocka_unit_test(test_all_errors),
	    cmocka_unit_test(test_diags_cap),
	    cmocka_unit_test(test_size_cap),
	    cmocka_unit_test(test_shorthand),
	    cmocka_unit_test(test_id_reported),
	    cmocka_unit_test(test_policy),
	    cmocka_unit_test(test_wall_follows_steps),
	    cmocka_unit_test(test_policy_snapshots),
	    cmocka_unit_test(test_msgpack_input),
	    cmocka_unit_test(test_release_zeroed),
	    cmocka_unit_test(test_step_alone),
	    cmocka_unit_test(test_reports),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
