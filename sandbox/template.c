/* template.c: the template cache: key, lock, build and save.
 *
 * Theory of operation. A template is one booted, idle VM saved to disk:
 *
 *   STATE/templates/NAME-KEY/       root's, 0700 (files 0400)
 *     mem      guest RAM (0400): the data extents of the memfd the
 *              template ran on (memory-backend-file, share=on)
 *     state    device state, saved with migration capability
 *              x-ignore-shared, which leaves shared RAM out of the stream
 *     inputs   what KEY was computed from, written last (= complete)
 *
 * Building one is a cold boot (vm.c's steps) with RAM in a memfd, the
 * image's warm-up command, a settle pause, the reseed request a clone
 * will start with, then a migration to `state` while the guest runs.
 * Once that QEMU is dead (no writable mapping left), the memfd's data
 * goes to `mem` and the memfd is sealed (no write, grow, shrink or new
 * seal: F_SEAL_*). Clones map that sealed memfd privately (share=off):
 * no VMM can change the RAM every clone starts from, not even through
 * the fd it holds. A process that opens a cached template makes its own
 * sealed memfd from `mem`. Each process keeps one memfd per template
 * (mem_cache below, the one table of process state in sandbox/: a
 * worker's pool spawns clones of it for the process's life).
 * clone.c turns a template into VMs; this file only makes and finds
 * templates, and calls nothing in clone.c.
 *
 * KEY hashes the image hash, the machine config (RAM, vCPUs, accelerator,
 * carrier, the whole QEMU command line from machine.c, the revision
 * below), whether VMMs are jailed and the QEMU binary's identity (path,
 * size, mtime), so
 * any change rebuilds. `inputs` holds the full text, compared on open, so
 * a hash collision cannot hand out a wrong template. Builds happen in a
 * temp dir under a lock and are renamed into place: concurrent openers
 * wait for one build, and a crash never leaves a half template.
 * Templates of an older image are unlinked when a new one is built;
 * running clones keep their memfd alive.
 *
 * Files root reads or writes in a template dir are opened relative to the
 * dir's fd by sb__open_in() (util.c): no symlink followed, no FIFO blocked
 * on, a regular file of ours, and what root creates there is O_EXCL. No
 * VMM sees these dirs at all (the jail binds only the image), so this
 * guards against anyone else who could write STATE, and keeps root's
 * opens honest if that ever changes.
 *
 * The files live on disk (STATE) so that they survive a reboot; the
 * memfds are what clones share (shmem pages: they can be swapped, not
 * dropped).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "machine.h"
#include "net.h"
#include "sandbox.h"
#include "util.h"
#include "vm_internal.h"

/* Bump when what a snapshot means changes (how it is saved or resumed);
 * the QEMU command line is in the key by itself (machine_hash). */
#define MACHINE_REV 6 /* 6: RAM in a sealed memfd, jailed VMMs */
#define SAVE_TIMEOUT_MS 60000
#define WARMUP_TIMEOUT_MS 120000
#define ZYGOTE_TIMEOUT_MS 120000 /* its imports, under TCG */
#define SETTLE_MS 2000
#define MEM_CACHE_MAX 32 /* templates one process may open */
#define MEM_SEALS (F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL)

/* This process's sealed memfd per template dir (fds live as long as the
 * process: sb_template carries the fd, and clones may be spawned from a
 * template at any time). */
static struct {
	char dir[PATH_MAX];
	int fd;
} mem_cache[MEM_CACHE_MAX];
static size_t mem_cached;

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

/* A hash of the template's QEMU command line with its per-VM paths left
 * out: any change to the machine (a device, an option) rebuilds. */
static uint64_t machine_hash(const struct sb_options *o,
			     const struct sb_image *img, enum al_accel accel,
			     bool net, const char *qemu)
{
	struct machine_spec m = {
		.qemu = qemu,
		.accel = accel,
		.mem = {.fd = VMM_FD_MEM, .share = true},
		.cid = sb_carrier_resolve(o) == SB_CARRIER_VSOCK ? 3 : 0,
		.net = net, /* the networked variant: its own key */
	};
	struct vmm_argv a = {0};
	uint64_t h = 0;

	sb__machine_argv(&a, o, img, &m);
	for (size_t i = 0; i < a.n; i++)
		h = h * 31 + fnv1a(a.v[i]);
	sb__vmm_argv_release(&a);
	return h;
}

static int template_inputs(const struct sb_options *o,
			   const struct sb_image *img, enum al_accel accel,
			   bool net, char *out, size_t size)
{
	char qemu[PATH_MAX];
	struct stat st;
	int r = sb__find_binary(o->qemu, qemu, sizeof(qemu));

	if (r < 0)
		return r;
	if (stat(qemu, &st) < 0)
		return -errno;
	if (snprintf(out, size,
		     "rev=%d image=%s name=%s mem=%u vcpus=%u accel=%s "
		     "carrier=%s jail=%d warmup=%016llx zygote=%016llx "
		     "machine=%016llx qemu=%s:%lld:%lld\n",
		     MACHINE_REV, img->hash, img->name, o->memory_mb, o->vcpus,
		     al_accel_name(accel),
		     sb_carrier_resolve(o) == SB_CARRIER_VSOCK ? "vsock"
							       : "serial",
		     (int)o->jail, (unsigned long long)fnv1a(img->warmup),
		     (unsigned long long)fnv1a(img->zygote),
		     (unsigned long long)machine_hash(o, img, accel, net, qemu),
		     qemu, (long long)st.st_size,
		     (long long)st.st_mtime) >= (int)size)
		return -ENAMETOOLONG;
	return 0;
}

/* Shared with snapshot.c (vm_internal.h). */
bool sb__template_read_inputs(int dfd, char *buf, size_t size)
{
	int fd = sb__open_in(dfd, "inputs", O_RDONLY, 0, geteuid());
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, size - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n > 0;
}

/* Shared with snapshot.c and live.c (vm_internal.h). */
int sb__template_dir_inputs(const char *dir, char *buf, size_t size)
{
	int dfd = sb__open_dir(dir);
	bool ok;

	if (dfd < 0)
		return dfd;
	ok = sb__template_read_inputs(dfd, buf, size);
	close(dfd);
	return ok ? 0 : -ENOENT;
}

/* Shared with snapshot.c and live.c (vm_internal.h). */
void sb__template_input_field(const char *inputs, const char *key, char *out,
			      size_t size)
{
	char pat[32];
	const char *p;

	snprintf(pat, sizeof(pat), "%s=", key);
	out[0] = 0;
	for (p = inputs; (p = strstr(p, pat)); p++)
		if (p == inputs || p[-1] == ' ')
			break;
	if (p)
		snprintf(out, size, "%.*s", (int)strcspn(p + strlen(pat), " \n"),
			 p + strlen(pat));
}

/* Is `name` in `dfd` a regular file owned by `owner`? */
static bool file_ok(int dfd, const char *name, uid_t owner)
{
	int fd = sb__open_in(dfd, name, O_RDONLY, 0, owner);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* Is dir a complete template made from exactly `inputs`? */
static bool template_complete(const char *dir, const char *inputs)
{
	char buf[1024];
	int dfd = sb__open_dir(dir);
	bool ok;

	if (dfd < 0)
		return false;
	ok = sb__template_read_inputs(dfd, buf, sizeof(buf)) &&
	     !strcmp(buf, inputs) && file_ok(dfd, "state", geteuid()) &&
	     file_ok(dfd, "mem", geteuid());
	close(dfd);
	return ok;
}

/* Remove a template dir and whatever is in it, following no link. */
static void remove_template_dir(const char *dir)
{
	const char *slash = strrchr(dir, '/');
	char parent[PATH_MAX];
	int pfd;

	if (!slash || slash == dir)
		return;
	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - dir), dir);
	pfd = sb__open_dir(parent);
	if (pfd < 0)
		return;
	sb__remove_at(pfd, slash + 1, 2);
	close(pfd);
}

/* Does the template in `dir` come from another image (stale)? */
static bool other_image(const char *dir, const char *image_hash)
{
	char buf[1024], want[64];
	int dfd = sb__open_dir(dir);
	bool ok;

	if (dfd < 0)
		return true;
	ok = sb__template_read_inputs(dfd, buf, sizeof(buf));
	close(dfd);
	if (!ok)
		return true; /* incomplete */
	snprintf(want, sizeof(want), " image=%s ", image_hash);
	return !strstr(buf, want);
}

/* Remove leftover .build-NAME-* dirs (we hold the lock, so no build of
 * NAME is running) and NAME-* templates of an older image. Templates of
 * the same image with another machine config stay: another worker may
 * be configured so. */
static void remove_stale(const char *base, const char *name,
			 const char *image_hash)
{
	size_t n = strlen(name);
	struct dirent *e;
	DIR *d = opendir(base);

	if (!d)
		return;
	while ((e = readdir(d))) {
		bool build = !strncmp(e->d_name, ".build-", 7);
		const char *s = e->d_name + (build ? 7 : 0);
		char path[PATH_MAX];

		if (strncmp(s, name, n) != 0 || s[n] != '-')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", base, e->d_name) >=
		    (int)sizeof(path))
			continue;
		if (build || other_image(path, image_hash))
			remove_template_dir(path);
	}
	closedir(d);
}

/* Poll query-migrate until it completes; -EIO if it failed. */
static int wait_migration(struct sb_vm *vm, int timeout_ms)
{
	struct al_deadline d = al_deadline_in((uint64_t)timeout_ms);

	for (;;) {
		json_t *ret = NULL;
		const char *st;
		int r;

		r = sb__vm_qmp(vm, "query-migrate", NULL, &ret);
		if (r < 0)
			return r;
		st = json_string_value(json_object_get(ret, "status"));
		if (st && !strcmp(st, "completed")) {
			json_decref(ret);
			return 0;
		}
		if (st && (!strcmp(st, "failed") || !strcmp(st, "cancelled"))) {
			const char *why = json_string_value(
				json_object_get(ret, "error-desc"));

			snprintf(vm->error, sizeof(vm->error),
				 "migration %s: %s", st, why ? why : "?");
			json_decref(ret);
			return -EIO;
		}
		json_decref(ret);
		if (al_deadline_passed(d)) {
			snprintf(vm->error, sizeof(vm->error),
				 "migration did not finish in %d ms",
				 timeout_ms);
			return -ETIMEDOUT;
		}
		usleep(1000);
	}
}

/* Run the image's warm-up command as the job user, then remove whatever
 * it left in the writable dirs: every clone starts from this state, so it
 * must hold the page cache the warm-up filled and nothing else. */
static int template_warmup(struct sb_vm *vm, const struct sb_image *img)
{
	char *argv[] = {"/bin/sh", "-c", (char *)img->warmup, NULL};
	char *clean[] = {"/bin/sh", "-c",
			 "rm -rf /work/* /work/.[!.]* /tmp/* /tmp/.[!.]*; :",
			 NULL};
	struct al_step warm = {.argv = argv, .argc = 3};
	struct al_step tidy = {.argv = clean, .argc = 3};
	struct al_limits lim;
	struct al_step_result res = {0};
	int r;

	if (!img->warmup[0])
		return 0;
	al_job_limits(&(struct al_job){0}, al_policy_default(), &lim);
	r = sb_vm_run_step(vm, &warm, &lim, WARMUP_TIMEOUT_MS, &res);
	if (r == 0 && res.status != AL_OK) {
		snprintf(vm->error, sizeof(vm->error),
			 "warm-up command ended %s (exit %d)",
			 al_status_name(res.status), res.exit_code);
		r = -EIO;
	}
	al_step_result_release(&res);
	if (r == 0)
		r = sb_vm_run_step(vm, &tidy, &lim, WARMUP_TIMEOUT_MS, &res);
	al_step_result_release(&res);
	return r;
}

/* Cold boot with RAM in the memfd (shared), warm up, settle, and make the
 * request a clone starts with. */
static int template_boot(struct sb_vm *vm, const struct sb_options *o,
			 const struct sb_image *img, int mem_fd)
{
	struct machine_mem m = {.fd = mem_fd, .share = true};
	int r = sb__vm_launch(vm, o, img, &m);

	if (r == 0)
		r = sb__vm_connect(vm, o);
	if (r == 0)
		r = sb__vm_handshake(vm, o, o->boot_timeout_ms);
	if (r == 0)
		r = template_warmup(vm, img);
	/* the default job limits, so that a clone's job with those finds
	 * its scratch at that size already (the agent then skips the
	 * remount) and its first step's cgroup made (al_exec_prepare) */
	if (r == 0) {
		struct al_limits lim;

		al_job_limits(&(struct al_job){0}, al_policy_default(), &lim);
		r = sb_vm_setup(vm, &lim);
	}
	/* the python zygote, after the warm-up (whose steps would end it):
	 * every clone then has it waiting for its job (docs/zygote.md) */
	if (r == 0 && img->zygote[0]) {
		r = sb__agent_client_zygote(&vm->agent, img->zygote,
					    ZYGOTE_TIMEOUT_MS);
		if (r < 0)
			sb__vm_fail(vm, r, "agent zygote");
	}
	/* let the guest finish what the boot and warm-up left pending
	 * (deferred frees, timers, writeback): a clone otherwise does it in
	 * its first milliseconds, in front of the job (measured: the first
	 * exchange with a clone fell from ~52 to ~37 ms under TCG) */
	if (r == 0)
		usleep(SETTLE_MS * 1000);
	/* last, the very request a clone starts with: the agent's pages that
	 * request writes lose the copy-on-write marks the warm-up's fork
	 * left, so clones take no page faults for them (measured under TCG:
	 * ~400 fewer translated blocks in a clone's first exchange) */
	if (r == 0) {
		r = sb__vm_reseed(vm, o);
		if (r < 0)
			sb__vm_fail(vm, r, "agent reseed");
	}
	return r;
}

/* Save the device state to `state` in `dfd`, the guest still running: QEMU stops it
 * itself for the device state, and the runstate it records makes clones
 * start on their own. */
int sb__template_save_state(struct sb_vm *vm, int dfd, off_t max)
{
	int fd, r = sb__vm_qmp_ignore_shared(vm);

	if (r < 0)
		return r;
	fd = sb__open_in(dfd, "state", O_WRONLY | O_CREAT, 0600, geteuid());
	if (fd < 0)
		return fd;
	r = sb__vm_qmp_pass_state(vm, fd);
	if (r == 0)
		r = sb__vm_qmp(vm, "migrate",
			       json_pack("{s:s}", "uri", "fd:state"), NULL);
	if (r == 0)
		r = wait_migration(vm, SAVE_TIMEOUT_MS);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && max && lseek(fd, 0, SEEK_END) > max)
		r = -EFBIG;
	close(fd);
	return r;
}

int sb__template_copy_extents(int in, int out)
{
	const size_t chunk = 1u << 20;
	char *buf = malloc(chunk);
	off_t at = 0, end;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	while (r == 0 && (at = lseek(in, at, SEEK_DATA)) >= 0) {
		end = lseek(in, at, SEEK_HOLE);
		if (end < 0) {
			r = -errno;
			break;
		}
		while (r == 0 && at < end) {
			size_t n = end - at < (off_t)chunk ? (size_t)(end - at)
							   : chunk;
			ssize_t got = pread(in, buf, n, at);

			if (got <= 0 || pwrite(out, buf, (size_t)got, at) != got)
				r = got < 0 ? -errno : -EIO;
			at += got > 0 ? got : 0;
		}
	}
	if (r == 0 && at < 0 && errno != ENXIO) /* ENXIO: no data past at */
		r = -errno;
	free(buf);
	return r;
}

int sb__template_memfd(off_t size)
{
	int fd = memfd_create("airlock-template",
			      MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, size) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

/* Write the RAM in `mem_fd` to `mem` in `dfd` (0400) and seal the memfd:
 * its QEMU is dead, so no writable mapping of it is left. */
static int mem_save(int mem_fd, int dfd)
{
	struct stat st;
	int fd, r;

	if (fstat(mem_fd, &st) < 0)
		return -errno;
	fd = sb__open_in(dfd, "mem", O_WRONLY | O_CREAT, 0400, geteuid());
	if (fd < 0)
		return fd;
	r = ftruncate(fd, st.st_size) < 0
		? -errno
		: sb__template_copy_extents(mem_fd, fd);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r == 0) /* the memfd holds these pages: drop the cached copy */
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	if (r == 0 && fcntl(mem_fd, F_ADD_SEALS, MEM_SEALS) < 0)
		r = -errno;
	return r;
}

/* A sealed memfd holding the RAM saved in `dir`/mem (root's file, no
 * link followed, no FIFO blocked on). */
static int mem_load(const char *dir)
{
	struct stat st;
	int dfd = sb__open_dir(dir), fd, mfd = -1, r;

	if (dfd < 0)
		return dfd;
	fd = sb__open_in(dfd, "mem", O_RDONLY, 0, geteuid());
	close(dfd);
	if (fd < 0)
		return fd;
	r = fstat(fd, &st) < 0 ? -errno : 0;
	if (r == 0)
		r = mfd = sb__template_memfd(st.st_size);
	if (r >= 0)
		r = sb__template_copy_extents(fd, mfd);
	if (r == 0)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (r == 0 && fcntl(mfd, F_ADD_SEALS, MEM_SEALS) < 0)
		r = -errno;
	close(fd);
	if (r < 0 && mfd >= 0)
		close(mfd);
	return r < 0 ? r : mfd;
}

/* The process's memfd of template dir `dir`: cached, else loaded from
 * its `mem` (or `fd`, a fresh build's, when >= 0: the cache takes it). */
static int mem_for(const char *dir, int fd)
{
	for (size_t i = 0; i < mem_cached; i++) {
		if (strcmp(mem_cache[i].dir, dir) != 0)
			continue;
		/* a rebuild under the same key (its files were removed):
		 * the new RAM goes with the new state; the old fd stays
		 * open, as an older sb_template may still name it */
		if (fd >= 0)
			mem_cache[i].fd = fd;
		return mem_cache[i].fd;
	}
	if (mem_cached == MEM_CACHE_MAX) {
		if (fd >= 0)
			close(fd);
		return -EMFILE;
	}
	if (fd < 0) {
		fd = mem_load(dir);
		if (fd < 0)
			return fd;
	}
	snprintf(mem_cache[mem_cached].dir, PATH_MAX, "%s", dir);
	mem_cache[mem_cached++].fd = fd;
	return fd;
}

/* Cold boot on a fresh memfd, save the device state to `state` in dfd, end
 * that QEMU, save the RAM to `mem` there and seal it: *ret_fd. */
static int template_build(const struct sb_options *o,
			  const struct sb_image *img, enum al_accel accel,
			  bool net, int dfd, int *ret_fd, char *err,
			  size_t errlen)
{
	struct sb_vm *vm = NULL;
	int fd = sb__template_memfd((off_t)o->memory_mb << 20), r;

	if (fd < 0)
		return fd;
	r = sb__vm_create(o, img->name, accel, &vm);
	/* the networked variant boots with its NIC on a tap in a namespace
	 * with no way out: the guest configures it, nothing reaches it */
	if (r == 0 && net)
		r = sb_net_open(o, NULL, &vm->net, vm->error,
				sizeof(vm->error));
	if (r == 0)
		r = template_boot(vm, o, img, fd);
	if (r == 0)
		r = sb__template_save_state(vm, dfd, 0);
	if (r < 0)
		snprintf(err, errlen, "%s",
			 vm && vm->error[0] ? vm->error : strerror(-r));
	sb_vm_destroy(vm); /* QEMU killed and reaped: the RAM is still */
	if (r == 0) {
		r = mem_save(fd, dfd);
		if (r < 0)
			snprintf(err, errlen, "save guest RAM: %s",
				 strerror(-r));
	}
	if (r < 0)
		close(fd);
	else
		*ret_fd = fd;
	return r;
}

/* `inputs`, written last: the template is complete. */
static int write_inputs(int dfd, const char *inputs)
{
	return sb__write_file(dfd, "inputs", inputs, strlen(inputs), 0400);
}

/* Build under the lock, in a temp dir renamed into place. */
static int template_create(const struct sb_options *o, struct sb_template *t,
			   const char *base, const char *inputs, char *err,
			   size_t errlen)
{
	char tmp[PATH_MAX];
	uint64_t t0 = al_now_ms();
	int fd = -1, dfd, r;

	if (snprintf(tmp, sizeof(tmp), "%s/.build-%s-XXXXXX", base,
		     t->img.name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	if (!mkdtemp(tmp))
		return -errno;
	/* root's alone: only we write here and nobody else reads guest RAM
	 * (no VMM sees this dir at all: it gets fds) */
	if (chmod(tmp, 0700) < 0) {
		r = -errno;
		rmdir(tmp);
		return r;
	}
	dfd = sb__open_dir(tmp);
	r = dfd < 0 ? dfd
		    : template_build(o, &t->img, t->accel, t->net, dfd, &fd,
				     err, errlen);
	if (r == 0)
		r = write_inputs(dfd, inputs);
	if (dfd >= 0)
		close(dfd);
	if (r == 0 && rename(tmp, t->dir) < 0)
		r = -errno;
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		remove_template_dir(tmp);
		return r;
	}
	t->mem_fd = mem_for(t->dir, fd);
	if (t->mem_fd < 0)
		return t->mem_fd;
	t->built = true;
	t->build_ms = al_now_ms() - t0;
	return 0;
}

int sb_template_open(const struct sb_options *o, const char *template_,
		     struct sb_template *ret)
{
	return sb_template_open_net(o, template_, false, ret);
}

int sb_template_open_net(const struct sb_options *o, const char *template_,
			 bool net, struct sb_template *ret)
{
	char base[PATH_MAX], lock[PATH_MAX + 64], inputs[PATH_MAX + 256];
	char err[256] = "";
	struct sb_template t = {0};
	int lock_fd = -1, r;

	r = sb_image_open(o, template_, &t.img);
	if (r < 0)
		return r;
	t.accel = sb_accel_resolve(o, &t.img);
	t.net = net;
	r = template_inputs(o, &t.img, t.accel, net, inputs, sizeof(inputs));
	if (r < 0)
		return r;
	snprintf(t.key, sizeof(t.key), "%016llx",
		 (unsigned long long)fnv1a(inputs));
	if (snprintf(base, sizeof(base), "%s/templates", o->state_dir) >=
		    (int)sizeof(base) ||
	    snprintf(t.dir, sizeof(t.dir), "%s/%s-%s", base, template_,
		     t.key) >= (int)sizeof(t.dir))
		return -ENAMETOOLONG;
	if (template_complete(t.dir, inputs))
		goto cached;
	r = sb_mkdirs(base, 0700);
	if (r < 0)
		return r;
	snprintf(lock, sizeof(lock), "%s/.%s.lock", base, template_);
	lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock_fd < 0)
		return -errno;
	if (flock(lock_fd, LOCK_EX) < 0) {
		r = -errno;
		goto out;
	}
	/* another process may have built it while we waited */
	if (!template_complete(t.dir, inputs)) {
		remove_stale(base, template_, t.img.hash);
		/* an incomplete or tampered-with one would block the rename */
		remove_template_dir(t.dir);
		r = template_create(o, &t, base, inputs, err, sizeof(err));
		goto done;
	}
cached:
	/* one made 0755 with 0444 files by an older version */
	sb__private_files(t.dir);
	t.mem_fd = mem_for(t.dir, -1);
	r = t.mem_fd < 0 ? t.mem_fd : 0;
done:
	if (r == 0)
		*ret = t;
out:
	if (lock_fd >= 0)
		close(lock_fd); /* releases the lock */
	if (r < 0 && err[0])
		sb_log(o, SB_LOG_WARN, "template %s: %s", template_, err);
	return r;
}


void sb_template_release_all(void)
{
	for (size_t i = 0; i < mem_cached; i++)
		close(mem_cache[i].fd);
	mem_cached = 0;
}
