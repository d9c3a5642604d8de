/* test_util.c: sandbox/util.c's safe file calls on real files: what a VMM
 * could plant (a symlink, a FIFO, a dir, someone else's file) where root
 * opens a file is refused, never followed and never blocked on; the run
 * dir check; removing a tree a VMM wrote without following its links.
 * An alarm turns a blocked open into a failure instead of a hang.
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

#include "util.h"

static char dir[64];
static int dfd = -1;

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void at(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", dir, name);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/al-util-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	dfd = sb__open_dir(dir);
	alarm(20); /* a blocked open fails the test, never hangs it */
	return dfd < 0;
}

static int teardown(void **state)
{
	int pfd = sb__open_dir("/tmp");

	(void)state;
	alarm(0);
	close(dfd);
	sb__remove_at(pfd, dir + 5, 4);
	close(pfd);
	return 0;
}

/* The planted kinds, for reading and for creating. */
static void test_open_in_planted(void **state)
{
	char p[128], target[128];
	struct stat st;
	int fd;

	(void)state;
	at(target, sizeof(target), "secret");
	put(target, "keep me");
	at(p, sizeof(p), "file");
	put(p, "x");
	fd = sb__open_in(dfd, "file", O_RDONLY, 0, geteuid());
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	/* a symlink: not followed, for reading or creating */
	assert_int_equal(symlinkat(target, dfd, "link"), 0);
	assert_int_equal(sb__open_in(dfd, "link", O_RDONLY, 0, geteuid()),
			 -ELOOP);
	assert_int_equal(sb__open_in(dfd, "link", O_WRONLY | O_CREAT | O_TRUNC,
				     0600, geteuid()),
			 -EEXIST);
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_size, 7); /* not truncated through it */
	/* a FIFO with no writer (or reader): an error at once */
	assert_int_equal(mkfifoat(dfd, "fifo", 0666), 0);
	assert_int_equal(sb__open_in(dfd, "fifo", O_RDONLY, 0, geteuid()),
			 -EINVAL);
	assert_int_equal(sb__open_in(dfd, "fifo", O_WRONLY, 0, geteuid()),
			 -ENXIO);
	assert_int_equal(
	    sb__open_in(dfd, "fifo", O_WRONLY | O_CREAT, 0600, geteuid()),
	    -EEXIST);
	/* a dir, another owner, a path, an existing file to create */
	assert_int_equal(mkdirat(dfd, "sub", 0755), 0);
	assert_int_equal(sb__open_in(dfd, "sub", O_RDONLY, 0, geteuid()),
			 -EINVAL);
	assert_int_equal(sb__open_in(dfd, "file", O_RDONLY, 0, geteuid() + 1),
			 -EPERM);
	assert_int_equal(sb__open_in(dfd, "sub/x", O_RDONLY, 0, (uid_t)-1),
			 -EINVAL);
	assert_int_equal(sb__open_in(dfd, "..", O_RDONLY, 0, (uid_t)-1),
			 -EINVAL);
	assert_int_equal(
	    sb__open_in(dfd, "file", O_WRONLY | O_CREAT, 0600, geteuid()),
	    -EEXIST);
	/* and a new file is created with the mode asked for */
	fd = sb__open_in(dfd, "new", O_WRONLY | O_CREAT, 0640, geteuid());
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640 & ~umask(022));
	close(fd);
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	return st.st_mode & 07777;
}

static void test_private_dir(void **state)
{
	char p[128], q[128];

	(void)state;
	umask(022);
	at(p, sizeof(p), "run");
	assert_int_equal(sb__private_dir(p, 0700), 0);
	assert_int_equal(mode_of(p), 0700);
	/* readable by others: tightened; 0711 for a VMM of another user */
	assert_int_equal(chmod(p, 0755), 0);
	assert_int_equal(sb__private_dir(p, 0700), 0);
	assert_int_equal(mode_of(p), 0700);
	assert_int_equal(sb__private_dir(p, 0711), 0);
	assert_int_equal(mode_of(p), 0711);
	assert_int_equal(sb__private_dir(p, 0700), 0);
	assert_int_equal(mode_of(p), 0700);
	/* writable by others: refused, left as it is */
	assert_int_equal(chmod(p, 0777), 0);
	assert_int_equal(sb__private_dir(p, 0700), -EPERM);
	assert_int_equal(mode_of(p), 0777);
	assert_int_equal(chmod(p, 0770), 0);
	assert_int_equal(sb__private_dir(p, 0700), -EPERM);
	/* a symlink to a dir of ours: refused */
	at(q, sizeof(q), "runlink");
	assert_int_equal(chmod(p, 0700), 0);
	assert_int_equal(symlink(p, q), 0);
	assert_int_equal(sb__private_dir(q, 0700), -EPERM);
	/* someone else's (root only can make one) */
	if (geteuid() == 0) {
		assert_int_equal(chown(p, 65534, 65534), 0);
		assert_int_equal(sb__private_dir(p, 0700), -EPERM);
	}
}

/* A tree a VMM wrote: links to outside are removed, never followed. */
static void test_remove_at(void **state)
{
	char p[128], out[128];
	int t;

	(void)state;
	at(out, sizeof(out), "outside");
	assert_int_equal(mkdir(out, 0755), 0);
	at(p, sizeof(p), "outside/keep");
	put(p, "keep");
	assert_int_equal(mkdirat(dfd, "tree", 0755), 0);
	t = openat(dfd, "tree", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(t >= 0);
	assert_int_equal(symlinkat(out, t, "dirlink"), 0);
	assert_int_equal(symlinkat(p, t, "filelink"), 0);
	assert_int_equal(mkfifoat(t, "fifo", 0600), 0);
	assert_int_equal(mkdirat(t, "a", 0700), 0);
	assert_int_equal(mkdirat(t, "a/b", 0700), 0);
	assert_int_equal(symlinkat(out, t, "a/b/up"), 0);
	close(t);
	assert_int_equal(sb__remove_at(dfd, "tree", 8), 0);
	assert_int_equal(faccessat(dfd, "tree", F_OK, AT_SYMLINK_NOFOLLOW),
			 -1);
	assert_int_equal(access(p, F_OK), 0);
	/* too deep: refused, not a stack overflow */
	assert_int_equal(mkdirat(dfd, "deep", 0755), 0);
	assert_int_equal(mkdirat(dfd, "deep/1", 0755), 0);
	assert_int_equal(mkdirat(dfd, "deep/1/2", 0755), 0);
	assert_true(sb__remove_at(dfd, "deep", 1) < 0);
	assert_int_equal(sb__remove_at(dfd, "deep", 3), 0);
	/* a missing one is gone already */
	assert_int_equal(sb__remove_at(dfd, "nothing", 2), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_open_in_planted, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_private_dir, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_remove_at, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
