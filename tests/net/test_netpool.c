/* test_netpool.c: ready network slots (sandbox/net/net.h struct sb_net_pool):
 * a base refuses everything until a job's policy is applied; a taken
 * slot enforces that job's policy and no other; two jobs never get the
 * same slot; a spent slot is closed when the pool is next filled; an
 * owner SIGKILLed with ready slots leaves no host link, lease, namespace
 * or resolver once swept.
 *
 * It reuses test_net.c's test internet and fake guest (the file is
 * included, its main renamed), so the probes are real frames through a
 * real slot's tap, rules and uplink. Needs root; label net. Built with
 * NET_VM (test_netpool_vm, label vm): a worker's ready slot serving real
 * networked jobs in VMs, closed after each job's result.
 */
#include <sys/file.h>
#include <sys/stat.h>

#ifdef NET_VM
int net_tests_main(int argc, char **argv); /* vm_part.h's */
#else
int net_tests_main(void);
#endif
#define main net_tests_main
#include "test_net.c"
#undef main

/* A second policy: the denied server on port 80, nothing else. */
static void other_policy(struct sb_net_policy *p)
{
	policy(p);
	snprintf(p->name, sizeof(p->name), "other");
	inet_pton(AF_INET, DENIED_IP, p->cidrs[0].addr);
}

static struct sb_net_policy pols[2];

/* The test's options with both policies configured and `ready` slots. */
static struct sb_options pool_opts(unsigned ready)
{
	struct sb_options o = opts;

	policy(&pols[0]);
	other_policy(&pols[1]);
	o.net_policies = pols;
	o.n_net_policies = 2;
	o.net_ready = ready;
	return o;
}

static bool always(void *arg)
{
	(void)arg;
	return true;
}

static struct sb_net *take(struct sb_net_pool *np,
			   const struct sb_net_policy *p, bool want_ready)
{
	struct sb_net *n = NULL;
	char err[256];
	bool ready;
	uint64_t t0 = al_now_ms();
	int r = sb_net_pool_take(np, p, &n, &ready, err, sizeof(err));

	if (r < 0)
		fail_msg("sb_net_pool_take: %s (%s)", err, strerror(-r));
	print_message("slot %u (%s) taken in %llu ms\n", sb_net_index(n),
		      ready ? "ready" : "from scratch",
		      (unsigned long long)(al_now_ms() - t0));
	assert_int_equal(ready, want_ready);
	return n;
}

/* The inode of a slot's namespace. */
static ino_t ns_ino(struct sb_net *n)
{
	struct stat st;

	assert_int_equal(fstat(sb_net_ns(n), &st), 0);
	return st.st_ino;
}

/* A base refuses everything; a taken slot has its job's policy only;
 * two takes are two slots; spent slots go at the next fill. */
static void test_take(void **state)
{
	struct sb_options o = pool_opts(2);
	struct sb_net_pool np;
	struct sb_net *a, *b, *c;
	uint8_t gw[6];
	char err[256];

	(void)state;
	SKIP_UNLESS_ROOT();
	sb_net_pool_init(&np, &o);
	assert_int_equal(sb_net_pool_fill(&np, always, NULL), 0);
	assert_int_equal(np.n_ready, 0); /* a job waits: none made */
	assert_int_equal(sb_net_pool_fill(&np, NULL, NULL), 0);
	assert_int_equal(np.n_ready, 2);
	assert_int_equal(host_links(), 2);
	/* a base is all refusal until its policy comes */
	gw_mac(np.ready[0], gw);
	assert_int_equal(
	    probe(sb_net_tap(np.ready[0]), gw, ALLOWED_IP, 80, IPPROTO_TCP),
	    RESET);
	a = take(&np, &pols[0], true);
	b = take(&np, &pols[1], true);
	c = take(&np, &pols[0], false); /* the pool is empty: from scratch */
	assert_int_equal(sb_net_apply(a, &pols[1], err, sizeof(err)), -EBUSY);
	assert_int_not_equal(sb_net_index(a), sb_net_index(b));
	assert_int_not_equal(sb_net_index(a), sb_net_index(c));
	assert_int_not_equal(ns_ino(a), ns_ino(b));
	assert_int_not_equal(sb_net_tap(a), sb_net_tap(b));
	/* each slot has its own job's policy, not the other's */
	gw_mac(a, gw);
	assert_int_equal(probe(sb_net_tap(a), gw, ALLOWED_IP, 80, IPPROTO_TCP),
			 SYNACK);
	assert_int_equal(probe(sb_net_tap(a), gw, DENIED_IP, 80, IPPROTO_TCP),
			 RESET);
	assert_int_equal(probe(sb_net_tap(a), gw, META_IP, 80, IPPROTO_TCP),
			 RESET);
	gw_mac(b, gw);
	assert_int_equal(probe(sb_net_tap(b), gw, DENIED_IP, 80, IPPROTO_TCP),
			 SYNACK);
	assert_int_equal(probe(sb_net_tap(b), gw, ALLOWED_IP, 80, IPPROTO_TCP),
			 RESET);
	gw_mac(c, gw);
	assert_int_equal(probe(sb_net_tap(c), gw, ALLOWED_IP, 80, IPPROTO_TCP),
			 SYNACK);
	assert_int_equal(host_links(), 3);
	/* done jobs: at most one spent slot waits, closed by the next fill */
	sb_net_pool_put(&np, a);
	sb_net_pool_put(&np, b); /* closes a */
	assert_int_equal(host_links(), 2);
	sb_net_close(c);
	assert_int_equal(sb_net_pool_fill(&np, NULL, NULL), 0);
	assert_int_equal(np.n_ready, 2);
	assert_null(np.spent);
	assert_int_equal(host_links(), 2);
	sb_net_pool_release(&np);
	assert_int_equal(host_links(), 0);
}

/* SIGKILL and reap our children (the waiting resolvers); how many. */
static int kill_children(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		char path[300], stat[512], *rp;
		long ppid = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(stat, sizeof(stat), f) && (rp = strrchr(stat, ')')) &&
		    sscanf(rp + 1, " %*c %ld", &ppid) == 1 &&
		    ppid == getpid()) {
			kill(atoi(e->d_name), SIGKILL);
			waitpid(atoi(e->d_name), NULL, 0);
			n++;
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

/* A ready slot given a policy with names gets its resolver; one whose
 * resolver died gives way to a slot from scratch. */
static void test_take_names(void **state)
{
	struct sb_options o = pool_opts(1);
	struct sb_net_policy p;
	struct sb_net_pool np;
	struct sb_net *n;
	uint8_t gw[6];

	(void)state;
	SKIP_UNLESS_ROOT();
	policy(&p);
	p.n_cidrs = 0;
	p.n_names = 1;
	snprintf(p.names[0].name, sizeof(p.names[0].name), "allowed.test");
	sb_net_pool_init(&np, &o);
	assert_int_equal(sb_net_pool_fill(&np, NULL, NULL), 0);
	n = take(&np, &p, true);
	gw_mac(n, gw);
	assert_int_equal(ask(sb_net_tap(n), gw, "denied.test"), NXDOMAIN);
	assert_int_equal(ask(sb_net_tap(n), gw, "allowed.test"), NOERROR);
	assert_int_equal(probe(sb_net_tap(n), gw, ALLOWED_IP, 80, IPPROTO_TCP),
			 SYNACK);
	sb_net_pool_put(&np, n);
	/* a ready slot whose resolver died waiting: a slot from scratch */
	assert_int_equal(sb_net_pool_fill(&np, NULL, NULL), 0);
	assert_int_equal(kill_children(), 1);
	n = take(&np, &p, false);
	gw_mac(n, gw);
	assert_int_equal(ask(sb_net_tap(n), gw, "allowed.test"), NOERROR);
	sb_net_pool_put(&np, n);
	sb_net_pool_release(&np);
	assert_int_equal(host_links(), 0);
	assert_int_equal(our_processes(), 1); /* the resolver is gone */
}

/* No policy configured, or net_ready 0: no slot is kept. */
static void test_want(void **state)
{
	struct sb_options o = pool_opts(0);
	struct sb_net_pool np;

	(void)state;
	SKIP_UNLESS_ROOT();
	sb_net_pool_init(&np, &o);
	assert_int_equal(sb_net_pool_fill(&np, NULL, NULL), 0);
	assert_int_equal(np.n_ready, 0);
	o.net_ready = 3;
	o.n_net_policies = 0;
	sb_net_pool_init(&np, &o);
	assert_int_equal(sb_net_pool_fill(&np, NULL, NULL), 0);
	assert_int_equal(np.n_ready, 0);
	assert_int_equal(host_links(), 0);
}

/* Does `dir` (a /proc/PID/fd or /proc/PID/ns) name `want`? */
static bool dir_names(const char *dir, const char *want)
{
	char path[600], link[64];
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;

	while (d && !found && (e = readdir(d))) {
		ssize_t n;

		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = 0;
			found = !strcmp(link, want);
		}
	}
	if (d)
		closedir(d);
	return found;
}

/* Does any process still hold the namespace of inode `ino`, as its own
 * or through an fd? */
static bool ns_held(ino_t ino)
{
	char path[300], want[64];
	DIR *d = opendir("/proc");
	struct dirent *e;
	bool held = false;

	snprintf(want, sizeof(want), "net:[%lu]", (unsigned long)ino);
	while (d && !held && (e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/ns", e->d_name);
		held = dir_names(path, want);
		snprintf(path, sizeof(path), "/proc/%s/fd", e->d_name);
		held = held || dir_names(path, want);
	}
	if (d)
		closedir(d);
	return held;
}

/* Is slot `idx`'s lease (RUN/nets/IDX, flock'ed) held? */
static bool leased(uint32_t idx)
{
	char path[PATH_MAX + 32];
	int fd, r;

	snprintf(path, sizeof(path), "%s/nets/%u", opts.run_dir, idx);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	r = flock(fd, LOCK_EX | LOCK_NB);
	close(fd);
	return r < 0 && errno == EWOULDBLOCK;
}

/* An owner SIGKILLed with ready slots (and a taken one) leaves nothing:
 * the sweep deletes its host links, the kernel frees its namespaces
 * (only its fds held them), its leases are free again. */
static void test_killed(void **state)
{
	struct sb_options o = pool_opts(3);
	struct sb_net_pool np;
	int pipefd[2];
	struct {
		ino_t ino[3];
		uint32_t idx[3];
	} k;
	pid_t pid;

	(void)state;
	SKIP_UNLESS_ROOT();
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	pid = fork();
	if (pid == 0) {
		struct sb_net *n = NULL;
		char e[128];
		bool ready;

		sb_net_pool_init(&np, &o);
		if (sb_net_pool_fill(&np, NULL, NULL) < 0 || np.n_ready != 3)
			_exit(1);
		for (int i = 0; i < 3; i++) {
			k.ino[i] = ns_ino(np.ready[i]);
			k.idx[i] = sb_net_index(np.ready[i]);
		}
		if (sb_net_pool_take(&np, &pols[0], &n, &ready, e, sizeof(e)) <
		    0)
			_exit(1);
		if (write(pipefd[1], &k, sizeof(k)) != sizeof(k))
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], &k, sizeof(k)), sizeof(k));
	assert_int_equal(host_links(), 3);
	assert_true(our_processes() >= 1 + 1 + 2); /* + bases' resolvers */
	for (int i = 0; i < 3; i++)
		assert_true(ns_held(k.ino[i]) && leased(k.idx[i]));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	sb_net_sweep(gone);
	for (int i = 0; i < 50 && host_links(); i++)
		usleep(100 * 1000);
	assert_int_equal(host_links(), 0);
	for (int i = 0; i < 3; i++)
		assert_false(ns_held(k.ino[i]) || leased(k.idx[i]));
	/* the resolvers forked with the bases die with their owner */
	for (int i = 0; i < 50 && our_processes() > 1; i++)
		usleep(100 * 1000);
	assert_int_equal(our_processes(), 1);
	close(pipefd[0]);
}

#ifdef NET_VM
static void run_job(struct al_worker *w, struct al_result *res)
{
	const char *json = "{\"template\":\"c\",\"network\":\"testnet\","
			   "\"steps\":[" CONNECT("allowed.test/80") "," CONNECT(
			       DENIED_IP "/80") "]}";
	struct al_job job = {0};

	assert_int_equal(al_job_from_json(json, strlen(json), &job, NULL), 0);
	assert_int_equal(al_worker_run(w, &job, 0, 1, res), 0);
	al_job_release(&job);
	if (!out_is(res, 0, "hello\n") || res->steps[1].status != AL_RE ||
	    !has(res, DENIED_IP ":80")) {
		dump(res);
		fail_msg("the networked job did not get its policy");
	}
	al_result_release(res);
}

/* A worker's ready slot serves a job (the job's policy in it), is kept
 * past the job (the result goes out first) and closed at the next idle
 * turn, which makes the next job's; nothing is left at the end. */
static void test_worker(void **state)
{
	static const char *const nets[] = {"testnet", NULL};
	struct al_policy pol = *al_policy_default();
	struct al_worker w;
	struct al_result res;
	ino_t ready;

	(void)state;
	SKIP_UNLESS_ROOT();
	pol.networks = nets;
	use_testnet();
	opts.net_ready = 1;
	al_worker_init(&w, &opts, &pol, "test-netpool");
	for (int job = 0; job < 2; job++) {
		al_worker_idle(&w); /* the last job's slot goes, one is made */
		assert_null(w.net.spent);
		assert_int_equal(w.net.n_ready, 1);
		assert_int_equal(host_links(), 1);
		ready = ns_ino(w.net.ready[0]);
		run_job(&w, &res);
		/* it ran in the ready slot, which waits for the idle turn */
		assert_int_equal(w.net.n_ready, 0);
		assert_non_null(w.net.spent);
		assert_int_equal(ns_ino(w.net.spent), ready);
		assert_int_equal(host_links(), 1);
	}
	al_worker_release(&w);
	assert_int_equal(host_links(), 0);
	for (int i = 0; i < 50 && our_processes() > 1; i++)
		usleep(100 * 1000);
	assert_int_equal(our_processes(), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_worker),
	};

	(void)test_take, (void)test_take_names, (void)test_want,
	    (void)test_killed;
	return cmocka_run_group_tests(tests, setup, teardown);
}
#else
int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_take),
	    cmocka_unit_test(test_take_names),
	    cmocka_unit_test(test_want),
	    cmocka_unit_test(test_killed),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
#endif
