/* test_warm.c: warm clones (sandbox/clone.c sb_pool_warm/sb_pool_take,
 * worker/job.c al_worker_idle): a clone that waited past a minute gets
 * the clock and fresh entropy; its zygote was warmed up; a dead, hung or
 * old one is replaced
 * without failing a job; another template's job takes the cold path;
 * 100 jobs leave nothing behind. */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "vm_internal.h" /* a warm clone's QMP (stop/cont) */
#include "vmtest.h"

static struct sb_options opts;
static struct al_worker worker;
static pid_t test_pid;

#define RUN(json, res) vmtest_run(&worker, json, res)

static int group_setup(void **state)
{
	struct sb_template t;

	(void)state;
	test_pid = getpid();
	vmtest_options(&opts);
	if (sb_template_open(&opts, "python", &t) < 0 ||
	    sb_template_open(&opts, "c", &t) < 0)
		return -1;
	return 0;
}

/* A fresh worker with `last` warm clones of its last job's template and
 * `spec` as [pool] warm. */
static void worker_new(unsigned last, const char *spec)
{
	al_worker_release(&worker);
	opts.warm_last = last;
	snprintf(opts.warm, sizeof(opts.warm), "%s", spec);
	al_worker_init(&worker, &opts, al_policy_default(), "test-warm");
}

static struct sb_pool *pool_of(const char *name)
{
	for (size_t i = 0; i < worker.n_templates; i++)
		if (!strcmp(worker.templates[i].img.name, name))
			return &worker.pools[i];
	return NULL;
}

static bool out_is(const struct al_result *r, size_t i, const char *s)
{
	return r->steps[i].stdout_.len == strlen(s) &&
	       memcmp(r->steps[i].stdout_.data, s, strlen(s)) == 0;
}

/* Guest wall clock (s.ns) and 16 bytes of urandom, as one line. */
#define PROBE                                                                 \
	"{\"sh\":\"date +%s.%N; head -c 16 /dev/urandom | od -An -tx1 | "   \
	"tr -d ' \\\\n'\",\"timeout_ms\":120000}"

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Two warm clones paused 10 s (QMP stop: their guest clocks stand still,
 * as a long wait's drift would leave them): each job on one sees the
 * host's clock within a second, and their urandom bytes differ. */
static void test_waited_paused(void **state)
{
	char rnd[2][64];
	struct sb_pool *p;

	(void)state;
	worker_new(2, "");
	for (int i = 0; i < 2; i++) { /* the last job's template: python */
		struct al_result res;

		RUN("{\"sh\":\"true\"}", &res);
		CHECK(res.status == AL_OK, &res);
		al_result_release(&res);
	}
	al_worker_idle(&worker);
	p = pool_of("python");
	assert_non_null(p);
	assert_int_equal(p->n_warm, 2);
	for (size_t i = 0; i < 2; i++) {
		assert_true(sb_vm_warm(p->warm[i]));
		assert_int_equal(sb__vm_qmp(p->warm[i], "stop", NULL, NULL), 0);
	}
	fprintf(stderr, "warm clones paused for 10 s\n");
	sleep(10);
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(sb__vm_qmp(p->warm[i], "cont", NULL, NULL), 0);
	for (int i = 0; i < 2; i++) {
		struct al_result res;
		double guest = 0, host;
		int n = 0;

		double before = wall_s();

		RUN(PROBE, &res);
		host = wall_s();
		CHECK(res.status == AL_OK, &res);
		rnd[i][0] = 0;
		n = sscanf((const char *)res.steps[0].stdout_.data,
			   "%lf %63s", &guest, rnd[i]);
		CHECK(n == 2 && strlen(rnd[i]) == 32, &res);
		/* the guest read its clock between the job's start and its
		 * result; unset, it would lag the 10 s it was paused: any pause
		 * longer than the 1 s tolerance below shows the clock set */
		fprintf(stderr, "guest clock: %.3f s after the job started, "
			"%.3f s before its result\n", guest - before,
			host - guest);
		CHECK(guest > before - 1.0 && guest <= host + 0.1, &res);
		al_result_release(&res);
	}
	/* both jobs ran on the warm clones, none was replaced */
	assert_int_equal(p->replaced, 0);
	assert_string_not_equal(rnd[0], rnd[1]);
}

/* What a job's python3 sees of its zygote: in it (json loaded), CPU its
 * reaped children used (the zygote's warm-up forks), and /tmp's entries
 * (a warm-up leaves none). */
#define ZYGOTE_PROBE                                                          \
	"{\"cmd\":[\"python3\",\"-c\",\"import os, resource, sys; "      \
	"r = resource.getrusage(resource.RUSAGE_CHILDREN); "                  \
	"print('json' in sys.modules, r.ru_utime + r.ru_stime > 0, "          \
	"os.listdir('/tmp'))\"],\"timeout_ms\":120000}"

/* A warm clone's zygote was warmed up in forks of itself (docs/zygote.md,
 * "Warm-up"): the job runs in it, its children's CPU shows the warm-up,
 * and nothing of it is left in /tmp. A cold clone's zygote had none. */
static void test_zygote_warmed(void **state)
{
	struct al_result res;

	(void)state;
	worker_new(1, "");
	RUN(ZYGOTE_PROBE, &res); /* the pool's first: a cold clone */
	CHECK(res.status == AL_OK && out_is(&res, 0, "True False []\n"), &res);
	al_result_release(&res);
	al_worker_idle(&worker);
	assert_int_equal(pool_of("python")->n_warm, 1);
	RUN(ZYGOTE_PROBE, &res);
	CHECK(res.status == AL_OK && out_is(&res, 0, "True True []\n"), &res);
	al_result_release(&res);
}

/* A warm clone whose QEMU was killed, one that stopped answering (QMP
 * stop), and one past max_age: each is replaced, and the jobs are OK. */
static void test_replaced(void **state)
{
	struct al_result res;
	struct sb_pool *p;

	(void)state;
	worker_new(1, "python:1");
	al_worker_idle(&worker); /* python:1 warms before any job */
	p = pool_of("python");
	assert_non_null(p);
	assert_int_equal(p->n_warm, 1);
	kill(sb_vm_pid(p->warm[0]), SIGKILL);
	usleep(200000);
	RUN("{\"cmd\":[\"python3\",\"-c\",\"print(6*7)\"],\"timeout_ms\":120000}", &res);
	CHECK(res.status == AL_OK && out_is(&res, 0, "42\n"), &res);
	al_result_release(&res);
	assert_int_equal(p->replaced, 1);

	al_worker_idle(&worker);
	assert_int_equal(p->n_warm, 1);
	assert_int_equal(sb__vm_qmp(p->warm[0], "stop", NULL, NULL), 0);
	RUN("{\"cmd\":[\"python3\",\"-c\",\"print(6*7)\"],\"timeout_ms\":120000}", &res);
	CHECK(res.status == AL_OK && out_is(&res, 0, "42\n"), &res);
	al_result_release(&res);
	assert_int_equal(p->replaced, 2);

	opts.warm_max_age_s = 1;
	al_worker_idle(&worker);
	assert_int_equal(p->n_warm, 1);
	sleep(1);
	al_worker_idle(&worker); /* too old: replaced by a new one */
	assert_int_equal(p->replaced, 3);
	assert_int_equal(p->n_warm, 1);
	assert_true(sb_vm_warm(p->warm[0]));
	opts.warm_max_age_s = 600;
}

/* Warm python clones and a c job: it restores a c clone (cold path) and
 * is right; the python clones still wait. */
static void test_other_template(void **state)
{
	struct al_result res;
	struct sb_pool *p;

	(void)state;
	worker_new(0, "python:2");
	al_worker_idle(&worker);
	p = pool_of("python");
	assert_non_null(p);
	assert_int_equal(p->n_warm, 2);
	RUN("{\"files\":{\"m.c\":\"#include <stdio.h>\\nint main(void)"
	    "{printf(\\\"%d\\\\n\\\", 6*7);return 0;}\\n\"},\"steps\":["
	    "{\"cmd\":[\"gcc\",\"-O2\",\"-o\",\"m\",\"m.c\"],"
	    "\"timeout_ms\":120000},{\"cmd\":[\"./m\"]}],"
	    "\"template\":\"c\"}",
	    &res);
	CHECK(res.status == AL_OK && out_is(&res, 1, "42\n"), &res);
	CHECK(res.vm.restored, &res);
	al_result_release(&res);
	assert_int_equal(p->n_warm, 2);
	assert_int_equal(p->replaced, 0);
	assert_non_null(pool_of("c"));
	assert_int_equal(pool_of("c")->n_warm, 0);
}

static int qemu_count(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		char path[300], buf[4096], *end;
		int ppid = 0;
		size_t len;
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = 0;
		end = strrchr(buf, ')');
		n += strstr(buf, "(qemu-system") && end &&
		     sscanf(end + 1, " %*c %d", &ppid) == 1 && ppid == test_pid;
	}
	if (d)
		closedir(d);
	return n;
}

static int count_entries(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.' &&
		     !strncmp(e->d_name, prefix, strlen(prefix));
	if (d)
		closedir(d);
	return n;
}

static int count_fds(void)
{
	return count_entries("/proc/self/fd", "");
}

/* N `true` jobs, each on a warm clone made between jobs as a worker
 * process does: then nothing is left (QEMU, cgroup, fd, run dir file).
 * The warm-up command is `true` here: what is tested is the path (restore,
 * warm-up step, tidy, wait, take, destroy), not what the image's
 * clone_warmup leaves in the TCG cache; it keeps 100 jobs near 1 min.
 * CI runs 25 (one fd or file left per job shows as 25); the full suite
 * (AIRLOCK_FULL=1, tools/test.sh --full) runs 100. */
static void test_hundred_clean(void **state)
{
	const int n = getenv("AIRLOCK_FULL") ? 100 : 25;
	uint64_t t0 = al_now_ms();
	char mine[32];
	int fds;

	(void)state;
	worker_new(1, "");
	fds = count_fds();
	for (int i = 0; i < n; i++) {
		if (i == 1) /* the first job opened the pool */
			snprintf(worker.templates[0].img.clone_warmup,
				 sizeof(worker.templates[0].img.clone_warmup),
				 "true");
		struct al_result res;

		RUN("{\"sh\":\"true\"}", &res);
		CHECK(res.status == AL_OK, &res);
		al_result_release(&res);
		al_worker_idle(&worker);
		assert_int_equal(pool_of("python")->n_warm, 1);
	}
	fprintf(stderr, "%d warm jobs in %llu ms\n", n,
		(unsigned long long)(al_now_ms() - t0));
	assert_int_equal(pool_of("python")->replaced, 0);
	al_worker_release(&worker);
	assert_int_equal(qemu_count(), 0);
	assert_int_equal(count_entries(opts.run_dir, ""), opts.jail ? 2 : 0);
	snprintf(mine, sizeof(mine), "%d-", (int)getpid());
	assert_int_equal(count_entries("/sys/fs/cgroup/airlock", mine), 0);
	assert_int_equal(count_fds(), fds);
	al_worker_init(&worker, &opts, al_policy_default(), "test-warm");
}

static int group_teardown(void **state)
{
	(void)state;
	al_worker_release(&worker);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zygote_warmed),
		cmocka_unit_test(test_other_template),
		cmocka_unit_test(test_replaced),
		cmocka_unit_test(test_waited_paused),
		cmocka_unit_test(test_hundred_clean),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
