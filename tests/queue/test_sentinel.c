/* test_sentinel.c: the queue behind Redis Sentinel, through a failover.
 *
 * A master, two replicas and three sentinels (quorum 2, down after 1 s),
 * all local processes on TCP ports of 127.0.0.1 the test picks. Clients
 * and a dispatcher (serve.c with canned workers, as in test_serve.c) use
 * a redis+sentinel:// URL (dispatcher/queue/sentinel.h). Mid-batch the master
 * is SIGKILLed; the sentinels promote the replica; the submitter goes on
 * (reopening its client when a submit fails); the dispatcher reconnects
 * to the new master by itself.
 *
 * Two kinds of submit are interleaved: "w" jobs with WAIT 1 (the client
 * counts a job as acknowledged only once the replica has it) and "n" jobs
 * without. Every acknowledged "w" job must have exactly one result after
 * the failover; the "n" jobs acknowledged but missing on the new master
 * are what a failover lost without WAIT, which the test prints (on one
 * machine replication is fast, so usually 0: the window is real, small).
 *
 * Every run appends a line (its start time) to ran.ID in the temp dir.
 * After the batch: every acknowledged id that survived ran at least once,
 * and the ids that ran more than once are printed and bounded: the new
 * master knows nothing the old one did after the cut, so it hands out
 * again what was run (or completed) in that window. Only an id whose
 * first run started in [cut - SLACK_MS, kill] may run twice (SLACK_MS
 * for a completion the replicas had not yet received at the cut).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>

#include "clock.h"
#include "clustertest.h"
#include "servetest.h"

#define JOBS	 120 /* of each kind */
#define CUT	 40  /* the replicas stop getting writes after this pair */
#define LAG	 8   /* pairs the master alone acknowledges, then it dies */
#define SLACK_MS 100 /* a run this long before the cut may still rerun */

static char dir[64];
static int port_m, port_r, port_r2, port_s[3];
static pid_t pid_m = -1, pid_r = -1, pid_r2 = -1, pid_s[3] = {-1, -1, -1};
static char url[160];
static bool has_sentinel_bin; /* Debian's redis-sentinel (tools/deps.sh) */

static pid_t spawn(char *const argv[])
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static pid_t redis(int port, const char *replicaof)
{
	char p[16], log[128], ro[64];

	snprintf(p, sizeof(p), "%d", port);
	snprintf(log, sizeof(log), "%s/redis-%d.log", dir, port);
	snprintf(ro, sizeof(ro), "127.0.0.1 %d", port_m);
	{
		char *argv[] = {"redis-server",
				"--port",
				p,
				"--bind",
				"127.0.0.1",
				"--dir",
				dir,
				"--save",
				"",
				"--appendonly",
				"no",
				"--logfile",
				log,
				replicaof ? "--replicaof" : NULL,
				ro,
				NULL};

		return spawn(argv);
	}
}

static pid_t sentinel(int i)
{
	char conf[128], log[128];
	FILE *f;

	snprintf(conf, sizeof(conf), "%s/sentinel-%d.conf", dir, i);
	snprintf(log, sizeof(log), "%s/sentinel-%d.log", dir, i);
	f = fopen(conf, "w");
	if (!f)
		return -1;
	fprintf(f,
		"port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\n"
		"sentinel monitor m 127.0.0.1 %d 2\n"
		"sentinel down-after-milliseconds m 1000\n"
		"sentinel failover-timeout m 4000\n"
		"sentinel parallel-syncs m 1\n",
		port_s[i], dir, log, port_m);
	fclose(f);
	if (has_sentinel_bin) {
		char *argv[] = {"redis-sentinel", conf, NULL};

		return spawn(argv);
	} else {
		char *argv[] = {"redis-server", conf, "--sentinel", NULL};

		return spawn(argv);
	}
}

static void stop(pid_t *pid)
{
	if (*pid <= 0)
		return;
	kill(*pid, SIGKILL);
	while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
		;
	*pid = -1;
}

/* An INFO-ish string command on a port, or NULL. */
static bool has(int port, const char *cmd, const char *what)
{
	char *s = ct_str(port, cmd); /* a literal: INFO SECTION */
	bool ok = s && strstr(s, what);

	free(s);
	return ok;
}

/* The replicas fall behind: stopped (SIGSTOP: they cannot reconnect), and
 * the master drops their links, so what it acknowledges from now on is
 * nowhere else; the sentinels' view of the master is unchanged. */
static void replicas_lag(void)
{
	redisContext *rc = ct_conn(port_m);
	redisReply *r;

	kill(pid_r, SIGSTOP);
	kill(pid_r2, SIGSTOP);
	assert_non_null(rc);
	r = redisCommand(rc, "CLIENT KILL TYPE replica");
	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_INTEGER);
	assert_int_equal(r->integer, 2);
	freeReplyObject(r);
	redisFree(rc);
}

/* --- the canned worker --------------------------------------------------- */

static int canned_run(struct al_worker *w, const struct al_job *job,
		      uint64_t queued_ms, uint32_t attempt,
		      struct al_result *res)
{
	char p[200], line[48];
	int fd, n;

	/* one line a run, appended (workers are processes): "START ATTEMPT" */
	snprintf(p, sizeof(p), "%s/ran.%s", dir, job->id ? job->id : "-");
	n = snprintf(line, sizeof(line), "%llu %u\n",
		     (unsigned long long)al_now_ms(), attempt);
	fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (write(fd, line, (size_t)n) != n)
			fprintf(stderr, "%s: short write\n", p);
		close(fd);
	}
	redistest_sleep_ms(10);
	return servetest_result(w, job, queued_ms, attempt, false, res);
}

/* The runs of id (lines of ran.ID) and the start of the first, 0 if none. */
static unsigned runs_of(const char *id, uint64_t *ret_first)
{
	char p[200];
	unsigned long long t;
	unsigned a, n = 0;
	uint64_t first = UINT64_MAX;
	FILE *f;

	snprintf(p, sizeof(p), "%s/ran.%s", dir, id);
	f = fopen(p, "re");
	if (!f) {
		*ret_first = 0;
		return 0;
	}
	while (fscanf(f, "%llu %u", &t, &a) == 2) {
		n++;
		if (t < first)
			first = t;
	}
	fclose(f);
	*ret_first = n ? first : 0;
	return n;
}

static void serve_start(struct servetest *h)
{
	servetest_opts(h, "f", 2, canned_run);
	assert_int_equal(alq_url_parse(url, &h->o.url), 0);
	h->o.command_timeout_ms = 2000;
	assert_int_equal(servetest_start(h), 0);
}

/* --- the submitter ----------------------------------------------------------
 */

static void open_client(struct alq_client *c, unsigned wait_replicas)
{
	struct alq_url u;

	assert_int_equal(alq_url_parse(url, &u), 0);
	for (int i = 0; i < 200; i++) {
		if (alq_client_open(c, &u, "f", 2000) == 0) {
			c->wait_replicas = wait_replicas;
			c->wait_ms = 500;
			return;
		}
		alq_client_close(c);
		redistest_sleep_ms(100);
	}
	fail_msg("no master through the sentinels: %s", c->err);
}

/* Submit id until acknowledged: 0 acknowledged (replicated too with
 * WAIT), reopening the client after a failure (the failover). */
static void submit_acked(struct alq_client *c, const char *id,
			 unsigned wait_replicas, const char *mp, size_t len,
			 bool *acked)
{
	for (int tries = 0; tries < 300; tries++) {
		bool dup = false;
		int r = alq_client_submit(c, id, mp, len, 2000, &dup);

		if (r == 0) {
			*acked = true;
			return;
		}
		alq_client_close(c);
		redistest_sleep_ms(50);
		open_client(c, wait_replicas);
	}
	fail_msg("%s: never acknowledged", id);
}

static void test_failover(void **state)
{
	struct alq_client cw, cn;
	bool acked_w[JOBS] = {false}, acked_n[JOBS] = {false};
	struct al_job job = {0};
	struct al_diags d;
	struct servetest h;
	char *mp = NULL, id[16], new_master[256] = "";
	size_t len = 0;
	unsigned lost = 0, waited_lost = 0, lag_acked = 0, refused_w = 0;
	unsigned twice = 0, in_window = 0, extra_runs = 0;
	int new_port = 0;
	uint64_t t_cut = 0, t_kill = 0;

	(void)state;
	al_diags_init(&d);
	assert_int_equal(al_job_from_json("{\"sh\":\"ok\"}", 11, &job, &d), 0);
	serve_start(&h);
	open_client(&cw, 1);
	open_client(&cn, 0);
	for (int i = 0; i < JOBS; i++) {
		bool lag = i >= CUT && i < CUT + LAG;

		if (i == CUT) { /* the replicas fall behind */
			t_cut = al_now_ms();
			replicas_lag();
		}
		if (i == CUT + LAG) { /* and the master dies */
			t_kill = al_now_ms();
			stop(&pid_m);
			kill(pid_r, SIGCONT);
			kill(pid_r2, SIGCONT);
		}
		for (int k = 0; k < 2; k++) {
			snprintf(id, sizeof(id), "%c%03d", k ? 'n' : 'w', i);
			free(job.id);
			job.id = strdup(id);
			assert_int_equal(al_job_to_msgpack(&job, &mp, &len), 0);
			if (lag) {
				/* one try: the master acknowledges n; WAIT 1
				 * refuses w (no replica has it) */
				bool dup = false;
				int r = alq_client_submit(k ? &cn : &cw, id, mp,
							  len, 2000, &dup);

				if (k && r == 0)
					acked_n[i] = true, lag_acked++;
				else if (!k && r == -EAGAIN)
					refused_w++;
				else
					fail_msg("%s in the lag: %d", id, r);
			} else {
				submit_acked(k ? &cn : &cw, id, k ? 0 : 1, mp,
					     len,
					     k ? &acked_n[i] : &acked_w[i]);
			}
			free(mp);
			mp = NULL;
		}
	}
	/* what WAIT refused is submitted again, by id, after the failover */
	for (int i = CUT; i < CUT + LAG; i++) {
		snprintf(id, sizeof(id), "w%03d", i);
		free(job.id);
		job.id = strdup(id);
		assert_int_equal(al_job_to_msgpack(&job, &mp, &len), 0);
		submit_acked(&cw, id, 1, mp, len, &acked_w[i]);
		free(mp);
		mp = NULL;
	}
	al_job_release(&job);
	/* the replica is the master now */
	assert_true(has(port_r, "INFO replication", "role:master"));
	/* every acknowledged job: one result (w: none may be lost) */
	for (int i = 0; i < JOBS; i++) {
		for (int k = 0; k < 2; k++) {
			char key[64];
			redisContext *rc = ct_conn(port_r);
			redisReply *r;

			snprintf(id, sizeof(id), "%c%03d", k ? 'n' : 'w', i);
			snprintf(key, sizeof(key), "airlock:{f}:job:%s", id);
			r = redisCommand(rc, "EXISTS %s", key);
			assert_non_null(r);
			if (r->integer == 0) { /* acknowledged, then lost */
				if (k && acked_n[i])
					lost++;
				else
					waited_lost++;
				freeReplyObject(r);
				redisFree(rc);
				continue;
			}
			freeReplyObject(r);
			redisFree(rc);
			if (alq_client_wait(&cn, id, 30000) != 0)
				fail_msg("no result for %s: %s", id, cn.err);
		}
	}
	assert_int_equal(servetest_stop(&h), 0);
	/* the runs: every acknowledged id that survived ran; only ids in
	 * flight in the window (first run between the cut and the kill) ran
	 * again on the new master */
	for (int i = 0; i < JOBS; i++) {
		for (int k = 0; k < 2; k++) {
			bool survived =
			    k ? acked_n[i] && (i < CUT || i >= CUT + LAG)
			      : acked_w[i];
			uint64_t first;
			unsigned n;

			snprintf(id, sizeof(id), "%c%03d", k ? 'n' : 'w', i);
			n = runs_of(id, &first);
			if (survived && n == 0)
				fail_msg(
				    "%s acknowledged, has a result, never ran",
				    id);
			if (n == 0)
				continue;
			if (first + SLACK_MS >= t_cut && first <= t_kill)
				in_window++;
			if (n < 2)
				continue;
			twice++;
			extra_runs += n - 1;
			if (!(first + SLACK_MS >= t_cut && first <= t_kill))
				fail_msg(
				    "%s ran %u times, first %lld ms after "
				    "the cut (kill at %llu): not in flight "
				    "at the failover",
				    id, n, (long long)(first - t_cut),
				    (unsigned long long)(t_kill - t_cut));
		}
	}
	fprintf(stderr,
		"failover: %u ids ran more than once (%u extra runs), of the "
		"%u in flight (first run from %d ms before the cut to the "
		"kill, %llu ms after it)\n",
		twice, extra_runs, in_window, SLACK_MS,
		(unsigned long long)(t_kill - t_cut));
	assert_true(twice <= in_window);
	snprintf(new_master, sizeof(new_master), "%s", cn.host);
	new_port = cn.port;
	fprintf(stderr,
		"failover: replicas cut off after %d of %d job pairs, master "
		"killed %d pairs later, %llu ms ago; new master %s:%d; "
		"acknowledged submits lost: %u of %u without WAIT, %u with "
		"WAIT 1 (which refused %u, submitted again after the "
		"failover)\n",
		CUT, JOBS, LAG, (unsigned long long)(al_now_ms() - t_kill),
		new_master, new_port, lost, lag_acked, waited_lost, refused_w);
	assert_int_equal(waited_lost, 0);
	assert_int_equal(refused_w, LAG);
	/* what the master acknowledged alone died with it */
	assert_int_equal(lost, LAG);
	assert_int_equal(new_port, port_r);
	alq_client_close(&cw);
	alq_client_close(&cn);
}

/* port answers and is pid's (not another test's server on a port ours
 * could not bind: these ports overlap the kernel's ephemeral range) */
static bool ours(int port, pid_t *pid)
{
	for (int k = 0; k < 300; k++) {
		char *info = ct_str(port, "INFO server");
		char *p = info ? strstr(info, "process_id:") : NULL;
		bool up = p && atoi(p + 11) == (int)*pid;

		free(info);
		if (up)
			return true;
		if (waitpid(*pid, NULL, WNOHANG) == *pid) { /* port taken */
			*pid = -1;
			return false;
		}
		redistest_sleep_ms(10);
	}
	return false;
}

/* The master, its replicas and the sentinels on ports from base: false
 * (all stopped) when one of them is not ours. */
static bool start_all(int base)
{
	bool up;

	port_m = base, port_r = base + 1, port_r2 = base + 5;
	for (int i = 0; i < 3; i++)
		port_s[i] = base + 2 + i;
	pid_m = redis(port_m, NULL);
	pid_r = redis(port_r, "yes");
	pid_r2 = redis(port_r2, "yes");
	up = ours(port_m, &pid_m) && ours(port_r, &pid_r) &&
	     ours(port_r2, &pid_r2);
	for (int k = 0;
	     up && k < 300 &&
	     !(has(port_r, "INFO replication", "master_link_status:up") &&
	       has(port_r2, "INFO replication", "master_link_status:up"));
	     k++)
		redistest_sleep_ms(20);
	/* the replica to be promoted is port_r: the other one ranks last */
	if (up)
		free(ct_str(port_r2, "CONFIG SET replica-priority 200"));
	for (int i = 0; up && i < 3; i++) {
		pid_s[i] = sentinel(i);
		up = ours(port_s[i], &pid_s[i]);
	}
	if (!up) {
		for (int i = 0; i < 3; i++)
			stop(&pid_s[i]);
		stop(&pid_m);
		stop(&pid_r);
		stop(&pid_r2);
	}
	return up;
}

static int setup(void **state)
{
	int attempt;

	(void)state;
	if (system("command -v redis-server >/dev/null") != 0) {
		fprintf(stderr, "SKIP: no redis-server\n");
		exit(77);
	}
	/* redis-sentinel is redis-server in sentinel mode: either will do */
	has_sentinel_bin = system("command -v redis-sentinel >/dev/null") == 0;
	snprintf(dir, sizeof(dir), "/tmp/al-sentinel-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	/* ports by pid; another range when one is taken */
	for (attempt = 0; attempt < 3; attempt++)
		if (start_all(40000 +
			      (int)((getpid() + attempt * 577) % 1500) * 6))
			break;
	if (attempt == 3) {
		fprintf(stderr, "no free ports for the sentinel setup\n");
		return -1;
	}
	/* every sentinel knows the replica and the other sentinels */
	for (int k = 0; k < 500; k++) {
		bool ok = true;

		for (int i = 0; i < 3 && ok; i++)
			ok = has(port_s[i], "INFO sentinel",
				 "slaves=2,sentinels=3");
		if (ok)
			break;
		redistest_sleep_ms(20);
	}
	snprintf(url, sizeof(url),
		 "redis+sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/m",
		 port_s[0], port_s[1], port_s[2]);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	for (int i = 0; i < 3; i++)
		stop(&pid_s[i]);
	stop(&pid_m);
	stop(&pid_r);
	stop(&pid_r2);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_failover),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
