/* files.c: write a job's files into the work dir and read collected ones.
 *
 * We run as root and the work dir belongs to the job, which may have left
 * symlinks anywhere in it. Writes therefore walk the path one component at
 * a time with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), and reads
 * resolve beneath the work dir (relative symlinks inside it are fine,
 * nothing outside is reachable) and accept regular files only. Writes
 * open non-blocking and replace regular files only: whatever a job or a
 * snapshot's setup left in /work (a FIFO with no reader) cannot hang the
 * agent while it places the next job's files.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"

#define FILES_OVERHEAD (1u << 20) /* frame room kept for paths and headers */

static int open_beneath(int dir, const char *path, int flags, mode_t mode,
			uint64_t resolve)
{
	struct open_how how = {
	    .flags = (uint64_t)flags | O_CLOEXEC,
	    .mode = flags & O_CREAT ? mode : 0,
	    .resolve = resolve,
	};
	long fd = syscall(SYS_openat2, dir, path, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

static void give_to_job(const struct al_agent *a, int fd)
{
	if (a->cfg->drop_ids && fchown(fd, a->cfg->uid, a->cfg->gid) < 0)
		al_agent_log("fchown: %s", strerror(errno));
}

/* A checker's path (AL_CHECKER_PREFIX): it goes to AL_CHECKER_AREA and
 * stays root's. */
static bool checker_path(const char *path)
{
	return strncmp(path, AL_CHECKER_PREFIX, strlen(AL_CHECKER_PREFIX)) ==
	       0;
}

/* Open (creating) the parent directory of `path` beneath the work dir (a
 * checker's: beneath AL_CHECKER_AREA); *ret_name points at the last
 * component. */
static int open_parent(const struct al_agent *a, char *path, char **ret_name)
{
	const uint64_t res = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
	bool checker = checker_path(path);
	char *comp = path, *slash;
	int dir = checker ? open(AL_CHECKER_AREA,
				 O_PATH | O_DIRECTORY | O_CLOEXEC)
			  : dup(a->work_fd),
	    next;

	if (dir < 0)
		return -errno;
	while ((slash = strchr(comp, '/'))) {
		*slash = '\0';
		if (mkdirat(dir, comp, 0755) == 0) {
			next = open_beneath(dir, comp, O_RDONLY | O_DIRECTORY,
					    0, res);
			if (next >= 0 && !checker)
				give_to_job(a, next);
		} else if (errno == EEXIST) {
			next = open_beneath(dir, comp, O_PATH | O_DIRECTORY, 0,
					    res);
		} else {
			next = -errno;
		}
		*slash = '/';
		close(dir);
		if (next < 0)
			return next;
		dir = next;
		comp = slash + 1;
	}
	*ret_name = comp;
	return dir;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Write one file. Anything but a regular file at its path (a FIFO, a
 * directory, a symlink, a device) is -EEXIST: never opened for writing
 * in a way that could block or follow it. */
static int put_one(const struct al_agent *a, const struct al_file *f)
{
	char *path = strdup(f->path), *name = NULL;
	struct stat st;
	int dir = -1, fd = -1, r;

	if (!path)
		return -ENOMEM;
	r = dir = open_parent(a, path, &name);
	if (r < 0)
		goto out;
	/* O_NONBLOCK: a FIFO the job (or a snapshot's setup) left in the
	 * way must not block us (no reader: ENXIO; a reader: refused below);
	 * no O_TRUNC before we know it is a regular file */
	r = fd = open_beneath(dir, name,
			      O_WRONLY | O_CREAT | O_NONBLOCK | O_NOFOLLOW |
				  O_NOCTTY,
			      0644, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
	if (r == -ENXIO || r == -ELOOP || r == -EISDIR)
		r = -EEXIST;
	if (r < 0)
		goto out;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		r = -EEXIST;
		goto out;
	}
	if (ftruncate(fd, 0) < 0) {
		r = -errno;
		goto out;
	}
	if (!checker_path(f->path))
		give_to_job(a, fd);
	r = write_all(fd, f->content.data, f->content.len);
out:
	if (fd >= 0)
		close(fd);
	if (dir >= 0)
		close(dir);
	free(path);
	return r;
}

/* Remove dir's entries, depth levels deep at most, then dir itself from
 * parent. Root's tree (AL_CHECKER_AREA): no job can race it. */
static void remove_tree(int parent, const char *name, int depth)
{
	int fd = openat(parent, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		unlinkat(parent, name, 0);
		return;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (e->d_type == DT_DIR && depth > 0)
			remove_tree(dirfd(d), e->d_name, depth - 1);
		else
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
	unlinkat(parent, name, AT_REMOVEDIR);
}

void al_files_wipe_checkers(void)
{
	int area = open(AL_CHECKER_AREA, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = area >= 0 ? fdopendir(area) : NULL;
	struct dirent *e;

	if (!d) {
		if (area >= 0)
			close(area);
		return;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			remove_tree(dirfd(d), e->d_name, 16);
	closedir(d);
}

int al_files_put(struct al_agent *a, const struct al_msg_files *f, char *err,
		 size_t err_size)
{
	int r;

	/* the work dir as init.c made it: a step that chmod'ed it 000 must not
	 * keep the files placed now (a checker's, say) from their reader. Its
	 * parent is the read-only root's: the path names our directory. */
	if (chmod(a->cfg->work_dir, 0755) < 0)
		al_agent_log("chmod work dir: %s", strerror(errno));
	for (size_t i = 0; i < f->n_files; i++) {
		r = put_one(a, &f->files[i]);
		if (r < 0) {
			/* the path came from the host: fine to echo */
			snprintf(err, err_size, "put %s: %s", f->files[i].path,
				 r == -EEXIST ? "not a regular file (a FIFO, "
						"directory or link is there)"
					      : strerror(-r));
			return r;
		}
	}
	return 0;
}

/* Read one regular file of at most `budget` bytes; -ENOENT for anything
 * that should be reported missing. */
static int get_one(const struct al_agent *a, const char *path, size_t budget,
		   struct al_blob *ret)
{
	struct stat st;
	size_t got = 0;
	ssize_t n;
	int fd, r = 0;

	fd = open_beneath(a->work_fd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0,
			  RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
	if (fd < 0)
		return fd == -ENOMEM ? fd : -ENOENT;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > budget) {
		r = -ENOENT;
		goto out;
	}
	ret->data = malloc((size_t)st.st_size + 1);
	if (!ret->data) {
		r = -ENOMEM;
		goto out;
	}
	while (got < (size_t)st.st_size) {
		n = read(fd, ret->data + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* shrank under us: send what is there */
		got += (size_t)n;
	}
	ret->data[got] = '\0';
	ret->len = got;
out:
	close(fd);
	return r;
}

int al_files_get(struct al_agent *a, const struct al_msg_get_files *g,
		 struct al_msg_files *ret)
{
	size_t budget = AL_FRAME_MAX - FILES_OVERHEAD;
	size_t n = g->n_paths ? g->n_paths : 1;
	struct al_msg_files f = {0};
	int r = -ENOMEM;

	if (g->max_bytes && g->max_bytes < budget)
		budget = (size_t)g->max_bytes;
	f.files = calloc(n, sizeof(*f.files));
	f.missing = calloc(n, sizeof(*f.missing));
	if (!f.files || !f.missing)
		goto out;
	for (size_t i = 0; i < g->n_paths; i++) {
		struct al_file *file = &f.files[f.n_files];

		r = get_one(a, g->paths[i], budget, &file->content);
		if (r == -ENOENT) {
			if (!(f.missing[f.n_missing++] = strdup(g->paths[i])))
				goto out;
			continue;
		}
		if (r < 0 || !(file->path = strdup(g->paths[i])))
			goto out;
		f.n_files++;
		budget -= file->content.len;
	}
	*ret = f;
	return 0;
out:
	for (size_t i = 0; i <= f.n_files && f.files; i++) {
		free(f.files[i].path);
		free(f.files[i].content.data);
	}
	for (size_t i = 0; i < f.n_missing; i++)
		free(f.missing[i]);
	free(f.files);
	free(f.missing);
	return r < 0 ? r : -ENOMEM;
}
