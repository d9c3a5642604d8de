/* test_exec_inproc.c: the step executor called in our own process.
 *
 * Links sandbox/agent/exec.c and agent.c (log, SIGCHLD, reaping) without
 * the agent's main.c: al_exec_step() runs real commands as our children,
 * killed by process group (no cgroup root, no root needed). What the
 * protocol cannot show is checked here: the streaming callback's chunks,
 * the executor's own failures (XX) and that no child outlives a step.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent.h"

struct fx {
	struct al_agent_config cfg; /* as main.c would fill it */
	struct al_agent a;	    /* the agent state exec.c uses */
	char work[64];		    /* work dir */
	struct al_step step;	    /* the step under test */
	struct al_limits lim;	    /* its limits */
	struct al_step_result res;  /* what came back */
	struct al_blob got[2];	    /* streamed stdout, stderr */
	unsigned chunks;	    /* callback calls */
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	strcpy(fx->work, "/tmp/al-exec-XXXXXX");
	assert_non_null(mkdtemp(fx->work));
	fx->cfg = (struct al_agent_config){
	    .work_dir = fx->work, .drop_ids = false, .serve_fd = -1};
	fx->a = (struct al_agent){
	    .cfg = &fx->cfg, .sig_fd = -1, .work_fd = -1, .random_fd = -1};
	assert_int_equal(al_agent_signals(&fx->a), 0);
	fx->a.work_fd = open(fx->work, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fx->a.work_fd >= 0);
	*state = fx;
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* Nothing a step started is still running: its orphans (ours, as the
 * subreaper) may still be dying from the group kill, so reap them for up
 * to 3 s; a process that escaped the kill (sleep 30) would still be here. */
static void assert_no_children(void)
{
	pid_t pid = 0;

	for (int i = 0; i < 300; i++) {
		pid = waitpid(-1, NULL, WNOHANG);
		if (pid < 0)
			break;
		if (pid == 0)
			usleep(10000);
	}
	assert_int_equal(pid, -1);
	assert_int_equal(errno, ECHILD);
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	assert_no_children();
	al_step_release(&fx->step);
	al_step_result_release(&fx->res);
	free(fx->got[0].data);
	free(fx->got[1].data);
	close(fx->a.sig_fd);
	close(fx->a.work_fd);
	nftw(fx->work, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	free(fx);
	return 0;
}

static int collect(void *opaque, int fd, const void *data, size_t len)
{
	struct fx *fx = opaque;
	struct al_blob *b = &fx->got[fd == 2];
	uint8_t *p;

	assert_true(fd == 1 || fd == 2);
	p = realloc(b->data, b->len + len + 1);
	if (!p)
		return -ENOMEM;
	memcpy(p + b->len, data, len);
	b->data = p;
	b->len += len;
	p[b->len] = 0;
	fx->chunks++;
	return 0;
}

/* Run `sh` as the step (timeout_ms 0: the agent's default). */
static void run_sh(struct fx *fx, const char *sh, uint32_t timeout_ms)
{
	fx->step.sh = strdup(sh);
	assert_non_null(fx->step.sh);
	fx->step.timeout_ms = timeout_ms;
	assert_int_equal(
	    al_exec_step(&fx->a, &fx->step, &fx->lim, collect, fx, &fx->res),
	    0);
}

static void assert_blob(const struct al_blob *b, const char *s)
{
	assert_int_equal(b->len, strlen(s));
	assert_memory_equal(b->data, s, b->len);
}

static void test_streams(void **state)
{
	struct fx *fx = *state;

	run_sh(fx, "printf out; printf err >&2", 0);
	assert_int_equal(fx->res.status, AL_OK);
	assert_true(fx->res.has_exit_code);
	assert_int_equal(fx->res.exit_code, 0);
	assert_blob(&fx->res.stdout_, "out");
	assert_blob(&fx->res.stderr_, "err");
	/* the callback saw the same bytes, tagged with their fd */
	assert_blob(&fx->got[0], "out");
	assert_blob(&fx->got[1], "err");
	assert_true(fx->chunks >= 2);
	assert_int_equal(fx->a.step_no, 1);
}

static void test_exit_code(void **state)
{
	struct fx *fx = *state;

	run_sh(fx, "exit 3", 0);
	assert_int_equal(fx->res.status, AL_RE);
	assert_int_equal(fx->res.exit_code, 3);
}

static void test_signal(void **state)
{
	struct fx *fx = *state;

	run_sh(fx, "kill -TERM $$", 0);
	assert_int_equal(fx->res.status, AL_SG);
	assert_int_equal(fx->res.signal, 15);
	assert_false(fx->res.has_exit_code);
}

/* The deadline kills the whole process group, background children too. */
static void test_timeout(void **state)
{
	struct fx *fx = *state;

	run_sh(fx, "sleep 30 & sleep 30", 300);
	assert_int_equal(fx->res.status, AL_TO);
	assert_true(fx->res.wall_ms >= 300);
	assert_true(fx->res.wall_ms < 10000);
}

static void test_output_cap(void **state)
{
	struct fx *fx = *state;

	fx->lim.output_bytes = 10;
	run_sh(fx, "head -c 100000 /dev/zero | tr '\\0' x", 0);
	assert_int_equal(fx->res.status, AL_OL);
	assert_true(fx->res.stdout_truncated);
	assert_blob(&fx->res.stdout_, "xxxxxxxxxx");
}

/* A cwd that does not exist is the job's failure, reported like a shell. */
static void test_missing_cwd(void **state)
{
	struct fx *fx = *state;

	fx->step.cwd = strdup("nope");
	run_sh(fx, "true", 0);
	assert_int_equal(fx->res.status, AL_RE);
	assert_int_equal(fx->res.exit_code, 127);
	assert_non_null(strstr((const char *)fx->res.stderr_.data, "nope"));
}

/* A cgroup root we cannot use is ours: XX with the reason, nothing run. */
static void test_bad_cgroup_root_is_xx(void **state)
{
	struct fx *fx = *state;

	fx->cfg.cgroup_root = "/nonexistent/airlock";
	run_sh(fx, "echo never", 0);
	assert_int_equal(fx->res.status, AL_XX);
	assert_non_null(fx->res.error);
	assert_non_null(strstr(fx->res.error, "cgroup create"));
	assert_int_equal(fx->got[0].len, 0);
}

/* al_agent_reap: SIGCHLD arrives on the signalfd; the wanted child's
 * status comes back once, and only once. */
static void test_reap(void **state)
{
	struct fx *fx = *state;
	struct pollfd p = {.fd = fx->a.sig_fd, .events = POLLIN};
	struct rusage ru;
	int st = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(7);
	assert_int_equal(poll(&p, 1, 10000), 1);
	assert_true(al_agent_reap(&fx->a, pid, &st, &ru));
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 7);
	assert_false(al_agent_reap(&fx->a, pid, &st, &ru));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_streams, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_exit_code, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_signal, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_output_cap, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_missing_cwd, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_cgroup_root_is_xx, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_reap, setup, teardown),
	};

	/* as airlock-agent-host does: orphans of a step become ours, so the
	 * teardown's "no child left" covers them too */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
