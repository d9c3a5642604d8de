/* metrics.h: the dispatcher's Prometheus counters, gauges and histograms.
 *
 * One `struct al_metrics` per serve process, written by the dispatcher's
 * loop thread and read by the HTTP threads that render /metrics: every
 * field is a relaxed atomic, so a scrape never takes a lock the loop waits
 * on, and a scrape may see one job counted in jobs_total a moment before
 * its latency is observed (Prometheus tolerates that).
 *
 * Using it:
 *
 *  1. al_metrics_init() (zeroes it), hand a pointer to al_serve_opts.
 *  2. The loop calls al_metrics_job() when a result is stored and sets the
 *     gauges; conn.c counts reconnects itself (the loop copies them).
 *  3. al_metrics_render() writes the text exposition format, with the
 *     queue gauges the caller read from Redis (a struct alq_status).
 */
#ifndef AL_METRICS_H
#define AL_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "queue.h"
#include "results.h"

#define AL_METRICS_BUCKETS 14 /* histogram buckets before +Inf */

struct al_histogram {
	_Atomic uint64_t bucket[AL_METRICS_BUCKETS + 1]; /* last = +Inf */
	_Atomic uint64_t sum_ms;			 /* of observations */
};

struct al_metrics {
	_Atomic uint64_t jobs[AL_STATUS_COUNT]; /* results stored, by status */
	_Atomic uint64_t retries;		/* deliveries retried */
	_Atomic uint64_t worker_restarts;	/* worker processes that died */
	_Atomic uint64_t redis_reconnects;	/* both connections */
	_Atomic uint64_t workers;		/* worker processes alive */
	_Atomic uint64_t vms_alive;		/* workers running a job */
	_Atomic uint64_t callbacks_ok;		/* callbacks delivered */
	_Atomic uint64_t callbacks_failed;	/* callbacks given up */
	struct al_histogram latency;		/* submit -> result stored */
	struct al_histogram run;		/* picked up -> VM destroyed */
	struct al_histogram restore;		/* VM restore or boot */
};

void al_metrics_init(struct al_metrics *m);
/* A timing that was not measured: not observed. */
#define AL_METRICS_UNKNOWN UINT64_MAX
/* A stored result: its status and timings. A latency of 0 is a real one
 * (stored in the millisecond it was submitted); run_ms and restore_ms of 0
 * mean the job never ran or restored and are not observed either. */
void al_metrics_job(struct al_metrics *m, enum al_status st,
		    uint64_t latency_ms, uint64_t run_ms, uint64_t restore_ms);
void al_metrics_observe(struct al_histogram *h, uint64_t ms);
/* The exposition text into buf (NUL-terminated); `q` may be NULL (Redis
 * unreachable: the queue gauges are left out, airlock_up says 0). Returns
 * the length, or -ENOBUFS when buf is too small. */
int al_metrics_render(const struct al_metrics *m, const struct alq_status *q,
		      char *buf, size_t len);

#endif
