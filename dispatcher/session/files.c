/* files.c: whole directories in and out of a session, as ustar streams.
 *
 * Both ways go through execs in the session (so the guest's own rules
 * confine them, as `put`/`get` of one file do), in chunks that fit an
 * exec body and the stored output (sessions.output_max_bytes):
 *
 *   upload:   the tar is checked here first (results/tar.c: paths, link
 *             targets, entry types, caps); a hostile one is refused before
 *             a byte reaches the VM. Then it is appended to a temporary
 *             file in the work dir in 4 MiB stdin chunks and extracted by
 *             the guest's tar (no owners, no permissions beyond umask).
 *   download: the guest's tar writes a ustar file of the directory, read
 *             back through stdout in chunks; the bytes are the guest's, so
 *             they are checked with the same decoder before anything is
 *             written on the host, and al_sess_untar() writes them under a
 *             directory it opened, one component at a time with
 *             O_NOFOLLOW, creating every file O_EXCL: nothing a guest
 *             names is followed on the host.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "results.h"
#include "sess_internal.h"
#include "sessions.h"

#define CHUNK	   (4u << 20)
#define TMP_PREFIX ".airlock-tar-"

static bool remote_ok(const char *p)
{
	return !strcmp(p, ".") || al_relpath_valid(p, strlen(p));
}

static void tmp_name(char *out, size_t size)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(out, size, TMP_PREFIX "%lx%05lx", (unsigned long)getpid(),
		 (unsigned long)(ts.tv_nsec & 0xfffff));
}

/* Run one exec to its end: `sh` script with $1.. = args, optional stdin;
 * stdout (at most out_max bytes) into *out when out != NULL. 0 when it
 * exited 0; else -EIO with c->err saying why (its stderr's tail). */
static int run(struct alq_client *c, const char *id, const char *what,
	       const char *script, const char *a1, const char *a2,
	       const char *a3, const uint8_t *in, size_t in_len, char **out,
	       size_t *out_len, size_t out_max)
{
	json_t *body, *cmd, *x = NULL;
	char *text = NULL, *xs = NULL;
	uint64_t n, off = 0;
	size_t got = 0;
	int r;

	cmd = json_pack("[s,s,s,s]", "sh", "-c", script, "airlock");
	body = json_object();
	if (!cmd || !body)
		goto oom;
	if (a1)
		json_array_append_new(cmd, json_string(a1));
	if (a2)
		json_array_append_new(cmd, json_string(a2));
	if (a3)
		json_array_append_new(cmd, json_string(a3));
	json_object_set_new(body, "cmd", cmd);
	cmd = NULL;
	/* as long as the policy lets a step run (cut to its maximum) */
	json_object_set_new(body, "timeout_ms",
			    json_integer(AL_TIMEOUT_MS_MAX));
	if (in &&
	    json_object_set_new(
		body, "stdin", al_sess_blob_json((const char *)in, in_len)) < 0)
		goto oom;
	text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	body = NULL;
	if (!text)
		goto oom;
	r = al_sess_exec_start(c, id, text, 0, &n);
	free(text);
	if (r < 0)
		return r;
	if (out)
		*out = NULL;
	for (unsigned naps = 0;; naps++) {
		bool done;

		r = al_sess_exec_get(c, id, n, &xs);
		if (r < 0)
			goto out;
		x = json_loads(xs, JSON_ALLOW_NUL, NULL);
		free(xs);
		xs = NULL;
		if (!x) {
			r = sess__fail(c, -EBADMSG, "%s: a bad exec record", what);
			goto out;
		}
		done = !strcmp(json_string_value(json_object_get(x, "state"))
				   ?: "",
			       "done");
		if (done)
			break;
		json_decref(x);
		x = NULL;
		struct timespec ts = {0, (naps < 50 ? 5 : 20) * 1000000L};

		nanosleep(&ts, NULL);
	}
	if (json_integer_value(json_object_get(x, "exit_code")) != 0 ||
	    strcmp(json_string_value(json_object_get(x, "status")) ?: "",
		   "OK")) {
		json_t *e = json_object_get(x, "stderr");
		const char *s = json_string_value(e);

		r = sess__fail(c, -EIO,
			 "%s: the guest's command failed (%s %lld)%s%.160s",
			 what,
			 json_string_value(json_object_get(x, "status")) ?: "?",
			 json_integer_value(json_object_get(x, "exit_code")),
			 s && *s ? ": " : "", s ? s : "");
		goto out;
	}
	if (out) {
		uint64_t total = (uint64_t)json_integer_value(
		    json_object_get(x, "stdout_bytes"));

		if (total > out_max) {
			r = sess__fail(c, -E2BIG, "%s: %llu bytes, over %zu", what,
				 (unsigned long long)total, out_max);
			goto out;
		}
		*out = malloc(total + 1);
		if (!*out)
			goto oom;
		while (off < total) {
			char *p = NULL;
			size_t l = 0;

			r = al_sess_exec_read(c, id, n, 1, off,
					      (size_t)(total - off), &p, &l);
			if (r < 0)
				goto out;
			if (l == 0) {
				free(p);
				r = sess__fail(c, -E2BIG,
					 "%s: only %llu of %llu bytes stored "
					 "(sessions.output_max_bytes)",
					 what, (unsigned long long)off,
					 (unsigned long long)total);
				goto out;
			}
			memcpy(*out + off, p, l);
			free(p);
			off += l;
		}
		got = (size_t)off;
		(*out)[got] = 0;
		*out_len = got;
	}
	r = 0;
out:
	json_decref(x);
	if (r < 0 && out) {
		free(*out);
		*out = NULL;
	}
	return r;
oom:
	json_decref(cmd);
	json_decref(body);
	return sess__fail(c, -ENOMEM, "%s: out of memory", what);
}

int al_sess_run(struct alq_client *c, const char *id, const char *what,
		const char *script, const char *a1, const char *a2,
		const char *a3, const uint8_t *in, size_t in_len, char **out,
		size_t *out_len, size_t out_max)
{
	return run(c, id, what, script, a1, a2, a3, in, in_len, out, out_len,
		   out_max);
}

int al_sess_put_tar(struct alq_client *c, const char *id, const char *remote,
		    const void *tar, size_t len, uint64_t max_bytes,
		    uint32_t max_files)
{
	char tmp[64], err[200];
	const uint8_t *p = tar;
	int r;

	if (!remote_ok(remote))
		return sess__fail(c, -EINVAL,
			    "put: %.80s: the directory must be . or a "
			    "relative path with no empty, . or .. part",
			    remote);
	if (al_tar_check(tar, len, max_bytes, max_files, err, sizeof(err)) < 0)
		return sess__fail(c, -EINVAL, "put: the tar is refused: %s", err);
	tmp_name(tmp, sizeof(tmp));
	/* first chunk: also make the directory; an empty tar is one exec */
	for (size_t off = 0; off < len || off == 0;) {
		size_t n = len - off > CHUNK ? CHUNK : len - off;

		r = run(c, id, "put",
			off == 0 ? "mkdir -p -- \"$1\" && cat > \"$2\""
				 : "cat >> \"$2\"",
			remote, tmp, NULL, p + off, n, NULL, NULL, 0);
		if (r < 0)
			goto clean;
		off += n;
		if (n == 0)
			break;
	}
	r = run(c, id, "put",
		"tar -x --no-same-owner --no-same-permissions -f \"$2\" -C "
		"\"$1\"; r=$?; rm -f -- \"$2\"; exit $r",
		remote, tmp, NULL, NULL, 0, NULL, NULL, 0);
	return r;
clean : {
	char keep[sizeof(c->err)];

	memcpy(keep, c->err, sizeof(keep));
	run(c, id, "put", "rm -f -- \"$1\"", tmp, NULL, NULL, NULL, 0, NULL,
	    NULL, 0);
	memcpy(c->err, keep, sizeof(keep));
}
	return r;
}

int al_sess_get_tar(struct alq_client *c, const char *id, const char *remote,
		    uint64_t max_bytes, uint32_t max_files, uint8_t **ret,
		    size_t *ret_len)
{
	char tmp[64], err[200], *s = NULL, *end;
	uint8_t *buf = NULL;
	unsigned long long total;
	/* the archive: contents + a header per entry, padding, the end */
	uint64_t cap = max_bytes + ((uint64_t)max_files + 2) * 1024 + 10240;
	size_t got = 0, l;
	int r;

	if (!remote_ok(remote))
		return sess__fail(c, -EINVAL,
			    "get: %.80s: the directory must be . or a "
			    "relative path with no empty, . or .. part",
			    remote);
	tmp_name(tmp, sizeof(tmp));
	r = run(
	    c, id, "get",
	    "tar -c --format=ustar --exclude=\"./$2\" -f \"$2\" -C \"$1\" . "
	    "&& wc -c < \"$2\" || { r=$?; rm -f -- \"$2\"; exit $r; }",
	    remote, tmp, NULL, NULL, 0, &s, &l, 64);
	if (r < 0)
		return r;
	total = strtoull(s, &end, 10);
	if (end == s || (*end && *end != '\n')) {
		free(s);
		r = sess__fail(c, -EBADMSG,
			 "get: the guest's tar size is not a number");
		goto clean;
	}
	free(s);
	if (total > cap) {
		r = sess__fail(c, -E2BIG,
			 "get: the tar is %llu bytes, over the cap (%llu bytes "
			 "of contents, %u entries)",
			 total, (unsigned long long)max_bytes, max_files);
		goto clean;
	}
	buf = malloc(total ? total : 1);
	if (!buf) {
		r = sess__fail(c, -ENOMEM, "get: out of memory");
		goto clean;
	}
	while (got < total) {
		char a[24], b[24];

		snprintf(a, sizeof(a), "%zu", got + 1);
		snprintf(b, sizeof(b), "%llu",
			 total - got > CHUNK
			     ? CHUNK
			     : (unsigned long long)(total - got));
		r = run(c, id, "get",
			"tail -c +\"$2\" -- \"$1\" | head -c \"$3\"", tmp, a, b,
			NULL, 0, &s, &l, CHUNK);
		if (r < 0)
			goto clean;
		if (l == 0 || l > total - got) {
			free(s);
			r = sess__fail(c, -EBADMSG, "get: the guest's tar changed");
			goto clean;
		}
		memcpy(buf + got, s, l);
		free(s);
		got += l;
	}
	r = run(c, id, "get", "rm -f -- \"$1\"", tmp, NULL, NULL, NULL, 0, NULL,
		NULL, 0);
	if (r < 0)
		goto out;
	if (al_tar_check(buf, got, max_bytes, max_files, err, sizeof(err)) <
	    0) {
		r = sess__fail(c, -EINVAL, "get: the guest's tar is refused: %s",
			 err);
		goto out;
	}
	*ret = buf;
	*ret_len = got;
	return 0;
clean : {
	char keep[sizeof(c->err)];

	memcpy(keep, c->err, sizeof(keep));
	run(c, id, "get", "rm -f -- \"$1\"", tmp, NULL, NULL, NULL, 0, NULL,
	    NULL, 0);
	memcpy(c->err, keep, sizeof(keep));
}
out:
	free(buf);
	return r;
}

/* --- the host side: a local directory to a tar and back ------------------- */

static int err_to(char *err, size_t errlen, int r, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int err_to(char *err, size_t errlen, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return r;
}

/* The directory holding `path` under root fd `root`, walked one component
 * at a time with O_NOFOLLOW (made when mkdirs); its fd, and the last
 * component in *leaf. -errno. */
static int parent_fd(int root, const char *path, bool mkdirs, const char **leaf)
{
	char part[AL_PATH_MAX + 1];
	const char *p = path, *slash;
	int fd = dup(root), nfd;

	if (fd < 0)
		return -errno;
	while ((slash = strchr(p, '/'))) {
		size_t n = (size_t)(slash - p);

		memcpy(part, p, n);
		part[n] = 0;
		if (mkdirs && mkdirat(fd, part, 0755) < 0 && errno != EEXIST) {
			nfd = -errno;
			close(fd);
			return nfd;
		}
		nfd = openat(fd, part,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (nfd < 0)
			return -errno;
		fd = nfd;
		p = slash + 1;
	}
	*leaf = p;
	return fd;
}

/* Files this extraction made (their inodes): a hard link may name only
 * one of them, never a file that was in the directory before (a guest's
 * link `x` to the host's `.env` would hand .env to the next `put`). */
struct made {
	ino_t *ino;
	size_t n, cap;
};

static bool made_has(const struct made *m, int dfd, const char *leaf)
{
	struct stat st;

	if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode))
		return false;
	for (size_t i = 0; i < m->n; i++)
		if (m->ino[i] == st.st_ino)
			return true;
	return false;
}

static void made_add(struct made *m, int fd)
{
	struct stat st;

	if (m->n < m->cap && fstat(fd, &st) == 0)
		m->ino[m->n++] = st.st_ino;
}

int al_sess_untar(const char *dir, const void *tar, size_t len,
		  uint64_t max_bytes, uint32_t max_files, char *err,
		  size_t errlen)
{
	struct made made = {.cap = max_files};
	struct al_tar t;
	struct al_tar_entry e;
	int root, r;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return err_to(err, errlen, -errno, "%s: cannot make it: %s",
			      dir, strerror(errno));
	root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return err_to(err, errlen, -errno, "%s: %s", dir,
			      strerror(errno));
	/* check it whole first: nothing is written from a refused tar */
	r = al_tar_check(tar, len, max_bytes, max_files, err, errlen);
	made.ino = calloc(max_files ? max_files : 1, sizeof(*made.ino));
	if (!made.ino && r == 0)
		r = err_to(err, errlen, -ENOMEM, "out of memory");
	al_tar_init(&t, tar, len, max_bytes, max_files);
	while (r == 0 && (r = al_tar_next(&t, &e)) > 0) {
		const char *leaf, *lleaf;
		int pfd = parent_fd(root, e.path, true, &leaf), fd, lfd;

		r = 0;
		if (pfd < 0) {
			r = err_to(err, errlen, pfd, "%s: %s", e.path,
				   strerror(-pfd));
			break;
		}
		switch (e.type) {
		case AL_TAR_DIR:
			if (mkdirat(pfd, leaf, 0755) < 0 && errno != EEXIST)
				r = -errno;
			break;
		case AL_TAR_SYMLINK:
			if (symlinkat(e.link, pfd, leaf) < 0)
				r = -errno;
			break;
		case AL_TAR_HARDLINK:
			lfd = parent_fd(root, e.link, false, &lleaf);
			if (lfd < 0) {
				r = lfd;
				break;
			}
			if (!made_has(&made, lfd, lleaf))
				r = -EEXIST; /* not one of ours: refused */
			else if (linkat(lfd, lleaf, pfd, leaf, 0) < 0)
				r = -errno;
			close(lfd);
			break;
		case AL_TAR_FILE:
			fd = openat(pfd, leaf,
				    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					O_CLOEXEC,
				    (e.mode & 0755) | 0600);
			if (fd < 0) {
				r = -errno;
				break;
			}
			made_add(&made, fd);
			for (uint64_t o = 0; o < e.size && r == 0;) {
				ssize_t w = write(fd, e.data + o, e.size - o);

				if (w <= 0)
					r = w < 0 ? -errno : -EIO;
				else
					o += (uint64_t)w;
			}
			if (close(fd) < 0 && r == 0)
				r = -errno;
			break;
		}
		close(pfd);
		if (r < 0)
			err_to(err, errlen, r, "%s: %s", e.path, strerror(-r));
	}
	if (r < 0 && t.failed)
		snprintf(err, errlen, "%s", t.err);
	close(root);
	free(made.ino);
	return r < 0 ? r : 0;
}

struct tarbuf {
	uint8_t *p;
	size_t len, cap, limit;
	uint64_t bytes, max_bytes;
	uint32_t files, max_files;
	char *err;
	size_t errlen;
};

static int tb_put(struct tarbuf *b, const void *data, size_t n)
{
	size_t pad = (n + 511) / 512 * 512;

	if (pad > b->limit - b->len)
		return err_to(b->err, b->errlen, -E2BIG, "over the caps");
	if (b->len + pad > b->cap) {
		size_t nc = b->cap ? b->cap : 1 << 16;
		uint8_t *np;

		while (nc < b->len + pad)
			nc *= 2;
		np = realloc(b->p, nc);
		if (!np)
			return err_to(b->err, b->errlen, -ENOMEM,
				      "out of memory");
		b->p = np;
		b->cap = nc;
	}
	memcpy(b->p + b->len, data, n);
	memset(b->p + b->len + n, 0, pad - n);
	b->len += pad;
	return 0;
}

static int tb_entry(struct tarbuf *b, const char *path, enum al_tar_type type,
		    uint32_t mode, uint64_t size, const char *link)
{
	uint8_t h[512];
	int r;

	if (++b->files > b->max_files)
		return err_to(b->err, b->errlen, -E2BIG,
			      "over the cap of %u entries", b->max_files);
	if (size > b->max_bytes - b->bytes)
		return err_to(b->err, b->errlen, -E2BIG,
			      "over the cap of %llu bytes",
			      (unsigned long long)b->max_bytes);
	b->bytes += size;
	r = al_tar_header(h, path, type, mode, size, link);
	if (r < 0)
		return err_to(b->err, b->errlen, r, "%s: %s", path,
			      r == -ENAMETOOLONG ? "too long a name for ustar"
						 : "too large");
	return tb_put(b, h, sizeof(h));
}

/* Directory fd `dfd` at archive path `rel` ("" for the root), sorted. */
static int tb_dir(struct tarbuf *b, int dfd, const char *rel, int depth)
{
	struct dirent **ents = NULL;
	int n, r = 0;
	DIR *d;
	int fd2 = dup(dfd);

	if (depth > 64)
		return err_to(b->err, b->errlen, -ELOOP, "%s: too deep", rel);
	if (fd2 < 0 || !(d = fdopendir(fd2))) {
		if (fd2 >= 0)
			close(fd2);
		return err_to(b->err, b->errlen, -errno, "%s: %s", rel,
			      strerror(errno));
	}
	/* collect names, then sort for a stable archive */
	{
		struct dirent *de;
		size_t cap = 0;

		n = 0;
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") ||
			    !strcmp(de->d_name, ".."))
				continue;
			if ((size_t)n == cap) {
				struct dirent **ne;

				cap = cap ? cap * 2 : 64;
				ne = realloc(ents, cap * sizeof(*ents));
				if (!ne) {
					r = -ENOMEM;
					break;
				}
				ents = ne;
			}
			ents[n] = malloc(sizeof(*de));
			if (!ents[n]) {
				r = -ENOMEM;
				break;
			}
			memcpy(ents[n++], de, sizeof(*de));
		}
	}
	closedir(d);
	for (int i = 0; i < n && r == 0; i++) {
		char path[AL_PATH_MAX + 2], link[102];
		struct stat st;
		const char *name = ents[i]->d_name;
		int sz = snprintf(path, sizeof(path), "%s%s%s", rel,
				  *rel ? "/" : "", name);

		if (sz < 0 || (size_t)sz > AL_PATH_MAX) {
			r = err_to(b->err, b->errlen, -ENAMETOOLONG,
				   "%s/%s: too long a path", rel, name);
			break;
		}
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = err_to(b->err, b->errlen, -errno, "%s: %s", path,
				   strerror(errno));
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			int cfd = openat(dfd, name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					     O_CLOEXEC);

			if (cfd < 0) {
				r = err_to(b->err, b->errlen, -errno, "%s: %s",
					   path, strerror(errno));
				break;
			}
			r = tb_entry(b, path, AL_TAR_DIR, st.st_mode, 0, NULL);
			if (r == 0)
				r = tb_dir(b, cfd, path, depth + 1);
			close(cfd);
		} else if (S_ISLNK(st.st_mode)) {
			ssize_t l = readlinkat(dfd, name, link, sizeof(link));

			if (l < 0 || l > 100) {
				r = err_to(b->err, b->errlen, -ENAMETOOLONG,
					   "%s: a symlink target over 100 "
					   "bytes",
					   path);
				break;
			}
			link[l] = 0;
			r = tb_entry(b, path, AL_TAR_SYMLINK, 0777, 0, link);
		} else if (S_ISREG(st.st_mode)) {
			int ffd = openat(dfd, name,
					 O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			struct stat fst;

			if (ffd < 0 || fstat(ffd, &fst) < 0) {
				r = err_to(b->err, b->errlen, -errno, "%s: %s",
					   path, strerror(errno));
				if (ffd >= 0)
					close(ffd);
				break;
			}
			r = tb_entry(b, path, AL_TAR_FILE, fst.st_mode,
				     (uint64_t)fst.st_size, NULL);
			if (r == 0) {
				uint8_t *tmp = malloc(
				    fst.st_size ? (size_t)fst.st_size : 1);
				size_t got = 0;

				if (!tmp)
					r = err_to(b->err, b->errlen, -ENOMEM,
						   "out of memory");
				while (r == 0 && got < (size_t)fst.st_size) {
					ssize_t k =
					    read(ffd, tmp + got,
						 (size_t)fst.st_size - got);

					if (k <= 0)
						r = err_to(b->err, b->errlen,
							   -EIO,
							   "%s: changed while "
							   "read",
							   path);
					else
						got += (size_t)k;
				}
				if (r == 0)
					r = tb_put(b, tmp, got);
				free(tmp);
			}
			close(ffd);
		} else {
			r = err_to(b->err, b->errlen, -EINVAL,
				   "%s: not a file, directory or symlink",
				   path);
		}
	}
	for (int i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	return r;
}

int al_sess_tar_dir(const char *dir, uint64_t max_bytes, uint32_t max_files,
		    uint8_t **ret, size_t *ret_len, char *err, size_t errlen)
{
	struct tarbuf b = {.max_bytes = max_bytes,
			   .max_files = max_files,
			   .err = err,
			   .errlen = errlen};
	int fd, r;

	b.limit = max_bytes + ((uint64_t)max_files + 2) * 1024 + 10240;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_to(err, errlen, -errno, "%s: %s", dir,
			      strerror(errno));
	r = tb_dir(&b, fd, "", 0);
	close(fd);
	if (r == 0) {
		uint8_t z[1024] = {0};

		r = tb_put(&b, z, sizeof(z));
	}
	if (r < 0) {
		free(b.p);
		return r;
	}
	*ret = b.p;
	*ret_len = b.len;
	return 0;
}
