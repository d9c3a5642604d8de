/* test_config.c: the config file (tools/config/config.c): defaults, the shipped
 * configs/airlock.conf and docs/config.md against the key table, every
 * error path, file search and environment overrides, the policy mapping,
 * and dump -> parse round trips. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"

static char tmpdir[] = "/tmp/test_config.XXXXXX";

static int setup(void **state)
{
	(void)state;
	unsetenv("AIRLOCK_CONFIG");
	unsetenv("AIRLOCK_REDIS");
	unsetenv("AIRLOCK_TEMPLATES_DIR");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Write `text` to tmpdir/name; returns the path (static buffer). */
static const char *write_tmp(const char *name, const char *text)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	assert_int_equal(fclose(f), 0);
	return path;
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* Every key of a and b formats the same. */
static void assert_config_equal(const struct al_config *a,
				const struct al_config *b)
{
	const struct al_config_key *k;
	char va[4096], vb[4096];
	size_t n;

	k = al_config_keys(&n);
	for (size_t i = 0; i < n; i++) {
		al_config_format(a, &k[i], va, sizeof(va));
		al_config_format(b, &k[i], vb, sizeof(vb));
		if (strcmp(va, vb) != 0)
			fail_msg("%s.%s: \"%s\" != \"%s\"", k[i].section,
				 k[i].key, va, vb);
	}
	assert_int_equal(a->network.n, b->network.n);
	for (size_t i = 0; i < a->network.n; i++)
		assert_memory_equal(&a->network.policy[i], &b->network.policy[i],
				    sizeof(a->network.policy[i]));
}

/* Load `text` as file "t.conf" on top of the defaults; the error must be
 * exactly `want` (or the load must succeed when want is NULL). */
static void expect_load(const char *text, const char *want)
{
	struct al_config cfg, before;
	char err[4096];
	int rc;

	al_config_init(&cfg);
	before = cfg;
	rc = al_config_load_string(&cfg, "t.conf", text, err, sizeof(err));
	if (!want) {
		if (rc != 0)
			fail_msg("unexpected error: %s", err);
		return;
	}
	if (rc != -EINVAL)
		fail_msg("want -EINVAL for %s, got %d", text, rc);
	if (strcmp(err, want) != 0)
		fail_msg("error\n  got:  %s\n  want: %s", err, want);
	/* a failed load changes nothing */
	assert_config_equal(&cfg, &before);
	assert_string_equal(cfg.source, "");
}

/* --- defaults ------------------------------------------------------------- */

static void test_defaults(void **state)
{
	const struct al_policy *p = al_policy_default();
	const struct al_config_key *k;
	struct al_config cfg, back;
	char line[2400], v[2200];
	size_t n;

	(void)state;
	al_config_init(&cfg);
	k = al_config_keys(&n);
	assert_true(n >= 40);
	/* every default is itself a valid value, read back unchanged */
	for (size_t i = 0; i < n; i++) {
		al_config_format(&cfg, &k[i], v, sizeof(v));
		snprintf(line, sizeof(line), "[%s]\n%s = %s\n", k[i].section,
			 k[i].key, v);
		al_config_init(&back);
		expect_load(line, NULL);
		assert_int_equal(
		    al_config_load_string(&back, "d", line, NULL, 0), 0);
		assert_config_equal(&cfg, &back);
		assert_non_null(k[i].doc);
		assert_true(k[i].doc[0] != 0);
	}
	/* the job limits are the built-in policy's */
	assert_memory_equal(&cfg.limits.defaults, &p->defaults,
			    sizeof(p->defaults));
	assert_memory_equal(&cfg.limits.max, &p->max, sizeof(p->max));
	assert_int_equal(cfg.limits.step_timeout_ms, p->step_timeout_ms);
	assert_int_equal(cfg.limits.step_timeout_ms_max,
			 p->step_timeout_max_ms);
	assert_string_equal(cfg.templates.default_, p->template_);
	/* a few by name */
	assert_string_equal(cfg.redis.url, "");
	assert_int_equal(cfg.queue.max_deliveries, 3);
	assert_int_equal(cfg.queue.result_ttl_s, 7 * 24 * 3600);
	assert_true(cfg.queue.dead_letter);
	assert_int_equal(cfg.sandbox.accel, AL_CONFIG_ACCEL_AUTO);
	assert_int_equal(cfg.sandbox.vm_memory_mb, 1024);
	assert_int_equal(cfg.sandbox.prestart, 1);
	assert_string_equal(cfg.sandbox.vmm_cgroup, "/sys/fs/cgroup/airlock");
	assert_int_equal(cfg.templates.allowed.n, 2);
	assert_string_equal(cfg.templates.allowed.name[0], "python");
	assert_string_equal(cfg.templates.allowed.name[1], "c");
	assert_int_equal(cfg.network.n, 0);
	assert_int_equal(cfg.log.level, AL_CONFIG_LOG_INFO);
	al_config_release(&cfg);
}

/* configs/airlock.conf sets every key, to its built-in default. */
static void test_shipped_conf(void **state)
{
	const char *path = AL_SOURCE_DIR "/configs/airlock.conf";
	const struct al_config_key *k;
	struct al_config dflt, cfg;
	char err[4096], *text, *more;
	size_t n, len;

	(void)state;
	al_config_init(&dflt);
	al_config_init(&cfg);
	if (al_config_load(&cfg, path, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_string_equal(cfg.source, path);
	assert_config_equal(&cfg, &dflt);

	/* every key is present: setting it once more must be "set twice" */
	text = read_all(path);
	len = strlen(text);
	more = malloc(len + 256);
	assert_non_null(more);
	k = al_config_keys(&n);
	for (size_t i = 0; i < n; i++) {
		snprintf(more, len + 256, "%s\n[%s]\n%s = x\n", text,
			 k[i].section, k[i].key);
		al_config_init(&cfg);
		assert_int_equal(
		    al_config_load_string(&cfg, "f", more, err, sizeof(err)),
		    -EINVAL);
		if (!strstr(err, "set twice"))
			fail_msg("configs/airlock.conf lacks %s.%s",
				 k[i].section, k[i].key);
	}
	free(more);
	free(text);
}

/* The row docs/config.md must have for key k (see the generator there). */
static void doc_row(const struct al_config *cfg, const struct al_config_key *k,
		    char *buf, size_t len)
{
	char v[2200], r[256], re[512], de[512];
	size_t j = 0;

	al_config_format(cfg, k, v, sizeof(v));
	al_config_range(k, r, sizeof(r));
	for (const char *s = r; *s && j + 2 < sizeof(re); s++) {
		if (*s == '|')
			re[j++] = '\\';
		re[j++] = *s;
	}
	re[j] = 0;
	j = 0;
	for (const char *s = k->doc; *s && j + 2 < sizeof(de); s++) {
		if (*s == '|')
			de[j++] = '\\';
		de[j++] = *s;
	}
	de[j] = 0;
	if (v[0])
		snprintf(buf, len, "| `%s` | `%s` | `%s` | `%s` | %s |",
			 k->section, k->key, v, re, de);
	else
		snprintf(buf, len, "| `%s` | `%s` | (empty) | `%s` | %s |",
			 k->section, k->key, re, de);
}

/* docs/config.md has one table row per key, and no other. */
static void test_docs(void **state)
{
	char *text = read_all(AL_SOURCE_DIR "/docs/config.md");
	const struct al_config_key *k;
	char *begin, *end, row[4096];
	struct al_config cfg;
	size_t n, rows = 0;

	(void)state;
	begin = strstr(text, "<!-- keys:");
	end = strstr(text, "<!-- /keys -->");
	assert_non_null(begin);
	assert_non_null(end);
	*end = 0;
	al_config_init(&cfg);
	k = al_config_keys(&n);
	for (size_t i = 0; i < n; i++) {
		doc_row(&cfg, &k[i], row, sizeof(row));
		strcat(row, "\n");
		if (!strstr(begin, row))
			fail_msg("docs/config.md: missing or stale row:\n%s",
				 row);
	}
	for (char *p = begin; (p = strstr(p, "\n| `")); p++)
		rows++;
	assert_int_equal(rows, n);
	free(text);
}

/* --- errors --------------------------------------------------------------- */

static void test_unknown(void **state)
{
	(void)state;
	expect_load("[redis]\nuri = redis://x\n",
		    "t.conf:2: redis.uri: unknown key; [redis] has url, "
		    "connect_timeout_ms, command_timeout_ms, wait_replicas, "
		    "wait_ms");
	/* one error per unknown section, naming its first key */
	expect_load("[queue]\nname = q\n[redsi]\nurl = x\nport = 1\n",
		    "t.conf:4: redsi.url: unknown section [redsi]");
	expect_load("count = 1\n", "t.conf:1: count: key outside a [section]");
	/* names from the file are printed safely */
	expect_load("[a\x1b]\nb = 1\n", "t.conf:2: a?.b: unknown section [a?]");
}

static void test_range(void **state)
{
	(void)state;
	expect_load("[limits]\nmemory_mb = 63\n",
		    "t.conf:2: limits.memory_mb: must be 64..65536");
	expect_load("[limits]\nmemory_mb = 65537\n",
		    "t.conf:2: limits.memory_mb: must be 64..65536");
	expect_load("[queue]\nmax_deliveries = 0\n",
		    "t.conf:2: queue.max_deliveries: must be 1..100");
	expect_load("[queue]\nmax_deliveries = 99999999999999999999\n",
		    "t.conf:2: queue.max_deliveries: must be 1..100");
	expect_load("[workers]\ncount = -1\n",
		    "t.conf:2: workers.count: must be an integer 0..1024");
	expect_load("[workers]\ncount = 4 # cores\n",
		    "t.conf:2: workers.count: must be an integer 0..1024");
	expect_load("[workers]\ncount = 0x10\n",
		    "t.conf:2: workers.count: must be an integer 0..1024");
	expect_load("[workers]\ncount =\n",
		    "t.conf:2: workers.count: must be an integer 0..1024");
	expect_load("[limits]\noutput_bytes_max = 16777217\n",
		    "t.conf:2: limits.output_bytes_max: must be 1..16777216");
	expect_load("[limits]\nwall_ms_max = 3600001\n",
		    "t.conf:2: limits.wall_ms_max: must be 1..3600000");
	expect_load("[limits]\nwall_ms_max = 3600000\nwall_ms = 3600000\n",
		    NULL);
}

static void test_bool_enum(void **state)
{
	(void)state;
	expect_load("[queue]\ndead_letter = maybe\n",
		    "t.conf:2: queue.dead_letter: must be true or false");
	expect_load("[queue]\ndead_letter = True\n",
		    "t.conf:2: queue.dead_letter: must be true or false");
	expect_load("[queue]\ndead_letter = no\n", NULL);
	expect_load("[sandbox]\naccel = hvf\n",
		    "t.conf:2: sandbox.accel: must be one of auto|kvm|tcg");
	expect_load("[log]\nlevel = trace\n",
		    "t.conf:2: log.level: must be one of "
		    "error|warn|info|debug");
}

static void test_default_above_max(void **state)
{
	(void)state;
	/* the default is set: name it */
	expect_load("[limits]\nmemory_mb = 8192\n",
		    "t.conf:2: limits.memory_mb: must be at most "
		    "limits.memory_mb_max (4096)");
	/* only the max is set: name it */
	expect_load("[limits]\nvcpus_max = 1\nvcpus = 1\npids_max = 100\n",
		    "t.conf:4: limits.pids_max: must be at least limits.pids "
		    "(256)");
	expect_load("[limits]\nstep_timeout_ms_max = 5000\n",
		    "t.conf:2: limits.step_timeout_ms_max: must be at least "
		    "limits.step_timeout_ms (10000)");
	expect_load("[queue]\nheartbeat_ms = 30000\n",
		    "t.conf:2: queue.heartbeat_ms: must be below "
		    "queue.visibility_slack_ms (30000)");
	expect_load("[queue]\nvisibility_slack_ms = 5000\n",
		    "t.conf:2: queue.visibility_slack_ms: must be above "
		    "queue.heartbeat_ms (5000)");
	expect_load("[templates]\ndefault = rust\n",
		    "t.conf:2: templates.default: \"rust\" is not in "
		    "templates.allowed");
	expect_load("[templates]\ndefault = rust\nallowed =\n", NULL);
	expect_load("[templates]\ntime_scale = java:4 scala:20\n", NULL);
	expect_load("[templates]\ntime_scale = java:0\n",
		    "t.conf:2: templates.time_scale: must be NAME:N pairs, N "
		    "1..20, space-separated");
	expect_load("[templates]\nallowed = c\n",
		    "t.conf: templates.default: \"python\" is not in "
		    "templates.allowed");
	/* reported next to other problems, but not about refused values */
	expect_load("[limits]\nmemory_mb = 9000\nvcpus = 99\n"
		    "[queue]\nnmae = x\n",
		    "t.conf:2: limits.memory_mb: must be at most "
		    "limits.memory_mb_max (4096)\n"
		    "t.conf:3: limits.vcpus: must be 1..64\n"
		    "t.conf:5: queue.nmae: unknown key; [queue] has name, "
		    "max_deliveries, result_ttl_s, visibility_slack_ms, "
		    "heartbeat_ms, trim_interval_ms, dead_letter, partitions");
	expect_load("[templates]\ndefault = Bad\n",
		    "t.conf:2: templates.default: must be "
		    "[a-z0-9][a-z0-9_.-]*");
}

static void test_strings(void **state)
{
	char text[512];

	(void)state;
	snprintf(text, sizeof(text), "[queue]\nname = %0*d\n", 65, 0);
	expect_load(text, "t.conf:2: queue.name: longer than 64 bytes");
	snprintf(text, sizeof(text), "[queue]\nname = %0*d\n", 64, 0);
	expect_load(text, NULL);
	snprintf(text, sizeof(text), "[sandbox]\nstate_dir = /%0*d\n", 80, 0);
	expect_load(text, "t.conf:2: sandbox.state_dir: longer than 80 bytes");
	expect_load("[queue]\nname = {q}\n",
		    "t.conf:2: queue.name: must be [a-z0-9_-]+");
	expect_load("[queue]\nname = Q\n",
		    "t.conf:2: queue.name: must be [a-z0-9_-]+");
	expect_load("[pool]\nwarm = python:2  c:1\n", NULL);
	expect_load("[pool]\nwarm = python:9\n",
		    "t.conf:2: pool.warm: must be NAME:N pairs, N 0..8, "
		    "space-separated");
	expect_load("[pool]\nwarm = python\n",
		    "t.conf:2: pool.warm: must be NAME:N pairs, N 0..8, "
		    "space-separated");
	expect_load("[pool]\nwarm = Py:1\n",
		    "t.conf:2: pool.warm: must be NAME:N pairs, N 0..8, "
		    "space-separated");
	expect_load("[redis]\nurl = http://x\n",
		    "t.conf:2: redis.url: must be empty, "
		    "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], "
		    "unix://[[USER]:PASSWORD@]/PATH or "
		    "redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:"
		    "PORT]]...[/MASTER[/DB]]");
	expect_load("[redis]\nurl = redis://\n",
		    "t.conf:2: redis.url: must be empty, "
		    "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], "
		    "unix://[[USER]:PASSWORD@]/PATH or "
		    "redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:"
		    "PORT]]...[/MASTER[/DB]]");
	expect_load("[redis]\nurl = unix:///run/redis.sock\n", NULL);
	expect_load("[redis]\nurl = redis+sentinel://10.0.0.1,10.0.0.2:26380"
		    "/mymaster\n",
		    NULL);
	expect_load("[redis]\nurl = redis+sentinel:///m\n",
		    "t.conf:2: redis.url: must be empty, "
		    "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], "
		    "unix://[[USER]:PASSWORD@]/PATH or "
		    "redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:"
		    "PORT]]...[/MASTER[/DB]]");
	expect_load("[redis]\nurl = redis://:pw@10.0.0.1:6379/2\n", NULL);
	expect_load("[sandbox]\nstate_dir = var/lib\n",
		    "t.conf:2: sandbox.state_dir: must be empty or an absolute "
		    "path");
	expect_load("[sandbox]\nvmm_cgroup =\n",
		    "t.conf:2: sandbox.vmm_cgroup: must be an absolute path");
	expect_load("[sandbox]\nqemu = qemu system\n",
		    "t.conf:2: sandbox.qemu: must be a command name or an "
		    "absolute path");
	expect_load("[sandbox]\nqemu = /opt/qemu/bin/qemu-system-x86_64\n",
		    NULL);
	/* uid 0 is never a VMM's */
	expect_load("[sandbox]\nvmm_uid_base = 0\n",
		    "t.conf:2: sandbox.vmm_uid_base: must be 1..4000000000");
	expect_load("[sandbox]\nvmm_uid_base = 2000000\nvmm_uid_count = 64\n",
		    NULL);
	expect_load("[sandbox]\nqemu = a\tb\n",
		    "t.conf:2: sandbox.qemu: must not contain control "
		    "characters");
	expect_load("[metrics]\nlisten = 127.0.0.1:9464\n", NULL);
	expect_load("[metrics]\nlisten = [::1]:9464\n", NULL);
	expect_load("[metrics]\nlisten = localhost:0\n",
		    "t.conf:2: metrics.listen: must be empty or HOST:PORT");
	expect_load("[metrics]\nlisten = 9464\n",
		    "t.conf:2: metrics.listen: must be empty or HOST:PORT");
	expect_load("[metrics]\nlisten = [::1:9464\n",
		    "t.conf:2: metrics.listen: must be empty or HOST:PORT");
}

static void test_names(void **state)
{
	char text[4096];
	size_t n;

	(void)state;
	expect_load("[templates]\nallowed = python c c\n",
		    "t.conf:2: templates.allowed: lists \"c\" twice");
	expect_load("[templates]\nallowed = python C\n",
		    "t.conf:2: templates.allowed: names must be "
		    "[a-z0-9][a-z0-9_.-]*");
	n = (size_t)snprintf(text, sizeof(text), "[templates]\nallowed =");
	for (int i = 0; i < 33; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, " p%d", i);
	snprintf(text + n, sizeof(text) - n, "\n");
	expect_load(text, "t.conf:2: templates.allowed: more than 32 names");
}

/* The HTTP API's keys (issue 14): targets, listen, log format. */
static void test_http_keys(void **state)
{
	(void)state;
	expect_load("[http]\ncallback_allow = 10.0.0.0/33\n",
		    "t.conf:2: http.callback_allow: names must be HOST:PORT "
		    "or ADDR/PREFIX");
	expect_load("[http]\ncallback_allow = example.org\n",
		    "t.conf:2: http.callback_allow: names must be HOST:PORT "
		    "or ADDR/PREFIX");
	expect_load("[http]\nlisten = 8080\n",
		    "t.conf:2: http.listen: must be empty or HOST:PORT");
	expect_load("[log]\nformat = xml\n",
		    "t.conf:2: log.format: must be one of text|json");
	assert_true(al_config_token_valid("abcdefghijklmnop"));
	assert_false(al_config_token_valid("short"));
	assert_false(al_config_token_valid("abcdefghijklmnop q"));
}

static void test_syntax(void **state)
{
	char text[512];

	(void)state;
	expect_load("[queue]\nname = a\nname = b\n",
		    "t.conf:3: queue.name: set twice (first on line 2)");
	expect_load("[queue]\nname\n",
		    "t.conf:2: syntax error: want KEY = VALUE or [SECTION]");
	expect_load("[queue\nname = a\n",
		    "t.conf:1: syntax error: want KEY = VALUE or [SECTION]\n"
		    "t.conf:2: name: key outside a [section]");
	/* inih would cut a long line in two; we refuse it */
	snprintf(text, sizeof(text), "[redis]\nurl = redis://%0*d\n", 190, 0);
	expect_load(text, "t.conf:2: line longer than 196 bytes");
	/* indentation is not a continuation line; CRLF, comments, BOM */
	expect_load("[queue]\r\n  name = a\r\n\tmax_deliveries = 5 ; c\r\n"
		    "; x\r\n# y\r\n",
		    NULL);
	expect_load("\xef\xbb\xbf[queue]\nname = a\n", NULL);
	/* several problems: all of them, by line */
	expect_load("[limits]\nmemory_mb = 1\nvcpus = x\n[queue]\nbad = 1\n",
		    "t.conf:2: limits.memory_mb: must be 64..65536\n"
		    "t.conf:3: limits.vcpus: must be an integer 1..64\n"
		    "t.conf:5: queue.bad: unknown key; [queue] has name, "
		    "max_deliveries, result_ttl_s, visibility_slack_ms, "
		    "heartbeat_ms, trim_interval_ms, dead_letter, partitions");
}

/* At most AL_CONFIG_ERRORS_MAX problems, then a count. */
static void test_many_errors(void **state)
{
	struct al_config cfg;
	char text[1024], err[8192];
	size_t n = 0, lines = 0;

	(void)state;
	n += (size_t)snprintf(text, sizeof(text), "[workers]\n");
	for (int i = 0; i < AL_CONFIG_ERRORS_MAX + 4; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "count = x%d\n", i);
	al_config_init(&cfg);
	assert_int_equal(
	    al_config_load_string(&cfg, "m", text, err, sizeof(err)), -EINVAL);
	for (const char *p = err; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, AL_CONFIG_ERRORS_MAX);
	assert_non_null(strstr(err, "\nm: 4 more problems"));
	assert_non_null(strstr(err, "m:2: workers.count: must be an integer"));
}

static void test_values(void **state)
{
	struct al_config cfg;
	char err[1024];

	(void)state;
	al_config_init(&cfg);
	assert_int_equal(
	    al_config_load_string(&cfg, "v",
				  "[queue]\n  name = grading ; the queue\n"
				  "[sandbox]\naccel = tcg\n"
				  "[limits]\nmemory_mb_max = 2048\n"
				  "[templates]\nallowed =  python\t c  rust \n"
				  "[log]\nlevel = debug\n",
				  err, sizeof(err)),
	    0);
	assert_string_equal(cfg.queue.name, "grading");
	assert_int_equal(cfg.sandbox.accel, AL_CONFIG_ACCEL_TCG);
	assert_int_equal(cfg.limits.max.memory_mb, 2048);
	assert_int_equal(cfg.limits.defaults.memory_mb, 512);
	assert_int_equal(cfg.templates.allowed.n, 3);
	assert_string_equal(cfg.templates.allowed.name[2], "rust");
	assert_int_equal(cfg.log.level, AL_CONFIG_LOG_DEBUG);
	assert_string_equal(cfg.source, "v");
	/* a second file applies on top of the first */
	assert_int_equal(al_config_load_string(&cfg, "w",
					       "[limits]\nmemory_mb = 1024\n",
					       err, sizeof(err)),
			 0);
	assert_int_equal(cfg.limits.defaults.memory_mb, 1024);
	assert_string_equal(cfg.queue.name, "grading");
	al_config_release(&cfg);
}

static void test_files(void **state)
{
	struct al_config cfg;
	char err[1024], want[512], *big;
	const char *path;

	(void)state;
	al_config_init(&cfg);
	snprintf(want, sizeof(want), "%s/nope.conf", tmpdir);
	assert_int_equal(al_config_load(&cfg, want, err, sizeof(err)), -ENOENT);
	strcat(want, ": cannot read: No such file or directory");
	assert_string_equal(err, want);

	assert_int_equal(al_config_load(&cfg, tmpdir, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, ": not a regular file"));

	big = malloc(AL_CONFIG_FILE_MAX + 2);
	assert_non_null(big);
	memset(big, '#', AL_CONFIG_FILE_MAX + 1);
	big[AL_CONFIG_FILE_MAX + 1] = 0;
	path = write_tmp("big.conf", big);
	free(big);
	assert_int_equal(al_config_load(&cfg, path, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, ": larger than 262144 bytes"));

	path = write_tmp("nul.conf", "[queue]\nname = a\n");
	{
		FILE *f = fopen(path, "a");

		assert_non_null(f);
		fputs("# x", f);
		fputc(0, f);
		fputs("\n", f);
		fclose(f);
	}
	assert_int_equal(al_config_load(&cfg, path, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:3: contains a NUL byte", path);
	assert_string_equal(err, want);

	path = write_tmp("ok.conf", "[queue]\nname = fromfile\n");
	assert_int_equal(al_config_load(&cfg, path, err, sizeof(err)), 0);
	assert_string_equal(cfg.queue.name, "fromfile");
	assert_string_equal(cfg.source, path);

	/* a tiny error buffer truncates, never overflows */
	al_config_init(&cfg);
	assert_int_equal(
	    al_config_load_string(&cfg, "t", "[x]\na = 1\n", err, 8), -EINVAL);
	assert_string_equal(err, "t:2: x.");
	al_config_release(&cfg);
}

/* --- search and environment ----------------------------------------------- */

static void test_precedence(void **state)
{
	struct al_config cfg;
	char a[256], b[256], err[1024];
	struct stat st;

	(void)state;
	snprintf(a, sizeof(a), "%s",
		 write_tmp("a.conf", "[queue]\nname = a\n"));
	snprintf(b, sizeof(b), "%s",
		 write_tmp("b.conf", "[queue]\nname = b\n"));

	/* explicit path beats $AIRLOCK_CONFIG */
	setenv("AIRLOCK_CONFIG", b, 1);
	al_config_init(&cfg);
	assert_int_equal(al_config_load_default(&cfg, a, err, sizeof(err)), 0);
	assert_string_equal(cfg.queue.name, "a");
	assert_string_equal(cfg.source, a);

	/* $AIRLOCK_CONFIG beats /etc */
	al_config_init(&cfg);
	assert_int_equal(al_config_load_default(&cfg, NULL, err, sizeof(err)),
			 0);
	assert_string_equal(cfg.queue.name, "b");

	/* a named file must exist */
	setenv("AIRLOCK_CONFIG", "/nonexistent/airlock.conf", 1);
	al_config_init(&cfg);
	assert_int_equal(al_config_load_default(&cfg, NULL, err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/airlock.conf: cannot read"));
	assert_int_equal(al_config_load_default(&cfg, "/nonexistent/x.conf",
						err, sizeof(err)),
			 -ENOENT);

	/* empty = unset; with no /etc file, the built-ins */
	setenv("AIRLOCK_CONFIG", "", 1);
	al_config_init(&cfg);
	if (stat(AL_CONFIG_SYSTEM_PATH, &st) < 0) {
		assert_int_equal(
		    al_config_load_default(&cfg, NULL, err, sizeof(err)), 0);
		assert_string_equal(cfg.source, "");
		assert_string_equal(cfg.queue.name, "default");
	}
	unsetenv("AIRLOCK_CONFIG");

	/* a bad file leaves cfg alone */
	snprintf(a, sizeof(a), "%s",
		 write_tmp("bad.conf", "[queue]\nname = c\nbad = 1\n"));
	al_config_init(&cfg);
	assert_int_equal(al_config_load_default(&cfg, a, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(cfg.queue.name, "default");
	al_config_release(&cfg);
}

static void test_env_redis(void **state)
{
	struct al_config cfg;
	char a[256], err[1024];

	(void)state;
	snprintf(a, sizeof(a), "%s",
		 write_tmp("r.conf", "[redis]\nurl = redis://file:6379\n"));
	setenv("AIRLOCK_REDIS", "redis://env:6380/1", 1);
	al_config_init(&cfg);
	assert_int_equal(al_config_load_default(&cfg, a, err, sizeof(err)), 0);
	assert_string_equal(cfg.redis.url, "redis://env:6380/1");
	assert_true(cfg.redis_from_env);

	/* empty: no override */
	setenv("AIRLOCK_REDIS", "", 1);
	al_config_init(&cfg);
	assert_int_equal(al_config_load_default(&cfg, a, err, sizeof(err)), 0);
	assert_string_equal(cfg.redis.url, "redis://file:6379");
	assert_false(cfg.redis_from_env);

	/* checked like the key; cfg untouched */
	setenv("AIRLOCK_REDIS", "tcp://x", 1);
	al_config_init(&cfg);
	assert_int_equal(al_config_load_default(&cfg, a, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "AIRLOCK_REDIS: must be empty, "
				 "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], "
				 "unix://[[USER]:PASSWORD@]/PATH or "
				 "redis+sentinel://[[USER]:PASSWORD@]HOST[:"
				 "PORT][,HOST[:PORT]]...[/MASTER[/DB]]");
	assert_string_equal(cfg.redis.url, "");
	unsetenv("AIRLOCK_REDIS");
	al_config_release(&cfg);
}

static void test_resolve(void **state)
{
	struct al_config cfg;
	char buf[256];

	(void)state;
	al_config_init(&cfg);
	assert_int_equal(al_config_templates_dir(&cfg, buf, sizeof(buf)), 0);
	assert_string_equal(buf, AL_SOURCE_DIR "/configs/templates");
	setenv("AIRLOCK_TEMPLATES_DIR", "/srv/templates", 1);
	assert_int_equal(al_config_templates_dir(&cfg, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/srv/templates");
	strcpy(cfg.templates.dir, "/etc/airlock/templates");
	assert_int_equal(al_config_templates_dir(&cfg, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/etc/airlock/templates");
	unsetenv("AIRLOCK_TEMPLATES_DIR");
	assert_int_equal(al_config_templates_dir(&cfg, buf, 8), -ENAMETOOLONG);

	assert_int_equal(al_config_state_dir(&cfg, buf, sizeof(buf)), 0);
	if (geteuid() == 0)
		assert_string_equal(buf, "/var/lib/airlock");
	else
		assert_non_null(strstr(buf, "/airlock"));
	strcpy(cfg.sandbox.state_dir, "/run/al");
	assert_int_equal(al_config_state_dir(&cfg, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/run/al");
	al_config_release(&cfg);
}

/* [network.NAME] sections: each problem named with its line and key. */
static void test_net_policies(void **state)
{
	struct al_config cfg;
	const struct sb_net_policy *p;
	char text[4096], err[1024];
	size_t n;

	(void)state;
	expect_load("[network.web]\nallow = a.test\nports = tcp/80\n", NULL);
	expect_load("[network.web]\nallow = a.test\nport = tcp/80\n",
		    "t.conf:3: network.web.port: unknown key; a policy has "
		    "allow, ports, rate_kbit, conn_per_min");
	expect_load("[network.web]\nports = tcp/80\n\n[log]\nlevel = info\n",
		    "t.conf:2: network.web: allows nothing: set allow "
		    "(names, CIDRs)");
	expect_load("[network.web]\nallow = a.test 192.0.2.1/24\n"
		    "ports = tcp/80\n",
		    "t.conf:2: network.web.allow: \"192.0.2.1/24\" has host "
		    "bits set (network 192.0.2.0/24?)");
	expect_load("[network.web]\nallow = a.test\nports = tcp/80 sctp/9\n",
		    "t.conf:3: network.web.ports: \"sctp/9\": want tcp/PORT, "
		    "udp/PORT or PROTO/LO-HI");
	expect_load("[network.web]\nallow = a.test\nports = tcp/80\n"
		    "rate_kbit = 5\nrate_kbit = 6\n",
		    "t.conf:5: network.web.rate_kbit: set twice (first on "
		    "line 4)");
	expect_load("[network.none]\nallow = a.test\nports = tcp/80\n",
		    "t.conf:2: network.none: a policy name must be "
		    "[a-z0-9][a-z0-9_.-]*, at most 64 bytes, and not none");
	expect_load("[network.Web]\nallow = a.test\n",
		    "t.conf:2: network.Web: a policy name must be "
		    "[a-z0-9][a-z0-9_.-]*, at most 64 bytes, and not none");
	/* the old name list is gone, with a pointer to what replaced it */
	expect_load("[network]\npolicies = pypi\n",
		    "t.conf:2: network.policies: [network] has only dns; a "
		    "policy is a [network.NAME] section");
	/* [network] dns: IPv4[:PORT] */
	expect_load("[network]\ndns = 2001:db8::1\n",
		    "t.conf:2: network.dns: must be empty or IPV4[:PORT]");
	expect_load("[network]\ndns = 192.0.2.1:0\n",
		    "t.conf:2: network.dns: must be empty or IPV4[:PORT]");
	expect_load("[network]\ndns = 192.0.2.1:65536\n",
		    "t.conf:2: network.dns: must be empty or IPV4[:PORT]");
	expect_load("[network]\ndns = resolver.test\n",
		    "t.conf:2: network.dns: must be empty or IPV4[:PORT]");
	al_config_init(&cfg);
	assert_int_equal(al_config_load_string(&cfg, "t.conf",
					       "[network]\ndns = "
					       "192.0.2.53:5353\n",
					       err, sizeof(err)),
			 0);
	assert_string_equal(cfg.network.dns, "192.0.2.53:5353");
	al_config_release(&cfg);
	/* too many policies */
	n = 0;
	for (int i = 0; i <= SB_NET_POLICIES_MAX; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "[network.p%d]\nallow = a.test\n"
				      "ports = tcp/1\n",
				      i);
	snprintf(err, sizeof(err), "t.conf:%d: network.p%d: more than %d "
		 "policies\nt.conf:%d: network.p%d: more than %d policies",
		 3 * SB_NET_POLICIES_MAX + 2, SB_NET_POLICIES_MAX,
		 SB_NET_POLICIES_MAX, 3 * SB_NET_POLICIES_MAX + 3,
		 SB_NET_POLICIES_MAX, SB_NET_POLICIES_MAX);
	expect_load(text, err);

	/* lists span lines; a section seen twice adds to the same policy */
	al_config_init(&cfg);
	if (al_config_load_string(&cfg, "m",
				  "[network.web]\nallow = A.Test\n"
				  "ports = tcp/80\n[log]\nlevel = warn\n"
				  "[network.web]\nallow = *.b.test 10.0.0.0/8\n"
				  "ports = udp/53\n",
				  err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(cfg.network.n, 1);
	p = al_config_net_policy(&cfg, "web");
	assert_non_null(p);
	assert_int_equal(p->n_names, 2);
	assert_string_equal(p->names[0].name, "a.test");
	assert_true(p->names[1].suffix);
	assert_int_equal(p->n_cidrs, 1);
	assert_int_equal(p->n_ports, 2);
	/* a later file replaces a policy whole, keeps the others */
	if (al_config_load_string(&cfg, "m2",
				  "[network.web]\nallow = c.test\n"
				  "ports = tcp/443\n"
				  "[network.db]\nallow = 192.0.2.9\n"
				  "ports = tcp/5432\n",
				  err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(cfg.network.n, 2);
	p = al_config_net_policy(&cfg, "web");
	assert_int_equal(p->n_names, 1);
	assert_int_equal(p->n_cidrs, 0);
	assert_string_equal(p->names[0].name, "c.test");
	al_config_release(&cfg);
}

/* docs/config.md and configs/airlock.conf describe every policy key. */
static void test_net_docs(void **state)
{
	char *doc = read_all(AL_SOURCE_DIR "/docs/config.md");
	char *conf = read_all(AL_SOURCE_DIR "/configs/airlock.conf");
	const struct sb_net_key *k;
	char want[64];
	size_t n;

	(void)state;
	k = sb_net_policy_keys(&n);
	for (size_t i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "| `%s` |", k[i].key);
		if (!strstr(doc, want))
			fail_msg("docs/config.md lacks policy key %s",
				 k[i].key);
		snprintf(want, sizeof(want), "\n# %s = ", k[i].key);
		if (!strstr(conf, want))
			fail_msg("configs/airlock.conf lacks policy key %s",
				 k[i].key);
	}
	assert_non_null(strstr(doc, "[network.NAME]"));
	free(doc);
	free(conf);
}

/* --- using it ------------------------------------------------------------- */

static void test_policy(void **state)
{
	struct al_job job = {0};
	struct al_config cfg;
	struct al_policy p;
	struct al_diags d;
	struct al_limits l;
	char err[1024];

	(void)state;
	al_config_init(&cfg);
	assert_int_equal(al_config_load_string(
			     &cfg, "p",
			     "[limits]\nmemory_mb = 256\nmemory_mb_max = 1024\n"
			     "vcpus_max = 2\nstep_timeout_ms = 3000\n"
			     "step_timeout_ms_max = 60000\n"
			     "[templates]\ndefault = c\nallowed = c rust\n"
			     "[network.pypi]\nallow = pypi.org\n"
			     "ports = tcp/443\n"
			     "[network.egress-all]\nallow = 0.0.0.0/0\n"
			     "ports = tcp/1-65535\n",
			     err, sizeof(err)),
			 0);
	al_config_policy(&cfg, &p);
	assert_int_equal(p.defaults.memory_mb, 256);
	assert_int_equal(p.max.memory_mb, 1024);
	assert_int_equal(p.max.vcpus, 2);
	assert_int_equal(p.defaults.wall_ms, 120000);
	assert_int_equal(p.step_timeout_ms, 3000);
	assert_int_equal(p.step_timeout_max_ms, 60000);
	assert_string_equal(p.template_, "c");
	assert_non_null(p.templates);
	assert_string_equal(p.templates[0], "c");
	assert_string_equal(p.templates[1], "rust");
	assert_null(p.templates[2]);
	assert_string_equal(p.networks[0], "pypi");
	assert_string_equal(p.networks[1], "egress-all");
	assert_null(p.networks[2]);

	/* and the job checks of results/ use it */
	al_job_limits(&job, &p, &l);
	assert_int_equal(l.memory_mb, 256);
	job.limits.memory_mb = 2048;
	job.template_ = "python";
	job.network = "pypi";
	al_diags_init(&d);
	assert_int_equal(al_job_check_policy(&job, &p, &d), -EINVAL);
	assert_int_equal(d.n, 2);
	assert_string_equal(d.items[0].path, "limits.memory_mb");
	assert_string_equal(d.items[1].path, "template");

	/* the policies by name, for the sandbox */
	assert_non_null(al_config_net_policy(&cfg, "pypi"));
	assert_string_equal(al_config_net_policy(&cfg, "pypi")->names[0].name,
			    "pypi.org");
	assert_int_equal(al_config_net_policy(&cfg, "egress-all")->n_cidrs, 1);
	assert_null(al_config_net_policy(&cfg, "none"));
	assert_null(al_config_net_policy(&cfg, NULL));
	assert_null(al_config_net_policy(&cfg, "web"));

	/* empty lists: any template, no network policy */
	al_config_init(&cfg);
	assert_int_equal(al_config_load_string(&cfg, "q",
					       "[templates]\nallowed =\n",
					       err, sizeof(err)),
			 0);
	al_config_policy(&cfg, &p);
	assert_null(p.templates);
	assert_null(p.networks);

	/* the built-in config is the built-in policy */
	al_config_init(&cfg);
	al_config_policy(&cfg, &p);
	assert_memory_equal(&p.defaults, &al_policy_default()->defaults,
			    sizeof(p.defaults));
	assert_memory_equal(&p.max, &al_policy_default()->max, sizeof(p.max));
	al_config_release(&cfg);
}

static char *dump(const struct al_config *cfg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(al_config_dump(cfg, f), 0);
	fclose(f);
	return buf;
}

static void test_dump_roundtrip(void **state)
{
	static const char *const text =
	    "[redis]\nurl = unix:///run/airlock/redis.sock\n"
	    "connect_timeout_ms = 100\ncommand_timeout_ms = 200\n"
	    "wait_replicas = 1\nwait_ms = 300\n"
	    "[queue]\nname = grading-2\nmax_deliveries = 5\n"
	    "result_ttl_s = 3600\nvisibility_slack_ms = 60000\n"
	    "heartbeat_ms = 1000\ntrim_interval_ms = 5000\n"
	    "dead_letter = off\npartitions = 4\n"
	    "[workers]\ncount = 8\nshutdown_grace_ms = 0\nmemory_mb = 1024\n"
	    "max_sessions = 2\n"
	    "[sessions]\nttl_default_s = 60\nttl_max_s = 120\n"
	    "idle_default_s = 0\nhibernate_default_s = 30\n"
	    "create_timeout_ms = 1000\nkeep_s = 600\n"
	    "output_max_bytes = 65536\noutput_budget_bytes = 131072\n"
	    "snapshots_per_principal = 3\nspare = true\n"
	    "[sandbox]\nstate_dir = /srv/airlock\nqemu = /usr/local/bin/qemu\n"
	    "accel = kvm\nvm_memory_mb = 2048\nvm_vcpus = 2\nprestart = 0\n"
	    "vm_ttl_slack_ms = 1\nvmm_uid_base = 3000000\nvmm_uid_count = 9\n"
	    "vmm_cgroup = /sys/fs/cgroup/al.slice\n"
	    "vmm_memory_overhead_mb = 64\ntcg_tb_size_mb = 128\n"
	    "vmm_cpu_max = 150\n"
	    "[pool]\nwarm = python:2 c:1\nwarm_last = 0\nmax_age_s = 30\n"
	    "warm_zygote = false\n"
	    "net_ready = 2\n"
	    "[limits]\nmemory_mb = 128\nmemory_mb_max = 2048\nvcpus = 2\n"
	    "vcpus_max = 2\nwall_ms = 1000\nwall_ms_max = 2000\n"
	    "output_bytes = 10\noutput_bytes_max = 20\npids = 3\n"
	    "pids_max = 4\ndisk_mb = 5\ndisk_mb_max = 6\n"
	    "file_size_mb = 7\nfile_size_mb_max = 8\n"
	    "step_timeout_ms = 9\nstep_timeout_ms_max = 10\n"
	    "[templates]\ndefault = c\nallowed = c python rust\n"
	    "dir = /usr/share/airlock/templates\ncheck_images = false\n"
	    "time_scale = java:3\n"
	    "[network]\ndns = 192.0.2.53:5353\n"
	    "[network.pypi]\nallow = pypi.org *.pythonhosted.org\n"
	    "allow = 2001:db8::/32 192.0.2.7\nports = tcp/443 udp/1000-2000\n"
	    "rate_kbit = 800\nconn_per_min = 60\n"
	    "[snapshots]\nallowed = c-deps\nmax_disk_mb = 2048\n"
	    "build_on_demand = false\n"
	    "[metrics]\nlisten = 127.0.0.1:9464\n"
	    "[packages]\npypi_upstream = http://127.0.0.1:1/simple/\n"
	    "npm_upstream = https://registry.example/\n"
	    "[http]\nlisten = [::1]:8080\ntoken_file = /etc/airlock/token\n"
	    "tokens_file = /etc/airlock/tokens\n"
	    "max_body_bytes = 65536\nmax_connections = 8\ntimeout_s = 5\n"
	    "max_wait_s = 60\nqueue_cap = 500\n"
	    "callback_allow = 127.0.0.1:9000 10.0.0.0/8 fd00::/8\n"
	    "callback_attempts = 2\n"
	    "[log]\nlevel = warn\nformat = json\n";
	struct al_config cfg, back, dflt;
	char err[1024], *out, *out2;

	(void)state;
	al_config_init(&cfg);
	if (al_config_load_string(&cfg, "rt", text, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	/* the text sets every key to something else than its default */
	al_config_init(&dflt);
	{
		const struct al_config_key *k;
		char va[4096], vb[4096];
		size_t n;

		k = al_config_keys(&n);
		for (size_t i = 0; i < n; i++) {
			al_config_format(&cfg, &k[i], va, sizeof(va));
			al_config_format(&dflt, &k[i], vb, sizeof(vb));
			if (strcmp(va, vb) == 0)
				fail_msg("round trip text leaves %s.%s at "
					 "its default",
					 k[i].section, k[i].key);
		}
	}
	out = dump(&cfg);
	assert_non_null(strstr(out, "# airlock effective config: rt\n"));
	al_config_init(&back);
	if (al_config_load_string(&back, "dump", out, err, sizeof(err)) != 0)
		fail_msg("%s\n%s", err, out);
	assert_config_equal(&cfg, &back);
	/* and dumping again gives the same text, but for the source */
	out2 = dump(&back);
	assert_string_equal(strchr(out, '\n'), strchr(out2, '\n'));
	free(out);
	free(out2);

	/* the defaults round-trip too */
	out = dump(&dflt);
	assert_non_null(strstr(out, "built-in defaults"));
	assert_non_null(strstr(out, "\nurl =\n"));
	al_config_init(&back);
	assert_int_equal(
	    al_config_load_string(&back, "d", out, err, sizeof(err)), 0);
	assert_config_equal(&dflt, &back);
	free(out);
}

static void test_dump_redacts(void **state)
{
	struct al_config cfg;
	char err[256], *out;

	(void)state;
	al_config_init(&cfg);
	assert_int_equal(
	    al_config_load_string(&cfg, "s",
				  "[redis]\nurl = redis://u:s3cret@h:1/0\n",
				  err, sizeof(err)),
	    0);
	out = dump(&cfg);
	assert_null(strstr(out, "s3cret"));
	assert_non_null(strstr(out, "\nurl = redis://u:REDACTED@h:1/0\n"));
	free(out);

	/* an '@' after the host is no password */
	al_config_init(&cfg);
	assert_int_equal(
	    al_config_load_string(&cfg, "s", "[redis]\nurl = redis://h:1/0@x\n",
				  err, sizeof(err)),
	    0);
	out = dump(&cfg);
	assert_non_null(strstr(out, "\nurl = redis://h:1/0@x\n"));
	free(out);

	/* nor does one from the environment leak */
	setenv("AIRLOCK_REDIS", "unix://:pw@/run/redis.sock", 1);
	al_config_init(&cfg);
	assert_int_equal(
	    al_config_load_default(&cfg, write_tmp("e.conf", "# empty\n"), err,
				   sizeof(err)),
	    0);
	unsetenv("AIRLOCK_REDIS");
	out = dump(&cfg);
	assert_null(strstr(out, "pw"));
	assert_non_null(strstr(out,
			       "# from $AIRLOCK_REDIS\n"
			       "url = unix://:REDACTED@/run/redis.sock\n"));
	free(out);
	al_config_release(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_shipped_conf),
	    cmocka_unit_test(test_docs),
	    cmocka_unit_test(test_unknown),
	    cmocka_unit_test(test_range),
	    cmocka_unit_test(test_bool_enum),
	    cmocka_unit_test(test_default_above_max),
	    cmocka_unit_test(test_strings),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_http_keys),
	    cmocka_unit_test(test_syntax),
	    cmocka_unit_test(test_many_errors),
	    cmocka_unit_test(test_values),
	    cmocka_unit_test(test_files),
	    cmocka_unit_test(test_precedence),
	    cmocka_unit_test(test_env_redis),
	    cmocka_unit_test(test_resolve),
	    cmocka_unit_test(test_net_policies),
	    cmocka_unit_test(test_net_docs),
	    cmocka_unit_test(test_policy),
	    cmocka_unit_test(test_dump_roundtrip),
	    cmocka_unit_test(test_dump_redacts),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
