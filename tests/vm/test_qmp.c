/* test_qmp.c: the QMP client against a real QEMU (-M none: no guest, starts
 * in milliseconds) and against fake servers that misbehave. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "qmp.h"

struct fixture {
	char dir[64];
	char sock[128];
	pid_t pid;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	strcpy(f->dir, "/tmp/al-qmp-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->sock, sizeof(f->sock), "%s/qmp.sock", f->dir);
	f->pid = -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (f->pid > 0) {
		kill(f->pid, SIGKILL);
		waitpid(f->pid, NULL, 0);
	}
	unlink(f->sock);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void start_qemu(struct fixture *f)
{
	char qmp[160];

	snprintf(qmp, sizeof(qmp), "unix:%s,server=on,wait=off", f->sock);
	f->pid = fork();
	assert_true(f->pid >= 0);
	if (f->pid == 0) {
		execlp("qemu-system-x86_64", "qemu-system-x86_64", "-M", "none",
		       "-nodefaults", "-no-user-config", "-display", "none",
		       "-qmp", qmp, (char *)NULL);
		_exit(127);
	}
}

static void test_real_qemu(void **state)
{
	struct fixture *f = *state;
	json_t *ret = NULL;
	struct qmp q;
	char err[256];
	int fds[2];

	start_qemu(f);
	assert_int_equal(sb__qmp_connect(&q, f->sock, 10000), 0);
	assert_int_equal(sb__qmp_execute(&q, "query-status", NULL, 5000, &ret,
					 err, sizeof(err)),
			 0);
	assert_non_null(json_object_get(ret, "status"));
	json_decref(ret);
	/* an error reply carries QEMU's message */
	assert_int_equal(sb__qmp_execute(&q, "no-such-command", NULL, 5000,
					 NULL, err, sizeof(err)),
			 -EREMOTEIO);
	assert_non_null(strstr(err, "no-such-command"));
	/* pass an fd with getfd, then close it by name */
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	assert_int_equal(sb__qmp_execute_fd(&q, "getfd",
					    json_pack("{s:s}", "fdname", "p"),
					    fds[0], 5000, err, sizeof(err)),
			 0);
	assert_int_equal(sb__qmp_execute(&q, "closefd",
					 json_pack("{s:s}", "fdname", "p"),
					 5000, NULL, err, sizeof(err)),
			 0);
	close(fds[0]);
	close(fds[1]);
	/* quit: the SHUTDOWN event arrives, then the socket closes */
	sb__qmp_execute(&q, "quit", NULL, 5000, NULL, NULL, 0);
	assert_int_equal(sb__qmp_wait_event(&q, "SHUTDOWN", 5000, NULL), 0);
	sb__qmp_close(&q);
	assert_int_equal(waitpid(f->pid, NULL, 0), f->pid);
	f->pid = -1;
}

/* A fake QMP server: accepts one client and writes `greeting` (may be
 * NULL: silence), then holds the connection until killed. */
static void fake_server(struct fixture *f, const char *greeting, size_t len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int s = socket(AF_UNIX, SOCK_STREAM, 0);

	strcpy(sa.sun_path, f->sock);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s, 1), 0);
	f->pid = fork();
	assert_true(f->pid >= 0);
	if (f->pid == 0) {
		int c = accept(s, NULL, NULL);

		while (greeting && len) {
			ssize_t n = write(c, greeting, len);

			if (n <= 0)
				break;
			len -= (size_t)n;
		}
		pause();
		_exit(0);
	}
	close(s);
}

static void test_silent_server_times_out(void **state)
{
	struct fixture *f = *state;
	struct qmp q;

	fake_server(f, NULL, 0);
	assert_int_equal(sb__qmp_connect(&q, f->sock, 300), -ETIMEDOUT);
}

static void test_overlong_line(void **state)
{
	struct fixture *f = *state;
	size_t n = QMP_LINE_MAX + 10;
	char *junk = malloc(n);
	struct qmp q;

	memset(junk, 'x', n);
	fake_server(f, junk, n);
	assert_int_equal(sb__qmp_connect(&q, f->sock, 5000), -EPROTO);
	free(junk);
}

static void test_not_qmp(void **state)
{
	struct fixture *f = *state;
	const char *g = "{\"hello\": 1}\n";
	struct qmp q;

	fake_server(f, g, strlen(g));
	assert_int_equal(sb__qmp_connect(&q, f->sock, 5000), -EPROTO);
}

static void test_no_socket(void **state)
{
	struct fixture *f = *state;
	struct qmp q;

	assert_int_equal(sb__qmp_connect(&q, f->sock, 100), -ETIMEDOUT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_real_qemu, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_silent_server_times_out,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlong_line, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_not_qmp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_socket, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
