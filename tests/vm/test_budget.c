/* test_budget.c: a job that prints far more than a result can hold, run by
 * a real forked worker (al_proc_spawn, in its memory cgroup) in real VMs.
 *
 * 256 steps of 16 MiB each on stdout, output_bytes 16 MiB: 8 GiB if the
 * worker kept it all. It must end OL within the result cap, with the
 * worker alive, its peak RSS bounded, and ready for the next job.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "proc.h"
#include "proto.h"
#include "vmtest.h"

#define STEP_BYTES     (16u << 20)
#define RSS_MAX_KB     (256u << 10) /* the bound asserted on the worker */
#define RESULT_WAIT_MS 240000

static struct sb_options opts;

/* Read one result frame, waiting at most `ms`. */
static int read_result(int fd, int ms, struct al_result *res, size_t *len)
{
	struct al_deadline d = al_deadline_in(ms);
	struct al_frame_reader fr;
	static uint8_t buf[1u << 20];
	struct al_diags dg;
	uint8_t *body;
	int r = -ETIMEDOUT;

	al_frame_reader_init(&fr, AL_RESULT_MAX_BYTES);
	while (!al_frame_reader_ready(&fr)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		size_t want = al_frame_reader_want(&fr);
		ssize_t n;

		if (poll(&p, 1, al_deadline_poll_ms(d)) != 1)
			goto out;
		n = read(fd, buf, want < sizeof(buf) ? want : sizeof(buf));
		r = n < 0 ? -errno : -EPIPE;
		if (n > 0)
			r = (int)al_frame_reader_feed(&fr, buf, (size_t)n);
		if (r < 0)
			goto out;
		r = -ETIMEDOUT;
	}
	al_frame_reader_take(&fr, &body, len);
	al_diags_init(&dg);
	r = al_result_from_msgpack(body, *len, res, &dg);
	free(body);
out:
	al_frame_reader_release(&fr);
	return r;
}

static void send_json(int fd, const char *json)
{
	struct al_job job = {0};
	struct al_proc_job pj = {.attempt = 1};
	struct al_diags d;
	char *mp, *frame;
	size_t len, flen;

	al_diags_init(&d);
	assert_int_equal(al_job_from_json(json, strlen(json), &job, &d), 0);
	assert_int_equal(al_job_to_msgpack(&job, &mp, &len), 0);
	pj.payload = mp;
	pj.len = len;
	assert_int_equal(al_proc_job_frame(&pj, &frame, &flen), 0);
	assert_int_equal(write(fd, frame, flen), (ssize_t)flen);
	free(frame);
	free(mp);
	al_job_release(&job);
}

/* 256 steps, each printing exactly STEP_BYTES. */
static char *flood_job(void)
{
	static const char step[] =
	    "{\"sh\":\"head -c 16777216 /dev/zero\",\"timeout_ms\":120000},";
	size_t cap = 256 * sizeof(step) + 256, n;
	char *j = malloc(cap);

	assert_non_null(j);
	n = (size_t)snprintf(j, cap,
			     "{\"id\":\"flood\",\"limits\":{\"output_bytes\":"
			     "16777216,\"wall_ms\":600000},\"steps\":[");
	for (int i = 0; i < 256; i++)
		n += (size_t)snprintf(j + n, cap - n, "%s", step);
	snprintf(j + n - 1, cap - n + 1, "]}");
	return j;
}

/* VmHWM of `pid` in KiB. */
static unsigned long peak_rss_kb(pid_t pid)
{
	char path[64], line[256];
	unsigned long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %lu kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Steps 0..k-1 kept their 16 MiB, step k was cut by the budget (OL), the
 * rest were skipped. k is 4 here: past 4 x 16 MiB the room left is
 * under 2 x 16 MiB, so the fifth step runs with a lower cap and is cut. */
static void check_flood(const struct al_result *res, size_t len)
{
	size_t k = 0;

	if (res->status != AL_OL)
		vmtest_dump(res);
	assert_int_equal(res->status, AL_OL);
	assert_true(len <= AL_RESULT_MAX_BYTES);
	assert_int_equal(res->n_steps, 256);
	while (k < res->n_steps && res->steps[k].status == AL_OK) {
		assert_int_equal(res->steps[k].stdout_.len, STEP_BYTES);
		k++;
	}
	assert_true(k >= 4 && k < 6);
	assert_int_equal(res->steps[k].status, AL_OL);
	assert_true(res->steps[k].stdout_truncated);
	assert_true(res->steps[k].stdout_.len < STEP_BYTES);
	for (size_t i = k + 1; i < res->n_steps; i++)
		assert_int_equal(res->steps[i].status, AL_SK);
	assert_non_null(res->error);
	assert_non_null(strstr(res->error, "the result would pass"));
	fprintf(stderr,
		"flood: %zu steps kept, step %zu cut to %zu bytes, "
		"result %zu bytes\n",
		k, k, res->steps[k].stdout_.len, len);
}

/* The peak of the worker's memory cgroup in KiB, 0 if it has none. */
static unsigned long cgroup_peak_kb(pid_t pid)
{
	char path[PATH_MAX], line[512];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/fs/cgroup/memory/airlock/workers/%d"
		 "/memory.max_usage_in_bytes",
		 (int)pid);
	if (access(path, R_OK) != 0)
		snprintf(path, sizeof(path),
			 "/sys/fs/cgroup/airlock/workers/"
			 "%d/memory.peak",
			 (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(line, sizeof(line), f))
		v = strtoull(line, NULL, 10);
	fclose(f);
	return (unsigned long)(v >> 10);
}

static void test_flood_ends_ol(void **state)
{
	struct al_result res = {0};
	struct pollfd pf;
	struct al_proc p;
	uint64_t t0 = al_now_ms();
	unsigned long kb;
	char *job = flood_job();
	size_t len = 0;
	int st = 0;

	(void)state;
	assert_int_equal(
	    al_proc_spawn(&opts, al_policy_default(), "t/budget", NULL,
			  &p), 0);
	send_json(p.fd, job);
	free(job);
	assert_int_equal(read_result(p.fd, RESULT_WAIT_MS, &res, &len), 0);
	check_flood(&res, len);
	al_result_release(&res);
	/* the worker lived through it, within bounds */
	pf = (struct pollfd){.fd = p.pidfd, .events = POLLIN};
	assert_int_equal(poll(&pf, 1, 0), 0);
	kb = peak_rss_kb(p.pid);
	fprintf(stderr,
		"flood: worker peak RSS (VmHWM) %lu KiB, its memory "
		"cgroup's peak %lu KiB, %llu ms\n",
		kb, cgroup_peak_kb(p.pid),
		(unsigned long long)(al_now_ms() - t0));
	assert_true(kb > 0 && kb < RSS_MAX_KB);
	/* and serves the next job */
	send_json(p.fd, "{\"id\":\"next\",\"sh\":\"echo ok\"}");
	assert_int_equal(read_result(p.fd, RESULT_WAIT_MS, &res, &len), 0);
	if (res.status != AL_OK)
		vmtest_dump(&res);
	assert_int_equal(res.status, AL_OK);
	assert_int_equal(res.steps[0].stdout_.len, 3);
	al_result_release(&res);
	close(p.fd);
	assert_int_equal(waitpid(p.pid, &st, 0), p.pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	p.fd = -1;
	al_proc_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_flood_ends_ol),
	};

	signal(SIGPIPE, SIG_IGN);
	vmtest_options(&opts);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
