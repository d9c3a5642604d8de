/* test_agent_exec.c: the step executor through agent_client, on the host.
 *
 * Each test starts airlock-agent-host --serve-fd on one end of a socketpair
 * and drives it with sb__agent_client, running real commands. Without
 * arguments steps run as ourselves and are killed by process group (no root
 * needed). With --cgroup the agent gets a cgroup2 subtree of its own and
 * steps run as uid 1000, as in the guest; that needs root and a cgroup2
 * mount, and every test skips with the reason when the host has neither.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_client.h"

#define CALL_MS 30000

static struct {
	bool cgroup;	   /* --cgroup mode */
	char cg_root[512]; /* our cgroup subtree, --cgroup only */
	const char *skip;  /* why every test skips, NULL = run */
} g;

struct fx {
	pid_t agent;		  /* the agent process */
	int fd;			  /* our end of the socketpair */
	char work[64];		  /* its work dir */
	struct sb__agent_client c; /* client on fd */
};

/* --- set-up ----------------------------------------------------------------
 */

static bool cgroup2_mount(char *ret, size_t size)
{
	char line[1024], mnt[256], type[64];
	FILE *f = fopen("/proc/self/mounts", "re");
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %255s %63s", mnt, type) == 2 &&
		    !strcmp(type, "cgroup2")) {
			snprintf(ret, size, "%s", mnt);
			found = true;
		}
	fclose(f);
	return found;
}

static int group_setup(void **state)
{
	char mnt[256], kill_file[600];

	(void)state;
	if (!g.cgroup)
		return 0;
	if (geteuid() != 0) {
		g.skip = "--cgroup needs root";
	} else if (!cgroup2_mount(mnt, sizeof(mnt))) {
		g.skip = "no cgroup2 mount on this host";
	} else {
		snprintf(g.cg_root, sizeof(g.cg_root), "%s/airlock-test-%d",
			 mnt, (int)getpid());
		snprintf(kill_file, sizeof(kill_file), "%s/cgroup.kill",
			 g.cg_root);
		if (mkdir(g.cg_root, 0755) < 0)
			g.skip = "cannot create a cgroup (not delegated)";
		else if (access(kill_file, W_OK) < 0)
			g.skip = "no cgroup.kill (kernel older than 5.14)";
	}
	if (g.skip)
		print_message("skipping all: %s\n", g.skip);
	return 0;
}

static int group_teardown(void **state)
{
	char job[600];

	(void)state;
	if (g.cg_root[0]) {
		snprintf(job, sizeof(job), "%s/job", g.cg_root);
		rmdir(job);
		rmdir(g.cg_root);
	}
	return 0;
}

static int setup(void **state)
{
	static struct fx f;
	int sv[2];
	char fdarg[16];

	if (g.skip)
		return 0;
	memset(&f, 0, sizeof(f));
	snprintf(f.work, sizeof(f.work), "/tmp/al-agent-XXXXXX");
	assert_non_null(mkdtemp(f.work));
	if (g.cgroup) {
		assert_int_equal(chown(f.work, 1000, 1000), 0);
		assert_int_equal(chmod(f.work, 0755), 0);
	}
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
			 0);
	f.agent = fork();
	assert_true(f.agent >= 0);
	if (f.agent == 0) {
		dup2(sv[1], 3); /* clears close-on-exec */
		snprintf(fdarg, sizeof(fdarg), "%d", 3);
		if (g.cgroup)
			execl(AL_AGENT_BIN, "airlock-agent", "--serve-fd",
			      fdarg, "--work-dir", f.work, "--cgroup-root",
			      g.cg_root, (char *)NULL);
		else
			execl(AL_AGENT_BIN, "airlock-agent", "--serve-fd",
			      fdarg, "--work-dir", f.work, "--as-self",
			      (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	f.fd = sv[0];
	sb__agent_client_init(&f.c, f.fd);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];
	pid_t done = 0;
	int st = 0;

	if (g.skip)
		return 0;
	sb__agent_client_release(&f->c);
	close(f->fd);
	for (int i = 0; i < 500 && !done; i++) {
		done = waitpid(f->agent, &st, WNOHANG);
		if (!done)
			usleep(10000);
	}
	if (!done) {
		kill(f->agent, SIGKILL);
		waitpid(f->agent, &st, 0);
	}
	/* a step cgroup `setup` made ahead dies with the VM in a guest;
	 * here the next test's agent would trip over it */
	for (int i = 1; g.cg_root[0] && i < 64; i++) {
		char dir[600];

		snprintf(dir, sizeof(dir), "%s/job/step-%d", g.cg_root, i);
		rmdir(dir);
	}
	/* what a session exec left in the background dies with the VM in a
	 * guest; here with the test's agent, passed or failed */
	if (g.cg_root[0]) {
		char bg[600], kill_file[640];
		int kfd;

		snprintf(bg, sizeof(bg), "%s/job/bg", g.cg_root);
		snprintf(kill_file, sizeof(kill_file), "%s/cgroup.kill", bg);
		kfd = open(kill_file, O_WRONLY | O_CLOEXEC);
		if (kfd >= 0) {
			if (write(kfd, "1", 1) < 0)
				perror(kill_file);
			close(kfd);
		}
		for (int i = 0; i < 300 && rmdir(bg) < 0 && errno == EBUSY;
		     i++)
			usleep(10000);
	}
	/* EOF ends the agent cleanly (and, sanitized, without leaks) */
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->work);
	assert_int_equal(system(cmd), 0);
	return 0;
}

#define SKIP_UNLESS_READY()                                                    \
	do {                                                                   \
		if (g.skip)                                                    \
			skip();                                                \
	} while (0)

/* --- helpers ---------------------------------------------------------------
 */

static void run(struct fx *f, struct al_step *s, uint32_t out_cap,
		struct al_step_result *res)
{
	struct al_limits lim = {.output_bytes = out_cap};

	assert_int_equal(sb__agent_client_run_step(&f->c, s, &lim, NULL, NULL,
						   CALL_MS * 2, res),
			 0);
}

static void run_sh(struct fx *f, const char *sh, uint32_t timeout_ms,
		   struct al_step_result *res)
{
	struct al_step s = {.sh = (char *)sh, .timeout_ms = timeout_ms};

	run(f, &s, 0, res);
}

static void blob_is(const struct al_blob *b, const char *s)
{
	assert_int_equal(b->len, strlen(s));
	if (b->len)
		assert_memory_equal(b->data, s, b->len);
}

/* --- tests -----------------------------------------------------------------
 */

static void test_hello_ping(void **state)
{
	struct fx *f = *state;
	struct al_msg_hello h;

	SKIP_UNLESS_READY();
	assert_int_equal(sb__agent_client_hello(&f->c, CALL_MS, &h), 0);
	assert_int_equal(h.v, AL_PROTO_VERSION);
	assert_non_null(h.agent);
	assert_non_null(h.kernel);
	sb__agent_client_hello_release(&h);
	assert_int_equal(sb__agent_client_ping(&f->c, CALL_MS), 0);
}

static void test_echo(void **state)
{
	struct fx *f = *state;
	char *argv[] = {"echo", "hello", "world", NULL};
	struct al_step s = {.argv = argv, .argc = 3};
	struct al_step_result res;

	SKIP_UNLESS_READY();
	run(f, &s, 0, &res);
	assert_int_equal(res.status, AL_OK);
	assert_true(res.has_exit_code);
	assert_int_equal(res.exit_code, 0);
	blob_is(&res.stdout_, "hello world\n");
	blob_is(&res.stderr_, "");
	al_step_result_release(&res);
}

static void test_stdin_10mb(void **state)
{
	struct fx *f = *state;
	char *argv[] = {"cat", NULL};
	size_t n = 10u << 20;
	uint8_t *in = malloc(n);
	struct al_step s = {.argv = argv, .argc = 1, .has_stdin = true};
	struct al_step_result res;
	uint32_t x = 42;

	SKIP_UNLESS_READY();
	assert_non_null(in);
	for (size_t i = 0; i < n; i++) {
		x = x * 1664525u + 1013904223u;
		in[i] = (uint8_t)(x >> 24);
	}
	s.stdin_ = (struct al_blob){in, n};
	s.timeout_ms = 60000;
	run(f, &s, 16u << 20, &res);
	assert_int_equal(res.status, AL_OK);
	assert_int_equal(res.stdout_.len, n);
	assert_memory_equal(res.stdout_.data, in, n);
	assert_false(res.stdout_truncated);
	assert_int_equal(res.stdout_bytes, n);
	al_step_result_release(&res);
	free(in);
}

static void test_binary_output(void **state)
{
	struct fx *f = *state;
	struct al_step_result res;

	SKIP_UNLESS_READY();
	run_sh(f, "printf '\\000\\377\\001x'; printf '\\376' >&2", 0, &res);
	assert_int_equal(res.status, AL_OK);
	assert_int_equal(res.stdout_.len, 4);
	assert_memory_equal(res.stdout_.data, "\0\377\001x", 4);
	assert_int_equal(res.stderr_.len, 1);
	assert_int_equal(res.stderr_.data[0], 0xfe);
	al_step_result_release(&res);
}

static void test_timeout(void **state)
{
	struct fx *f = *state;
	char *argv[] = {"sleep", "5", NULL};
	struct al_step s = {.argv = argv, .argc = 2, .timeout_ms = 500};
	struct al_step_result res;

	SKIP_UNLESS_READY();
	run(f, &s, 0, &res);
	assert_int_equal(res.status, AL_TO);
	assert_false(res.has_exit_code);
	assert_int_equal(res.signal, SIGKILL);
	assert_true(res.wall_ms >= 500);
	assert_true(res.wall_ms < 3000);
	al_step_result_release(&res);
}

static void test_output_cap(void **state)
{
	struct fx *f = *state;
	struct al_step s = {.sh = "yes | head -c 50M", .timeout_ms = 20000};
	struct al_step_result res;

	SKIP_UNLESS_READY();
	run(f, &s, 1u << 20, &res);
	assert_int_equal(res.status, AL_OL);
	assert_int_equal(res.stdout_.len, 1u << 20);
	assert_true(res.stdout_truncated);
	assert_true(res.stdout_bytes > (1u << 20));
	for (size_t i = 0; i < res.stdout_.len; i++)
		assert_int_equal(res.stdout_.data[i], i % 2 ? '\n' : 'y');
	al_step_result_release(&res);
}

static void test_exit_codes(void **state)
{
	struct fx *f = *state;
	char *argv[] = {"/nonexistent/prog", NULL};
	struct al_step s = {.argv = argv, .argc = 1};
	struct al_step_result res;

	SKIP_UNLESS_READY();
	run_sh(f, "echo out; echo err >&2; exit 3", 0, &res);
	assert_int_equal(res.status, AL_RE);
	assert_int_equal(res.exit_code, 3);
	blob_is(&res.stdout_, "out\n");
	blob_is(&res.stderr_, "err\n");
	al_step_result_release(&res);

	run(f, &s, 0, &res);
	assert_int_equal(res.status, AL_RE);
	assert_int_equal(res.exit_code, 127);
	assert_non_null(strstr((char *)res.stderr_.data, "/nonexistent/prog"));
	al_step_result_release(&res);
}

static void test_signal(void **state)
{
	struct fx *f = *state;
	struct al_step_result res;

	SKIP_UNLESS_READY();
	run_sh(f, "kill -SEGV $$", 0, &res);
	assert_int_equal(res.status, AL_SG);
	assert_int_equal(res.signal, SIGSEGV);
	assert_false(res.has_exit_code);
	al_step_result_release(&res);
}

static void test_env(void **state)
{
	struct fx *f = *state;
	struct al_env env[] = {{"FOO", "bar baz"}, {"LANG", "C"}};
	struct al_step s = {
	    .sh = "printf '%s|%s|%s|%s' \"$FOO\" \"$LANG\" \"$TMPDIR\" "
		  "\"$(env | grep -c '^SECRET_HOST=')\"",
	    .env = env,
	    .n_env = 2};
	struct al_step_result res;

	SKIP_UNLESS_READY();
	setenv("SECRET_HOST", "leak", 1); /* must not reach the step */
	run(f, &s, 0, &res);
	assert_int_equal(res.status, AL_OK);
	blob_is(&res.stdout_, "bar baz|C|/tmp|0");
	al_step_result_release(&res);
}

static void test_cwd_and_files(void **state)
{
	struct fx *f = *state;
	struct al_file files[] = {{"sub/dir/a.txt", {(uint8_t *)"hello", 5}}};
	char *argv[] = {"cat", "a.txt", NULL};
	char *paths[] = {"sub/dir/a.txt", "nope", "up/etc/passwd", "out.bin"};
	struct al_step s = {.argv = argv, .argc = 2, .cwd = "sub/dir"};
	struct al_step_result res;
	struct al_msg_files got;

	SKIP_UNLESS_READY();
	assert_int_equal(sb__agent_client_put_files(&f->c, files, 1, CALL_MS),
			 0);
	run(f, &s, 0, &res);
	assert_int_equal(res.status, AL_OK);
	blob_is(&res.stdout_, "hello");
	al_step_result_release(&res);

	/* a symlink out of the work dir is no way out */
	run_sh(f, "ln -s / up && printf '\\000\\001' > out.bin", 0, &res);
	assert_int_equal(res.status, AL_OK);
	al_step_result_release(&res);
	s.cwd = "up";
	run(f, &s, 0, &res);
	assert_int_equal(res.status, AL_RE);
	assert_int_equal(res.exit_code, 127);
	al_step_result_release(&res);

	assert_int_equal(
	    sb__agent_client_get_files(&f->c, paths, 4, 0, CALL_MS, &got), 0);
	assert_int_equal(got.n_files, 2);
	assert_string_equal(got.files[0].path, "sub/dir/a.txt");
	blob_is(&got.files[0].content, "hello");
	assert_string_equal(got.files[1].path, "out.bin");
	assert_int_equal(got.files[1].content.len, 2);
	assert_int_equal(got.n_missing, 2);
	assert_string_equal(got.missing[0], "nope");
	assert_string_equal(got.missing[1], "up/etc/passwd");
	sb__agent_client_files_release(&got);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A setup (or an earlier step) that leaves a FIFO where the next job's file goes: putting the files fails at once
 * with an error naming the path, the agent never blocks on an open with no
 * reader (issue 23, finding 12), and it still answers. A regular file the
 * job left there is replaced as before. */
static void test_put_files_fifo(void **state)
{
	struct fx *f = *state;
	struct al_file fifo[] = {{"json.py", {(uint8_t *)"x = 1\n", 6}}};
	struct al_file sub[] = {{"d/p", {(uint8_t *)"y", 1}}};
	struct al_file reg[] = {{"old.txt", {(uint8_t *)"new", 3}}};
	struct al_step_result res;
	struct al_msg_files got;
	char *paths[] = {"old.txt"};
	uint64_t t0;
	int r;

	SKIP_UNLESS_READY();
	run_sh(f, "mkfifo json.py && mkdir d && mkfifo d/p && "
		  "echo old > old.txt", 0, &res);
	assert_int_equal(res.status, AL_OK);
	al_step_result_release(&res);
	t0 = mono_ms();
	r = sb__agent_client_put_files(&f->c, fifo, 1, 5000);
	assert_true(r < 0);
	assert_true(r != -ETIMEDOUT);
	r = sb__agent_client_put_files(&f->c, sub, 1, 5000);
	assert_true(r < 0 && r != -ETIMEDOUT);
	assert_true(mono_ms() - t0 < 4000);
	assert_int_equal(sb__agent_client_ping(&f->c, CALL_MS), 0);
	assert_int_equal(sb__agent_client_put_files(&f->c, reg, 1, CALL_MS),
			 0);
	assert_int_equal(
	    sb__agent_client_get_files(&f->c, paths, 1, 0, CALL_MS, &got), 0);
	assert_int_equal(got.n_files, 1);
	blob_is(&got.files[0].content, "new");
	sb__agent_client_files_release(&got);
}

static bool gone(pid_t pid)
{
	for (int i = 0; i < 300; i++) {
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return true;
		usleep(10000);
	}
	return false;
}

static void test_background_killed(void **state)
{
	struct fx *f = *state;
	struct al_step_result res;
	struct timespec t0, t1;
	pid_t pid;

	SKIP_UNLESS_READY();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* holds stdout open: the step must still end when sh exits */
	run_sh(f, "sleep 1000 & echo $!", 0, &res);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(res.status, AL_OK);
	assert_true(t1.tv_sec - t0.tv_sec < 5);
	pid = (pid_t)atoi((char *)res.stdout_.data);
	assert_true(pid > 0);
	assert_true(gone(pid));
	al_step_result_release(&res);
	if (!g.cgroup)
		return; /* process groups cannot catch setsid */
	run_sh(f, "setsid sleep 1000 > /dev/null 2>&1 & echo $!", 0, &res);
	pid = (pid_t)atoi((char *)res.stdout_.data);
	assert_true(pid > 0);
	assert_true(gone(pid));
	al_step_result_release(&res);
}

/* Read a small file into buf; "" when it cannot. */
static void slurp(const char *path, char *buf, size_t size)
{
	FILE *fp = fopen(path, "re");
	size_t n = fp ? fread(buf, 1, size - 1, fp) : 0;

	buf[n] = '\0';
	if (fp)
		fclose(fp);
}

/* A session exec (run_step `background`, proto v5): what it starts in the
 * background outlives it, in the session's job/bg cgroup with the step's
 * memory and pids caps (cgroup mode), and still ends with the exec's main
 * process: a background process keeping stdout open holds nothing up,
 * and its later write hits a closed pipe (SIGPIPE), not the result. */
static void test_background_kept(void **state)
{
	struct fx *f = *state;
	struct al_limits lim = {.memory_mb = 256, .pids = 32};
	struct al_step s = {.timeout_ms = 20000};
	const struct sb__step_ctl bg = {.background = true};
	struct al_step_result res;
	char path[600], buf[256];
	pid_t pid;

	SKIP_UNLESS_READY();
	if (g.cgroup)
		assert_int_equal(sb__agent_client_setup(&f->c, &lim, CALL_MS), 0);
	/* a flood on stdout from the background ends nothing either */
	s.sh = "yes & echo $!";
	assert_int_equal(sb__agent_client_run_step_ctl(&f->c, &s, NULL, &bg,
						       CALL_MS, &res),
			 0);
	assert_true(res.wall_ms < 2000);
	pid = (pid_t)atoi((char *)res.stdout_.data);
	assert_true(pid > 0);
	assert_true(gone(pid)); /* SIGPIPE, its pipe closed */
	al_step_result_release(&res);
	s.sh = "sleep 1000 & echo $!; (sleep 0.5; echo late; touch after) &";
	assert_int_equal(sb__agent_client_run_step_ctl(&f->c, &s, NULL, &bg,
						       CALL_MS, &res),
			 0);
	assert_int_equal(res.status, AL_OK);
	assert_true(res.wall_ms < 2000);
	pid = (pid_t)atoi((char *)res.stdout_.data);
	assert_true(pid > 0);
	al_step_result_release(&res);
	usleep(300000);
	assert_int_equal(kill(pid, 0), 0); /* alive after its exec */
	if (g.cgroup) {
		snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
		slurp(path, buf, sizeof(buf));
		assert_non_null(strstr(buf, "/job/bg\n"));
		/* the caps where the host has the controllers (the guest
		 * has: session_test.sh background checks them there) */
		snprintf(path, sizeof(path), "%s/job/bg/memory.max", g.cg_root);
		slurp(path, buf, sizeof(buf));
		if (buf[0])
			assert_string_equal(buf, "268435456\n");
		snprintf(path, sizeof(path), "%s/job/bg/pids.max", g.cg_root);
		slurp(path, buf, sizeof(buf));
		if (buf[0])
			assert_string_equal(buf, "32\n");
	}
	/* the late writer died on its closed stdout before its touch */
	usleep(1200000);
	snprintf(path, sizeof(path), "%s/after", f->work);
	assert_int_equal(access(path, F_OK), -1);
	/* a later exec of the session runs beside it */
	s.sh = "echo next";
	assert_int_equal(sb__agent_client_run_step_ctl(&f->c, &s, NULL, &bg,
						       CALL_MS, &res),
			 0);
	blob_is(&res.stdout_, "next\n");
	al_step_result_release(&res);
	assert_int_equal(kill(pid, 0), 0);
	/* a job's step does not: the session's leftovers end before it
	 * (a snapshot of a session carries none into a graded job) */
	run_sh(f, "echo job", 0, &res);
	blob_is(&res.stdout_, "job\n");
	al_step_result_release(&res);
	if (!g.cgroup)
		kill(pid, SIGKILL); /* no job/bg cgroup to end them by */
	assert_true(gone(pid));
}

/* cpu_ms stops a busy loop at the limit with TL, long before its wall
 * timeout; with a cgroup it counts every process of the step, here a
 * busy child the shell never waits for. */
static void test_cpu_limit(void **state)
{
	struct fx *f = *state;
	struct al_step s = {.sh = "while :; do :; done", .timeout_ms = 20000,
			    .cpu_ms = 300};
	struct al_step_result res;

	SKIP_UNLESS_READY();
	run(f, &s, 0, &res);
	assert_int_equal(res.status, AL_TL);
	assert_int_equal(res.signal, SIGKILL);
	assert_true(res.cpu_ms > 300);
	assert_true(res.cpu_ms < 1500);
	assert_true(res.wall_ms < 10000);
	al_step_result_release(&res);
	if (!g.cgroup)
		return; /* /proc/PID/stat sees only the main child */
	s.sh = "(while :; do :; done) & sleep 30";
	run(f, &s, 0, &res);
	assert_int_equal(res.status, AL_TL);
	assert_true(res.cpu_ms > 300);
	assert_true(res.wall_ms < 10000);
	al_step_result_release(&res);
}

/* A step that waits uses no CPU time: a small cpu_ms leaves it alone. */
static void test_cpu_limit_sleep(void **state)
{
	struct fx *f = *state;
	char *argv[] = {"sleep", "1", NULL};
	struct al_step s = {.argv = argv, .argc = 2, .cpu_ms = 100};
	struct al_step_result res;

	SKIP_UNLESS_READY();
	run(f, &s, 0, &res);
	assert_int_equal(res.status, AL_OK);
	assert_true(res.wall_ms >= 1000);
	assert_true(res.cpu_ms < 100);
	al_step_result_release(&res);
}

struct collected {
	char out[64]; /* streamed stdout */
	size_t n_out;
	char err[64]; /* streamed stderr */
	size_t n_err;
};

static void collect(void *opaque, int fd, const uint8_t *data, size_t len)
{
	struct collected *c = opaque;
	char *dst = fd == 1 ? c->out : c->err;
	size_t *n = fd == 1 ? &c->n_out : &c->n_err;

	if (*n + len < sizeof(c->out)) {
		memcpy(dst + *n, data, len);
		*n += len;
	}
}

static void test_streaming(void **state)
{
	struct fx *f = *state;
	struct al_step s = {.sh = "echo a; echo b >&2; echo c"};
	struct collected c = {0};
	struct al_step_result res;

	SKIP_UNLESS_READY();
	assert_int_equal(sb__agent_client_run_step(&f->c, &s, NULL, collect, &c,
						   CALL_MS, &res),
			 0);
	assert_int_equal(res.status, AL_OK);
	assert_int_equal(c.n_out, 4);
	assert_memory_equal(c.out, "a\nc\n", 4);
	assert_int_equal(c.n_err, 2);
	assert_memory_equal(c.err, "b\n", 2);
	al_step_result_release(&res);
}

/* --- signals while a step runs (proto v4) ------------------------------- */

/* Signals to send once the step printed `ready` (so its traps are set),
 * 300 ms apart; its streamed output kept in `c`. */
struct sigplan {
	struct collected c; /* streamed output */
	uint32_t sig[3];    /* to send, in order */
	uint32_t grace[3];  /* with each */
	int n, next;	    /* how many, next to send */
	uint64_t last;	    /* when the last went, ms */
	bool bg;	    /* run it as a session exec (background) */
};

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static int plan_tick(void *opaque, uint32_t *sig, uint32_t *grace_ms)
{
	struct sigplan *p = opaque;

	if (p->next >= p->n || !memmem(p->c.out, p->c.n_out, "ready", 5) ||
	    now_ms() < p->last + 300)
		return 0;
	*sig = p->sig[p->next];
	*grace_ms = p->grace[p->next++];
	p->last = now_ms();
	return 1;
}

static void hello(struct fx *f)
{
	struct al_msg_hello h;

	assert_int_equal(sb__agent_client_hello(&f->c, CALL_MS, &h), 0);
	assert_true(f->c.v >= AL_PROTO_SIGNAL_V);
	sb__agent_client_hello_release(&h);
}

static uint64_t run_plan(struct fx *f, const char *sh, struct sigplan *p,
			 struct al_step_result *res)
{
	struct al_step s = {.sh = (char *)sh, .timeout_ms = 20000};
	const struct sb__step_ctl ctl = {.out = collect,
					 .opaque = &p->c,
					 .tick = plan_tick,
					 .tick_opaque = p,
					 .background = p->bg};
	uint64_t t0 = now_ms();

	p->last = t0;
	assert_int_equal(sb__agent_client_run_step_ctl(&f->c, &s, NULL, &ctl,
						       CALL_MS, res),
			 0);
	return now_ms() - t0;
}

/* TERM ends a sleeping step at once: SG 15, nowhere near its timeout. */
static void test_signal_term(void **state)
{
	struct fx *f = *state;
	struct sigplan p = {.sig = {SIGTERM}, .grace = {2000}, .n = 1};
	struct al_step_result res;
	uint64_t ms;

	SKIP_UNLESS_READY();
	hello(f);
	ms = run_plan(f, "echo ready; sleep 100", &p, &res);
	assert_int_equal(res.status, AL_SG);
	assert_int_equal(res.signal, SIGTERM);
	assert_true(ms < 3000);
	al_step_result_release(&res);
	/* the channel is in step: the next request is answered */
	assert_int_equal(sb__agent_client_ping(&f->c, CALL_MS), 0);
}

/* A step that traps USR1 and TERM sees both, and ends as its trap says. */
static void test_signal_trapped(void **state)
{
	struct fx *f = *state;
	struct sigplan p = {
	    .sig = {SIGUSR1, SIGTERM}, .grace = {0, 5000}, .n = 2};
	struct al_step_result res;

	SKIP_UNLESS_READY();
	hello(f);
	run_plan(f,
		 "trap 'echo got-usr1' USR1; trap 'echo got-term; exit 7' "
		 "TERM; echo ready; while :; do sleep 0.05; done",
		 &p, &res);
	assert_int_equal(res.status, AL_RE);
	assert_int_equal(res.exit_code, 7);
	assert_non_null(memmem(p.c.out, p.c.n_out, "got-usr1", 8));
	assert_non_null(memmem(p.c.out, p.c.n_out, "got-term", 8));
	al_step_result_release(&res);
}

/* A session exec that was cancelled keeps nothing: a background child
 * that ignores the TERM goes with it all the same (a USR1 before is no
 * cancel). */
static void test_background_cancelled(void **state)
{
	struct fx *f = *state;
	struct sigplan p = {.sig = {SIGUSR1, SIGTERM},
			    .grace = {0, 2000},
			    .n = 2,
			    .bg = true};
	struct al_step_result res;
	pid_t pid;

	SKIP_UNLESS_READY();
	hello(f);
	run_plan(f,
		 "(trap '' TERM USR1; exec sleep 1000) & echo $!; "
		 "trap 'echo got-usr1' USR1; echo ready; "
		 "while :; do sleep 0.05; done",
		 &p, &res);
	assert_int_equal(res.status, AL_SG);
	assert_int_equal(res.signal, SIGTERM);
	assert_non_null(memmem(p.c.out, p.c.n_out, "got-usr1", 8));
	pid = (pid_t)atoi(p.c.out);
	assert_true(pid > 0);
	assert_true(gone(pid));
	al_step_result_release(&res);
}

/* A step that ignores TERM is killed when the grace ends: SG 9; a
 * background child of it goes too. */
static void test_signal_grace_kill(void **state)
{
	struct fx *f = *state;
	struct sigplan p = {.sig = {SIGTERM}, .grace = {500}, .n = 1};
	struct al_step_result res;
	char *nl;
	pid_t pid;
	uint64_t ms;

	SKIP_UNLESS_READY();
	hello(f);
	ms = run_plan(f,
		      "trap '' TERM; sleep 1000 & echo $!; echo ready; "
		      "while :; do sleep 0.05; done",
		      &p, &res);
	assert_int_equal(res.status, AL_SG);
	assert_int_equal(res.signal, SIGKILL);
	assert_true(ms >= 800 && ms < 5000);
	nl = memchr(p.c.out, '\n', p.c.n_out);
	assert_non_null(nl);
	pid = (pid_t)atoi(p.c.out);
	assert_true(pid > 0);
	assert_true(gone(pid));
	al_step_result_release(&res);
}

/* Never to an agent that did not say v4 (it would answer `error` after
 * the step, out of turn): the step runs to its end. And a `signal` that
 * reaches the agent after its step ended is dropped with no reply. */
static void test_signal_old_agent(void **state)
{
	struct fx *f = *state;
	struct sigplan p = {.sig = {SIGKILL}, .n = 1};
	struct al_msg m = {.type = AL_MSG_SIGNAL};
	struct al_step_result res;
	char *buf;
	size_t len;

	SKIP_UNLESS_READY();
	hello(f);
	f->c.v = 3; /* as an older agent would say */
	run_plan(f, "echo ready; sleep 0.8; echo done", &p, &res);
	assert_int_equal(res.status, AL_OK);
	assert_int_equal(p.next, 1); /* asked, and dropped */
	al_step_result_release(&res);
	m.u.signal.sig = SIGTERM;
	assert_int_equal(al_msg_encode(&m, &buf, &len), 0);
	assert_int_equal(write(f->fd, buf, len), (ssize_t)len);
	free(buf);
	assert_int_equal(sb__agent_client_ping(&f->c, CALL_MS), 0);
}

/* utime + stime of process pid, in clock ticks. */
static long cpu_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')');
	assert_non_null(p);
	/* after ") ": state is field 3; utime, stime are 14, 15 */
	assert_int_equal(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u "
				       "%*u %*u %ld %ld",
				&ut, &st),
			 2);
	return ut + st;
}

static int shut_tick(void *opaque, uint32_t *sig, uint32_t *grace_ms)
{
	int *fd = opaque;

	(void)sig, (void)grace_ms;
	if (*fd >= 0)
		shutdown(*fd, SHUT_WR);
	*fd = -1;
	return 0;
}

/* The host stops writing while a step runs: the agent takes the request
 * channel out of its poll (no spinning on the hangup), the step ends as
 * it would have, and its exit still arrives. */
static void test_signal_host_gone(void **state)
{
	struct fx *f = *state;
	struct al_step s = {.sh = "sleep 1; echo done", .timeout_ms = 20000};
	struct al_step_result res;
	int fd = f->fd;
	const struct sb__step_ctl ctl = {.tick = shut_tick, .tick_opaque = &fd};
	long t0;

	SKIP_UNLESS_READY();
	hello(f);
	t0 = cpu_ticks(f->agent);
	assert_int_equal(sb__agent_client_run_step_ctl(&f->c, &s, NULL, &ctl,
						       CALL_MS, &res),
			 0);
	assert_int_equal(res.status, AL_OK);
	blob_is(&res.stdout_, "done\n");
	/* a busy poll loop would have burnt most of the second */
	assert_true(cpu_ticks(f->agent) - t0 < sysconf(_SC_CLK_TCK) / 4);
	al_step_result_release(&res);
}

static void test_identity(void **state)
{
	struct fx *f = *state;
	struct al_step_result res;
	char step_dir[600];

	SKIP_UNLESS_READY();
	if (!g.cgroup)
		skip();
	run_sh(f,
	       "id -u; id -g; id -G; touch /root/x 2>/dev/null || "
	       "echo denied",
	       0, &res);
	assert_int_equal(res.status, AL_OK);
	blob_is(&res.stdout_, "1000\n1000\n1000\ndenied\n");
	al_step_result_release(&res);
	/* the step's cgroup is gone once the step is */
	snprintf(step_dir, sizeof(step_dir), "%s/job/step-1", g.cg_root);
	assert_int_equal(access(step_dir, F_OK), -1);
}

/* A step's processes are in its cgroup from the first instruction
 * (clone3 into it); `setup` makes that cgroup ahead (al_exec_prepare, so
 * a template's snapshot holds it), and it is gone after the step. */
static void test_step_cgroup(void **state)
{
	struct fx *f = *state;
	struct al_limits lim = {.memory_mb = 256, .pids = 32};
	struct al_step_result res;
	uint8_t ent[32] = {1};
	char dir[600];
	bool done = false;

	SKIP_UNLESS_READY();
	if (!g.cgroup)
		skip();
	assert_int_equal(sb__agent_client_setup_reseed(
			     &f->c, &lim, ent, sizeof(ent), 1, CALL_MS, &done),
			 0);
	snprintf(dir, sizeof(dir), "%s/job/step-1", g.cg_root);
	assert_int_equal(access(dir, F_OK), 0);
	run_sh(f, "cat /proc/self/cgroup", 0, &res);
	assert_int_equal(res.status, AL_OK);
	assert_non_null(memmem(res.stdout_.data, res.stdout_.len,
			       "/job/step-1\n", 12));
	al_step_result_release(&res);
	assert_int_equal(access(dir, F_OK), -1);
	/* the next step makes its own */
	run_sh(f, "cat /proc/self/cgroup", 0, &res);
	assert_int_equal(res.status, AL_OK);
	assert_non_null(memmem(res.stdout_.data, res.stdout_.len,
			       "/job/step-2\n", 12));
	al_step_result_release(&res);
}

/* --- the python zygote (zygote.c, docs/zygote.md) ---------------------- */

/* What a python3 step can see of how it was started: printed by the probe
 * below, compared between a step run in the zygote and the same step run
 * the usual way. The first line says which it was. */
static const char zygote_probe[] =
    "import sys, os, resource\n"
    "print('zygote' if 'json' in sys.modules else 'exec')\n"
    "print(sys.argv, sys.orig_argv, sys.path[0], sys.executable)\n"
    "print(__name__, __file__, __doc__, __package__, __spec__,\n"
    "      type(__loader__).__name__, type(__builtins__).__name__)\n"
    "print(sorted(k for k in globals()))\n"
    "print(sorted(os.environ.items()), os.getcwd(), sys.flags)\n"
    "print(os.getuid(), os.getgid(), os.getgroups(), os.getsid(0) == os.getpid())\n"
    "print(resource.getrlimit(resource.RLIMIT_CORE),\n"
    "      resource.getrlimit(resource.RLIMIT_FSIZE))\n"
    "print([l for l in open('/proc/self/status') if l.startswith('NoNewPrivs')])\n"
    "print(open('/proc/self/cgroup').read().rsplit('-', 1)[0])\n"
    "print(repr(sys.stdin.read()), sys.stdout.line_buffering, sys.stdout.encoding)\n"
    "print(sorted(os.listdir('/proc/self/fd')))\n"
    "import helper; print(helper.X)\n"
    "def f():\n"
    "    raise ValueError('from the job')\n"
    "f()\n";

static bool zygote_waiting(void)
{
	char dir[600];

	snprintf(dir, sizeof(dir), "%s/job/zygote", g.cg_root);
	return access(dir, F_OK) == 0;
}

/* Processes in the waiting zygote's cgroup. */
static int zygote_procs(void)
{
	char path[600], line[64];
	int n = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/job/zygote/cgroup.procs", g.cg_root);
	fp = fopen(path, "re");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp))
		n++;
	fclose(fp);
	return n;
}

/* Run `s` in a fresh zygote, then the usual way; both results out. */
static void zygote_pair(struct fx *f, struct al_step *s,
			struct al_step_result res[2])
{
	if (sb__agent_client_zygote(&f->c, "json", CALL_MS) != 0)
		fail_msg("zygote: %s", f->c.error);
	assert_true(zygote_waiting());
	run(f, s, 0, &res[0]);
	if (zygote_waiting())
		fail_msg("zygote still waiting after %s (%s): %.*s / %.*s",
			 al_status_name(res[0].status), res[0].error,
			 (int)res[0].stdout_.len, (char *)res[0].stdout_.data,
			 (int)res[0].stderr_.len, (char *)res[0].stderr_.data);
	run(f, s, 0, &res[1]);
}

static void same_result(struct al_step_result res[2], size_t skip_line)
{
	const char *a = (const char *)res[0].stdout_.data;
	const char *b = (const char *)res[1].stdout_.data;

	assert_int_equal(res[0].status, res[1].status);
	assert_int_equal(res[0].exit_code, res[1].exit_code);
	assert_int_equal(res[0].signal, res[1].signal);
	if (skip_line) {
		assert_non_null(a);
		assert_non_null(b);
		a = strchr(a, '\n');
		b = strchr(b, '\n');
		assert_non_null(a);
		assert_non_null(b);
	}
	if (!a || !b || strcmp(a, b)) {
		for (size_t i = 0; a && b && a[i]; i++)
			if (a[i] != b[i]) {
				print_message("differ at: %.200s\n  vs: %.200s\n",
					      a + i, b + i);
				break;
			}
		fail();
	}
	if (res[0].stderr_.len != res[1].stderr_.len ||
	    memcmp(res[0].stderr_.data, res[1].stderr_.data,
		   res[0].stderr_.len)) {
		print_message("zygote stderr: %.*s\nexec stderr:   %.*s\n",
			      (int)res[0].stderr_.len,
			      (const char *)res[0].stderr_.data,
			      (int)res[1].stderr_.len,
			      (const char *)res[1].stderr_.data);
		fail();
	}
}

static void write_work(struct fx *f, const char *name, const char *text)
{
	char path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", f->work, name);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
	assert_int_equal(chown(path, 1000, 1000), 0);
}

static void test_zygote(void **state)
{
	struct fx *f = *state;
	char *probe[] = {"python3", "p.py", "a", "b c", NULL};
	char *bad[] = {"python3", "bad.py", NULL};
	char *missing[] = {"python3", "nope.py", NULL};
	char *code[] = {"/usr/bin/python3", "-c",
			"import sys; print(sys.argv, repr(sys.path[0]), "
			"__name__); sys.exit('bye')",
			"x", NULL};
	char *dir[] = {"python3", "d", NULL};
	char *sh[] = {"sh", "-c", "true", NULL};
	struct al_step s = {.argv = probe, .argc = 4};
	struct al_step_result res[2];

	SKIP_UNLESS_READY();
	if (!g.cgroup || access("/usr/bin/python3", X_OK) < 0)
		skip();
	write_work(f, "p.py", zygote_probe);
	write_work(f, "helper.py", "X = 'sibling module'\n");
	write_work(f, "bad.py", "def (:\n");
	s.has_stdin = true;
	s.stdin_.data = (uint8_t *)"input\n";
	s.stdin_.len = 6;
	zygote_pair(f, &s, res);
	assert_memory_equal(res[0].stdout_.data, "zygote\n", 7);
	assert_memory_equal(res[1].stdout_.data, "exec\n", 5);
	assert_int_equal(res[0].status, AL_RE);
	same_result(res, 1);
	for (int i = 0; i < 2; i++)
		al_step_result_release(&res[i]);

	/* a syntax error, a missing file, -c with sys.exit(str) */
	s = (struct al_step){.argv = bad, .argc = 2};
	zygote_pair(f, &s, res);
	same_result(res, 0);
	for (int i = 0; i < 2; i++)
		al_step_result_release(&res[i]);
	s = (struct al_step){.argv = missing, .argc = 2};
	zygote_pair(f, &s, res);
	assert_int_equal(res[0].exit_code, 2);
	same_result(res, 0);
	for (int i = 0; i < 2; i++)
		al_step_result_release(&res[i]);
	s = (struct al_step){.argv = code, .argc = 4};
	zygote_pair(f, &s, res);
	same_result(res, 0);
	for (int i = 0; i < 2; i++)
		al_step_result_release(&res[i]);
	/* a directory: handed to a fresh interpreter (execv) */
	{
		char d[256];

		snprintf(d, sizeof(d), "%s/d", f->work);
		assert_int_equal(mkdir(d, 0755), 0);
		assert_int_equal(chown(d, 1000, 1000), 0);
		write_work(f, "d/__main__.py",
			   "import sys; print('main of a dir', sys.argv)\n");
	}
	s = (struct al_step){.argv = dir, .argc = 2};
	zygote_pair(f, &s, res);
	assert_int_equal(res[0].status, AL_OK);
	same_result(res, 0);
	for (int i = 0; i < 2; i++)
		al_step_result_release(&res[i]);

	/* a warm clone's warm-up (python too) runs beside it, and leaves it */
	{
		char *warm[] = {"python3", "-c", "import json", NULL};
		char *which[] = {"python3", "-c",
				 "import sys; print('json' in sys.modules)",
				 NULL};
		struct al_limits lim = {0};

		assert_int_equal(
		    sb__agent_client_zygote(&f->c, "json", CALL_MS), 0);
		s = (struct al_step){.argv = warm, .argc = 3};
		assert_int_equal(sb__agent_client_run_warmup(&f->c, &s, &lim,
							     CALL_MS, &res[0]),
				 0);
		assert_int_equal(res[0].status, AL_OK);
		assert_true(zygote_waiting());
		al_step_result_release(&res[0]);
		s = (struct al_step){.argv = which, .argc = 3};
		run(f, &s, 0, &res[0]);
		blob_is(&res[0].stdout_, "True\n");
		assert_false(zygote_waiting());
		al_step_result_release(&res[0]);
	}
	/* the zygote's own warm-up (a warm clone's): forks of it run a job's
	 * paths and are gone; it waits on, the same for its job, twice over */
	assert_int_equal(sb__agent_client_zygote_warm(&f->c, CALL_MS),
			 -EPROTO); /* none waiting */
	s = (struct al_step){.argv = probe, .argc = 4};
	s.has_stdin = true;
	s.stdin_.data = (uint8_t *)"input\n";
	s.stdin_.len = 6;
	assert_int_equal(sb__agent_client_zygote(&f->c, "json", CALL_MS), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(sb__agent_client_zygote_warm(&f->c, CALL_MS),
				 0);
		assert_true(zygote_waiting());
		assert_int_equal(zygote_procs(), 1);
	}
	run(f, &s, 0, &res[0]);
	assert_false(zygote_waiting());
	run(f, &s, 0, &res[1]);
	assert_memory_equal(res[0].stdout_.data, "zygote\n", 7);
	same_result(res, 1);
	for (int i = 0; i < 2; i++)
		al_step_result_release(&res[i]);
	/* any other step ends a waiting zygote first */
	assert_int_equal(sb__agent_client_zygote(&f->c, "json", CALL_MS), 0);
	assert_true(zygote_waiting());
	s = (struct al_step){.argv = sh, .argc = 3};
	run(f, &s, 0, &res[0]);
	assert_int_equal(res[0].status, AL_OK);
	assert_false(zygote_waiting());
	al_step_result_release(&res[0]);
	/* a bad module list is refused, a failing import is not fatal */
	assert_int_equal(sb__agent_client_zygote(&f->c, "os; rm", CALL_MS),
			 -EPROTO);
	assert_int_equal(
	    sb__agent_client_zygote(&f->c, "no_such_module_x json", CALL_MS),
	    0);
	/* a step past its timeout in the zygote is killed like any */
	{
		char *spin[] = {"python3", "-c", "while True: pass", NULL};

		s = (struct al_step){.argv = spin, .argc = 3,
				     .timeout_ms = 500};
		run(f, &s, 0, &res[0]);
		assert_int_equal(res[0].status, AL_TO);
		assert_false(zygote_waiting());
		al_step_result_release(&res[0]);
	}
}

static void test_bad_limits_rejected(void **state)
{
	struct fx *f = *state;
	uint8_t small[8] = {0};

	SKIP_UNLESS_READY();
	/* refused locally: nothing sent, client still usable */
	assert_int_equal(
	    sb__agent_client_reseed(&f->c, small, sizeof(small), 1, CALL_MS),
	    -EINVAL);
	assert_int_equal(sb__agent_client_ping(&f->c, CALL_MS), 0);
}

/* Send `req` as raw bytes and read one reply frame (blocking). */
static void raw_call(struct fx *f, const struct al_msg *req,
		     struct al_msg *rep)
{
	struct al_frame_reader rd;
	uint8_t b, *body;
	char *buf = NULL;
	size_t len = 0;

	assert_int_equal(al_msg_encode(req, &buf, &len), 0);
	assert_int_equal(write(f->fd, buf, len), (ssize_t)len);
	free(buf);
	al_frame_reader_init(&rd, 0);
	while (!al_frame_reader_ready(&rd)) {
		assert_int_equal(read(f->fd, &b, 1), 1);
		assert_int_equal(al_frame_reader_feed(&rd, &b, 1), 1);
	}
	assert_int_equal(al_frame_reader_take(&rd, &body, &len), 0);
	assert_int_equal(al_msg_decode(body, len, rep, NULL), 0);
	free(body);
	al_frame_reader_release(&rd);
}

/* proto v2: setup carries a reseed and the agent acknowledges it (host
 * mode: it never sets the host's clock, but answers the same); a plain
 * setup gets a plain ok; time_ns without entropy is refused. */
static void test_setup_reseed(void **state)
{
	struct fx *f = *state;
	struct al_limits lim = {.memory_mb = 256, .pids = 32};
	struct al_msg req = {.type = AL_MSG_SETUP}, rep;
	uint8_t ent[32] = {1, 2, 3};
	bool done = false;

	SKIP_UNLESS_READY();
	assert_int_equal(sb__agent_client_setup_reseed(
			     &f->c, &lim, ent, sizeof(ent), 1, CALL_MS, &done),
			 0);
	assert_true(done);
	req.u.setup.limits = lim;
	raw_call(f, &req, &rep);
	assert_int_equal(rep.type, AL_MSG_OK);
	assert_false(rep.u.ok.reseeded);
	al_msg_release(&rep);
	req.u.setup.time_ns = 1;
	raw_call(f, &req, &rep);
	assert_int_equal(rep.type, AL_MSG_ERROR);
	assert_non_null(strstr(rep.u.error.msg, "go together"));
	al_msg_release(&rep);
	assert_int_equal(sb__agent_client_ping(&f->c, CALL_MS), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_hello_ping, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_echo, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stdin_10mb, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_binary_output, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_output_cap, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_exit_codes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_signal, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_env, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_step_cgroup, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cwd_and_files, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_put_files_fifo, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_background_killed, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_background_kept, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_background_cancelled, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_cpu_limit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cpu_limit_sleep, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_streaming, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_signal_term, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_signal_trapped, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_signal_grace_kill, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_signal_old_agent, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_signal_host_gone, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_identity, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_setup_reseed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_zygote, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_limits_rejected, setup,
					    teardown),
	};

	g.cgroup = argc > 1 && !strcmp(argv[1], "--cgroup");
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
