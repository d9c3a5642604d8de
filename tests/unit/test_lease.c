/* test_lease.c: sandbox/lease.c on real files in a temp dir: a uid is
 * leased once while its fd is open, free again when closed, never 0, and
 * a symlink or FIFO planted where a lease file goes is skipped: never
 * followed, never blocked on. An alarm turns a blocked open into a
 * failure instead of a hang.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "lease.h"

static char dir[64];
static char uids[80];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/al-lease-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(uids, sizeof(uids), "%s/uids", dir);
	alarm(20);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	alarm(0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_once_each(void **state)
{
	uid_t a, b, c;
	int fa, fb, fc;

	(void)state;
	assert_int_equal(sb__lease_uid(uids, 5000, 2, &a, &fa), 0);
	assert_int_equal(sb__lease_uid(uids, 5000, 2, &b, &fb), 0);
	assert_true(a != b);
	assert_true(a >= 5000 && a < 5002 && b >= 5000 && b < 5002);
	/* all taken */
	assert_int_equal(sb__lease_uid(uids, 5000, 2, &c, &fc), -EAGAIN);
	close(fa);
	assert_int_equal(sb__lease_uid(uids, 5000, 2, &c, &fc), 0);
	assert_int_equal(c, a);
	close(fb);
	close(fc);
}

static void test_never_root(void **state)
{
	uid_t u;
	int fd;

	(void)state;
	assert_int_equal(sb__lease_uid(uids, 0, 10, &u, &fd), -EINVAL);
	assert_int_equal(sb__lease_uid(uids, 1, 0, &u, &fd), -EINVAL);
	assert_int_equal(sb__lease_uid(uids, 0xfffffff0u, 100, &u, &fd),
			 -EINVAL);
}

static void test_planted(void **state)
{
	char path[160], outside[96];
	struct stat st;
	uid_t u;
	int fd;

	(void)state;
	/* a private dir others cannot write is required */
	assert_int_equal(mkdir(uids, 0700), 0);
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	assert_int_equal(mkfifo(outside, 0600), 0);
	/* 7000: a symlink to a FIFO outside, 7001: a FIFO, 7002: a dir */
	snprintf(path, sizeof(path), "%s/7000", uids);
	assert_int_equal(symlink(outside, path), 0);
	snprintf(path, sizeof(path), "%s/7001", uids);
	assert_int_equal(mkfifo(path, 0600), 0);
	snprintf(path, sizeof(path), "%s/7002", uids);
	assert_int_equal(mkdir(path, 0700), 0);
	/* only 7003 is usable, wherever the random search starts */
	for (int i = 0; i < 8; i++) {
		assert_int_equal(sb__lease_uid(uids, 7000, 4, &u, &fd), 0);
		assert_int_equal(u, 7003);
		close(fd);
	}
	/* and none at all: -EAGAIN, not a hang or a followed link */
	assert_int_equal(sb__lease_uid(uids, 7000, 3, &u, &fd), -EAGAIN);
	snprintf(path, sizeof(path), "%s/7000", uids);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
}

static void test_open_dir_refused(void **state)
{
	uid_t u;
	int fd;

	(void)state;
	assert_int_equal(mkdir(uids, 0777), 0);
	assert_int_equal(chmod(uids, 0777), 0);
	assert_int_equal(sb__lease_uid(uids, 8000, 4, &u, &fd), -EPERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_once_each, setup, teardown),
		cmocka_unit_test_setup_teardown(test_never_root, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_planted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_dir_refused, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
