/* snapshot.c: snapshots, templates derived from a template by a setup job.
 *
 * Theory of operation. A snapshot is a template clone after a setup job
 * ran in it, saved like a template (template.c) so that jobs start from
 * it instead:
 *
 *   STATE/snapshots/NAME-KEY-ID/   root's, 0700 (files 0400)
 *     state    device state (x-ignore-shared: no RAM in it)
 *     mem      sparse: the guest RAM pages that differ from the base's
 *     pages    bitmap, one bit per 4 KiB page of RAM: which are in mem
 *     inputs   what KEY hashes, written last (= complete)
 *   STATE/snapshots/.NAME.lock     one build of NAME at a time
 *
 * The guest's root disk is read-only and its scratch space (/work, /tmp)
 * a tmpfs, so the RAM is the whole guest: nothing on a disk to save.
 *
 * Building one (sb_snapshot_begin .. commit): the base template's sealed
 * memfd is copied into a new memfd, which a new QEMU maps share=on (a
 * clone maps the base share=off: MAP_PRIVATE, whose written pages no one
 * outside that QEMU can read, so it could not be saved without putting
 * all RAM in the migration stream). That QEMU loads the base's `state`
 * and becomes an ordinary clone (reseeded); the caller runs the setup
 * job's steps in it. Commit saves its device state the way a template is
 * saved (x-ignore-shared, guest running), kills it, and writes only the
 * pages whose bytes differ from the base's memfd (QEMU 7.2 has no
 * mapped-ram and no incremental save of a file-backed RAM block: the
 * diff is ours). The dir is built under .build-NAME-XXXXXX and renamed
 * into place; older builds of NAME are removed.
 *
 * KEY hashes the base template's key (which covers its image, machine and
 * QEMU) and the setup job's content hash: a new image or a changed setup
 * makes another key, and sb_snapshot_open() refuses a snapshot whose
 * base key is no longer the base's current one (-ESTALE). ID is random,
 * so that a rebuilt NAME never shares a dir name with the one it
 * replaces: a process's memfd cache is keyed by dir.
 *
 * Opening one (sb_snapshot_open: the worker tries it when no image has
 * the name; it opens the base with sb_template_open, and template.c
 * calls nothing here) makes a sealed memfd: the base's RAM, then the `mem`
 * pages over it; clones map it share=off exactly as they map a
 * template's. The process keeps it (snap_cache) and holds a shared flock
 * on the snapshot's dir for as long: eviction over the disk cap skips
 * dirs someone holds. Removal unlinks the dir: running clones keep their
 * mapping and the state fd QEMU was given, so they finish; the next job
 * of that name sees sb_template_current() false and reopens (-ENOENT).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "sandbox.h"
#include "util.h"
#include "vm_internal.h"

#define SNAP_REV 1          /* bump when the layout or meaning changes */
#define PAGE 4096u          /* granule of the RAM diff */
#define CHUNK (1u << 20)    /* bytes read per pass over RAM */
#define STATE_MAX (64u << 20) /* device state is ~400 KiB: a QEMU that
			       * writes more is refused, not kept */
#define SNAP_CACHE_MAX 32   /* snapshots one process may hold open */
#define SNAP_LIST_MAX 256   /* snapshots considered by the disk cap */
#define ID_LEN 26           /* "-" KEY(16) "-" ID(8) after NAME */
#define MEM_SEALS (F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL)

/* This process's open snapshots: the sealed RAM memfd clones map and the
 * dir fd whose shared flock says "in use" (both kept for the process's
 * life, or until the name is reopened as another build). */
static struct {
	char name[AL_NAME_MAX + 1];
	char dir[PATH_MAX];
	int mem_fd;
	int dir_fd;
} snap_cache[SNAP_CACHE_MAX];
static size_t snap_cached;

static int snap_root(const struct sb_options *o, char *out, size_t size)
{
	if (snprintf(out, size, "%s/snapshots", o->state_dir) >= (int)size)
		return -ENAMETOOLONG;
	return 0;
}

/* The template-name rule: [a-z0-9][a-z0-9_.-]*, at most AL_NAME_MAX. */
static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > AL_NAME_MAX || !strchr("abcdefghijklmnopqrstuvwxyz"
					     "0123456789", s[0]))
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

/* Is the dir entry `d` a build of snapshot `name` (NAME-KEY-ID)? */
static bool entry_of(const char *d, const char *name)
{
	size_t n = strlen(name);

	return strlen(d) == n + ID_LEN && !strncmp(d, name, n) && d[n] == '-';
}


/* The complete build of `name` under root (newest if several): its dir
 * name in out. -ENOENT if none. */
static int find_build(const char *root, const char *name, char *out,
		      size_t size)
{
	DIR *d = opendir(root);
	struct dirent *e;
	time_t best = 0;
	int dfd = d ? dirfd(d) : -1, r = -ENOENT;

	if (!d)
		return errno == ENOENT ? -ENOENT : -errno;
	while ((e = readdir(d))) {
		struct stat st;
		char buf[1024];
		int fd;

		if (!entry_of(e->d_name, name))
			continue;
		fd = openat(dfd, e->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (sb__template_read_inputs(fd, buf, sizeof(buf)) &&
		    fstat(fd, &st) == 0 && (r < 0 || st.st_mtime >= best)) {
			best = st.st_mtime;
			snprintf(out, size, "%s", e->d_name);
			r = 0;
		}
		close(fd);
	}
	closedir(d);
	return r;
}

/* Write the pages of `ram` that differ from `base` to `mem_fd` (same
 * offsets) and set their bits in `bits`; *ret_pages counts them. Only the
 * data extents of `ram` are read: a hole there is a hole in base too
 * (ram began as base's copy and nothing punches holes). */
static int mem_diff(int ram, int base, int mem_fd, uint8_t *bits,
		    uint64_t *ret_pages)
{
	char *a = malloc(CHUNK), *b = malloc(CHUNK);
	off_t at = 0, end;
	int r = a && b ? 0 : -ENOMEM;

	while (r == 0 && (at = lseek(ram, at, SEEK_DATA)) >= 0) {
		end = lseek(ram, at, SEEK_HOLE);
		if (end < 0)
			r = -errno;
		while (r == 0 && at < end) {
			size_t n = end - at < CHUNK ? (size_t)(end - at) : CHUNK;

			if (pread(ram, a, n, at) != (ssize_t)n ||
			    pread(base, b, n, at) != (ssize_t)n) {
				r = -EIO;
				break;
			}
			for (size_t i = 0; r == 0 && i < n; i += PAGE) {
				uint64_t pg = (uint64_t)(at + (off_t)i) / PAGE;

				if (!memcmp(a + i, b + i, PAGE))
					continue;
				if (pwrite(mem_fd, a + i, PAGE, at + (off_t)i) !=
				    PAGE)
					r = -EIO;
				bits[pg / 8] |= (uint8_t)(1u << (pg % 8));
				(*ret_pages)++;
			}
			at += (off_t)n;
		}
	}
	if (r == 0 && at < 0 && errno != ENXIO)
		r = -errno;
	free(a);
	free(b);
	return r;
}

/* A whole file of ours in `dfd` into buf of exactly `size` bytes. */
static int read_exact(int dfd, const char *name, void *buf, size_t size)
{
	int fd = sb__open_in(dfd, name, O_RDONLY, 0, geteuid());
	ssize_t n;

	if (fd < 0)
		return fd;
	n = pread(fd, buf, size, 0);
	close(fd);
	return n == (ssize_t)size ? 0 : -EBADMSG;
}

/* Put the `mem` pages of snapshot dir `dfd` over `mfd` (base's RAM). */
static int mem_apply(int dfd, int mfd, size_t pages)
{
	uint8_t *bits = calloc(1, (pages + 7) / 8);
	char page[PAGE];
	int fd = -1, r = bits ? 0 : -ENOMEM;

	if (r == 0)
		r = read_exact(dfd, "pages", bits, (pages + 7) / 8);
	if (r == 0)
		r = fd = sb__open_in(dfd, "mem", O_RDONLY, 0, geteuid());
	for (size_t pg = 0; r >= 0 && pg < pages; pg++) {
		if (!(bits[pg / 8] & (1u << (pg % 8))))
			continue;
		if (pread(fd, page, PAGE, (off_t)pg * PAGE) != PAGE ||
		    pwrite(mfd, page, PAGE, (off_t)pg * PAGE) != PAGE)
			r = -EIO;
	}
	if (fd >= 0) {
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
	free(bits);
	return r < 0 ? r : 0;
}

/* The sealed RAM of snapshot dir `dfd` over base RAM `base_fd`. */
static int mem_load(int dfd, int base_fd)
{
	struct stat st;
	int mfd, r;

	if (fstat(base_fd, &st) < 0)
		return -errno;
	mfd = sb__template_memfd(st.st_size);
	if (mfd < 0)
		return mfd;
	r = sb__template_copy_extents(base_fd, mfd);
	if (r == 0)
		r = mem_apply(dfd, mfd, (size_t)st.st_size / PAGE);
	if (r == 0 && fcntl(mfd, F_ADD_SEALS, MEM_SEALS) < 0)
		r = -errno;
	if (r < 0) {
		close(mfd);
		return r;
	}
	return mfd;
}

/* The process's memfd of snapshot `name` built in `dir`: cached, else
 * loaded, with a shared flock on the dir for as long as it is held. */
static int snap_mem_for(const char *name, const char *dir, int base_fd)
{
	size_t i;
	int dfd, fd;

	for (i = 0; i < snap_cached; i++) {
		if (strcmp(snap_cache[i].name, name) != 0)
			continue;
		if (!strcmp(snap_cache[i].dir, dir))
			return snap_cache[i].mem_fd;
		break; /* another build of NAME: replaced below */
	}
	if (i == SNAP_CACHE_MAX)
		return -EMFILE;
	dfd = sb__open_dir(dir);
	if (dfd < 0)
		return dfd;
	fd = flock(dfd, LOCK_SH) < 0 ? -errno : mem_load(dfd, base_fd);
	if (fd < 0) {
		close(dfd);
		return fd;
	}
	if (i < snap_cached) { /* its clones hold their own mappings */
		close(snap_cache[i].mem_fd);
		close(snap_cache[i].dir_fd);
	} else {
		snap_cached++;
	}
	snprintf(snap_cache[i].name, sizeof(snap_cache[i].name), "%s", name);
	snprintf(snap_cache[i].dir, sizeof(snap_cache[i].dir), "%s", dir);
	snap_cache[i].mem_fd = fd;
	snap_cache[i].dir_fd = dfd;
	return fd;
}

bool sb_snapshot_exists(const struct sb_options *o, const char *name)
{
	char root[PATH_MAX], ent[NAME_MAX + 1];

	return name_ok(name) && snap_root(o, root, sizeof(root)) == 0 &&
	       find_build(root, name, ent, sizeof(ent)) == 0;
}

int sb_snapshot_open(const struct sb_options *o, const char *name,
		     struct sb_template *ret)
{
	char root[PATH_MAX], ent[NAME_MAX + 1], dir[PATH_MAX], buf[1024];
	char base[AL_NAME_MAX + 2], bkey[32];
	struct sb_template t;
	struct sb_image img;
	int fd, r;

	if (!name_ok(name))
		return -ENOENT; /* as sb_image_open says of such a name */
	r = snap_root(o, root, sizeof(root));
	if (r == 0)
		r = find_build(root, name, ent, sizeof(ent));
	if (r < 0)
		return r;
	if (snprintf(dir, sizeof(dir), "%s/%s", root, ent) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	sb__private_files(dir); /* one an older version made 0755, 0444 */
	r = sb__template_dir_inputs(dir, buf, sizeof(buf));
	if (r < 0)
		return r;
	sb__template_input_field(buf, "base", base, sizeof(base));
	sb__template_input_field(buf, "basekey", bkey, sizeof(bkey));
	/* the base is an image template, never a snapshot (no recursion) */
	if (!name_ok(base) || sb_image_open(o, base, &img) < 0)
		return -ESTALE;
	r = sb_template_open(o, base, &t);
	if (r < 0)
		return r;
	if (strcmp(t.key, bkey) != 0)
		return -ESTALE; /* a new image, QEMU or machine config */
	fd = snap_mem_for(name, dir, t.mem_fd);
	if (fd < 0)
		return fd;
	snprintf(t.dir, sizeof(t.dir), "%s", dir);
	snprintf(t.img.name, sizeof(t.img.name), "%s", name);
	snprintf(t.key, sizeof(t.key), "%.16s", ent + strlen(name) + 1);
	t.mem_fd = fd;
	t.snapshot = true;
	t.built = false;
	*ret = t;
	return 0;
}

bool sb_template_current(const struct sb_template *t)
{
	struct stat st;

	return !t->snapshot || stat(t->dir, &st) == 0;
}

/* The clone the setup runs in: the base's state loaded into a QEMU whose
 * RAM is b->mem_fd, shared, then reseeded (vm.c's steps, as clone.c's). */
static int setup_vm(const struct sb_options *o, struct sb_snapshot_build *b)
{
	struct machine_mem m = {.fd = b->mem_fd, .share = true,
				.incoming = true};
	int dfd, fd, r = sb__vm_create(o, b->name, b->base.accel, &b->vm);

	if (r == 0) {
		b->vm->restored = true;
		r = sb__vm_launch(b->vm, o, &b->base.img, &m);
	}
	if (r == 0)
		r = sb__vm_connect(b->vm, o);
	if (r == 0)
		r = sb__vm_qmp_ignore_shared(b->vm);
	if (r == 0) {
		dfd = sb__open_dir(b->base.dir);
		fd = dfd < 0
			 ? dfd
			 : sb__open_in(dfd, "state", O_RDONLY, 0, geteuid());
		if (dfd >= 0)
			close(dfd);
		r = fd < 0 ? fd : sb__vm_qmp_pass_state(b->vm, fd);
		if (fd >= 0)
			close(fd); /* QEMU holds its own copy now */
	}
	if (r == 0)
		r = sb__vm_qmp(b->vm, "migrate-incoming",
			       json_pack("{s:s}", "uri", "fd:state"), NULL);
	if (r == 0)
		r = sb__vm_ready(b->vm, o, o->call_timeout_ms);
	if (r < 0 && b->vm && !b->vm->error[0])
		sb__vm_fail(b->vm, r, "snapshot setup VM");
	return r;
}

/* Is the newest build of b->name made from exactly b->inputs? */
static bool cache_hit(const char *root, const struct sb_snapshot_build *b)
{
	char ent[NAME_MAX + 1], dir[PATH_MAX], buf[1024];
	bool hit = false;
	int dfd;

	if (find_build(root, b->name, ent, sizeof(ent)) < 0 ||
	    snprintf(dir, sizeof(dir), "%s/%s", root, ent) >= (int)sizeof(dir))
		return false;
	dfd = sb__open_dir(dir);
	if (dfd < 0)
		return false;
	hit = sb__template_read_inputs(dfd, buf, sizeof(buf)) &&
	      !strcmp(buf, b->inputs);
	close(dfd);
	return hit;
}

/* The key's inputs and the key; the base template opened. */
static int build_inputs(const struct sb_options *o, const char *name,
			const char *base, const char *setup_hash,
			struct sb_snapshot_build *b)
{
	uint8_t h[AL_SHA256_LEN];
	struct sb_image img;
	int r;

	if (!name_ok(name) || !name_ok(base) || strlen(setup_hash) != 64 ||
	    strspn(setup_hash, "0123456789abcdef") != 64)
		return -EINVAL;
	if (sb_image_open(o, name, &img) == 0)
		return -EEXIST; /* an image template has that name */
	r = sb_image_open(o, base, &img); /* the base is an image template */
	if (r == 0)
		r = sb_template_open(o, base, &b->base);
	if (r < 0)
		return r;
	snprintf(b->name, sizeof(b->name), "%s", name);
	snprintf(b->inputs, sizeof(b->inputs),
		 "rev=%d snapshot=%s base=%s basekey=%s setup=%s\n", SNAP_REV,
		 name, base, b->base.key, setup_hash);
	al_sha256(b->inputs, strlen(b->inputs), h);
	for (size_t i = 0; i < 8; i++)
		snprintf(b->key + 2 * i, 3, "%02x", h[i]);
	return 0;
}

/* The name's lock (held until commit or abort), then a build dir. */
static int build_dir(const char *root, struct sb_snapshot_build *b)
{
	char lock[PATH_MAX + AL_NAME_MAX + 16];

	if (mkdir(root, 0700) < 0 && errno != EEXIST)
		return -errno;
	snprintf(lock, sizeof(lock), "%s/.%s.lock", root, b->name);
	b->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
			  0600);
	if (b->lock_fd < 0 || flock(b->lock_fd, LOCK_EX) < 0)
		return -errno;
	if (cache_hit(root, b))
		return 1;
	if (snprintf(b->tmp, sizeof(b->tmp), "%s/.build-%s-XXXXXX", root,
		     b->name) >= (int)sizeof(b->tmp))
		return -ENAMETOOLONG;
	if (!mkdtemp(b->tmp)) {
		b->tmp[0] = 0;
		return -errno;
	}
	/* root's alone: only we write here and nobody else reads the
	 * setup's RAM (no VMM sees this dir at all: it gets fds) */
	return chmod(b->tmp, 0700) < 0 ? -errno : 0;
}

int sb_snapshot_begin(const struct sb_options *o, const char *name,
		      const char *base, const char *setup_hash,
		      struct sb_snapshot_build *b, struct sb_vm **ret_vm)
{
	char root[PATH_MAX];
	struct stat st;
	int r;

	memset(b, 0, sizeof(*b));
	b->mem_fd = b->lock_fd = -1;
	b->t0 = al_now_ms();
	*ret_vm = NULL;
	if (!strncmp(name, SB_SNAP_SESSION_PREFIX,
		     strlen(SB_SNAP_SESSION_PREFIX)))
		return -EPERM; /* sessions' namespace: never an operator's */
	r = build_inputs(o, name, base, setup_hash, b);
	if (r == 0)
		r = snap_root(o, root, sizeof(root));
	if (r == 0)
		r = build_dir(root, b);
	if (r != 0)
		return r; /* 1: a cache hit */
	r = fstat(b->base.mem_fd, &st) < 0 ? -errno : 0;
	if (r == 0)
		r = b->mem_fd = sb__template_memfd(st.st_size);
	if (r >= 0)
		r = sb__template_copy_extents(b->base.mem_fd, b->mem_fd);
	if (r == 0)
		r = setup_vm(o, b);
	*ret_vm = b->vm;
	return r;
}

bool sb_snapshot_built(const struct sb_options *o, const char *name,
		       const char *base, const char *setup_hash)
{
	struct sb_snapshot_build b;
	char root[PATH_MAX];

	memset(&b, 0, sizeof(b));
	b.mem_fd = b.lock_fd = -1;
	return build_inputs(o, name, base, setup_hash, &b) == 0 &&
	       snap_root(o, root, sizeof(root)) == 0 && cache_hit(root, &b);
}

void sb_snapshot_abort(struct sb_snapshot_build *b)
{
	sb_vm_destroy(b->vm);
	b->vm = NULL;
	if (b->mem_fd >= 0)
		close(b->mem_fd);
	b->mem_fd = -1;
	if (b->tmp[0]) {
		int pfd = -1;
		char *slash = strrchr(b->tmp, '/');

		*slash = 0;
		pfd = sb__open_dir(b->tmp);
		if (pfd >= 0) {
			sb__remove_at(pfd, slash + 1, 2);
			close(pfd);
		}
		b->tmp[0] = 0;
	}
	if (b->lock_fd >= 0)
		close(b->lock_fd); /* releases the lock */
	b->lock_fd = -1;
}

/* `mem` (the pages that differ from the base) and `pages` in dfd. */
static int save_mem(const struct sb_snapshot_build *b, int dfd,
		    uint64_t *ret_pages)
{
	struct stat st;
	uint8_t *bits = NULL;
	size_t nbits;
	int fd, r;

	if (fstat(b->mem_fd, &st) < 0)
		return -errno;
	nbits = ((size_t)st.st_size / PAGE + 7) / 8;
	bits = calloc(1, nbits);
	if (!bits)
		return -ENOMEM;
	fd = sb__open_in(dfd, "mem", O_WRONLY | O_CREAT, 0400, geteuid());
	r = fd;
	if (fd >= 0)
		r = ftruncate(fd, st.st_size) < 0 ? -errno : 0;
	if (r == 0)
		r = mem_diff(b->mem_fd, b->base.mem_fd, fd, bits, ret_pages);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r == 0) /* clones read it through a memfd: drop the cached copy */
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (fd >= 0)
		close(fd);
	if (r == 0)
		r = sb__write_file(dfd, "pages", bits, nbits, 0400);
	free(bits);
	return r;
}

/* Describe build `ent` of root (dir fd rfd) into *ret; false if it is not
 * a complete snapshot. */
static bool snap_info(const char *root, int rfd, const char *ent,
		      struct sb_snapshot_info *ret)
{
	static const char *const files[] = {"state", "mem", "pages", "inputs"};
	char buf[1024], bkey[32], path[PATH_MAX * 2];
	size_t n = strlen(ent);
	struct stat st;
	int dfd;

	if (ent[0] == '.' || n <= ID_LEN || n - ID_LEN > AL_NAME_MAX ||
	    ent[n - ID_LEN] != '-' || ent[n - 9] != '-')
		return false;
	dfd = openat(rfd, ent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return false;
	memset(ret, 0, sizeof(*ret));
	if (!sb__template_read_inputs(dfd, buf, sizeof(buf))) {
		close(dfd);
		return false;
	}
	snprintf(ret->name, sizeof(ret->name), "%.*s", (int)(n - ID_LEN), ent);
	if (snprintf(ret->dir, sizeof(ret->dir), "%s/%s", root, ent) >=
	    (int)sizeof(ret->dir)) {
		close(dfd);
		return false;
	}
	sb__template_input_field(buf, "base", ret->base, sizeof(ret->base));
	sb__template_input_field(buf, "setup", ret->setup, sizeof(ret->setup));
	sb__template_input_field(buf, "basekey", bkey, sizeof(bkey));
	sb__template_input_field(buf, "origin", ret->origin, sizeof(ret->origin));
	sb__template_input_field(buf, "owner", ret->owner, sizeof(ret->owner));
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (fstatat(dfd, files[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		ret->disk_bytes += (uint64_t)st.st_blocks * 512;
		if (i == 1)
			ret->mem_bytes = (uint64_t)st.st_blocks * 512;
		if (i == 3)
			ret->created = st.st_mtime;
	}
	/* held (shared) by every process that opened it */
	if (flock(dfd, LOCK_EX | LOCK_NB) < 0)
		ret->in_use = errno == EWOULDBLOCK;
	close(dfd); /* releases a lock we got */
	/* template.c removes the templates of an older image */
	snprintf(path, sizeof(path), "%.*s/templates/%s-%s",
		 (int)(strlen(root) - strlen("/snapshots")), root, ret->base,
		 bkey);
	ret->stale = stat(path, &st) < 0;
	return true;
}

static int by_age(const void *a, const void *b)
{
	const struct sb_snapshot_info *x = a, *y = b;

	return (x->created > y->created) - (x->created < y->created);
}

int sb_snapshot_list(const struct sb_options *o, struct sb_snapshot_info *ret,
		     size_t max)
{
	char root[PATH_MAX];
	struct dirent *e;
	size_t n = 0;
	DIR *d;
	int r = snap_root(o, root, sizeof(root));

	if (r < 0)
		return r;
	d = opendir(root);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d)) && n < max)
		n += snap_info(root, dirfd(d), e->d_name, &ret[n]);
	closedir(d);
	qsort(ret, n, sizeof(*ret), by_age);
	return (int)n;
}

/* Remove the builds of `name` in root but `keep` ("" = all); the count. */
static int remove_builds(const char *root, const char *name, const char *keep)
{
	int rfd = sb__open_dir(root), n = 0;
	struct dirent *e;
	DIR *d;

	if (rfd < 0)
		return rfd == -ENOENT ? 0 : rfd;
	d = fdopendir(dup(rfd));
	while (d && (e = readdir(d)))
		if (entry_of(e->d_name, name) && strcmp(e->d_name, keep) != 0 &&
		    sb__remove_at(rfd, e->d_name, 2) == 0)
			n++;
	if (d)
		closedir(d);
	close(rfd);
	return n;
}

int sb_snapshot_remove(const struct sb_options *o, const char *name)
{
	char root[PATH_MAX];
	int r;

	if (!name_ok(name))
		return -EINVAL;
	r = snap_root(o, root, sizeof(root));
	if (r == 0)
		r = remove_builds(root, name, "");
	return r < 0 ? r : r == 0 ? -ENOENT : 0;
}

/* Over o->snapshot_max_mb: remove the oldest snapshots no process holds,
 * never `keep` (the one just made). */
/* Over snapshots.max_disk_mb, the oldest not in use go. After a
 * session's save (`session_only`) only sessions' snapshots (origin
 * session:) may go: a session never evicts an operator's. */
static void enforce_cap(const struct sb_options *o, const char *keep,
			bool session_only)
{
	struct sb_snapshot_info *all;
	uint64_t total = 0, cap = (uint64_t)o->snapshot_max_mb << 20;
	int n;

	if (!o->snapshot_max_mb)
		return;
	all = calloc(SNAP_LIST_MAX, sizeof(*all));
	n = all ? sb_snapshot_list(o, all, SNAP_LIST_MAX) : -ENOMEM;
	for (int i = 0; i < n; i++)
		total += all[i].disk_bytes;
	for (int i = 0; i < n && total > cap; i++) {
		/* a hibernated session's state or a fork's: its session's */
		if (all[i].in_use || !strcmp(all[i].name, keep) ||
		    !strncmp(all[i].origin, "hibernate:", 10) ||
		    !strncmp(all[i].origin, "fork:", 5) ||
		    (session_only && strncmp(all[i].origin, "session:", 8)))
			continue;
		if (sb_snapshot_remove(o, all[i].name) == 0) {
			sb_log(o, SB_LOG_INFO,
			       "snapshot %s removed: over the %u MiB cap",
			       all[i].name, o->snapshot_max_mb);
			total -= all[i].disk_bytes;
		}
	}
	free(all);
}

/* After the device state: the RAM diff, then `inputs` (written last:
 * the snapshot is complete), for a setup's build and a live save alike. */
static int save_files(const struct sb_snapshot_build *b, int dfd,
		      uint64_t *ret_pages)
{
	int r = save_mem(b, dfd, ret_pages);

	return r < 0 ? r
		     : sb__write_file(dfd, "inputs", b->inputs,
				      strlen(b->inputs), 0400);
}

/* Save the setup's VM into b->tmp and kill it. */
static int save_build(const struct sb_options *o, struct sb_snapshot_build *b,
		      uint64_t *ret_pages)
{
	int dfd = sb__open_dir(b->tmp), r;

	if (dfd < 0)
		return dfd;
	/* the very request a clone starts with (as template.c does) */
	r = sb__vm_reseed(b->vm, o);
	if (r == 0)
		r = sb__template_save_state(b->vm, dfd, (off_t)STATE_MAX);
	if (r < 0)
		sb__vm_fail(b->vm, r, "save snapshot state");
	sb_vm_destroy(b->vm); /* QEMU reaped: the RAM in mem_fd is final */
	b->vm = NULL;
	if (r == 0)
		r = save_files(b, dfd, ret_pages);
	close(dfd);
	return r;
}

int sb_snapshot_commit(const struct sb_options *o,
		       struct sb_snapshot_build *b, struct sb_snapshot_info *ret)
{
	char root[PATH_MAX], ent[NAME_MAX + 1], dir[PATH_MAX];
	uint64_t t0 = al_now_ms(), pages = 0;
	uint32_t id;
	int r;

	if (getrandom(&id, sizeof(id), 0) != sizeof(id))
		return -EIO;
	r = snap_root(o, root, sizeof(root));
	snprintf(ent, sizeof(ent), "%s-%s-%08x", b->name, b->key, id);
	if (r == 0 && snprintf(dir, sizeof(dir), "%s/%s", root, ent) >=
			      (int)sizeof(dir))
		r = -ENAMETOOLONG;
	if (r == 0)
		r = save_build(o, b, &pages);
	if (r == 0 && rename(b->tmp, dir) < 0)
		r = -errno;
	if (r == 0) {
		b->tmp[0] = 0; /* in place: abort leaves it */
		remove_builds(root, b->name, ent); /* older builds */
		enforce_cap(o, b->name, false);
	}
	if (r == 0 && ret) {
		int rfd = sb__open_dir(root);

		if (rfd >= 0 && snap_info(root, rfd, ent, ret)) {
			ret->save_ms = al_now_ms() - t0;
			ret->build_ms = al_now_ms() - b->t0;
		}
		if (rfd >= 0)
			close(rfd);
	}
	sb_snapshot_abort(b); /* the lock, the memfd, a failed build dir */
	return r;
}

/* A live VM saved as a snapshot (live.c made it saveable): the steps of
 * sb_snapshot_begin and commit, with the VM's own memfd for the RAM and
 * the guest resumed after the save instead of killed. The RAM is diffed
 * while QEMU is stopped (postmigrate), so it matches the device state. */
static int save_live(const struct sb_options *o, struct sb_vm *vm,
		     struct sb_snapshot_build *b, uint64_t *ret_pages)
{
	int dfd = sb__open_dir(b->tmp), r, c;

	if (dfd < 0)
		return dfd;
	r = sb__vm_reseed(vm, o); /* the request a clone starts with */
	if (r == 0)
		r = sb__template_save_state(vm, dfd, (off_t)STATE_MAX);
	if (r == 0)
		r = save_files(b, dfd, ret_pages);
	close(dfd);
	/* the guest runs on whatever happened (a failed migration leaves it
	 * running; "cont" then only says so) */
	c = sb__vm_qmp(vm, "cont", NULL, NULL);
	if (c < 0 && r == 0)
		r = c;
	return r;
}

/* origin=ORIGIN, and owner=OWNER when there is one, on the inputs. */
static int tag_inputs(struct sb_snapshot_build *b, const char *origin,
		      const char *owner)
{
	size_t n = strlen(b->inputs), room = sizeof(b->inputs) - n + 1;

	if (n == 0 || (size_t)snprintf(b->inputs + n - 1, room,
				       " origin=%s%s%s\n", origin,
				       owner[0] ? " owner=" : "",
				       owner) >= room)
		return -ENAMETOOLONG;
	return 0;
}

int sb_snapshot_count_owned(const struct sb_options *o, const char *owner)
{
	struct sb_snapshot_info *all;
	int n, c = 0;

	if (!owner || !owner[0])
		return 0;
	all = calloc(SNAP_LIST_MAX, sizeof(*all));
	n = all ? sb_snapshot_list(o, all, SNAP_LIST_MAX) : -ENOMEM;
	for (int i = 0; i < n; i++)
		c += !strcmp(all[i].owner, owner);
	free(all);
	return n < 0 ? n : c;
}

int sb_snapshot_save_live(const struct sb_options *o, struct sb_vm *vm,
			  const char *name, const char *origin,
			  const char *owner, struct sb_snapshot_info *ret)
{
	char root[PATH_MAX], ent[NAME_MAX + 1], dir[PATH_MAX], hash[65];
	struct sb_snapshot_build b;
	uint8_t h[AL_SHA256_LEN], rnd[16];
	uint64_t t0 = al_now_ms(), pages = 0;
	uint32_t id;
	int r;

	if (!vm || vm->save_fd < 0 || vm->net)
		return -EOPNOTSUPP; /* snapshots are of VMs without a NIC */
	if (!owner)
		owner = "";
	if (!name_ok(name) || strlen(origin) > AL_SESS_ORIGIN_MAX ||
	    strspn(origin, "abcdefghijklmnopqrstuvwxyz0123456789:-") !=
		strlen(origin) ||
	    strlen(owner) > AL_SESS_ORIGIN_MAX ||
	    strspn(owner, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			  "0123456789_.@-") != strlen(owner))
		return -EINVAL;
	if (sb_snapshot_exists(o, name))
		return -EEXIST; /* never replaces one (docs/sessions.md) */
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd) ||
	    getrandom(&id, sizeof(id), 0) != sizeof(id))
		return -EIO;
	al_sha256(rnd, sizeof(rnd), h); /* no setup job: a unique "setup" */
	for (size_t i = 0; i < AL_SHA256_LEN; i++)
		snprintf(hash + 2 * i, 3, "%02x", h[i]);
	memset(&b, 0, sizeof(b));
	b.mem_fd = b.lock_fd = -1;
	b.t0 = t0;
	r = build_inputs(o, name, vm->base, hash, &b);
	if (r == 0 && strcmp(b.base.key, vm->base_key) != 0)
		r = -ESTALE; /* the base changed since this VM started */
	if (r == 0)
		r = tag_inputs(&b, origin, owner);
	if (r == 0)
		r = snap_root(o, root, sizeof(root));
	if (r == 0)
		r = build_dir(root, &b);
	if (r == 1)
		r = -EEXIST;
	if (r == 0) {
		b.mem_fd = fcntl(vm->save_fd, F_DUPFD_CLOEXEC, 0);
		r = b.mem_fd < 0 ? -errno : 0;
	}
	snprintf(ent, sizeof(ent), "%s-%s-%08x", name, b.key, id);
	if (r == 0 && snprintf(dir, sizeof(dir), "%s/%s", root, ent) >=
			      (int)sizeof(dir))
		r = -ENAMETOOLONG;
	/* a create of the same name that raced us: refused, not replaced */
	if (r == 0 && sb_snapshot_exists(o, name))
		r = -EEXIST;
	if (r == 0)
		r = save_live(o, vm, &b, &pages);
	if (r == 0 && rename(b.tmp, dir) < 0)
		r = -errno;
	if (r == 0) {
		b.tmp[0] = 0;
		enforce_cap(o, name, true);
	}
	if (r == 0 && ret) {
		int rfd = sb__open_dir(root);

		if (rfd >= 0 && snap_info(root, rfd, ent, ret)) {
			ret->save_ms = al_now_ms() - t0;
			ret->build_ms = ret->save_ms;
		}
		if (rfd >= 0)
			close(rfd);
	}
	sb_snapshot_abort(&b); /* lock, our dup of the memfd, a failed dir */
	return r;
}

void sb_snapshot_release(const char *name)
{
	for (size_t i = 0; i < snap_cached; i++) {
		if (strcmp(snap_cache[i].name, name) != 0)
			continue;
		close(snap_cache[i].mem_fd);
		close(snap_cache[i].dir_fd);
		snap_cache[i] = snap_cache[--snap_cached];
		return;
	}
}

void sb_snapshot_release_all(void)
{
	while (snap_cached)
		sb_snapshot_release(snap_cache[0].name);
}
