/* test_guest.c: the inside of the jail, in real cold-booted VMs: steps,
 * timeouts, limits, output caps, isolation of steps from each other. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "vmtest.h"

static struct sb_options opts;
static struct al_worker worker;

static int group_setup(void **state)
{
	(void)state;
	vmtest_options(&opts);
	al_worker_init(&worker, &opts, al_policy_default(), "test-guest");
	worker.cold = true;
	return 0;
}

#define RUN(json, res) vmtest_run(&worker, json, res)
#define STEP(res, i) (&(res)->steps[i])

static void test_python_hello(void **state)
{
	struct al_result res;

	(void)state;
	RUN("{\"cmd\":[\"python3\",\"-c\",\"print(6*7)\"]}", &res);
	CHECK(res.status == AL_OK, &res);
	assert_int_equal(STEP(&res, 0)->stdout_.len, 3);
	assert_memory_equal(STEP(&res, 0)->stdout_.data, "42\n", 3);
	assert_int_equal(res.vm.restored, false);
	assert_true(res.vm.accel == AL_ACCEL_TCG || res.vm.accel == AL_ACCEL_KVM);
	al_result_release(&res);
}

/* A job given 2 vCPUs sees 2 CPUs (the guest kernel finds them through
 * ACPI: it has no MP-table parser, so acpi=off once left it on one). */
static void test_two_vcpus(void **state)
{
	struct al_result res;

	(void)state;
	RUN("{\"limits\":{\"vcpus\":2},\"cmd\":[\"nproc\"]}", &res);
	CHECK(res.status == AL_OK, &res);
	CHECK(STEP(&res, 0)->stdout_.len == 2 &&
		      !memcmp(STEP(&res, 0)->stdout_.data, "2\n", 2),
	      &res);
	al_result_release(&res);
}

static void test_c_compile_run(void **state)
{
	struct al_result res;

	(void)state;
	RUN("{\"template\":\"c\",\"files\":{\"main.c\":\"#include <stdio.h>\\n"
	    "int main(void){int a,b;if(scanf(\\\"%d %d\\\",&a,&b)!=2)return 1;"
	    "printf(\\\"%d\\\\n\\\",a+b);return 0;}\\n\"},"
	    "\"steps\":[{\"cmd\":[\"gcc\",\"-O1\",\"-o\",\"main\",\"main.c\"],"
	    "\"timeout_ms\":120000},"
	    "{\"cmd\":[\"./main\"],\"stdin\":\"40 2\\n\",\"if\":\"success\","
	    "\"expect\":{\"stdout\":\"42\\n\"}}]}",
	    &res);
	CHECK(res.status == AL_OK, &res);
	CHECK(res.verdict == AL_VERDICT_ACCEPTED, &res);
	assert_int_equal(STEP(&res, 1)->expect_ok, AL_TRUE);
	al_result_release(&res);
}

static void test_timeout(void **state)
{
	struct al_result res;

	(void)state;
	RUN("{\"cmd\":[\"python3\",\"-c\",\"while True: pass\"],"
	    "\"timeout_ms\":2000}",
	    &res);
	CHECK(res.status == AL_TO, &res);
	CHECK(STEP(&res, 0)->wall_ms >= 2000 && STEP(&res, 0)->wall_ms <= 2600,
	      &res);
	al_result_release(&res);
}

static uint64_t steps_wall_ms(const struct al_result *res)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < res->n_steps; i++)
		sum += res->steps[i].wall_ms;
	return sum;
}

/* The job's wall_ms bounds the sum of its steps: the guest kills a step at
 * the timeout the host cut to the wall time left, not at the step's own
 * (issue 10: this job once ran 6.3 s, its second step to completion). */
static void test_job_wall(void **state)
{
	struct al_result res;

	(void)state;
	RUN("{\"limits\":{\"wall_ms\":4000},\"steps\":["
	    "{\"sh\":\"sleep 3\",\"timeout_ms\":10000},"
	    "{\"sh\":\"sleep 3\",\"timeout_ms\":10000},"
	    "{\"sh\":\"sleep 3\",\"timeout_ms\":10000}]}",
	    &res);
	print_message("job wall: steps %llu ms, run %llu ms, restore %llu ms\n",
		      (unsigned long long)steps_wall_ms(&res),
		      (unsigned long long)res.timing.run_ms,
		      (unsigned long long)res.vm.restore_ms);
	CHECK(res.status == AL_TO && STEP(&res, 2)->status == AL_TO, &res);
	/* on a loaded host step 0 may itself be cut (sh and sleep starting
	 * in a fresh VM under TCG); otherwise step 1 is, after ~1 s */
	CHECK(STEP(&res, 0)->status == AL_TO ||
		      (STEP(&res, 0)->status == AL_OK &&
		       STEP(&res, 1)->status == AL_TO &&
		       STEP(&res, 1)->wall_ms < 2000),
	      &res);
	CHECK(steps_wall_ms(&res) <= 4000 + 1000, &res);
	/* and on the host: the VM up, then done within wall_ms + 1 s */
	CHECK(res.timing.run_ms - res.vm.restore_ms <= 4000 + 1000, &res);
	al_result_release(&res);

	/* The same with room to spare, so that a slow host cannot hide the
	 * bug: step 1 starts with ~3 s left and must end there, not at its
	 * own 10 s. */
	RUN("{\"limits\":{\"wall_ms\":4000},\"steps\":["
	    "{\"sh\":\"sleep 0.2\"},"
	    "{\"sh\":\"sleep 20\",\"timeout_ms\":10000},"
	    "{\"sh\":\"sleep 3\",\"timeout_ms\":10000}]}",
	    &res);
	CHECK(STEP(&res, 0)->status == AL_OK, &res);
	CHECK(STEP(&res, 1)->status == AL_TO && STEP(&res, 2)->status == AL_TO,
	      &res);
	CHECK(steps_wall_ms(&res) <= 4000 + 1000, &res);
	CHECK(res.timing.run_ms - res.vm.restore_ms <= 4000 + 1000, &res);
	al_result_release(&res);
}

/* cpu_ms stops a busy step at the limit with TL, long before its wall
 * timeout, counting every process of the step (here a busy child in the
 * background as well). */
static void test_cpu_limit(void **state)
{
	struct al_result res;

	(void)state;
	RUN("{\"sh\":\"(while :; do :; done) & while :; do :; done\","
	    "\"cpu_ms\":1500,\"timeout_ms\":60000}",
	    &res);
	print_message("busy: cpu %llu ms in %llu ms\n",
		      (unsigned long long)STEP(&res, 0)->cpu_ms,
		      (unsigned long long)STEP(&res, 0)->wall_ms);
	CHECK(res.status == AL_TL, &res);
	CHECK(STEP(&res, 0)->cpu_ms > 1500 && STEP(&res, 0)->cpu_ms <= 1800,
	      &res);
	CHECK(STEP(&res, 0)->wall_ms < 30000, &res);
	al_result_release(&res);
}

/* A step that waits is not charged for it: a cpu_ms well below its wall
 * time leaves a sleep alone, and the wall timeout still bounds it. (Not
 * much below: under TCG on a loaded host, exec'ing `sleep` in a fresh VM
 * has cost 200 ms of guest CPU time.) */
static void test_cpu_limit_sleep(void **state)
{
	struct al_result res;

	(void)state;
	RUN("{\"steps\":[{\"cmd\":[\"sleep\",\"3\"],\"cpu_ms\":1000},"
	    "{\"cmd\":[\"sleep\",\"5\"],\"cpu_ms\":1000,"
	    "\"timeout_ms\":1500}]}",
	    &res);
	print_message("sleep: cpu %llu ms in %llu ms\n",
		      (unsigned long long)STEP(&res, 0)->cpu_ms,
		      (unsigned long long)STEP(&res, 0)->wall_ms);
	CHECK(STEP(&res, 0)->status == AL_OK && STEP(&res, 0)->wall_ms >= 3000,
	      &res);
	CHECK(STEP(&res, 1)->status == AL_TO, &res);
	al_result_release(&res);
}

static void test_fork_bomb(void **state)
{
	struct al_result res;

	(void)state;
	/* every process keeps forking until pids.max or the timeout */
	RUN("{\"steps\":[{\"cmd\":[\"python3\",\"-c\",\"import os\\n"
	    "while True:\\n  os.fork()\"],\"timeout_ms\":5000},"
	    "{\"sh\":\"echo alive\"}]}",
	    &res);
	CHECK(STEP(&res, 0)->status != AL_OK, &res);
	/* the kill of every forked process, under TCG on a loaded 2-core
	 * host: 5967 ms in two CI runs of 2026-11-28 (a 5600 bound failed
	 * each first run); 1.5 s past the timeout still says "prompt" */
	CHECK(STEP(&res, 0)->wall_ms <= 6500, &res);
	CHECK(STEP(&res, 1)->status == AL_OK, &res);
	assert_memory_equal(STEP(&res, 1)->stdout_.data, "alive\n", 6);
	al_result_release(&res);
}

static void test_memory_limit(void **state)
{
	struct al_result res;

	(void)state;
	RUN("{\"cmd\":[\"python3\",\"-c\",\"x=[]\\nwhile True: "
	    "x.append(bytes(10*1024*1024))\"],\"timeout_ms\":30000,"
	    "\"limits\":{\"memory_mb\":256}}",
	    &res);
	CHECK(res.status == AL_ML, &res);
	al_result_release(&res);
}

static void test_output_limit(void **state)
{
	struct al_result res;

	(void)state;
	RUN("{\"sh\":\"head -c 200000000 /dev/zero\",\"timeout_ms\":60000,"
	    "\"limits\":{\"output_bytes\":1048576}}",
	    &res);
	CHECK(res.status == AL_OL, &res);
	assert_int_equal(STEP(&res, 0)->stdout_.len, 1048576);
	assert_true(STEP(&res, 0)->stdout_truncated);
	CHECK(STEP(&res, 0)->wall_ms < 30000, &res);
	al_result_release(&res);
}

static void test_no_survivors(void **state)
{
	struct al_result res;

	(void)state;
	RUN("{\"steps\":[{\"sh\":\"setsid sleep 1000 & exit 0\"},"
	    "{\"sh\":\"for p in /proc/[0-9]*; do "
	    "cat $p/cmdline 2>/dev/null | tr '\\\\0' ' '; echo; done | "
	    "grep -c '^sleep 1000' || true\"}]}",
	    &res);
	CHECK(STEP(&res, 0)->status == AL_OK, &res);
	CHECK(STEP(&res, 1)->status == AL_OK, &res);
	CHECK(STEP(&res, 1)->stdout_.len == 2 &&
		      !memcmp(STEP(&res, 1)->stdout_.data, "0\n", 2),
	      &res);
	al_result_release(&res);
}

static void test_kill_all(void **state)
{
	struct al_result res;

	(void)state;
	/* kill(-1) reaches every process of the job user but the caller */
	RUN("{\"steps\":[{\"sh\":\"sleep 100 & p=$!; kill -9 -1; wait $p; "
	    "echo $?\"},"
	    "{\"sh\":\"echo ok\"}]}",
	    &res);
	CHECK(STEP(&res, 0)->status == AL_OK, &res);
	CHECK(STEP(&res, 0)->stdout_.len == 4 &&
		      !memcmp(STEP(&res, 0)->stdout_.data, "137\n", 4),
	      &res);
	CHECK(STEP(&res, 1)->status == AL_OK && res.status == AL_OK, &res);
	al_result_release(&res);
}

static void test_filesystem(void **state)
{
	struct al_result res;

	(void)state;
	RUN("{\"steps\":[{\"sh\":\"echo x > /evil\"},"
	    "{\"sh\":\"head -c 100M /dev/zero > big; echo $?; df -m . | "
	    "tail -1\"},"
	    "{\"sh\":\"rm -f big; echo ok\"}],"
	    "\"limits\":{\"disk_mb\":32}}",
	    &res);
	CHECK(STEP(&res, 0)->status == AL_RE, &res);
	CHECK(strstr((char *)STEP(&res, 0)->stderr_.data, "Read-only") != NULL,
	      &res);
	CHECK(strstr((char *)STEP(&res, 1)->stderr_.data,
		     "No space left on device") != NULL,
	      &res);
	CHECK(STEP(&res, 2)->status == AL_OK, &res);
	al_result_release(&res);
	/* the default size, which the template set before its snapshot
	 * (the agent then skips the remount), and another after it */
	RUN("{\"sh\":\"df -m /work | tail -1 | awk '{print $2}'\"}", &res);
	CHECK(res.status == AL_OK && STEP(&res, 0)->stdout_.len == 4 &&
		      !memcmp(STEP(&res, 0)->stdout_.data, "256\n", 4),
	      &res);
	al_result_release(&res);
	RUN("{\"sh\":\"df -m /work | tail -1 | awk '{print $2}'\","
	    "\"limits\":{\"disk_mb\":64}}",
	    &res);
	CHECK(res.status == AL_OK && STEP(&res, 0)->stdout_.len == 3 &&
		      !memcmp(STEP(&res, 0)->stdout_.data, "64\n", 3),
	      &res);
	al_result_release(&res);
}

static void test_big_stdin_binary(void **state)
{
	size_t n = 10u << 20, o;
	char *json = malloc(n / 3 * 4 + 256);
	struct al_job job = {0};
	struct al_result res;
	uint8_t *data = malloc(n);

	(void)state;
	for (size_t i = 0; i < n; i++)
		data[i] = (uint8_t)(i * 2654435761u >> 13);
	o = (size_t)sprintf(json, "{\"sh\":\"cat\",\"timeout_ms\":120000,"
				  "\"limits\":{\"output_bytes\":16777216},"
				  "\"stdin\":\"\"}");
	assert_int_equal(al_job_from_json(json, o, &job, NULL), 0);
	free(job.steps[0].stdin_.data);
	job.steps[0].stdin_.data = data;
	job.steps[0].stdin_.len = n;
	assert_int_equal(al_worker_run(&worker, &job, 0, 1, &res), 0);
	CHECK(res.status == AL_OK, &res);
	assert_int_equal(STEP(&res, 0)->stdout_.len, n);
	assert_memory_equal(STEP(&res, 0)->stdout_.data, data, n);
	al_result_release(&res);
	al_job_release(&job);
	free(json);
}

static void test_entropy_differs(void **state)
{
	struct al_result a, b;
	const char *j = "{\"cmd\":[\"python3\",\"-c\","
			"\"import os;print(os.urandom(16).hex())\"]}";

	(void)state;
	RUN(j, &a);
	RUN(j, &b);
	CHECK(a.status == AL_OK && b.status == AL_OK, &a);
	assert_int_equal(a.steps[0].stdout_.len, 33);
	assert_memory_not_equal(a.steps[0].stdout_.data,
				b.steps[0].stdout_.data, 32);
	al_result_release(&a);
	al_result_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_python_hello),
		cmocka_unit_test(test_two_vcpus),
		cmocka_unit_test(test_c_compile_run),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_job_wall),
		cmocka_unit_test(test_cpu_limit),
		cmocka_unit_test(test_cpu_limit_sleep),
		cmocka_unit_test(test_fork_bomb),
		cmocka_unit_test(test_memory_limit),
		cmocka_unit_test(test_output_limit),
		cmocka_unit_test(test_no_survivors),
		cmocka_unit_test(test_kill_all),
		cmocka_unit_test(test_filesystem),
		cmocka_unit_test(test_big_stdin_binary),
		cmocka_unit_test(test_entropy_differs),
	};
	if (getenv("AL_TEST_FILTER"))
		cmocka_set_test_filter(getenv("AL_TEST_FILTER"));
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
