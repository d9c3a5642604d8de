/* servetest.h: a dispatcher (serve.c itself, al_serve_run) on a thread of
 * its own, with canned workers in place of VMs: what test_serve,
 * test_cluster, test_partitions, test_sentinel and tools/bench/bench_shard
 * share.
 *
 *  1. servetest_opts(h, queue, workers, run): al_serve_opts_init() with the
 *     tests' fast timings (heartbeat 200 ms, reclaim past an entry's wall
 *     time + 500 ms); the caller sets h->o.url and anything of its own.
 *  2. servetest_start(h): al_serve_run(&h->o) on a thread, its stop_fd a
 *     pipe whose write end h keeps.
 *  3. servetest_stop(h): ask it to drain and join it; or the two halves,
 *     servetest_request_stop() and servetest_join(), to act in between.
 *
 * Or, for the tests that SIGKILL a dispatcher, servetest_fork(h, group)
 * after step 1: al_serve_run() in a child process (of a process group of
 * its own with `group`, so killing the group kills its workers too).
 *
 * servetest_result() fills the one-step result a canned al_proc_run_fn
 * returns (in the worker process); servetest_at_once is such a runner:
 * an OK result at once. No cmocka here: the benchmark uses it too.
 */
#ifndef AL_SERVETEST_H
#define AL_SERVETEST_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "serve.h"

struct servetest {
	struct al_serve_opts o; /* its options */
	struct sb_options sb;	/* unused by canned workers */
	pthread_t thread;	/* runs al_serve_run */
	int stop_r, stop_w;	/* stop_fd and our end */
	int rc;			/* what al_serve_run returned */
};

/* One step, status OK, or XX with the error "canned failure" when `xx`.
 * 0 or -ENOMEM (the worker reports its failure). */
static inline int servetest_result(const struct al_worker *w,
				   const struct al_job *job, uint64_t queued_ms,
				   uint32_t attempt, bool xx,
				   struct al_result *res)
{
	memset(res, 0, sizeof(*res));
	res->id = strdup(job->id ? job->id : "-");
	res->worker = strdup(w->name);
	res->attempt = attempt;
	res->timing.queued_ms = queued_ms;
	res->steps = calloc(1, sizeof(*res->steps));
	res->n_steps = 1;
	if (!res->id || !res->worker || !res->steps)
		return -ENOMEM;
	res->status = res->steps[0].status = xx ? AL_XX : AL_OK;
	res->steps[0].has_exit_code = !xx;
	if (xx && !(res->error = strdup("canned failure")))
		return -ENOMEM;
	return 0;
}

/* al_proc_run_fn: the test sandbox, an OK result at once. */
static inline int servetest_at_once(struct al_worker *w,
				    const struct al_job *job,
				    uint64_t queued_ms, uint32_t attempt,
				    struct al_result *res)
{
	return servetest_result(w, job, queued_ms, attempt, false, res);
}

/* Step 1: the options, h zeroed first (h->o.url is the caller's). */
static inline void servetest_opts(struct servetest *h, const char *queue,
				  unsigned workers, al_proc_run_fn run)
{
	memset(h, 0, sizeof(*h));
	al_serve_opts_init(&h->o);
	snprintf(h->o.queue, sizeof(h->o.queue), "%s", queue);
	h->o.connect_timeout_ms = 1000;
	h->o.command_timeout_ms = 3000;
	h->o.workers = workers;
	h->o.heartbeat_ms = 200;
	h->o.visibility_slack_ms = 500;
	h->o.trim_interval_ms = 1000;
	h->o.shutdown_grace_ms = 10000;
	h->o.sb = &h->sb;
	h->o.run = run;
	h->stop_r = h->stop_w = -1;
}

static inline void *servetest_main(void *p)
{
	struct servetest *h = p;

	h->rc = al_serve_run(&h->o);
	return NULL;
}

/* Step 2: 0, or -errno (nothing started). */
static inline int servetest_start(struct servetest *h)
{
	int p[2], r;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	h->stop_r = h->o.stop_fd = p[0];
	h->stop_w = p[1];
	r = pthread_create(&h->thread, NULL, servetest_main, h);
	if (r) {
		close(p[0]);
		close(p[1]);
		h->stop_r = h->stop_w = -1;
	}
	return -r;
}

/* Step 3, first half: the dispatcher starts to drain. 0 or -EIO. */
static inline int servetest_request_stop(struct servetest *h)
{
	return write(h->stop_w, "x", 1) == 1 ? 0 : -EIO;
}

/* Step 3, second half: wait for the drain to end; al_serve_run's return
 * (0 = drained and the loop closed clean), or -errno of the join. */
static inline int servetest_join(struct servetest *h)
{
	int r = pthread_join(h->thread, NULL);

	close(h->stop_r);
	close(h->stop_w);
	h->stop_r = h->stop_w = -1;
	return r ? -r : h->rc;
}

/* al_serve_run(&h->o) in a child that dies with us; its pid, or -errno. */
static inline pid_t servetest_fork(struct servetest *h, bool group)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (group)
			setpgid(0, 0);
		_exit(al_serve_run(&h->o) < 0 ? 1 : 0);
	}
	if (group)
		setpgid(pid, pid); /* before we signal it, whoever runs first */
	return pid;
}

/* Step 3: both halves; 0 when the dispatcher stopped clean. */
static inline int servetest_stop(struct servetest *h)
{
	if (servetest_request_stop(h) < 0)
		return -EIO; /* a join would wait for ever */
	return servetest_join(h);
}

#endif
