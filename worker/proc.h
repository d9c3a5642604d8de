/* proc.h: a worker process: one job at a time, fed by the dispatcher over
 * a socketpair.
 *
 * The dispatcher (dispatcher/serve/serve.c) forks one process per worker slot.
 * Fork without exec, on purpose: the child needs the exact effective
 * configuration (config file, CLI flags, embedded-mode overrides) as
 * already resolved in memory, which an exec would have to serialise and
 * re-validate; and it needs nothing of the parent's state, so right after
 * the fork it closes every descriptor but its socket (close_range), resets
 * every signal disposition and mask, asks for SIGKILL when the dispatcher
 * dies (PR_SET_PDEATHSIG) and moves to its own process group, so a Ctrl-C
 * on the terminal reaches only the dispatcher, which decides. The child
 * never touches the parent's libuv loop or Redis connections (it could not:
 * their descriptors are closed) and never returns into the parent's code.
 *
 * Protocol on the socketpair, frames as in results/proto.h (4-byte
 * big-endian length, then one msgpack document, capped before allocating):
 *
 *   dispatcher -> worker   {job: bin (the job's msgpack), queued_ms: uint,
 *                           attempt: uint, snap?: {name, base, image,
 *                           sha, key: str, setup: bin} (worker.h's
 *                           struct al_snapdef, checked by the worker)}
 *   worker -> dispatcher   the result (results.h msgpack)
 *
 * One request, one reply, strictly alternating. The worker exits when the
 * dispatcher closes its end. A job it cannot decode (it should not happen:
 * the dispatcher validated it) is answered with an RJ result, never by
 * dying.
 *
 * Using it (dispatcher side):
 *
 *  1. al_proc_spawn(): fork the worker; *ret holds its pid, a pidfd
 *     (readable once it exits) and the socket to talk on.
 *  2. al_proc_job_frame() for each job; read the reply with a
 *     `struct al_frame_reader` capped at AL_RESULT_MAX_BYTES.
 *  3. Close the socket to stop it; SIGKILL its process group to kill it;
 *     reap it (waitpid) when the pidfd turns readable; al_proc_release().
 */
#ifndef AL_PROC_H
#define AL_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "worker.h"

/* A job and, at most, one snapshot definition with its setup job. */
#define AL_PROC_JOB_FRAME_MAX (2 * AL_JOB_MAX_BYTES + 1024u)

struct al_proc {
	pid_t pid; /* the worker, -1 once reaped */
	int fd;	   /* our end of the socketpair, -1 when closed */
	int pidfd; /* readable when the worker exits, -1 when closed */
};

/* What the dispatcher tells the worker about the job it hands over. */
struct al_proc_job {
	const char *payload; /* the job's msgpack (points into the frame) */
	size_t len;	     /* bytes of payload */
	uint64_t queued_ms;  /* how long it waited */
	uint32_t attempt;    /* 1 for the first delivery */
	struct al_snapdef snap; /* the published definition of the snapshot
				 * the job names; snap.name[0] = none (its
				 * setup points into the frame) */
};

/* What runs one decoded job inside a worker process, with the contract of
 * al_worker_run() (*ret always filled; 0, or -ENOMEM when not even a
 * result could be built). NULL means al_worker_run(): production passes
 * NULL; tests pass a function that returns canned results (or dies, or
 * hangs) so the dispatcher's retries and drains run without VMs. */
typedef int (*al_proc_run_fn)(struct al_worker *w, const struct al_job *job,
			      uint64_t queued_ms, uint32_t attempt,
			      struct al_result *ret);

/* Fork a worker running al_proc_serve() with a worker built from sb,
 * policy and name (all copied by the fork) and `run` (NULL =
 * al_worker_run). Returns 0 or -errno. */
int al_proc_spawn(const struct sb_options *sb, const struct al_policy *policy,
		  const char *name, al_proc_run_fn run, struct al_proc *ret);
/* Fork a child set up as a worker is (its memory cgroup, no inherited
 * handlers, masks or descriptors but one socket to the parent, SIGKILL
 * when the parent dies, a process group of its own). In the child: 0,
 * with *ret_fd its end; in the parent: the child's pid, with *ret_fd the
 * parent's end (CLOEXEC); -errno on failure. al_proc_spawn() uses it, and
 * so do session processes (dispatcher/session/). */
pid_t al_proc_fork(const struct sb_options *sb, int *ret_fd);
/* Close what is left of `p` (socket, pidfd); does not kill or reap. */
void al_proc_release(struct al_proc *p);

/* The worker's loop on `fd`, each job run by `run` (NULL =
 * al_worker_run): returns 0 when the dispatcher closed the socket, -errno
 * on an I/O or protocol failure. */
int al_proc_serve(int fd, struct al_worker *w, al_proc_run_fn run);

/* One job frame, prefix included (malloc'd). 0, -E2BIG, -ENOMEM. */
int al_proc_job_frame(const struct al_proc_job *job, char **ret,
		      size_t *ret_len);
/* Decode a job frame body; ret->payload points into body. 0 or
 * -EBADMSG. */
int al_proc_job_decode(const void *body, size_t len, struct al_proc_job *ret);

#endif
