/* vm_part.h: test_net_vm, the VM half of test_net.c (built from the same
 * file with NET_VM): a real networked job through a worker, in a clone
 * of the networked variant of the `c` template, against the same test
 * internet. Needs root and the test images (label vm). */
#include "worker.h"

static struct sb_net_policy testnet;

/* What every step prints: the step's stdout, NUL-terminated. */
static bool out_is(const struct al_result *r, size_t i, const char *s)
{
	const struct al_blob *b = &r->steps[i].stdout_;

	return b->len == strlen(s) && !memcmp(b->data, s, b->len);
}

static void dump(const struct al_result *res)
{
	char *json = NULL;

	if (al_result_to_json(res, &json) == 0)
		fprintf(stderr, "result: %.4000s\n", json);
	free(json);
}

static bool has(const struct al_result *r, const char *d)
{
	for (size_t i = 0; i < r->network.n_dropped; i++)
		if (!strcmp(r->network.dropped[i], d))
			return true;
	return false;
}

#define CONNECT(dst)                                                           \
	"{\"cmd\":[\"bash\",\"-c\",\"exec 3<>/dev/tcp/" dst                    \
	" && head -c6 <&3\"]}"

/* The acceptance of issue 11 in one job: allowed by name, everything
 * else a fast failed connect listed in the result. */
static void test_job(void **state)
{
	static const char *const nets[] = {"testnet", NULL};
	const char
	    *json =
		"{\"template\":\"c\",\"network\":\"testnet\",\"steps\":"
		"[" CONNECT("allowed.test/80") "," CONNECT("denied.test/80") "," CONNECT(
		    DENIED_IP
		    "/80") "," CONNECT(META_IP
				       "/80") "," CONNECT(HOST_IP
							  "/80") "," CONNECT("a"
									     "l"
									     "l"
									     "o"
									     "w"
									     "e"
									     "d"
									     "."
									     "t"
									     "e"
									     "s"
									     "t"
									     "/"
									     "8"
									     "1") "," CONNECT("10.201.0.1/80") ","
													       "{\"cmd\":[\"cat\",\"/etc/resolv.conf\"]}]}";
	struct al_policy pol = *al_policy_default();
	struct al_worker w;
	struct al_job job = {0};
	struct al_result res;

	(void)state;
	SKIP_UNLESS_ROOT();
	pol.networks = nets;
	policy(&testnet);
	testnet.n_cidrs = 0;
	testnet.n_names = 1;
	snprintf(testnet.names[0].name, sizeof(testnet.names[0].name),
		 "allowed.test");
	opts.net_policies = &testnet;
	opts.n_net_policies = 1;
	al_worker_init(&w, &opts, &pol, "test-net");
	assert_int_equal(al_job_from_json(json, strlen(json), &job, NULL), 0);
	assert_int_equal(al_worker_run(&w, &job, 0, 1, &res), 0);
	dump(&res);
	assert_true(out_is(&res, 0, "hello\n"));
	for (size_t i = 1; i < 7; i++) {
		assert_int_equal(res.steps[i].status, AL_RE);
		/* refused at once: under TCG a step's time is bash's own CPU,
		 * the time waiting on the network well under 2 s (a dropped
		 * SYN would wait for TCP's retries, over a minute) */
		assert_true(res.steps[i].wall_ms < res.steps[i].cpu_ms + 2000);
	}
	assert_string_equal(res.network.policy, "testnet");
	assert_true(res.network.bytes_in > 0 && res.network.bytes_out > 0);
	for (size_t i = 0; i < res.network.n_dropped; i++)
		print_message("dropped %s\n", res.network.dropped[i]);
	assert_true(has(&res, DENIED_IP ":80"));
	assert_true(has(&res, META_IP ":80"));
	assert_true(has(&res, HOST_IP ":80"));
	assert_true(has(&res, ALLOWED_IP ":81"));
	assert_true(has(&res, "10.201.0.1:80"));
	assert_true(out_is(&res, 7,
			   "nameserver " SB_NET_GATEWAY_IP
			   "\noptions timeout:2 attempts:2\n"));
	al_result_release(&res);
	al_job_release(&job);
	al_worker_release(&w);
	assert_int_equal(host_links(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_job),
	};
	(void)test_policy, (void)test_names, (void)test_dropped_cap,
	    (void)test_two_slots, (void)test_no_leftovers,
	    (void)test_rate, (void)test_conn_rate;
	return cmocka_run_group_tests(tests, setup, teardown);
}
