/* test_proc.c: the worker process protocol (worker/proc.c) without VMs:
 * the job frame codec, and a real forked worker answering jobs it must
 * reject (no VM is started for those), stopping on EOF, surviving bad
 * frames only by dying cleanly, and being reaped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"
#include "proto.h"

static void test_frame_roundtrip(void **state)
{
	struct al_proc_job in = {.payload = "\x81\xa2sh\xa4true",
				 .len = 9,
				 .queued_ms = 1234,
				 .attempt = 3};
	struct al_proc_job out;
	char *frame;
	size_t len;

	(void)state;
	assert_int_equal(al_proc_job_frame(&in, &frame, &len), 0);
	assert_int_equal(al_frame_len((uint8_t *)frame), len - AL_FRAME_HDR);
	assert_int_equal(
	    al_proc_job_decode(frame + AL_FRAME_HDR, len - AL_FRAME_HDR, &out),
	    0);
	assert_int_equal(out.len, 9);
	assert_memory_equal(out.payload, in.payload, 9);
	assert_int_equal(out.queued_ms, 1234);
	assert_int_equal(out.attempt, 3);
	free(frame);
}

static void test_frame_rejects(void **state)
{
	struct al_proc_job out;
	struct al_proc_job big = {.payload = "", .len = AL_JOB_MAX_BYTES + 1};
	char *frame;
	size_t len;

	(void)state;
	/* not a map, unknown key, job not bin, job missing, trailing bytes */
	assert_int_equal(al_proc_job_decode("\x90", 1, &out), -EBADMSG);
	assert_int_equal(al_proc_job_decode("\x81\xa1x\x01", 4, &out),
			 -EBADMSG);
	assert_int_equal(al_proc_job_decode("\x81\xa3job\xa1x", 6, &out),
			 -EBADMSG);
	assert_int_equal(al_proc_job_decode("\x81\xa7"
					    "attempt\x01",
					    10, &out),
			 -EBADMSG);
	assert_int_equal(al_proc_job_decode("\x80\x80", 2, &out), -EBADMSG);
	assert_int_equal(al_proc_job_decode("\xc1", 1, &out), -EBADMSG);
	assert_int_equal(al_proc_job_frame(&big, &frame, &len), -E2BIG);
}

/* Read one result frame from fd (blocking, 10 s at most). */
static int read_result(int fd, struct al_result *res)
{
	struct al_frame_reader fr;
	struct al_diags d;
	uint8_t buf[4096], *body;
	size_t len;
	int r = -ETIMEDOUT;

	al_frame_reader_init(&fr, AL_RESULT_MAX_BYTES);
	while (!al_frame_reader_ready(&fr)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 10000) != 1)
			goto out;
		n = read(fd, buf,
			 al_frame_reader_want(&fr) < sizeof(buf)
			     ? al_frame_reader_want(&fr)
			     : sizeof(buf));
		if (n <= 0) {
			r = -EPIPE;
			goto out;
		}
		al_frame_reader_feed(&fr, buf, (size_t)n);
	}
	al_frame_reader_take(&fr, &body, &len);
	al_diags_init(&d);
	r = al_result_from_msgpack(body, len, res, &d);
	free(body);
out:
	al_frame_reader_release(&fr);
	return r;
}

static void send_job(int fd, const char *payload, size_t len)
{
	struct al_proc_job j = {.payload = payload, .len = len, .attempt = 1};
	char *frame;
	size_t flen;

	assert_int_equal(al_proc_job_frame(&j, &frame, &flen), 0);
	assert_int_equal(write(fd, frame, flen), (ssize_t)flen);
	free(frame);
}

static int reap(struct al_proc *p)
{
	int st = 0;

	assert_int_equal(waitpid(p->pid, &st, 0), p->pid);
	al_proc_release(p);
	return st;
}

/* Send the job `json` (as its msgpack) and read its result. */
static void run_json(int fd, const char *json, struct al_result *res)
{
	struct al_job job = {0};
	struct al_diags d;
	char *mp;
	size_t len;

	al_diags_init(&d);
	assert_int_equal(al_job_from_json(json, strlen(json), &job, &d), 0);
	assert_int_equal(al_job_to_msgpack(&job, &mp, &len), 0);
	send_job(fd, mp, len);
	free(mp);
	al_job_release(&job);
	assert_int_equal(read_result(fd, res), 0);
}

static void test_worker_rejects_and_exits(void **state)
{
	struct sb_options sb;
	struct al_result res = {0};
	struct al_language py;
	struct al_policy pol = *al_policy_default();
	struct al_proc p;
	char why[64];
	int st;

	(void)state;
	sb_options_init(&sb);
	/* a job written to Redis by a client names its language unexpanded:
	 * the worker expands it (worker/proc.c) */
	assert_int_equal(al_language_parse("python", "python main.py | - | "
					   "python3 main.py", &py, why,
					   sizeof(why)), 0);
	pol.languages = &py;
	pol.n_languages = 1;
	assert_int_equal(al_proc_spawn(&sb, &pol, "t/w0", NULL, &p), 0);
	assert_true(p.pid > 0 && p.fd >= 0 && p.pidfd >= 0);
	/* not msgpack: RJ, and the worker goes on */
	send_job(p.fd, "\xc1\xc1", 2);
	assert_int_equal(read_result(p.fd, &res), 0);
	assert_int_equal(res.status, AL_RJ);
	assert_non_null(res.error);
	al_result_release(&res);
	/* over the policy (512 GiB of memory): RJ naming the field */
	{
		const char *j = "{\"id\":\"big\",\"sh\":\"true\","
				"\"limits\":{\"memory_mb\":65536}}";
		struct al_job job = {0};
		struct al_diags d;
		char *mp;
		size_t len;

		al_diags_init(&d);
		assert_int_equal(al_job_from_json(j, strlen(j), &job, &d), 0);
		assert_int_equal(al_job_to_msgpack(&job, &mp, &len), 0);
		send_job(p.fd, mp, len);
		free(mp);
		al_job_release(&job);
	}
	assert_int_equal(read_result(p.fd, &res), 0);
	assert_int_equal(res.status, AL_RJ);
	assert_string_equal(res.id, "big");
	assert_non_null(strstr(res.error, "limits.memory_mb"));
	al_result_release(&res);
	/* an unknown language: RJ naming the known ones */
	run_json(p.fd, "{\"id\":\"l1\",\"language\":\"cobol\","
		 "\"source_code\":\"x\"}", &res);
	assert_int_equal(res.status, AL_RJ);
	assert_string_equal(res.id, "l1");
	assert_non_null(strstr(res.error, "unknown language \"cobol\" "
					  "(known: python)"));
	al_result_release(&res);
	/* a known one is expanded, then checked against the policy like
	 * any job (over it here, so no VM starts) */
	run_json(p.fd, "{\"id\":\"l2\",\"language\":\"python\","
		 "\"source_code\":\"x\",\"limits\":{\"memory_mb\":65536}}",
		 &res);
	assert_int_equal(res.status, AL_RJ);
	assert_non_null(strstr(res.error, "limits.memory_mb"));
	assert_null(strstr(res.error, "language"));
	al_result_release(&res);
	/* EOF: it exits 0 */
	close(p.fd);
	p.fd = -1;
	st = reap(&p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_worker_bad_frame(void **state)
{
	struct sb_options sb;
	struct al_proc p;
	char hdr[4] = {0x7f, 0x7f, 0x7f, 0x7f}; /* over the frame cap */
	int st;

	(void)state;
	sb_options_init(&sb);
	assert_int_equal(
	    al_proc_spawn(&sb, al_policy_default(), "t/w1", NULL, &p), 0);
	assert_int_equal(write(p.fd, hdr, 4), 4);
	st = reap(&p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 1);
}

static void test_worker_dies_with_parent_fds(void **state)
{
	struct sb_options sb;
	struct al_proc p;
	char path[64], link[256];
	int extra = fcntl(STDERR_FILENO, F_DUPFD, 10), n = 0; /* inheritable */
	ssize_t k;

	(void)state;
	sb_options_init(&sb);
	assert_true(extra > 3);
	assert_int_equal(
	    al_proc_spawn(&sb, al_policy_default(), "t/w2", NULL, &p), 0);
	/* the child holds 0, 1, 2, its socket at 3, nothing else (once it
	 * has run its setup: poll for up to 2 s) */
	for (int tries = 0; tries < 200; tries++) {
		int high = 0;

		n = 0;
		for (int fd = 0; fd < 64; fd++) {
			snprintf(path, sizeof(path), "/proc/%d/fd/%d",
				 (int)p.pid, fd);
			k = readlink(path, link, sizeof(link) - 1);
			if (k < 0)
				continue;
			n++;
			high += fd > 3;
		}
		if (!high)
			break;
		n = -1;
		usleep(10000);
	}
	assert_true(n >= 1 && n <= 4);
	close(extra);
	/* SIGKILL is seen on the pidfd */
	kill(p.pid, SIGKILL);
	{
		struct pollfd pf = {.fd = p.pidfd, .events = POLLIN};

		assert_int_equal(poll(&pf, 1, 5000), 1);
	}
	assert_true(WIFSIGNALED(reap(&p)));
}

/* The memory line of /proc/PID/cgroup ("" when there is none). */
static void memory_cgroup(pid_t pid, char *ret, size_t len)
{
	char path[64], line[512];
	FILE *f;

	ret[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		bool mem = strstr(line, ":memory:") != NULL;

		/* v1's memory line, else (v2) the unified one */
		if (mem || (!ret[0] && !strncmp(line, "0::", 3)))
			snprintf(ret, len, "%s", strchr(strchr(line, ':') + 1,
							':') + 1);
		if (mem)
			break;
	}
	fclose(f);
}

static uint64_t read_u64(const char *path)
{
	unsigned long long v = 0;
	FILE *f = fopen(path, "re");

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%llu", &v), 1);
	fclose(f);
	return v;
}

/* As root with cgroups, a worker runs in airlock/workers/<pid> capped at
 * workers.memory_mb; with 0 it stays where its parent is. */
static void test_worker_memory_cgroup(void **state)
{
	char want[64], cg[512], limit[PATH_MAX];
	bool v2 = !strcmp(sb_cg_version(), "v2");
	struct sb_options sb;
	struct al_proc p;

	(void)state;
	if (geteuid() != 0 || !strcmp(sb_cg_version(), "none"))
		skip();
	sb_options_init(&sb);
	assert_int_equal(sb.worker_memory_mb, SB_WORKER_MEMORY_MB);
	sb.worker_memory_mb = 300;
	assert_int_equal(al_proc_spawn(&sb, al_policy_default(), "t/w3", NULL, &p),
			 0);
	/* joined before al_proc_spawn returned */
	snprintf(want, sizeof(want), "/airlock/workers/%d\n", (int)p.pid);
	memory_cgroup(p.pid, cg, sizeof(cg));
	assert_string_equal(cg, want);
	snprintf(limit, sizeof(limit), "/sys/fs/cgroup%s/airlock/workers/%d/%s",
		 v2 ? "" : "/memory", (int)p.pid,
		 v2 ? "memory.max" : "memory.limit_in_bytes");
	assert_int_equal(read_u64(limit), 300ull << 20);
	close(p.fd);
	p.fd = -1;
	assert_true(WIFEXITED(reap(&p)));

	sb.worker_memory_mb = 0;
	memory_cgroup(getpid(), want, sizeof(want));
	assert_int_equal(al_proc_spawn(&sb, al_policy_default(), "t/w4", NULL, &p),
			 0);
	memory_cgroup(p.pid, cg, sizeof(cg));
	assert_string_equal(cg, want);
	close(p.fd);
	p.fd = -1;
	assert_true(WIFEXITED(reap(&p)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frame_roundtrip),
	    cmocka_unit_test(test_frame_rejects),
	    cmocka_unit_test(test_worker_rejects_and_exits),
	    cmocka_unit_test(test_worker_bad_frame),
	    cmocka_unit_test(test_worker_dies_with_parent_fds),
	    cmocka_unit_test(test_worker_memory_cgroup),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
