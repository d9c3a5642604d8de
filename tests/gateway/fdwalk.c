/* fdwalk.c: walk ".." from every fd a jailed process holds, from its own
 * root, and say whether any leads out of it (docs/packages.md, "The
 * gateway as a second wall").
 *
 * usage: fdwalk PID
 *
 * Each fd of PID is copied here (pidfd_getfd), this process takes PID's
 * root as its own (chroot to /proc/PID/root: the same directory on the
 * same mount, so ".." stops where PID's stops), and from each copy it
 * opens ".." up to 64 times and "../../../../etc/passwd" and
 * "../../../../proc/1". An fd is inside when the walk ends at that root
 * and neither path opens. One line per fd; exit 0 when every fd is
 * inside, 1 when one leads out, 2 on a usage or system error. Root only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define FDS_MAX 4096
#define UP_MAX	64

struct held {
	int n;		/* the fd's number in PID */
	int fd;		/* its copy here */
	char what[256]; /* /proc/PID/fd/N's link, for the report */
};

/* Copy every fd of pid; the number copied, or -1. */
static int copy_fds(int pid, struct held *h, size_t max)
{
	char path[64];
	struct dirent *e;
	int pidfd, n = 0;
	DIR *d;

	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (pidfd < 0 || !d)
		return -1;
	while ((e = readdir(d)) && (size_t)n < max) {
		char link[320];
		ssize_t l;

		if (e->d_name[0] == '.')
			continue;
		h[n].n = atoi(e->d_name);
		h[n].fd = (int)syscall(SYS_pidfd_getfd, pidfd, h[n].n, 0);
		if (h[n].fd < 0)
			continue; /* closed meanwhile */
		snprintf(link, sizeof(link), "%s/%s", path, e->d_name);
		l = readlink(link, h[n].what, sizeof(h[n].what) - 1);
		h[n].what[l > 0 ? l : 0] = '\0';
		n++;
	}
	closedir(d);
	close(pidfd);
	return n;
}

/* Walk ".." from fd: 1 when the walk ends at root (inside), 0 when it
 * ends elsewhere, 2 when fd is no directory (nothing to walk). */
static int walk_up(int fd, const struct stat *root, struct stat *ret_end)
{
	int cur = dup(fd), up;

	if (fstat(cur, ret_end) < 0 || !S_ISDIR(ret_end->st_mode)) {
		close(cur);
		return 2;
	}
	for (int i = 0; i < UP_MAX; i++) {
		up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0)
			break;
		close(cur);
		cur = up;
	}
	fstat(cur, ret_end);
	close(cur);
	return ret_end->st_dev == root->st_dev &&
	       ret_end->st_ino == root->st_ino;
}

/* 1 when PATH opens from fd (a way out), else 0. */
static int opens(int fd, const char *path)
{
	int o = openat(fd, path, O_RDONLY | O_CLOEXEC);

	if (o < 0)
		return 0;
	close(o);
	return 1;
}

/* In a child (its root changed, and _exit: a sanitizer's exit check
 * would look for /proc there): every fd walked. 0 inside, 1 out, 2. */
static int walk_all(int pid, struct held *h, int n)
{
	struct stat root, end;
	char path[64];
	int out = 0;

	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	if (chdir(path) < 0 || chroot(".") < 0 || chdir("/") < 0 ||
	    stat("/", &root) < 0) {
		fprintf(stderr, "fdwalk: %d: %s\n", pid, strerror(errno));
		return 2;
	}
	for (int i = 0; i < n; i++) {
		int in = walk_up(h[i].fd, &root, &end);
		int pw = opens(h[i].fd, "../../../../etc/passwd");
		int p1 = opens(h[i].fd, "../../../../proc/1");

		printf("fd %d (%s): %s%s%s\n", h[i].n, h[i].what,
		       in == 2 ? "no directory"
		       : in    ? "inside"
			       : "leads out",
		       pw ? ", opens ../../../../etc/passwd" : "",
		       p1 ? ", opens ../../../../proc/1" : "");
		if (in == 0 || pw || p1)
			out = 1;
	}
	printf("%d fds, %s\n", n, out ? "a way out" : "every one inside");
	return out;
}

int main(int argc, char **argv)
{
	static struct held h[FDS_MAX];
	int n, pid, st;
	pid_t child;

	if (argc != 2 || (pid = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: fdwalk PID\n");
		return 2;
	}
	n = copy_fds(pid, h, FDS_MAX);
	if (n < 0) {
		fprintf(stderr, "fdwalk: %d: %s\n", pid, strerror(errno));
		return 2;
	}
	fflush(NULL);
	child = fork();
	if (child == 0) {
		st = walk_all(pid, h, n);
		fflush(NULL);
		_exit(st);
	}
	if (child < 0 || waitpid(child, &st, 0) < 0 || !WIFEXITED(st))
		return 2;
	return WEXITSTATUS(st);
}
