/* test_gw_jail.c: the gateway's seccomp filter (gateway/jail.h), the very
 * one airlock-gateway installs: in a child each, what serving needs runs
 * (read-only opens, reads, a thread) and what a compromised gateway would
 * want is killed with SIGSYS (socket, connect's precondition; a write
 * open; fork; execve; kill; mount). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "jail.h"

/* Run fn in a child under the filter; its wait status. */
static int under_filter(void (*fn)(void))
{
	pid_t pid = fork();
	int st = 0;

	assert_true(pid >= 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    gw_seccomp_install() < 0)
			_exit(3);
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

static void *thread_fn(void *arg)
{
	return arg;
}

static void serving(void)
{
	char buf[16];
	pthread_t t;
	void *ret = NULL;
	int fd = openat(AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, buf, sizeof(buf)) != 0 || close(fd) < 0)
		_exit(4);
	if (pthread_create(&t, NULL, thread_fn, buf) != 0 ||
	    pthread_join(t, &ret) != 0 || ret != buf)
		_exit(5);
	if (write(2, "", 0) < 0)
		_exit(6);
}

static void do_socket(void)
{
	(void)socket(AF_INET, SOCK_STREAM, 0);
}

static void do_write_open(void)
{
	(void)openat(AT_FDCWD, "/dev/null", O_WRONLY | O_CLOEXEC);
}

static void do_fork(void)
{
	(void)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
}

static void do_exec(void)
{
	char *argv[] = {"/bin/true", NULL};

	execve(argv[0], argv, NULL);
}

static void do_kill(void)
{
	(void)kill(1, 0);
}

static void do_mount(void)
{
	(void)mount("none", "/", "tmpfs", 0, NULL);
}

static void test_allowed(void **state)
{
	int st;

	(void)state;
	st = under_filter(serving);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_forbidden(void **state)
{
	void (*const fns[])(void) = {do_socket, do_write_open, do_fork,
				     do_exec,	do_kill,       do_mount};

	(void)state;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		int st = under_filter(fns[i]);

		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSYS)
			fail_msg("case %zu: status %#x, want SIGSYS", i, st);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_allowed),
	    cmocka_unit_test(test_forbidden),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
