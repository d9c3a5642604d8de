/* proc.c: the worker process: spawn, frame codec, the job loop (proc.h).
 *
 * The loop reads with blocking I/O: a worker does one thing at a time and
 * the dispatcher is the one that watches clocks (it kills a worker that
 * runs past its job's wall time plus slack). Reads never go past the frame
 * being read (al_frame_reader_want), so nothing is buffered across jobs.
 *
 * Memory: right after the fork the worker moves into a host memory cgroup
 * of its own (sb->worker_memory_mb; sandbox/cgroup.c) and reports how
 * that went over a pipe before al_proc_spawn() returns. As root that is
 * fail-closed: a worker that cannot be capped is not started and the
 * spawn fails with the reason. A job cannot reach the cap (job.c keeps
 * the result within its budget); the cap is for Airlock's own bugs.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msgpack.h>

#include "proc.h"
#include "proto.h"
#include "sandbox.h"

#define PROC_FD 3 /* the socket's number in the worker */

/* --- frames ------------------------------------------------------------------
 */

static void put_be32(char *p, uint32_t v)
{
	p[0] = (char)(v >> 24);
	p[1] = (char)(v >> 16);
	p[2] = (char)(v >> 8);
	p[3] = (char)v;
}

static int pack_str(msgpack_packer *pk, const char *k, const char *v)
{
	return msgpack_pack_str_with_body(pk, k, strlen(k)) ||
	       msgpack_pack_str_with_body(pk, v, strlen(v));
}

static int pack_snap(msgpack_packer *pk, const struct al_snapdef *d)
{
	return msgpack_pack_str_with_body(pk, "snap", 4) ||
	       msgpack_pack_map(pk, 6) || pack_str(pk, "name", d->name) ||
	       pack_str(pk, "base", d->base) ||
	       pack_str(pk, "image", d->image) ||
	       pack_str(pk, "sha", d->setup_sha) ||
	       pack_str(pk, "key", d->key) ||
	       msgpack_pack_str_with_body(pk, "setup", 5) ||
	       msgpack_pack_bin_with_body(pk, d->setup, d->setup_len);
}

int al_proc_job_frame(const struct al_proc_job *job, char **ret,
		      size_t *ret_len)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	char hdr[AL_FRAME_HDR] = {0};

	if (job->len > AL_JOB_MAX_BYTES)
		return -E2BIG;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	/* the prefix first, patched once the body length is known */
	if (job->snap.name[0] && job->snap.setup_len > AL_JOB_MAX_BYTES)
		return -E2BIG;
	if (msgpack_sbuffer_write(&sb, hdr, sizeof(hdr)) ||
	    msgpack_pack_map(&pk, job->snap.name[0] ? 4 : 3) ||
	    msgpack_pack_str_with_body(&pk, "job", 3) ||
	    msgpack_pack_bin_with_body(&pk, job->payload, job->len) ||
	    msgpack_pack_str_with_body(&pk, "queued_ms", 9) ||
	    msgpack_pack_uint64(&pk, job->queued_ms) ||
	    msgpack_pack_str_with_body(&pk, "attempt", 7) ||
	    msgpack_pack_uint32(&pk, job->attempt) ||
	    (job->snap.name[0] && pack_snap(&pk, &job->snap))) {
		msgpack_sbuffer_destroy(&sb);
		return -ENOMEM;
	}
	put_be32(sb.data, (uint32_t)(sb.size - AL_FRAME_HDR));
	*ret_len = sb.size;
	*ret = msgpack_sbuffer_release(&sb);
	return 0;
}

static bool key_is(const msgpack_object *k, const char *s)
{
	size_t n = strlen(s);

	return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
	       !memcmp(k->via.str.ptr, s, n);
}

/* A str value into a buffer of `size` (it and its NUL must fit). */
static bool get_str(const msgpack_object *v, char *out, size_t size)
{
	if (v->type != MSGPACK_OBJECT_STR || v->via.str.size >= size)
		return false;
	memcpy(out, v->via.str.ptr, v->via.str.size);
	out[v->via.str.size] = 0;
	return strlen(out) == v->via.str.size; /* no NUL inside */
}

#define SNAP_STR(f) {#f, offsetof(struct al_snapdef, f), \
		     sizeof(((struct al_snapdef *)0)->f)}
/* The `snap` map's string fields ("sha" is setup_sha), then `setup`. */
static const struct {
	const char *key;
	size_t off, size;
} snap_strs[] = {
    SNAP_STR(name), SNAP_STR(base), SNAP_STR(image),
    {"sha", offsetof(struct al_snapdef, setup_sha), 65}, SNAP_STR(key),
};
#define SNAP_N (sizeof(snap_strs) / sizeof(snap_strs[0]))

static bool snap_field(const msgpack_object *k, const msgpack_object *v,
		       struct al_snapdef *d, unsigned *seen)
{
	if (key_is(k, "setup")) {
		if (v->type != MSGPACK_OBJECT_BIN ||
		    v->via.bin.size > AL_JOB_MAX_BYTES)
			return false;
		d->setup = v->via.bin.ptr; /* into the frame, not the zone */
		d->setup_len = v->via.bin.size;
		*seen |= 1u << SNAP_N;
		return true;
	}
	for (size_t i = 0; i < SNAP_N; i++)
		if (key_is(k, snap_strs[i].key)) {
			*seen |= 1u << i;
			return get_str(v, (char *)d + snap_strs[i].off,
				       snap_strs[i].size);
		}
	return false;
}

static bool snap_decode(const msgpack_object *o, struct al_snapdef *d)
{
	unsigned seen = 0;

	if (o->type != MSGPACK_OBJECT_MAP || o->via.map.size != SNAP_N + 1)
		return false;
	for (uint32_t i = 0; i < o->via.map.size; i++)
		if (!snap_field(&o->via.map.ptr[i].key,
				&o->via.map.ptr[i].val, d, &seen))
			return false;
	return seen == (1u << (SNAP_N + 1)) - 1 && d->name[0];
}

int al_proc_job_decode(const void *body, size_t len, struct al_proc_job *ret)
{
	struct al_proc_job j = {0};
	msgpack_zone zone;
	msgpack_object o;
	bool have_job = false;
	int r;

	if (!msgpack_zone_init(&zone, 1024))
		return -ENOMEM;
	r = al_mp_unpack(body, len, 32, &zone, &o); /* 4 pairs, snap 6 */
	if (r < 0)
		goto out;
	r = -EBADMSG;
	if (o.type != MSGPACK_OBJECT_MAP)
		goto out;
	for (uint32_t i = 0; i < o.via.map.size; i++) {
		const msgpack_object *k = &o.via.map.ptr[i].key;
		const msgpack_object *v = &o.via.map.ptr[i].val;

		if (key_is(k, "job") && v->type == MSGPACK_OBJECT_BIN) {
			/* bin bodies point into `body`, not the zone */
			j.payload = v->via.bin.ptr;
			j.len = v->via.bin.size;
			have_job = true;
		} else if (key_is(k, "queued_ms") &&
			   v->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
			j.queued_ms = v->via.u64;
		} else if (key_is(k, "attempt") &&
			   v->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
			   v->via.u64 <= UINT32_MAX) {
			j.attempt = (uint32_t)v->via.u64;
		} else if (key_is(k, "snap") && !j.snap.name[0]) {
			if (!snap_decode(v, &j.snap))
				goto out;
		} else {
			goto out;
		}
	}
	if (!have_job || j.len > AL_JOB_MAX_BYTES)
		goto out;
	*ret = j;
	r = 0;
out:
	msgpack_zone_destroy(&zone);
	return r;
}

/* --- the worker's loop
 * --------------------------------------------------------- */

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read one frame body (malloc'd) into *ret. 0, -ENODATA on EOF before a
 * frame starts, -EPIPE on EOF inside one, -EMSGSIZE, -errno. */
static int read_frame(int fd, struct al_frame_reader *fr, uint8_t **ret,
		      size_t *ret_len)
{
	char buf[64 << 10];
	bool started = false;

	while (!al_frame_reader_ready(fr)) {
		size_t want = al_frame_reader_want(fr);
		ssize_t n =
		    read(fd, buf, want < sizeof(buf) ? want : sizeof(buf));
		long used;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return started ? -EPIPE : -ENODATA;
		started = true;
		used = al_frame_reader_feed(fr, buf, (size_t)n);
		if (used < 0)
			return (int)used;
	}
	return al_frame_reader_take(fr, ret, ret_len);
}

/* Run the job of one frame into *res. */
static int run_one(struct al_worker *w, al_proc_run_fn run, const uint8_t *body,
		   size_t len, struct al_result *res)
{
	struct al_proc_job pj;
	struct al_job job = {0};
	struct al_diags d;
	char digest[AL_DIGEST_HEX + 1];
	int r;

	al_diags_init(&d);
	if (al_proc_job_decode(body, len, &pj) < 0) {
		al_diags_add(&d, "", "dispatcher sent a malformed job frame");
		return al_worker_reject(NULL, &d, res);
	}
	al_digest_hex(pj.payload, pj.len, digest);
	if (al_job_from_msgpack(pj.payload, pj.len, &job, &d) < 0)
		r = al_worker_reject(d.id[0] ? d.id : NULL, &d, res);
	else if ((r = al_job_expand_language(&job, w->policy, &d)) < 0)
		/* `language`: the same expansion whatever the front door */
		r = r == -ENOMEM ? r : al_worker_reject(job.id, &d, res);
	else {
		w->snapdef = pj.snap.name[0] ? &pj.snap : NULL;
		r = (run ? run : al_worker_run)(w, &job, pj.queued_ms,
						pj.attempt ? pj.attempt : 1,
						res);
		w->snapdef = NULL; /* it points into this frame */
	}
	al_job_release(&job);
	/* which payload this result is of: clients check it before they
	 * use a stored result (docs/queue.md, "Job ids") */
	if (r == 0 && !res->digest && !(res->digest = strdup(digest)))
		r = -ENOMEM;
	return r;
}

/* A result over AL_RESULT_MAX_BYTES (job.c's budget should make that
 * impossible): keep the statuses, drop the bytes, say so (XX). */
static int shrink(struct al_result *res)
{
	for (size_t i = 0; i < res->n_steps; i++) {
		struct al_step_result *sr = &res->steps[i];

		sr->stdout_truncated |= sr->stdout_.len > 0;
		sr->stderr_truncated |= sr->stderr_.len > 0;
		free(sr->stdout_.data);
		free(sr->stderr_.data);
		sr->stdout_ = sr->stderr_ = (struct al_blob){0};
	}
	for (size_t i = 0; i < res->n_files; i++) {
		free(res->files[i].path);
		free(res->files[i].content.data);
	}
	free(res->files);
	res->files = NULL;
	res->n_files = 0;
	free(res->error);
	res->status = AL_XX;
	res->error = strdup("result over the cap: output and files dropped");
	return res->error ? 0 : -ENOMEM;
}

/* Encode `res` (within the cap) as one frame and send it. */
static int send_result(int fd, struct al_result *res)
{
	char *out = NULL, hdr[AL_FRAME_HDR];
	size_t olen = 0;
	int r;

	r = al_result_to_msgpack(res, &out, &olen);
	if (r == 0 && olen > AL_RESULT_MAX_BYTES) {
		free(out);
		out = NULL;
		r = shrink(res);
		if (r == 0)
			r = al_result_to_msgpack(res, &out, &olen);
		if (r == 0 && olen > AL_RESULT_MAX_BYTES)
			r = -E2BIG;
	}
	if (r == 0) {
		put_be32(hdr, (uint32_t)olen);
		r = write_all(fd, hdr, sizeof(hdr));
		if (r == 0)
			r = write_all(fd, out, olen);
	}
	free(out);
	return r;
}

/* How long the worker waits for a next job before it starts a restore or
 * a warm-up: with a backlog the dispatcher sends the next job within a
 * few ms of a result, and a warm-up begun then would be in its way. */
#define JOB_GRACE_MS 50

/* Is a job (or the dispatcher's hang-up) waiting on the socket? Asked
 * before each restore and warm-up (sb_pool_warm). */
static bool job_waiting(void *arg)
{
	struct pollfd p = {*(int *)arg, POLLIN, 0};

	return poll(&p, 1, JOB_GRACE_MS) > 0;
}

/* Between jobs: keep the warm clones (al_worker_idle) until a job comes,
 * waking when they are due a check (they age, their QEMU may die). */
static void idle_wait(int fd, struct al_worker *w)
{
	int ms;

	al_worker_idle(w);
	while ((ms = al_worker_idle_ms(w)) >= 0) {
		struct pollfd p = {fd, POLLIN, 0};

		if (poll(&p, 1, ms) != 0)
			return;
		al_worker_idle(w);
	}
}

int al_proc_serve(int fd, struct al_worker *w, al_proc_run_fn run)
{
	struct al_frame_reader fr;
	int r;

	al_frame_reader_init(&fr, AL_PROC_JOB_FRAME_MAX);
	w->job_waiting = job_waiting;
	w->job_waiting_arg = &fd;
	/* the warm clones the config asks for, before the first job */
	idle_wait(fd, w);
	for (;;) {
		struct al_result res = {0};
		uint8_t *body = NULL;
		size_t len = 0;

		r = read_frame(fd, &fr, &body, &len);
		if (r == -ENODATA) {
			r = 0;
			break;
		}
		if (r < 0)
			break;
		r = run_one(w, run, body, len, &res);
		free(body);
		if (r == 0)
			r = send_result(fd, &res);
		al_result_release(&res);
		if (r < 0)
			break;
		idle_wait(fd, w); /* the next job's clone, off its path */
	}
	w->job_waiting = NULL;
	al_frame_reader_release(&fr);
	return r;
}

/* --- spawning
 * -------------------------------------------------------------------- */

/* In the child, before anything else: no inherited handlers, masks,
 * descriptors; die with the parent; own process group. */
static void child_setup(int sock, pid_t parent)
{
	struct sigaction sa = {.sa_handler = SIG_DFL};
	sigset_t all;
	int devnull;

	for (int s = 1; s < NSIG; s++)
		sigaction(s, &sa, NULL); /* fails harmlessly for KILL/STOP */
	signal(SIGPIPE, SIG_IGN);	 /* a dead dispatcher is EPIPE */
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(1);
	setpgid(0, 0);
	if (sock != PROC_FD) {
		if (dup2(sock, PROC_FD) < 0)
			_exit(1);
	} else if (fcntl(PROC_FD, F_SETFD, 0) < 0) {
		_exit(1);
	}
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull >= 0 && devnull != STDIN_FILENO)
		dup2(devnull, STDIN_FILENO);
	/* everything else the dispatcher had open: loop, Redis, siblings */
	if (syscall(SYS_close_range, PROC_FD + 1, ~0u, 0) < 0)
		for (int fd = PROC_FD + 1; fd < 65536; fd++)
			close(fd);
}

/* In the child: join the worker's memory cgroup and write how that went
 * (0 or -errno) to `fd`. Without the cgroup only root fails (closed). */
static int join_cgroup(const struct sb_options *sb, int fd)
{
	char dir[PATH_MAX];
	int r = 0;

	if (sb->worker_memory_mb)
		r = sb_cg_worker_join((uint64_t)sb->worker_memory_mb << 20, dir,
				      sizeof(dir));
	if (r < 0 && geteuid() != 0)
		r = 0; /* as on hosts without cgroups */
	if (write(fd, &r, sizeof(r)) != sizeof(r))
		r = -EPIPE;
	close(fd);
	return r;
}

/* In the parent: the child's join_cgroup() report; -ECHILD if it died
 * before it could say. */
static int joined(int fd)
{
	ssize_t n;
	int r;

	do
		n = read(fd, &r, sizeof(r));
	while (n < 0 && errno == EINTR);
	close(fd);
	return n == sizeof(r) ? r : -ECHILD;
}

/* Kill and reap a child that never became a worker. */
static void kill_child(pid_t pid)
{
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

pid_t al_proc_fork(const struct sb_options *sb, int *ret_fd)
{
	pid_t parent = getpid(), pid;
	int sv[2], st[2], r;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	if (pipe2(st, O_CLOEXEC) < 0) {
		r = -errno;
		close(sv[0]);
		close(sv[1]);
		return r;
	}
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(sv[0]);
		close(sv[1]);
		close(st[0]);
		close(st[1]);
		return r;
	}
	if (pid == 0) {
		close(st[0]);
		if (join_cgroup(sb, st[1]) < 0)
			_exit(1);
		child_setup(sv[1], parent);
		*ret_fd = PROC_FD;
		return 0;
	}
	close(sv[1]);
	close(st[1]);
	/* the parent may also set the group: whoever runs first wins */
	setpgid(pid, pid);
	r = joined(st[0]);
	if (r < 0) {
		kill_child(pid);
		close(sv[0]);
		return r;
	}
	*ret_fd = sv[0];
	return pid;
}

int al_proc_spawn(const struct sb_options *sb, const struct al_policy *policy,
		  const char *name, al_proc_run_fn run, struct al_proc *ret)
{
	int fd, pidfd, r;
	pid_t pid = al_proc_fork(sb, &fd);

	if (pid < 0)
		return (int)pid;
	if (pid == 0) {
		struct al_worker w;

		al_worker_init(&w, sb, policy, name);
		r = al_proc_serve(fd, &w, run);
		al_worker_release(&w);
		_exit(r < 0 ? 1 : 0);
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		r = -errno;
		kill_child(pid);
		close(fd);
		return r;
	}
	ret->pid = pid;
	ret->fd = fd;
	ret->pidfd = pidfd;
	return 0;
}

void al_proc_release(struct al_proc *p)
{
	if (p->fd >= 0)
		close(p->fd);
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->fd = -1;
	p->pidfd = -1;
}
