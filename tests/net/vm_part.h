/* vm_part.h: test_net_vm, the VM half of test_net.c (built from the same
 * file with NET_VM): a real networked job through a worker, in a clone
 * of the networked variant of the `c` template, against the same test
 * internet. Needs root and the test images (label vm). */
#include "worker.h"
#include "vm_internal.h" /* sb__vm_launch_argv: the probe's launch */

static struct sb_net_policy testnet;

/* `testnet` by name only (allowed.test), the options' one policy. */
static void use_testnet(void)
{
	policy(&testnet);
	testnet.n_cidrs = 0;
	testnet.n_names = 1;
	snprintf(testnet.names[0].name, sizeof(testnet.names[0].name),
		 "allowed.test");
	opts.net_policies = &testnet;
	opts.n_net_policies = 1;
}

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
	use_testnet();
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

/* ---- issue 23: QEMU's place in a networked slot -------------------------- */

#define PROBE AL_BINARY_DIR "/tests/vm/jail_probe"

/* The value of `key=` in a probe's report ("" if absent). */
static const char *field(const char *report, const char *key)
{
	static char out[256];
	char pat[80];
	const char *at;
	size_t n;

	snprintf(pat, sizeof(pat), "\n%s=", key);
	at = strstr(report, pat);
	out[0] = 0;
	if (!at)
		return out;
	at += strlen(pat);
	n = strcspn(at, "\n");
	snprintf(out, sizeof(out), "%.*s", (int)n, at);
	return out;
}

/* A probe launched exactly as a networked VM's QEMU (sb__vm_launch_argv
 * with the slot attached: QEMU's uid lease, cgroup, jail, namespaces and
 * fds, the tap as fd 9), in a real slot whose policy allows ALLOWED_IP:80
 * and allowed.test, tries every place a compromised QEMU would want:
 * the host's service on each host address (its Redis stand-in), the
 * slot's host link, the metadata and Azure addresses, a denied and an
 * allowed destination, the test internet's DNS server and the slot's
 * resolver. It reaches none of them: it holds the guest's wire (the tap)
 * and nothing else. */
static void test_qemu_place(void **state)
{
	char up_host[48], report[8192];
	const char *dsts[] = {
	    "tcp:" HOST_IP ":7777", "tcp:" LATE_IP ":7777", "tcp:127.0.0.1:7777",
	    up_host,		    "tcp:" META_IP ":80",   "tcp:" AZURE_IP ":80",
	    "tcp:" DENIED_IP ":80", "tcp:" ALLOWED_IP ":80",
	    "udp:" DNS_IP ":53",    "udp:" SB_NET_GATEWAY_IP ":53",
	    "tcp:" SB_NET_GUEST_IP ":22"};
	const size_t n_dsts = sizeof(dsts) / sizeof(*dsts);
	struct sb_net_policy p;
	struct sb_template t;
	struct machine_mem m;
	struct vmm_argv argv = {0};
	struct sb_vm *vm = NULL;
	struct sb_net *n;
	struct pollfd pf;
	size_t len = 1;
	int fd;

	(void)state;
	SKIP_UNLESS_ROOT();
	assert_true(opts.jail);
	policy(&p);
	p.n_names = 1;
	snprintf(p.names[0].name, sizeof(p.names[0].name), "allowed.test");
	/* a host address the slot's sets never saw */
	fd = sb__rtnl_open();
	sb__rtnl_addr4(fd, (int)if_nametoindex("lo"), inet_addr(LATE_IP), 32);
	close(fd);
	n = open_slot(&p);
	snprintf(up_host, sizeof(up_host), "tcp:10.201.%u.%u:7777",
		 (sb_net_index(n) * 4 + 1) >> 8, (sb_net_index(n) * 4 + 1) & 255);
	/* the guest's own path works meanwhile: the policy is live */
	{
		uint8_t gw[6];

		gw_mac(n, gw);
		assert_int_equal(
		    probe(sb_net_tap(n), gw, ALLOWED_IP, 80, IPPROTO_TCP),
		    SYNACK);
	}
	assert_int_equal(sb_template_open(&opts, "c", &t), 0);
	m = (struct machine_mem){.fd = t.mem_fd, .share = false};
	sb__vmm_arg(&argv, "%s", PROBE);
	sb__vmm_arg(&argv, "net");
	for (size_t i = 0; i < n_dsts; i++)
		sb__vmm_arg(&argv, "%s", dsts[i]);
	assert_int_equal(sb__vm_create(&opts, "probe", t.accel, &vm), 0);
	vm->net = n; /* as sb_vm_restore_net() hands it over */
	if (sb__vm_launch_argv(vm, &opts, &t.img, &m, -1, &argv) != 0)
		fail_msg("probe launch: %s", sb_vm_error(vm));
	sb__vmm_argv_release(&argv);
	pf = (struct pollfd){.fd = vm->pidfd, .events = POLLIN};
	assert_int_equal(poll(&pf, 1, 60000), 1); /* it exited */
	report[0] = '\n';
	for (ssize_t k; len < sizeof(report) - 1 &&
			(k = read(vm->log_fd, report + len,
				  sizeof(report) - 1 - len)) > 0;)
		len += (size_t)k;
	report[len] = 0;
	fprintf(stderr, "probe report:%s", report);
	assert_string_equal(field(report, "end"), "1");
	for (size_t i = 0; i < n_dsts; i++)
		assert_string_not_equal(field(report, dsts[i]), "ok");
	assert_string_equal(field(report, "reachable"), "0");
	print_message("QEMU's place: 0 of %zu destinations reachable\n", n_dsts);
	assert_string_equal(field(report, "ifaces"), "lo,");
	assert_string_equal(field(report, "tap"), "ok"); /* the guest's wire */
	vm->net = NULL;
	sb_vm_destroy(vm);
	sb_net_close(n);
}

/* ---- issue 11: no leftovers through the real worker pool ------------- */

#include <nftables/libnftables.h>
#include <sys/stat.h>

#define JOBS 100 /* networked jobs of the batch */

static char work[64]; /* the test's temp dir: config, jobs, results */

/* `airlock batch` with the test's config, from the test's host
 * namespace; its pid. */
static pid_t batch_start(const char *jobs, const char *out, int workers)
{
	char w[16], cfg[128];
	pid_t pid;

	snprintf(w, sizeof(w), "%d", workers);
	snprintf(cfg, sizeof(cfg), "%s/airlock.conf", work);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("AIRLOCK_CONFIG", cfg, 1);
		unsetenv("AIRLOCK_REDIS");
		execl(AIRLOCK_BIN, "airlock", "batch", "-w", w, "-o", out, jobs,
		      (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void batch_wait(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("airlock batch: status %#x", st);
}

static void write_file_(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* The config: the test state dir, fast redelivery, the test internet's
 * DNS server as every resolver's upstream ([network] dns). */
static void write_config(void)
{
	char path[128], text[5120];

	snprintf(path, sizeof(path), "%s/airlock.conf", work);
	snprintf(text, sizeof(text),
		 "[queue]\nvisibility_slack_ms = 1000\nheartbeat_ms = 300\n"
		 "[workers]\nshutdown_grace_ms = 20000\n"
		 "[sandbox]\nstate_dir = %s\n"
		 "[network]\ndns = " DNS_IP ":53\n"
		 "[network.testnet]\nallow = allowed.test\nports = tcp/80\n",
		 opts.state_dir);
	write_file_(path, text);
}

/* Every result of `out`: OK, and the fetching ones with the page;
 * returns how many there were, with the largest attempt seen. */
static size_t check_results(const char *out, uint32_t *max_attempt)
{
	FILE *f = fopen(out, "re");
	char *line = NULL;
	size_t cap = 0, n = 0;
	ssize_t len;

	assert_non_null(f);
	*max_attempt = 0;
	while ((len = getline(&line, &cap, f)) > 0) {
		struct al_result r;

		assert_int_equal(
		    al_result_from_json(line, (size_t)len, &r, NULL), 0);
		if (r.status != AL_OK)
			fail_msg("job %zu: %.2000s", n, line);
		assert_string_equal(r.network.policy, "testnet");
		if (r.n_steps == 2 && !out_is(&r, 1, "hello\n"))
			fail_msg("job %zu fetched nothing: %.2000s", n, line);
		if (r.attempt > *max_attempt)
			*max_attempt = r.attempt;
		al_result_release(&r);
		n++;
	}
	free(line);
	fclose(f);
	return n;
}

/* Our descendants still alive: with us as subreaper, every orphan of
 * the batch (a worker, QEMU, a resolver) would be our child. */
static int children(bool print)
{
	char path[300], buf[512], *end;
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		FILE *f;
		int ppid = 0;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && (end = strrchr(buf, ')')) &&
		    sscanf(end + 2, "%*c %d", &ppid) == 1 && ppid == getpid()) {
			n++;
			if (print)
				print_message("left: %s\n", buf);
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

/* The host namespace's nft ruleset: only the shared tables, the NAT one
 * with its one masquerade rule and the host's wall (issue 23) with its
 * five; nothing per slot. */
static void check_host_rules(void)
{
	struct nft_ctx *nft = nft_ctx_new(NFT_CTX_DEFAULT);
	const char *out, *p;
	int tables = 0, rules = 0, refusals = 0;

	assert_non_null(nft);
	nft_ctx_buffer_output(nft);
	assert_int_equal(nft_run_cmd_from_buffer(nft, "list ruleset"), 0);
	out = nft_ctx_get_output_buffer(nft);
	for (p = out; (p = strstr(p, "table ")); p++)
		tables++;
	for (p = out; (p = strstr(p, "masquerade")); p++)
		rules++;
	for (p = out; (p = strstr(p, "iifname \"al*\"")); p++)
		refusals++;
	if (tables != 2 || !strstr(out, "table ip airlock_nat") || rules != 1 ||
	    !strstr(out, "table inet airlock_host") || refusals != 5)
		fail_msg("host ruleset:\n%s", out);
	nft_ctx_free(nft);
}

/* Nothing of worker `w` (0 = any dead one) left: no host link, no
 * process, no VM cgroup or run dir named after it, no slot rules. */
static void check_clean(pid_t w)
{
	static const char *const dirs[] = {"/run/airlock",
					   "/sys/fs/cgroup/airlock"};
	char prefix[32];

	for (int i = 0; i < 100 && (host_links() || children(false)); i++) {
		/* as subreaper, orphans that died are ours to reap */
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		usleep(100 * 1000);
	}
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	assert_int_equal(host_links(), 0);
	if (children(true))
		fail_msg("processes of the batch left");
	check_host_rules();
	snprintf(prefix, sizeof(prefix), "%d-", (int)w);
	for (size_t i = 0; w && i < 2; i++) {
		DIR *d = opendir(dirs[i]);
		struct dirent *e;

		while (d && (e = readdir(d)))
			if (!strncmp(e->d_name, prefix, strlen(prefix)))
				fail_msg("left: %s/%s", dirs[i], e->d_name);
		if (d)
			closedir(d);
	}
}

/* The pid of a worker running a networked job, from its host link
 * al<pid>-<slot>, once its QEMU is up; 0 after 120 s. */
static int link_owner(const char *name, void *arg)
{
	if (!strncmp(name, "al", 2) && name[2] >= '1' && name[2] <= '9')
		*(pid_t *)arg = (pid_t)strtol(name + 2, NULL, 10);
	return 0;
}

static bool has_qemu_child(pid_t w)
{
	char path[300], comm[32];
	DIR *d = opendir("/proc");
	struct dirent *e;
	bool found = false;

	while (!found && d && (e = readdir(d))) {
		char buf[512], *end;
		int ppid = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		if (e->d_name[0] < '1' || !(f = fopen(path, "re")))
			continue;
		if (fgets(buf, sizeof(buf), f) && (end = strrchr(buf, ')')) &&
		    sscanf(end + 2, "%*c %d", &ppid) == 1 && ppid == w &&
		    sscanf(buf, "%*d (%31[^)]", comm) == 1 &&
		    !strncmp(comm, "qemu", 4))
			found = true;
		fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

static pid_t busy_worker(void)
{
	for (int i = 0; i < 1200; i++) {
		int fd = sb__rtnl_open();
		pid_t w = 0;

		sb__rtnl_links(fd, link_owner, &w);
		close(fd);
		if (w && has_qemu_child(w))
			return w;
		usleep(100 * 1000);
	}
	return 0;
}

/* Issue 11's acceptance: after 100 networked jobs through the worker
 * pool, and after a worker SIGKILLed mid-job, no netns (no process
 * holds one: the batch left none), tap, veth, nft table or resolver is
 * left once the pool has swept up. */
static void test_leftovers(void **state)
{
	char jobs[128], out[128], line[512];
	uint32_t attempt;
	uint64_t t0;
	pid_t batch, w;
	FILE *f;

	(void)state;
	SKIP_UNLESS_ROOT();
	snprintf(work, sizeof(work), "/tmp/al-netvm-XXXXXX");
	assert_non_null(mkdtemp(work));
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	write_config();

	/* 100 jobs, every tenth fetching the allowed page by name */
	snprintf(jobs, sizeof(jobs), "%s/jobs.jsonl", work);
	snprintf(out, sizeof(out), "%s/out.jsonl", work);
	f = fopen(jobs, "we");
	assert_non_null(f);
	for (int i = 0; i < JOBS; i++)
		fprintf(f,
			"{\"id\":\"n%d\",\"template\":\"c\",\"network\":"
			"\"testnet\",\"steps\":[{\"cmd\":[\"true\"]}%s]}\n",
			i, i % 10 ? "" : "," CONNECT("allowed.test/80"));
	assert_int_equal(fclose(f), 0);
	t0 = al_now_ms();
	batch_wait(batch_start(jobs, out, 2));
	print_message("%d networked jobs in %llu ms\n", JOBS,
		      (unsigned long long)(al_now_ms() - t0));
	assert_int_equal(check_results(out, &attempt), JOBS);
	check_clean(0);

	/* a worker SIGKILLed while its job's VM runs: the job is retried
	 * and the dead worker's slot swept */
	snprintf(jobs, sizeof(jobs), "%s/kill.jsonl", work);
	snprintf(out, sizeof(out), "%s/kill-out.jsonl", work);
	snprintf(line, sizeof(line),
		 "{\"id\":\"k\",\"template\":\"c\",\"network\":\"testnet\","
		 "\"limits\":{\"wall_ms\":60000},\"steps\":[{\"cmd\":"
		 "[\"sleep\",\"3\"]}," CONNECT("allowed.test/80") "]}\n");
	write_file_(jobs, line);
	batch = batch_start(jobs, out, 1);
	w = busy_worker();
	assert_true(w > 0);
	print_message("killing worker %d mid-job\n", (int)w);
	assert_int_equal(kill(w, SIGKILL), 0);
	batch_wait(batch);
	assert_int_equal(check_results(out, &attempt), 1);
	assert_int_equal(attempt, 2);
	check_clean(w);
	snprintf(line, sizeof(line), "rm -rf %s", work);
	assert_int_equal(system(line), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_job),
	    cmocka_unit_test(test_qemu_place),
	};
	const struct CMUnitTest leftovers[] = {
	    cmocka_unit_test(test_leftovers),
	};
	(void)test_policy, (void)test_names, (void)test_dropped_cap,
	    (void)test_two_slots, (void)test_no_leftovers, (void)test_rate,
	    (void)test_conn_rate, (void)test_resolver_uids,
	    (void)test_host_broadcast, (void)test_azure_denied,
	    (void)test_host_addr_later, (void)test_slot_walls;
	/* test_net_leftovers is a CTest entry of its own (argv[1]) */
	if (argc > 1 && !strcmp(argv[1], "leftovers"))
		return cmocka_run_group_tests(leftovers, setup, teardown);
	return cmocka_run_group_tests(tests, setup, teardown);
}
