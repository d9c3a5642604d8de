/* test_http_req.c: the HTTP API's routes, ?wait=, bodies
 * (tools/api/http_req.c), the callback target check
 * (tools/api/callback.c), the metrics text (dispatcher/serve/metrics.c) and the
 * JSON log splitter (dispatcher/queue/log.c).
 */
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

#include "callback.h"
#include "http.h"
#include "http_req.h"
#include "log.h"
#include "metrics.h"

static void test_routes(void **state)
{
	char id[AL_ID_MAX + 1];
	enum al_route r;

	(void)state;
	assert_int_equal(al_http_route("POST", "/jobs", &r, id), 0);
	assert_int_equal(r, AL_ROUTE_SUBMIT);
	assert_int_equal(al_http_route("POST", "/jobs/batch", &r, id), 0);
	assert_int_equal(r, AL_ROUTE_BATCH);
	assert_int_equal(al_http_route("GET", "/jobs/j-1.a:b", &r, id), 0);
	assert_int_equal(r, AL_ROUTE_JOB);
	assert_string_equal(id, "j-1.a:b");
	assert_int_equal(al_http_route("DELETE", "/jobs/x", &r, id), 0);
	assert_int_equal(r, AL_ROUTE_CANCEL);
	assert_int_equal(al_http_route("GET", "/metrics", &r, id), 0);
	assert_int_equal(r, AL_ROUTE_METRICS);
	/* wrong method, unknown path, bad id */
	assert_int_equal(al_http_route("GET", "/jobs", &r, id), -EPERM);
	assert_int_equal(al_http_route("PUT", "/jobs/x", &r, id), -EPERM);
	assert_int_equal(al_http_route("POST", "/jobs/x", &r, id), -EPERM);
	assert_int_equal(al_http_route("GET", "/nope", &r, id), -ENOENT);
	assert_int_equal(al_http_route("GET", "/jobs/", &r, id), -ENOENT);
	assert_int_equal(al_http_route("GET", "/jobsx", &r, id), -ENOENT);
	assert_int_equal(al_http_route("GET", "/jobs/a b", &r, id), -EINVAL);
	assert_int_equal(al_http_route("GET", "/jobs/a//b", &r, id), -EINVAL);
	assert_int_equal(al_http_route("GET", "/jobs/a/", &r, id), -EINVAL);
	assert_int_equal(al_http_route("GET", "/jobs/a/../b", &r, id), -EINVAL);
	assert_int_equal(al_http_route("GET", "/jobs/a%00b", &r, id), -EINVAL);
}

/* Ids with slashes (every `airlock eval` id) are reachable: the id is
 * the whole rest of the path; "batch" is a job but for POST. */
/* An exec of a session: reattach (GET), cancel (DELETE), signal (POST
 * .../signal); the id comes back as "ID/N". */
static void test_route_exec_signal(void **state)
{
	const char *sid = "s-0123456789abcdef01234567";
	char id[AL_ID_MAX + 1], path[128];
	enum al_route r;

	(void)state;
	snprintf(path, sizeof(path), "/sessions/%s/exec/12", sid);
	assert_int_equal(al_http_route("GET", path, &r, id), 0);
	assert_int_equal(r, AL_ROUTE_SESS_OUTPUT);
	assert_string_equal(id, "s-0123456789abcdef01234567/12");
	assert_int_equal(al_http_route("DELETE", path, &r, id), 0);
	assert_int_equal(r, AL_ROUTE_SESS_SIGNAL);
	assert_string_equal(id, "s-0123456789abcdef01234567/12");
	assert_int_equal(al_http_route("POST", path, &r, id), -EPERM);
	snprintf(path, sizeof(path), "/sessions/%s/exec/3/signal", sid);
	assert_int_equal(al_http_route("POST", path, &r, id), 0);
	assert_int_equal(r, AL_ROUTE_SESS_SIGNAL);
	assert_string_equal(id, "s-0123456789abcdef01234567/3");
	assert_true(al_http_route_has_body(r));
	assert_int_equal(al_http_route("GET", path, &r, id), -EPERM);
	snprintf(path, sizeof(path), "/sessions/%s/exec/3/signalx", sid);
	assert_int_equal(al_http_route("POST", path, &r, id), -ENOENT);
	snprintf(path, sizeof(path), "/sessions/%s/exec/03/signal", sid);
	assert_int_equal(al_http_route("POST", path, &r, id), -ENOENT);
	snprintf(path, sizeof(path), "/sessions/%s/exec//signal", sid);
	assert_int_equal(al_http_route("POST", path, &r, id), -ENOENT);
}

static void test_route_slash_ids(void **state)
{
	char id[AL_ID_MAX + 1], path[256], max[AL_ID_MAX + 8];
	enum al_route r;

	(void)state;
	assert_int_equal(
	    al_http_route("GET", "/jobs/HumanEval/0/s0-ab12cd34ef", &r, id), 0);
	assert_int_equal(r, AL_ROUTE_JOB);
	assert_string_equal(id, "HumanEval/0/s0-ab12cd34ef");
	assert_int_equal(al_http_route("DELETE", "/jobs/Mbpp/2/s1-x", &r, id),
			 0);
	assert_int_equal(r, AL_ROUTE_CANCEL);
	assert_string_equal(id, "Mbpp/2/s1-x");
	assert_int_equal(al_http_route("POST", "/jobs/a/b", &r, id), -EPERM);
	/* the batch route stays POST's; GET and DELETE reach job "batch" */
	assert_int_equal(al_http_route("POST", "/jobs/batch", &r, id), 0);
	assert_int_equal(r, AL_ROUTE_BATCH);
	assert_int_equal(al_http_route("GET", "/jobs/batch", &r, id), 0);
	assert_int_equal(r, AL_ROUTE_JOB);
	assert_string_equal(id, "batch");
	assert_int_equal(al_http_route("DELETE", "/jobs/batch", &r, id), 0);
	assert_int_equal(r, AL_ROUTE_CANCEL);
	assert_int_equal(al_http_route("GET", "/jobs/batch/1", &r, id), 0);
	assert_string_equal(id, "batch/1");
	/* %2F (decoded before routing, as libmicrohttpd does) */
	snprintf(path, sizeof(path), "/jobs/HumanEval%%2F0%%2fs0-ab");
	al_http_unescape(path);
	assert_int_equal(al_http_route("GET", path, &r, id), 0);
	assert_string_equal(id, "HumanEval/0/s0-ab");
	/* the longest id, and one byte more */
	memset(max, 'a', sizeof(max));
	memcpy(max, "/jobs/", 6);
	max[6 + AL_ID_MAX] = '\0';
	max[6 + 10] = '/';
	assert_int_equal(al_http_route("GET", max, &r, id), 0);
	assert_int_equal(strlen(id), AL_ID_MAX);
	max[6 + AL_ID_MAX] = 'a';
	max[6 + AL_ID_MAX + 1] = '\0';
	assert_int_equal(al_http_route("GET", max, &r, id), -EINVAL);
}

/* The session routes a fork and a snapshot take (session_route.c). */
static void test_session_fork_routes(void **state)
{
	const char *sid = "s-0123456789abcdef01234567";
	char path[128], id[AL_ID_MAX + 1];
	enum al_route r;

	(void)state;
	snprintf(path, sizeof(path), "/sessions/%s/fork", sid);
	assert_int_equal(al_http_route("POST", path, &r, id), 0);
	assert_int_equal(r, AL_ROUTE_SESS_FORK);
	assert_string_equal(id, sid);
	assert_true(al_http_route_has_body(r));
	assert_int_equal(al_http_route("GET", path, &r, id), -EPERM);
	snprintf(path, sizeof(path), "/sessions/%s/snapshot", sid);
	assert_int_equal(al_http_route("POST", path, &r, id), 0);
	assert_int_equal(r, AL_ROUTE_SESS_SNAPSHOT);
	assert_true(al_http_route_has_body(r));
	assert_int_equal(al_http_route("DELETE", path, &r, id), -EPERM);
	snprintf(path, sizeof(path), "/sessions/%s/forks", sid);
	assert_int_equal(al_http_route("POST", path, &r, id), -ENOENT);
	assert_int_equal(al_http_route("POST", "/sessions/s-zz/fork", &r, id),
			 -EINVAL);
}

static void test_unescape(void **state)
{
	char s[64];

	(void)state;
	snprintf(s, sizeof(s), "a%%2Fb%%2fc%%41");
	assert_int_equal(al_http_unescape(s), 6);
	assert_string_equal(s, "a/b/cA");
	/* %00 stays, so a NUL cannot cut the path; bad escapes stay */
	snprintf(s, sizeof(s), "a%%00b%%zz%%4%%");
	assert_int_equal(al_http_unescape(s), strlen("a%00b%zz%4%"));
	assert_string_equal(s, "a%00b%zz%4%");
	snprintf(s, sizeof(s), "%%252F");
	al_http_unescape(s);
	assert_string_equal(s, "%2F"); /* once, not twice */
}

static void test_wait(void **state)
{
	uint32_t w = 7;

	(void)state;
	assert_int_equal(al_http_parse_wait(NULL, 10, &w), 0);
	assert_int_equal(w, 0);
	assert_int_equal(al_http_parse_wait("10", 10, &w), 0);
	assert_int_equal(w, 10);
	assert_int_equal(al_http_parse_wait("11", 10, &w), -EINVAL);
	assert_int_equal(al_http_parse_wait("", 10, &w), -EINVAL);
	assert_int_equal(al_http_parse_wait("-1", 10, &w), -EINVAL);
	assert_int_equal(al_http_parse_wait("99999999999", 10, &w), -EINVAL);
}

static void test_bodies(void **state)
{
	static const char one[] = "{\"id\":\"a\",\"sh\":\"true\","
				  "\"callback_url\":\"http://h:1/\"}";
	static const char many[] = "[{\"sh\":\"true\"},{\"sh\":5},7]";
	struct al_http_job *jobs = NULL;
	struct al_diags d;
	size_t n = 0;

	(void)state;
	al_diags_init(&d);
	assert_int_equal(
	    al_http_parse_jobs(one, strlen(one), false, &jobs, &n, &d), 0);
	assert_int_equal(n, 1);
	assert_string_equal(jobs[0].job.id, "a");
	assert_string_equal(jobs[0].callback, "http://h:1/");
	al_http_jobs_free(jobs, n);

	al_diags_init(&d);
	assert_int_equal(
	    al_http_parse_jobs(many, strlen(many), true, &jobs, &n, &d),
	    -EINVAL);
	assert_int_equal(d.n, 2);
	assert_string_equal(d.items[0].reason, "[1].sh: must be a string");
	assert_string_equal(d.items[1].path, "[2]");

	al_diags_init(&d);
	assert_int_equal(
	    al_http_parse_jobs("{\"sh\":", 6, false, &jobs, &n, &d), -EINVAL);
	assert_non_null(strstr(d.items[0].reason, "not JSON"));
	al_diags_init(&d);
	assert_int_equal(al_http_parse_jobs("[]", 2, true, &jobs, &n, &d),
			 -EINVAL);
	al_diags_init(&d);
	assert_int_equal(al_http_parse_jobs("{\"sh\":\"a\",\"callback_url\":"
					    "3}",
					    28, false, &jobs, &n, &d),
			 -EINVAL);
}

static void test_targets(void **state)
{
	struct al_config_names allow = {0};
	char pin[300], err[160];

	(void)state;
	/* none allowed by default */
	assert_int_equal(al_callback_target(&allow, "http://127.0.0.1:9/", pin,
					    sizeof(pin), err, sizeof(err)),
			 -EPERM);
	allow.n = 2;
	strcpy(allow.name[0], "hooks.example:443");
	strcpy(allow.name[1], "203.0.113.0/24");
	assert_int_equal(al_callback_target(&allow, "https://hooks.example/x",
					    pin, sizeof(pin), err, sizeof(err)),
			 0);
	assert_string_equal(pin, "");
	assert_int_equal(al_callback_target(&allow, "http://203.0.113.2:81/",
					    pin, sizeof(pin), err, sizeof(err)),
			 0);
	assert_string_equal(pin, "203.0.113.2:81:203.0.113.2");
	assert_int_equal(al_callback_target(&allow, "http://10.0.0.1/", pin,
					    sizeof(pin), err, sizeof(err)),
			 -EPERM);
	assert_int_equal(al_callback_target(&allow, "http://[::1]/", pin,
					    sizeof(pin), err, sizeof(err)),
			 -EPERM);
	assert_int_equal(al_callback_target(&allow, "file:///etc/passwd", pin,
					    sizeof(pin), err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(al_callback_target(&allow,
					    "https://hooks.example:8443/", pin,
					    sizeof(pin), err, sizeof(err)),
			 -EINVAL); /* not by name, and it does not resolve */
}

/* The VMs' always-denied list holds for callbacks too, whatever
 * http.callback_allow says, and an IPv4-mapped IPv6 address is the IPv4
 * address it maps (issue 23, finding 6). */
static void test_targets_denied(void **state)
{
	static const char *const denied[] = {
	    "http://127.0.0.1:9/",
	    "http://169.254.169.254/latest/meta-data/",
	    "http://0.0.0.0:80/",
	    "http://[::1]/",
	    "http://[fe80::1]/",
	    "http://[::ffff:127.0.0.1]:9/",
	    "http://[::ffff:169.254.169.254]/",
	    "http://[::ffff:a9fe:a9fe]/",
	    "http://localhost:9/",
	};
	struct al_config_names allow = {0};
	char pin[300], err[160];

	(void)state;
	allow.n = 4;
	strcpy(allow.name[0], "0.0.0.0/0");
	strcpy(allow.name[1], "::/0");
	strcpy(allow.name[2], "localhost:9");
	strcpy(allow.name[3], "127.0.0.1:9");
	for (size_t i = 0; i < sizeof(denied) / sizeof(*denied); i++) {
		int r = al_callback_target(&allow, denied[i], pin, sizeof(pin),
					   err, sizeof(err));

		if (r != -EPERM)
			fail_msg("%s: %d, want -EPERM", denied[i], r);
		assert_non_null(strstr(err, "always denied"));
	}
	/* a mapped address in an allowed IPv4 block is allowed, as IPv4 */
	allow.n = 1;
	strcpy(allow.name[0], "203.0.113.0/24");
	assert_int_equal(al_callback_target(&allow,
					    "http://[::ffff:203.0.113.9]:81/",
					    pin, sizeof(pin), err, sizeof(err)),
			 0);
	assert_non_null(strstr(pin, ":81:203.0.113.9"));
	assert_int_equal(al_callback_target(&allow,
					    "http://[::ffff:198.51.100.9]/",
					    pin, sizeof(pin), err, sizeof(err)),
			 -EPERM);
}

/* Without a token: the Host header names us (no DNS rebinding), and a
 * body is application/json (no cross-site text/plain POST): finding 7. */
static void test_host_and_type(void **state)
{
	(void)state;
	assert_true(al_http_host_allowed("127.0.0.1:8080", "127.0.0.1:8080"));
	assert_true(al_http_host_allowed("127.0.0.2", "127.0.0.1:8080"));
	assert_true(al_http_host_allowed("localhost:8080", "127.0.0.1:1"));
	assert_true(al_http_host_allowed("LocalHost", "127.0.0.1:1"));
	assert_true(al_http_host_allowed("[::1]:8080", "[::1]:8080"));
	assert_true(al_http_host_allowed("api.internal:80", "api.internal:80"));
	assert_true(al_http_host_allowed("API.internal", "api.internal:80"));
	assert_false(al_http_host_allowed(NULL, "127.0.0.1:8080"));
	assert_false(al_http_host_allowed("", "127.0.0.1:8080"));
	assert_false(
	    al_http_host_allowed("evil.example:8080", "127.0.0.1:8080"));
	assert_false(
	    al_http_host_allowed("127.0.0.1.evil.example", "127.0.0.1:8080"));
	assert_false(
	    al_http_host_allowed("localhost.evil.example:80", "127.0.0.1:80"));
	assert_false(al_http_host_allowed("10.0.0.1:8080", "127.0.0.1:8080"));
	assert_false(al_http_host_allowed("::1", "127.0.0.1:8080"));
	assert_false(al_http_host_allowed("[::2]:80", "127.0.0.1:8080"));
	assert_false(al_http_host_allowed("localhost:80x", "127.0.0.1:1"));
	assert_false(al_http_host_allowed("[::1", "127.0.0.1:1"));
	assert_false(al_http_host_allowed("a:b:c", "127.0.0.1:1"));

	assert_true(al_http_json_type("application/json"));
	assert_true(al_http_json_type("Application/JSON; charset=utf-8"));
	assert_true(al_http_json_type("application/json ;charset=utf-8"));
	assert_false(al_http_json_type(NULL));
	assert_false(al_http_json_type("text/plain"));
	assert_false(al_http_json_type("text/plain; application/json"));
	assert_false(al_http_json_type("application/x-www-form-urlencoded"));
	assert_false(al_http_json_type("multipart/form-data; boundary=x"));
	assert_false(al_http_json_type("application/jsonp"));
}

/* http.token_file: root's or ours, and nobody else's to write or read
 * (issue 23, finding 11). */
static void test_token_file(void **state)
{
	static const struct {
		mode_t mode;
		uid_t uid; /* 0: ours */
		int want;
	} cases[] = {
	    {0600, 0, 0},      {0640, 0, 0},	      {0400, 0, 0},
	    {0644, 0, -EPERM}, {0660, 0, -EPERM},     {0606, 0, -EPERM},
	    {0666, 0, -EPERM}, {0600, 65534, -EPERM},
	};
	struct al_config *cfg = calloc(1, sizeof(*cfg));
	char dir[] = "/tmp/test_token.XXXXXX", err[512];
	struct al_principals pr;

	(void)state;
	assert_non_null(cfg);
	assert_non_null(mkdtemp(dir));
	snprintf(cfg->http.token_file, sizeof(cfg->http.token_file), "%s/token",
		 dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		FILE *f = fopen(cfg->http.token_file, "we");
		int r;

		assert_non_null(f);
		fputs("tok-0123456789abcdef\n", f);
		fclose(f);
		assert_int_equal(chmod(cfg->http.token_file, cases[i].mode), 0);
		if (cases[i].uid &&
		    (geteuid() != 0 ||
		     chown(cfg->http.token_file, cases[i].uid, (gid_t)-1) < 0))
			continue; /* not root: cannot give it away */
		r = al_principals_load(cfg, &pr, err, sizeof(err));
		if (r != cases[i].want)
			fail_msg("mode %04o uid %u: %d, want %d (%s)",
				 (unsigned)cases[i].mode,
				 (unsigned)cases[i].uid, r, cases[i].want,
				 r ? err : "");
		if (r == 0) {
			assert_non_null(
			    al_principals_find(&pr, "tok-0123456789abcdef"));
			al_principals_release(&pr);
		}
		unlink(cfg->http.token_file);
	}
	rmdir(dir);
	free(cfg);
}

static void test_metrics(void **state)
{
	struct al_metrics m;
	struct alq_status q = {
	    .depth = 3, .pending = 2, .dead = 1, .cancels = 4};
	char buf[16384];

	(void)state;
	al_metrics_init(&m);
	al_metrics_job(&m, AL_OK, 1500, 700, 30);
	al_metrics_job(&m, AL_OK, 20, 0, 0);
	/* A latency of 0 ms is observed; an unknown one is not. */
	al_metrics_job(&m, AL_OK, 0, 0, 0);
	al_metrics_job(&m, AL_OK, AL_METRICS_UNKNOWN, 0, 0);
	assert_true(al_metrics_render(&m, &q, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "airlock_jobs_total{status=\"OK\"} 4\n"));
	assert_non_null(strstr(
	    buf, "airlock_job_latency_seconds_bucket{le=\"0.025\"} 2\n"));
	assert_non_null(
	    strstr(buf, "airlock_job_latency_seconds_bucket{le=\"+Inf\"} 3\n"));
	assert_non_null(strstr(buf, "airlock_job_latency_seconds_sum 1.520\n"));
	assert_non_null(strstr(buf, "airlock_job_run_seconds_count 1\n"));
	assert_non_null(strstr(buf, "airlock_queue_depth 3\n"));
	assert_non_null(strstr(buf, "airlock_up 1\n"));
	assert_non_null(strstr(buf, "# TYPE airlock_cancels_total counter\n"
				    "airlock_cancels_total 4\n"));
	assert_int_equal(al_metrics_render(&m, NULL, buf, 100), -ENOBUFS);
}

static void test_log_split(void **state)
{
	struct al_log_pair p[8];
	const char *ev;

	(void)state;
	assert_int_equal(
	    al_log_split("job=a status=OK: result stored", p, 8, &ev), 2);
	assert_string_equal(ev, "result stored");
	assert_int_equal(p[1].val_len, 2);
	assert_memory_equal(p[1].val, "OK", 2);
	assert_int_equal(al_log_split("redis cmd: lost", p, 8, &ev), 0);
	assert_string_equal(ev, "redis cmd: lost");
	assert_int_equal(al_log_split("no colon here", p, 8, &ev), 0);
	assert_int_equal(al_log_split("job=: x", p, 8, &ev), 1);
	assert_int_equal(p[0].val_len, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_routes),
	    cmocka_unit_test(test_wait),
	    cmocka_unit_test(test_route_slash_ids),
	    cmocka_unit_test(test_route_exec_signal),
	    cmocka_unit_test(test_session_fork_routes),
	    cmocka_unit_test(test_unescape),
	    cmocka_unit_test(test_bodies),
	    cmocka_unit_test(test_targets),
	    cmocka_unit_test(test_targets_denied),
	    cmocka_unit_test(test_host_and_type),
	    cmocka_unit_test(test_token_file),
	    cmocka_unit_test(test_metrics),
	    cmocka_unit_test(test_log_split),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
