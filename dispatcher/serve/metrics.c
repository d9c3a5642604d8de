/* metrics.c: Prometheus counters and histograms of a serve process
 * (metrics.h), rendered in the text exposition format 0.0.4.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "metrics.h"

/* Bucket bounds in ms: 10 ms .. 10 min covers a restore and a long job. */
static const uint64_t bounds_ms[AL_METRICS_BUCKETS] = {
    10,	  25,	50,    100,   250,   500,    1000,
    2500, 5000, 10000, 30000, 60000, 180000, 600000,
};

#define LD(x)	  atomic_load_explicit(&(x), memory_order_relaxed)
#define ADD(x, n) atomic_fetch_add_explicit(&(x), (n), memory_order_relaxed)

void al_metrics_init(struct al_metrics *m)
{
	memset(m, 0, sizeof(*m));
}

void al_metrics_observe(struct al_histogram *h, uint64_t ms)
{
	size_t i = 0;

	while (i < AL_METRICS_BUCKETS && ms > bounds_ms[i])
		i++;
	ADD(h->bucket[i], 1);
	ADD(h->sum_ms, ms);
}

void al_metrics_job(struct al_metrics *m, enum al_status st,
		    uint64_t latency_ms, uint64_t run_ms, uint64_t restore_ms)
{
	if ((unsigned)st < AL_STATUS_COUNT)
		ADD(m->jobs[st], 1);
	if (latency_ms != AL_METRICS_UNKNOWN)
		al_metrics_observe(&m->latency, latency_ms);
	if (run_ms)
		al_metrics_observe(&m->run, run_ms);
	if (restore_ms)
		al_metrics_observe(&m->restore, restore_ms);
}

/* An append-only buffer; `over` once anything did not fit. */
struct out {
	char *buf;
	size_t len, used;
	bool over;
};

static void put(struct out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->over)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->used)
		o->over = true;
	else
		o->used += (size_t)n;
}

static void head(struct out *o, const char *name, const char *type,
		 const char *help)
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void scalar(struct out *o, const char *name, const char *type,
		   const char *help, uint64_t v)
{
	head(o, name, type, help);
	put(o, "%s %llu\n", name, (unsigned long long)v);
}

static void histogram(struct out *o, const char *name, const char *help,
		      const struct al_histogram *h)
{
	uint64_t cum = 0;

	head(o, name, "histogram", help);
	for (size_t i = 0; i < AL_METRICS_BUCKETS; i++) {
		cum += LD(h->bucket[i]);
		put(o, "%s_bucket{le=\"%g\"} %llu\n", name,
		    (double)bounds_ms[i] / 1000.0, (unsigned long long)cum);
	}
	cum += LD(h->bucket[AL_METRICS_BUCKETS]);
	put(o, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
	put(o, "%s_sum %.3f\n", name, (double)LD(h->sum_ms) / 1000.0);
	put(o, "%s_count %llu\n", name, (unsigned long long)cum);
}

static void queue_gauges(struct out *o, const struct alq_status *q)
{
	scalar(o, "airlock_queue_depth", "gauge",
	       "jobs in the stream not yet delivered to a dispatcher",
	       q->depth < 0 ? 0 : (uint64_t)q->depth);
	scalar(o, "airlock_queue_pending", "gauge",
	       "jobs delivered and not yet acknowledged",
	       (uint64_t)(q->pending < 0 ? 0 : q->pending));
	scalar(o, "airlock_dead_letters", "gauge",
	       "entries in the dead-letter stream",
	       (uint64_t)(q->dead < 0 ? 0 : q->dead));
	scalar(
	    o, "airlock_cancels_total", "counter",
	    "jobs cancelled on this queue (airlock cancel, DELETE /jobs/ID), "
	    "by any process",
	    q->cancels);
	scalar(o, "airlock_dispatchers", "gauge",
	       "serve processes heartbeating on the queue", q->n_serves);
}

int al_metrics_render(const struct al_metrics *m, const struct alq_status *q,
		      char *buf, size_t len)
{
	struct out o = {buf, len, 0, len == 0};

	head(&o, "airlock_jobs_total", "counter",
	     "results stored by this serve process, by status");
	for (int s = 0; s < AL_STATUS_COUNT; s++)
		if (s != AL_SK) /* a step status, never a job's */
			put(&o, "airlock_jobs_total{status=\"%s\"} %llu\n",
			    al_status_name((enum al_status)s),
			    (unsigned long long)LD(m->jobs[s]));
	scalar(&o, "airlock_job_retries_total", "counter",
	       "deliveries retried after a failure on our side",
	       LD(m->retries));
	scalar(&o, "airlock_worker_restarts_total", "counter",
	       "worker processes that died and were restarted",
	       LD(m->worker_restarts));
	scalar(&o, "airlock_redis_reconnects_total", "counter",
	       "reconnects of the dispatcher's Redis connections",
	       LD(m->redis_reconnects));
	scalar(&o, "airlock_callbacks_total", "counter",
	       "job callbacks delivered", LD(m->callbacks_ok));
	scalar(&o, "airlock_callbacks_failed_total", "counter",
	       "job callbacks given up after their last attempt",
	       LD(m->callbacks_failed));
	scalar(&o, "airlock_workers", "gauge", "worker processes alive",
	       LD(m->workers));
	scalar(&o, "airlock_vms_alive", "gauge",
	       "microVMs running a job now (one per busy worker)",
	       LD(m->vms_alive));
	histogram(&o, "airlock_job_latency_seconds", "submit to result stored",
		  &m->latency);
	histogram(&o, "airlock_job_run_seconds", "picked up to VM destroyed",
		  &m->run);
	histogram(&o, "airlock_vm_restore_seconds",
		  "VM restore from the template snapshot (or boot)",
		  &m->restore);
	scalar(&o, "airlock_up", "gauge", "1 when Redis answered this scrape",
	       q != NULL);
	if (q)
		queue_gauges(&o, q);
	return o.over ? -ENOBUFS : (int)o.used;
}
