/* test_sweep.c: what a killed worker leaves, and what a VMM could plant.
 *
 * test_sweep plants the leftovers of a dead process by hand, as a worker
 * killed with SIGKILL leaves them: run dirs named after its (dead) pid,
 * holding a symlink out, a FIFO and subdirs; a host cgroup of that name
 * with a process still in it; a process outside any cgroup whose command
 * line names a stale run dir. Next to them, a live process's VM (ours).
 * sb_sweep() must remove exactly the dead one's, kill its processes,
 * follow no link and leave the live VM alone. Needs root (cgroups).
 *
 * test_template_planted tampers with a built template in a state dir of
 * its own: `inputs` replaced by a symlink to an identical copy, then
 * `state` by a FIFO. Each must make the template incomplete (rebuilt),
 * never be followed, never block the opener. Needs the vm_images fixture.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup.h"
#include "util.h"
#include "vmtest.h"

static struct sb_options opts;

static void shell(const char *fmt, ...)
{
	char cmd[4 * PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

static bool exists(const char *fmt, ...)
{
	char path[PATH_MAX];
	struct stat st;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return lstat(path, &st) == 0;
}

/* A pid that was ours and is dead (reaped). */
static pid_t dead_pid(void)
{
	pid_t p = fork();

	assert_true(p >= 0);
	if (p == 0)
		_exit(0);
	assert_int_equal(waitpid(p, NULL, 0), p);
	return p;
}

/* A process blocked reading a pipe we keep; argv[2] is `tag`. */
static pid_t sleeper(const char *tag, int *keep)
{
	int fds[2];
	pid_t p;

	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		dup2(fds[0], 0);
		execl("/bin/sh", "sh", "-c", "read x", tag, (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	*keep = fds[1];
	return p;
}

/* Put `pid` into every hierarchy of `cg`. */
static void join(const struct cg *cg, pid_t pid)
{
	for (int i = 0; i < cg->n; i++) {
		FILE *f = fopen(cg->procs[i], "we");

		assert_non_null(f);
		fprintf(f, "%d\n", (int)pid);
		assert_int_equal(fclose(f), 0);
	}
}

/* Reaped within 5 s, killed by SIGKILL? */
static bool killed(pid_t p)
{
	int st;

	for (int i = 0; i < 500; i++) {
		if (waitpid(p, &st, WNOHANG) == p)
			return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
		usleep(10000);
	}
	return false;
}

static void test_sweep(void **state)
{
	char stale_a[64], stale_b[64], live[64], tag[PATH_MAX + 128];
	struct cg cg_dead, cg_live;
	struct sb_sweep_stats st;
	pid_t d = dead_pid(), s1, s2, s3;
	int k1, k2, k3;

	(void)state;
	if (geteuid() != 0 || !strcmp(sb_cg_version(), "none"))
		skip();
	snprintf(stale_a, sizeof(stale_a), "%d-vm-aaaaaa", (int)d);
	snprintf(stale_b, sizeof(stale_b), "%d-vm-bbbbbb", (int)d);
	snprintf(live, sizeof(live), "%d-vm-cccccc", (int)getpid());
	assert_int_equal(sb__private_dir(opts.run_dir, 0711), 0);
	shell("set -e; o=/tmp/al-sweep-outside-%d; cd %s; "
	      "mkdir -p %s/sub/deeper %s %s other %d-vm-toolong1 $o; "
	      "echo keep > $o/f; ln -s $o %s/out; ln -s $o/f %s/sub/f; "
	      "mkfifo %s/fifo",
	      (int)getpid(), opts.run_dir, stale_a, stale_b, live, (int)d,
	      stale_a, stale_a, stale_a);
	/* the dead one's cgroup, with a process still in it */
	assert_int_equal(sb__cg_create(&cg_dead, stale_a, 256 << 20, 100, 64),
			 0);
	assert_true(cg_dead.n > 0);
	s1 = sleeper("in-cgroup", &k1);
	join(&cg_dead, s1);
	/* outside any cgroup, naming the dead one's other run dir */
	snprintf(tag, sizeof(tag), "%s/%s/qmp.sock", opts.run_dir, stale_b);
	s2 = sleeper(tag, &k2);
	/* ours, alive: must stay, process and all */
	assert_int_equal(sb__cg_create(&cg_live, live, 256 << 20, 100, 64), 0);
	s3 = sleeper("live", &k3);
	join(&cg_live, s3);
	usleep(100000); /* let the sleepers exec */

	assert_int_equal(sb_sweep(&opts, &st), 0);
	assert_int_equal(st.dirs, 2);
	/* (other dead processes' leftovers on this host may go too) */
	assert_true(st.cgroups >= (unsigned)cg_dead.n);
	assert_true(st.killed >= 2);
	assert_true(killed(s1));
	assert_true(killed(s2));
	assert_false(exists("%s/%s", opts.run_dir, stale_a));
	assert_false(exists("%s/%s", opts.run_dir, stale_b));
	for (int i = 0; i < cg_dead.n; i++)
		assert_false(exists("%s", cg_dead.dirs[i]));
	/* no link followed; the live VM and foreign names untouched */
	assert_true(exists("/tmp/al-sweep-outside-%d/f", (int)getpid()));
	assert_true(exists("%s/%s", opts.run_dir, live));
	assert_true(exists("%s/other", opts.run_dir));
	assert_true(exists("%s/%d-vm-toolong1", opts.run_dir, (int)d));
	for (int i = 0; i < cg_live.n; i++)
		assert_true(exists("%s", cg_live.dirs[i]));
	assert_int_equal(kill(s3, 0), 0);
	/* a second sweep finds nothing */
	assert_int_equal(sb_sweep(&opts, &st), 0);
	assert_int_equal(st.dirs, 0);

	close(k1);
	close(k2);
	close(k3); /* EOF: the live sleeper ends */
	assert_int_equal(waitpid(s3, NULL, 0), s3);
	sb__cg_destroy(&cg_live);
	shell("rm -rf %s /tmp/al-sweep-outside-%d", opts.run_dir,
	      (int)getpid());
}

/* A state dir of our own with the python image linked in, its warm-up
 * left out (faster builds): tampering with its template disturbs no other
 * test. */
static void own_state(struct sb_options *o, char *dir)
{
	struct sb_image img;

	assert_int_equal(sb_image_open(&opts, "python", &img), 0);
	assert_non_null(mkdtemp(dir));
	snprintf(o->state_dir, sizeof(o->state_dir), "%s", dir);
	shell("set -e; d=%s/images/%s; mkdir -p $d; "
	      "for f in %s/*; do ln -s \"$f\" $d/; done; rm $d/manifest.json; "
	      "sed 's/\"warmup\": *\".*\",/\"warmup\": \"\",/' "
	      "%s/manifest.json > $d/manifest.json; "
	      "ln -s %s %s/images/python; chmod -R a+rX %s",
	      dir, strrchr(img.dir, '/') + 1, img.dir, img.dir,
	      strrchr(img.dir, '/') + 1, dir, dir);
}

static void test_template_planted(void **state)
{
	char dir[] = "/var/tmp/airlock-sweep-XXXXXX";
	struct sb_options o = opts;
	struct sb_template t, u;
	struct stat st;

	(void)state;
	own_state(&o, dir);
	assert_int_equal(sb_template_open(&o, "python", &t), 0);
	assert_true(t.built);
	/* sealed: a finished template dir is root's, no VMM can add to it,
	 * and no other user reads its RAM (0700, `mem` 0400) */
	assert_int_equal(stat(t.dir, &st), 0);
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(st.st_mode & 0777, 0700);
	shell("test \"$(stat -c %%a %s/mem)\" = 400", t.dir);
	/* inputs: a symlink to an identical copy is not followed */
	shell("set -e; cd %s; cp inputs ../copy; rm inputs; "
	      "ln -s ../copy inputs", t.dir);
	assert_int_equal(sb_template_open(&o, "python", &u), 0);
	assert_true(u.built);
	assert_int_equal(lstat(t.dir, &st), 0);
	shell("test -f %s/inputs && ! test -L %s/inputs", t.dir, t.dir);
	/* state: a FIFO neither blocks the opener nor counts as a state */
	shell("set -e; cd %s; rm state; mkfifo state", t.dir);
	alarm(600);
	assert_int_equal(sb_template_open(&o, "python", &u), 0);
	alarm(0);
	assert_true(u.built);
	shell("test -f %s/state && ! test -p %s/state", t.dir, t.dir);
	/* and the rebuilt one is used as it is */
	assert_int_equal(sb_template_open(&o, "python", &u), 0);
	assert_false(u.built);
	shell("rm -rf %s", dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sweep),
		cmocka_unit_test(test_template_planted),
	};

	vmtest_options(&opts);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
