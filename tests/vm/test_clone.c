/* test_clone.c: template snapshots and clones: freshness, isolation,
 * concurrency, failure of the VMM, cleanup, caching, no network. */
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "vm_internal.h" /* test_pool: a spare's prepared state, QMP fd */
#include "vmtest.h"

static struct sb_options opts;
static struct al_worker worker;
static pid_t test_pid; /* this process: our VMMs' parent */

static int group_setup(void **state)
{
	struct sb_template t;

	(void)state;
	test_pid = getpid();
	vmtest_options(&opts);
	al_worker_init(&worker, &opts, al_policy_default(), "test-clone");
	/* build (or find) the template before anything is timed */
	return sb_template_open(&opts, "python", &t) == 0 ? 0 : -1;
}

#define RUN(json, res) vmtest_run(&worker, json, res)

static bool out_is(const struct al_result *r, size_t i, const char *s)
{
	return r->steps[i].stdout_.len == strlen(s) &&
	       memcmp(r->steps[i].stdout_.data, s, strlen(s)) == 0;
}

/* 20 clones in a row: each is fresh (no file of the one before) and
 * answers; a file written by clone N is absent in clone N+1. */
static void test_sequential(void **state)
{
	(void)state;
	for (int i = 0; i < 20; i++) {
		struct al_result res;

		RUN("{\"steps\":[{\"sh\":\"test ! -e /work/mark && "
		    "test ! -e /tmp/mark && echo x > /work/mark && "
		    "echo x > /tmp/mark\"},{\"cmd\":[\"python3\",\"-c\","
		    "\"print(6*7)\"]}]}",
		    &res);
		CHECK(res.status == AL_OK, &res);
		CHECK(res.vm.restored, &res);
		CHECK(out_is(&res, 1, "42\n"), &res);
		al_result_release(&res);
		if (i % 2) /* as the worker process does between jobs */
			al_worker_idle(&worker);
	}
}

static bool prints_42(struct sb_vm *vm)
{
	char *argv[] = {"python3", "-c", "print(6*7)", NULL};
	struct al_step step = {.argv = argv, .argc = 3};
	struct al_step_result r = {0};
	struct al_limits lim;
	bool ok;

	al_job_limits(&(struct al_job){0}, al_policy_default(), &lim);
	ok = sb_vm_run_step(vm, &step, &lim, 30000, &r) == 0 &&
	     r.status == AL_OK && r.stdout_.len == 3 &&
	     !memcmp(r.stdout_.data, "42\n", 3);
	al_step_result_release(&r);
	return ok;
}

/* Pre-started VMMs: prepared ahead (connected, state fd passed, no guest
 * state), one whose QEMU died is dropped, a prepared one restores. */
static void test_pool(void **state)
{
	struct sb_template t;
	struct sb_pool pool;
	struct sb_vm *vm = NULL;
	pid_t dead, next;

	(void)state;
	assert_int_equal(sb_template_open(&opts, "python", &t), 0);
	sb_pool_init(&pool, &opts, &t, 3);
	sb_pool_fill(&pool);
	assert_int_equal(pool.n, 3);
	/* one dies before it is prepared: prepare drops it */
	dead = sb_vm_pid(pool.spare[2]);
	kill(dead, SIGKILL);
	sb_pool_prepare(&pool);
	assert_int_equal(pool.n, 2);
	for (size_t i = 0; i < pool.n; i++) {
		assert_true(pool.spare[i]->prepared);
		assert_true(pool.spare[i]->qmp.fd >= 0);
		assert_true(sb_vm_pid(pool.spare[i]) != dead);
	}
	/* the oldest dies after it was prepared: the restore takes the next */
	dead = sb_vm_pid(pool.spare[0]);
	next = sb_vm_pid(pool.spare[1]);
	kill(dead, SIGKILL);
	usleep(100000);
	assert_int_equal(sb_pool_restore(&pool, &vm), 0);
	assert_int_equal(sb_vm_pid(vm), next);
	assert_true(sb_vm_restored(vm));
	fprintf(stderr, "prepared restore: ready in %llu ms\n",
		(unsigned long long)sb_vm_ready_ms(vm));
	assert_true(prints_42(vm));
	sb_vm_destroy(vm);
	/* refilled by that restore; an unprepared spare restores too */
	assert_int_equal(pool.n, 3);
	assert_false(pool.spare[0]->prepared);
	assert_int_equal(sb_pool_restore(&pool, &vm), 0);
	assert_true(prints_42(vm));
	sb_vm_destroy(vm);
	sb_pool_release(&pool);
	assert_int_equal(pool.n, 0);
}

/* Does /proc/PID/maps of `pid` map a file whose name contains `what`? */
static bool maps_has(pid_t pid, const char *what)
{
	char path[64], line[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, what) != NULL;
	fclose(f);
	return found;
}

/* The -kernel argument of `pid`'s command line, "" if none. */
static void kernel_arg(pid_t pid, char *buf, size_t size)
{
	char path[64], cmd[8192];
	size_t n;
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	n = fread(cmd, 1, sizeof(cmd) - 1, f);
	fclose(f);
	cmd[n] = '\0';
	for (size_t i = 0; i < n; i += strlen(cmd + i) + 1)
		if (!strcmp(cmd + i, "-kernel") && i + 8 < n)
			snprintf(buf, size, "%s", cmd + i + 8);
}

/* A clone's QEMU process: it runs with sandbox/preload's shim (its
 * malloc_trim), the sealed memfd mapped, and with the stub kernel
 * (vm.c), not the image's; it restores and runs. */
static void test_qemu_process(void **state)
{
	struct sb_template t;
	struct sb_pool pool;
	struct sb_vm *vm = NULL;
	char karg[256];

	(void)state;
	assert_int_equal(sb_template_open(&opts, "python", &t), 0);
	sb_pool_init(&pool, &opts, &t, 1);
	assert_int_equal(sb_pool_restore(&pool, &vm), 0);
	assert_true(maps_has(sb_vm_pid(vm), "memfd:airlock-qemu-preload"));
	kernel_arg(sb_vm_pid(vm), karg, sizeof(karg));
	assert_string_equal(karg, "/proc/self/fd/11");
	assert_true(prints_42(vm));
	sb_vm_destroy(vm);
	sb_pool_release(&pool);
}

/* 8 clones alive at once all answer, with distinct entropy and the
 * host's clock. */
static void test_eight_alive(void **state)
{
	struct sb_template t;
	struct sb_vm *vm[8];
	char seen[8][40], rnd[8][32];
	/* in the template's zygote (docs/zygote.md: json is one of its
	 * modules), which must not hand every clone the same randomness */
	char *argv[] = {"python3", "-c",
			"import os,time,sys,random;print(os.urandom(16).hex(),"
			"int(time.time()*1000),'json' in sys.modules,"
			"random.getrandbits(64))",
			NULL};
	struct al_step step = {.argv = argv, .argc = 3};
	struct al_limits lim;

	(void)state;
	al_job_limits(&(struct al_job){0}, al_policy_default(), &lim);
	assert_int_equal(sb_template_open(&opts, "python", &t), 0);
	for (int i = 0; i < 8; i++) {
		int r = sb_vm_restore(&opts, &t, &vm[i]);

		if (r)
			fprintf(stderr, "restore %d: %s\n", i, sb_vm_error(vm[i]));
		assert_int_equal(r, 0);
	}
	for (int i = 0; i < 8; i++) {
		struct al_step_result sr = {0};
		uint64_t before = al_wall_ms(), guest_ms;

		assert_int_equal(sb_vm_run_step(vm[i], &step, &lim, 20000, &sr),
				 0);
		assert_int_equal(sr.status, AL_OK);
		assert_true(sr.stdout_.len > 33);
		memcpy(seen[i], sr.stdout_.data, 32);
		seen[i][32] = 0;
		guest_ms = strtoull((char *)sr.stdout_.data + 33, NULL, 10);
		/* the guest read its clock between before and now */
		assert_true(guest_ms + 1000 >= before);
		assert_true(guest_ms <= al_wall_ms() + 1000);
		{
			char *z = memmem(sr.stdout_.data, sr.stdout_.len,
					 " True ", 6);

			assert_non_null(z);
			snprintf(rnd[i], sizeof(rnd[i]), "%.*s",
				 (int)(sr.stdout_.len -
				       (size_t)(z + 6 - (char *)sr.stdout_.data)),
				 z + 6);
		}
		for (int k = 0; k < i; k++) {
			assert_string_not_equal(seen[i], seen[k]);
			assert_string_not_equal(rnd[i], rnd[k]);
		}
		al_step_result_release(&sr);
	}
	for (int i = 0; i < 8; i++)
		sb_vm_destroy(vm[i]);
}

/* Find QEMU processes whose parent is this test (we stay a jailed
 * VMM's parent: it is pid 1 only inside its own pid namespace). */
static int qemu_pids(pid_t *out, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		char path[300], buf[4096];
		FILE *f;
		size_t len;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = 0;
		/* PID (COMM) STATE PPID ... */
		char *end = strrchr(buf, ')');
		int ppid = 0;

		if (strstr(buf, "(qemu-system") && end &&
		    sscanf(end + 1, " %*c %d", &ppid) == 1 &&
		    ppid == test_pid && n < max)
			out[n++] = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return n;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* SIGKILL the QEMU of a running job: the job is XX with a clear error
 * within 1 s of the kill, and nothing is left behind. */
static void test_kill_vmm(void **state)
{
	struct al_result res;
	int pfd[2];
	uint64_t killed = 0, done;
	pid_t killer;

	(void)state;
	/* one QEMU per job here: no pre-started spare to confuse the killer */
	al_worker_release(&worker);
	opts.prestart = 0;
	al_worker_init(&worker, &opts, al_policy_default(), "test-clone");
	assert_int_equal(pipe(pfd), 0);
	killer = fork();
	assert_true(killer >= 0);
	if (killer == 0) {
		pid_t p[4];
		uint64_t t;

		for (int i = 0; i < 300; i++) { /* up to 30 s */
			usleep(100000);
			if (qemu_pids(p, 4) == 1)
				break;
		}
		usleep(1500000); /* let the step start */
		if (qemu_pids(p, 4) != 1)
			_exit(1);
		kill(p[0], SIGKILL);
		t = mono_ms();
		if (write(pfd[1], &t, sizeof(t)) != sizeof(t))
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	RUN("{\"sh\":\"sleep 60\",\"timeout_ms\":90000}", &res);
	done = mono_ms();
	assert_int_equal(read(pfd[0], &killed, sizeof(killed)),
			 sizeof(killed));
	close(pfd[0]);
	waitpid(killer, NULL, 0);
	CHECK(res.status == AL_XX, &res);
	CHECK(res.error && strstr(res.error, "qemu exited"), &res);
	CHECK(done - killed <= 1000, &res);
	fprintf(stderr, "killed -> XX result in %llu ms\n",
		(unsigned long long)(done - killed));
	al_result_release(&res);
	al_worker_release(&worker);
	opts.prestart = 1;
	al_worker_init(&worker, &opts, al_policy_default(), "test-clone");
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Entries of dir whose name starts with `prefix` ("" = any but dot
 * files). */
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

/* 100 jobs leave no QEMU, no file, no socket, no fd behind (CI runs 25:
 * one thing left per job shows as 25; AIRLOCK_FULL=1 runs 100). */
static void test_hundred_jobs_clean(void **state)
{
	const int jobs = getenv("AIRLOCK_FULL") ? 100 : 25;
	int fds = count_fds();
	char mine[32];
	pid_t p[4];

	(void)state;
	for (int i = 0; i < jobs; i++) {
		struct al_result res;

		RUN("{\"sh\":\"echo $((6*7))\"}", &res);
		CHECK(res.status == AL_OK && out_is(&res, 0, "42\n"), &res);
		al_result_release(&res);
	}
	/* the pre-started VMM is the worker's until it is released */
	al_worker_release(&worker);
	for (int i = 0, n = qemu_pids(p, 4); i < n; i++)
		fprintf(stderr, "left: qemu pid %d\n", (int)p[i]);
	assert_int_equal(qemu_pids(p, 4), 0);
	/* the run dir holds the uid leases and the jail's mount point only
	 * (VMMs create no file: sockets are socketpairs) */
	assert_int_equal(count_entries(opts.run_dir, ""), opts.jail ? 2 : 0);
	assert_int_equal(count_entries(opts.run_dir, "uids") +
				 count_entries(opts.run_dir, "jail"),
			 opts.jail ? 2 : 0);
	/* our VMMs' cgroups are named PID-vm-XXXXXX */
	snprintf(mine, sizeof(mine), "%d-", (int)getpid());
	assert_int_equal(count_entries("/sys/fs/cgroup/airlock", mine), 0);
	assert_int_equal(count_entries("/sys/fs/cgroup/memory/airlock", mine),
			 0);
	assert_int_equal(count_entries("/sys/fs/cgroup/cpu/airlock", mine), 0);
	assert_int_equal(count_entries("/sys/fs/cgroup/pids/airlock", mine),
			 0);
	assert_int_equal(count_fds(), fds);
	al_worker_init(&worker, &opts, al_policy_default(), "test-clone");
}

/* Run `fmt` through the shell (test set-up only). */
static void shell(const char *fmt, ...)
{
	char cmd[3 * PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

/* A changed image (here: the same files under another content hash, in a
 * state dir of its own) gets a template of its own, built afresh. */
static void another_image(const struct sb_template *a)
{
	struct sb_options o = opts;
	struct sb_template d, e;
	char dir[] = "/var/tmp/airlock-test-imgXXXXXX";

	assert_non_null(mkdtemp(dir));
	snprintf(o.state_dir, sizeof(o.state_dir), "%s", dir);
	shell("set -e; d=%s/images/python-0123456789abcdef; mkdir -p $d; "
	      "for f in %s/*; do ln -s \"$f\" $d/; done; rm $d/manifest.json; "
	      "sed 's/\"hash\": *\"[0-9a-f]*\"/\"hash\": \"0123456789abcdef\"/' "
	      "%s/manifest.json > $d/manifest.json; "
	      "ln -s python-0123456789abcdef %s/images/python; "
	      "chmod -R a+rX %s",
	      dir, a->img.dir, a->img.dir, dir, dir);
	assert_int_equal(sb_template_open(&o, "python", &d), 0);
	assert_string_equal(d.img.hash, "0123456789abcdef");
	assert_true(d.built);
	assert_string_not_equal(d.key, a->key);
	assert_int_equal(sb_template_open(&o, "python", &e), 0);
	assert_false(e.built);
	shell("rm -rf %s", dir);
}

/* The second open is a cache hit; a different machine config or image
 * rebuilds. */
static void test_cache(void **state)
{
	struct sb_options o = opts;
	struct sb_template a, b, c;

	(void)state;
	assert_int_equal(sb_template_open(&opts, "python", &a), 0);
	assert_false(a.built);
	o.memory_mb = 768;
	assert_int_equal(sb_template_open(&o, "python", &b), 0);
	if (!b.built) { /* a run before this one built it: start over */
		char path[PATH_MAX + 16];

		snprintf(path, sizeof(path), "%s/inputs", b.dir);
		assert_int_equal(unlink(path), 0);
		assert_int_equal(sb_template_open(&o, "python", &b), 0);
	}
	assert_true(b.built);
	assert_string_not_equal(a.key, b.key);
	assert_int_equal(sb_template_open(&o, "python", &c), 0);
	assert_false(c.built);
	another_image(&a);
}

/* No NIC at all: only lo, and the host's loopback is out of reach. */
static void test_no_network(void **state)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	struct al_result res;
	char json[1024];
	int s;

	(void)state;
	s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s, 4), 0);
	getsockname(s, (struct sockaddr *)&sa, &len);
	snprintf(json, sizeof(json),
		 "{\"steps\":[{\"sh\":\"ls /sys/class/net\"},"
		 "{\"cmd\":[\"python3\",\"-c\",\"import socket\\n"
		 "for h in ('127.0.0.1','10.0.2.2'):\\n"
		 "  try:\\n"
		 "    socket.create_connection((h,%d),timeout=2)\\n"
		 "    print('connected',h)\\n"
		 "  except OSError as e:\\n"
		 "    print('failed',h)\"]}]}",
		 ntohs(sa.sin_port));
	RUN(json, &res);
	CHECK(res.status == AL_OK, &res);
	CHECK(out_is(&res, 0, "lo\n"), &res);
	CHECK(out_is(&res, 1, "failed 127.0.0.1\nfailed 10.0.2.2\n"), &res);
	assert_true(accept(s, NULL, NULL) < 0 && errno == EAGAIN);
	close(s);
	al_result_release(&res);
}

int main(void)
{
	if (getenv("AL_TEST_FILTER"))
		cmocka_set_test_filter(getenv("AL_TEST_FILTER"));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sequential),
		cmocka_unit_test(test_pool),
		cmocka_unit_test(test_qemu_process),
		cmocka_unit_test(test_eight_alive),
		cmocka_unit_test(test_kill_vmm),
		cmocka_unit_test(test_hundred_jobs_clean),
		cmocka_unit_test(test_no_network),
		cmocka_unit_test(test_cache),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
