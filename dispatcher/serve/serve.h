/* serve.h: the dispatcher: Redis stream in, worker processes, results out.
 *
 * One libuv loop, two Redis connections (commands; the blocking
 * XREADGROUP), N worker processes (worker/proc.h). serve.c's opening
 * comment is the theory of operation; docs/queue.md is the user's view.
 *
 * Using it:
 *
 *  1. Fill a `struct al_serve_opts` (al_serve_opts_init() sets the queue
 *     defaults of docs/config.md; the CLI copies the config over them).
 *  2. al_serve_run(): runs until SIGTERM or SIGINT (or a write to
 *     stop_fd), then drains: stops reading, lets running jobs finish for up
 *     to shutdown_grace_ms, hands every other claimed job back to the
 *     group, reaps every worker. Returns 0 after a clean drain, -errno when
 *     it could not start, -EBUSY when libuv handles were left open at the
 *     end (a bug: uv_loop_close() refused).
 *
 * `run` is the seam for tests (tests/queue/test_serve.c): the worker
 * processes are still forked and spoken to as in production, but each job
 * is answered by that function instead of a VM.
 */
#ifndef AL_SERVE_H
#define AL_SERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "metrics.h"
#include "proc.h"
#include "queue.h"
#include "results.h"
#include "sandbox.h"

struct al_serve_opts {
	struct alq_url url;		/* Redis */
	char queue[AL_NAME_MAX + 1];	/* queue name (hash tag) */
	unsigned partitions;		/* partitions of the queue, read in turn
					   (queue.h); 0 or 1 = none */
	uint32_t connect_timeout_ms;	/* per connect attempt */
	uint32_t command_timeout_ms;	/* per reply */
	uint32_t workers;		/* worker processes, >= 1 */
	uint32_t max_deliveries;	/* then dead-letter with XX */
	uint32_t result_ttl_s;		/* results expire after this */
	uint32_t visibility_slack_ms;	/* reclaim after wall_ms + this */
	uint32_t heartbeat_ms;		/* claim refresh of held jobs */
	uint32_t trim_interval_ms;	/* stream trim period */
	bool dead_letter;		/* keep poison jobs in :dead */
	uint32_t shutdown_grace_ms;	/* running jobs get this long */
	const struct sb_options *sb;	/* for the workers */
	const struct al_policy *policy; /* for the workers and wall times */
	int stop_fd;			/* readable = drain, -1 = none */
	al_proc_run_fn run;		/* job runner, NULL = al_worker_run */
	struct al_metrics *metrics;	/* counters to keep, NULL = none */
};

void al_serve_opts_init(struct al_serve_opts *o);
int al_serve_run(const struct al_serve_opts *o);

#endif
