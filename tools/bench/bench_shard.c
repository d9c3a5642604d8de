/* bench_shard.c: what one queue costs Redis, and how many jobs a second
 * one shard carries, with a sandbox that answers at once.
 *
 * The dispatcher is serve.c itself (al_serve_run, each on a thread of its
 * own, with W forked workers) whose job runner (al_serve_opts.run, the
 * seam tests use) returns an OK result without starting a VM: what is
 * measured is the queue, not the VM. For each of Q queues (distinct names,
 * so distinct hash slots: on a Redis Cluster, usually distinct masters),
 * S serves run; N jobs per queue are submitted at once (submit windows of
 * 64) and waited for; then, from the master(s) that served the queues:
 *
 *   - Redis commands per job: the growth of INFO commandstats' calls;
 *   - bytes per job: the growth of total_net_input_bytes + output_bytes;
 *   - Redis CPU per job: the growth of used_cpu_user + used_cpu_sys, and
 *     from it the jobs/s one Redis core (one shard) would carry;
 *   - hosts: that jobs/s over a host's rate (--host-rate R jobs/s, by
 *     default 8: 16 workers running 2 s jobs), the number of such hosts
 *     whose queue traffic saturates the core (docs/deploy.md quotes it);
 *   - jobs/s: N*Q over the time from the first submit to the last result
 *     (on a small machine bound by the serves and workers, not Redis).
 *
 * Everything else on those servers counts too (the heartbeats of idle
 * serves, our INFO): run it on a Redis of its own. tools/bench/shard.sh
 * starts a standalone Redis and a local 3-master cluster and runs this on
 * both (docs/performance.md, "Queue shards").
 *
 * With --partitions P each queue is P partitions (queue.h, P slots):
 * the serves read all of them, the client places each job by its id, and
 * the figures are given for every master that serves a partition (its
 * share of the commands, bytes and CPU) and in total; "one core" is then
 * the jobs/s at which the busiest of those masters would be saturated.
 *
 * usage: airlock-bench-shard --url redis://HOST:PORT [--queues Q]
 *                            [--serves S] [--workers W] [--jobs N]
 *                            [--partitions P] [--cluster]
 *                            [--host-rate R]
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "cluster.h"
#include "log.h"
#include "opts.h"
#include "servetest.h" /* tests/queue/: the dispatcher on a thread */

#define MAX_Q 8
#define MAX_S 8
#define MAX_N 16 /* nodes measured with --partitions */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A dispatcher on a thread (tests/queue/servetest.h) whose workers
 * return an OK result at once: the queue's cost alone. */
static int serve_start(struct servetest *h, const struct alq_url *u,
		       const char *q, unsigned workers, unsigned parts)
{
	memset(h, 0, sizeof(*h));
	al_serve_opts_init(&h->o);
	h->o.url = *u;
	snprintf(h->o.queue, sizeof(h->o.queue), "%s", q);
	h->o.workers = workers;
	h->o.partitions = parts;
	h->o.sb = &h->sb;
	h->o.run = servetest_at_once;
	return servetest_start(h);
}

/* The node (host:port) that serves queue q: the URL's, or on a cluster
 * the master of q's slot (CLUSTER SLOTS). */
static int queue_node(const struct alq_url *u, const char *q, bool cluster,
		      char *host, size_t hl, int *port)
{
	char key[ALQ_KEY_MAX];
	unsigned slot;
	redisContext *rc;
	redisReply *r;
	int found = -1;

	snprintf(host, hl, "%s", u->host);
	*port = u->port;
	if (!cluster)
		return 0;
	alq_key(key, sizeof(key), q, ALQ_KEY_JOBS, NULL);
	slot = alq_key_slot(key, strlen(key));
	rc = redisConnect(u->host, u->port);
	if (!rc || rc->err)
		return -1;
	r = redisCommand(rc, "CLUSTER SLOTS");
	for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements;
	     i++) {
		redisReply *e = r->element[i];

		if (e->elements >= 3 &&
		    (unsigned)e->element[0]->integer <= slot &&
		    (unsigned)e->element[1]->integer >= slot) {
			snprintf(host, hl, "%s",
				 e->element[2]->element[0]->str);
			*port = (int)e->element[2]->element[1]->integer;
			found = 0;
		}
	}
	freeReplyObject(r);
	redisFree(rc);
	return found;
}

/* calls (all commands), network bytes and CPU seconds (user + sys) of a
 * node, from INFO. */
static int node_counts(const char *host, int port, unsigned long long *calls,
		       unsigned long long *bytes, double *cpu)
{
	redisContext *rc = redisConnect(host, port);
	redisReply *r;
	unsigned long long in = 0, out = 0;
	const char *p;

	*calls = 0;
	if (!rc || rc->err)
		return -1;
	r = redisCommand(rc, "INFO commandstats");
	for (p = r && r->type == REDIS_REPLY_STRING ? r->str : "";
	     (p = strstr(p, "calls=")); p += 6)
		*calls += strtoull(p + 6, NULL, 10);
	freeReplyObject(r);
	r = redisCommand(rc, "INFO stats");
	if (r && r->type == REDIS_REPLY_STRING) {
		if ((p = strstr(r->str, "total_net_input_bytes:")))
			in = strtoull(p + 22, NULL, 10);
		if ((p = strstr(r->str, "total_net_output_bytes:")))
			out = strtoull(p + 23, NULL, 10);
	}
	freeReplyObject(r);
	*cpu = 0;
	r = redisCommand(rc, "INFO cpu");
	if (r && r->type == REDIS_REPLY_STRING) {
		if ((p = strstr(r->str, "used_cpu_sys:")))
			*cpu += strtod(p + 13, NULL);
		if ((p = strstr(r->str, "used_cpu_user:")))
			*cpu += strtod(p + 14, NULL);
	}
	freeReplyObject(r);
	redisFree(rc);
	*bytes = in + out;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: airlock-bench-shard --url redis://HOST:PORT "
			"[--queues Q] [--serves S]\n"
			"                           [--workers W] [--jobs N] "
			"[--partitions P] [--cluster]\n"
			"                           [--host-rate R]\n");
}

int main(int argc, char **argv)
{
	static const struct al_opt lo[] = {
	    {"url", 'u', AL_OPT_ARG},
	    {"queues", 'q', AL_OPT_ARG},
	    {"serves", 's', AL_OPT_ARG},
	    {"workers", 'w', AL_OPT_ARG},
	    {"jobs", 'n', AL_OPT_ARG},
	    {"cluster", 'c', 0},
	    {"partitions", 'p', AL_OPT_ARG},
	    {"host-rate", 'r', AL_OPT_ARG},
	    {"help", 'h', 0},
	    {NULL, 0, 0},
	};
	const char *url = NULL;
	unsigned nq = 1, ns = 1, nw = 4, nj = 2000, np = 1, nn = 0;
	char nhost[MAX_N][256];
	int nport[MAX_N], nparts[MAX_N];
	unsigned long long ncalls0[MAX_N], nbytes0[MAX_N];
	double ncpu0[MAX_N];
	bool cluster = false;
	struct alq_url u;
	struct servetest *sv;
	char host[MAX_Q][256];
	int port[MAX_Q], c;
	unsigned long long calls0[MAX_Q], bytes0[MAX_Q];
	double cpu0[MAX_Q];
	double t0, t1, rate = 8;

	while ((c = al_opts_next(argc, argv, lo)) != -1) {
		switch (c) {
		case 'u':
			url = optarg;
			break;
		case 'q':
			nq = (unsigned)atoi(optarg);
			break;
		case 's':
			ns = (unsigned)atoi(optarg);
			break;
		case 'w':
			nw = (unsigned)atoi(optarg);
			break;
		case 'n':
			nj = (unsigned)atoi(optarg);
			break;
		case 'c':
			cluster = true;
			break;
		case 'p':
			np = (unsigned)atoi(optarg);
			break;
		case 'r':
			rate = atof(optarg);
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return 2;
		}
	}
	if (!url || alq_url_parse(url, &u) < 0 || u.unix_ || nq < 1 ||
	    nq > MAX_Q || ns < 1 || ns > MAX_S || nw < 1 || nw > 64 || nj < 1 ||
	    nj > 1000000 || np < 1 || np > ALQ_PARTITIONS_MAX || !(rate > 0)) {
		usage();
		return 2;
	}
	al_log_level = AL_LOG_ERROR; /* MOVED, sweeps: not the figures */
	sv = calloc((size_t)nq * ns, sizeof(*sv));
	if (!sv)
		return 1;
	for (unsigned q = 0; q < nq; q++) {
		char name[32];

		snprintf(name, sizeof(name), "bench%u", q);
		if (queue_node(&u, name, cluster, host[q], sizeof(host[q]),
			       &port[q]) < 0) {
			fprintf(stderr, "no node for queue %s\n", name);
			return 1;
		}
		for (unsigned s = 0; s < ns; s++)
			if (serve_start(&sv[q * ns + s], &u, name, nw, np) < 0)
				return 1;
		/* with partitions: every node that serves one of them */
		for (unsigned p = 0; np > 1 && p < np; p++) {
			char pn[ALQ_PART_NAME_MAX], h[256];
			unsigned k;
			int pt;

			alq_partition_name(pn, sizeof(pn), name, p);
			if (queue_node(&u, pn, cluster, h, sizeof(h), &pt) <
			    0) {
				fprintf(stderr, "no node for partition %s\n",
					pn);
				return 1;
			}
			for (k = 0; k < nn; k++)
				if (nport[k] == pt && !strcmp(nhost[k], h))
					break;
			if (k == nn) {
				if (nn == MAX_N)
					return 1;
				snprintf(nhost[nn], sizeof(nhost[nn]), "%s", h);
				nport[nn] = pt;
				nparts[nn++] = 0;
			}
			nparts[k]++;
		}
	}
	sleep(1); /* workers forked, connections up */
	for (unsigned q = 0; q < nq; q++)
		node_counts(host[q], port[q], &calls0[q], &bytes0[q], &cpu0[q]);
	for (unsigned k = 0; k < nn; k++)
		node_counts(nhost[k], nport[k], &ncalls0[k], &nbytes0[k],
			    &ncpu0[k]);
	t0 = now_s();
	/* one client per queue, on threads would be fairer; submit all,
	 * then wait all, queue by queue: the serves work meanwhile */
	{
		struct alq_client *cl = calloc(nq, sizeof(*cl));
		struct alq_submit *subs = calloc(nj, sizeof(*subs));
		char(*ids)[40] = calloc(nj, sizeof(*ids));
		struct al_job job = {0};
		struct al_diags d;

		if (!cl || !subs || !ids)
			return 1;
		al_diags_init(&d);
		if (al_job_from_json("{\"sh\":\"true\"}", 13, &job, &d) < 0)
			return 1;
		for (unsigned q = 0; q < nq; q++) {
			char name[32];

			snprintf(name, sizeof(name), "bench%u", q);
			if (alq_client_open(&cl[q], &u, name, 5000) < 0) {
				fprintf(stderr, "%s\n", cl[q].err);
				return 1;
			}
			cl[q].partitions = np;
			for (unsigned i = 0; i < nj; i++) {
				char *mp = NULL;
				size_t len = 0;

				snprintf(ids[i], sizeof(ids[i]), "%u-%u-%ld", q,
					 i, (long)getpid());
				free(job.id);
				job.id = strdup(ids[i]);
				if (al_job_to_msgpack(&job, &mp, &len) < 0)
					return 1;
				subs[i] = (struct alq_submit){.id = ids[i],
							      .payload = mp,
							      .len = len,
							      .wall_ms = 60000};
			}
			if (alq_client_submit_many(&cl[q], subs, nj) < 0) {
				fprintf(stderr, "submit: %s\n", cl[q].err);
				return 1;
			}
			for (unsigned i = 0; i < nj; i++)
				free((char *)subs[i].payload);
		}
		for (unsigned q = 0; q < nq; q++) {
			for (unsigned i = 0; i < nj; i++) {
				snprintf(ids[i], sizeof(ids[i]), "%u-%u-%ld", q,
					 i, (long)getpid());
				if (alq_client_wait(&cl[q], ids[i], 60000)) {
					fprintf(stderr, "no result for %s\n",
						ids[i]);
					return 1;
				}
			}
		}
		t1 = now_s();
		for (unsigned q = 0; q < nq; q++)
			alq_client_close(&cl[q]);
		al_job_release(&job);
		free(cl);
		free(subs);
		free(ids);
	}
	printf("%s, %u queue%s x %u serve%s x %u workers, %u jobs each",
	       cluster ? "cluster" : "one Redis", nq, nq > 1 ? "s" : "", ns,
	       ns > 1 ? "s" : "", nw, nj);
	if (np > 1)
		printf(", %u partitions a queue", np);
	printf("\n");
	if (np > 1) {
		unsigned long long calls[MAX_N], bytes[MAX_N], tc = 0, tb = 0;
		double cpu[MAX_N], tcpu = 0, top = 0, total = (double)nq * nj;

		for (unsigned k = 0; k < nn; k++) {
			node_counts(nhost[k], nport[k], &calls[k], &bytes[k],
				    &cpu[k]);
			calls[k] -= ncalls0[k] + 3; /* our INFOs */
			bytes[k] -= nbytes0[k];
			cpu[k] -= ncpu0[k];
			tc += calls[k];
			tb += bytes[k];
			tcpu += cpu[k];
			if (cpu[k] > top)
				top = cpu[k];
		}
		for (unsigned k = 0; k < nn; k++)
			printf("  node %s:%d (%d partition%s): %.1f%% of the "
			       "commands, %.1f%% of the bytes, %.0f us of "
			       "Redis CPU/job\n",
			       nhost[k], nport[k], nparts[k],
			       nparts[k] == 1 ? "" : "s",
			       100.0 * (double)calls[k] / (double)(tc ? tc : 1),
			       100.0 * (double)bytes[k] / (double)(tb ? tb : 1),
			       cpu[k] * 1e6 / total);
		printf(
		    "  all nodes: %.1f commands/job, %.0f bytes/job, %.0f us "
		    "of Redis CPU/job; the busiest node saturates at %.0f "
		    "jobs/s (%.0f hosts at %g jobs/s)\n",
		    (double)tc / total, (double)tb / total, tcpu * 1e6 / total,
		    top > 0 ? total / top : 0, top > 0 ? total / top / rate : 0,
		    rate);
	}
	for (unsigned q = 0; np == 1 && q < nq; q++) {
		unsigned long long calls, bytes;
		double cpu, us;

		node_counts(host[q], port[q], &calls, &bytes, &cpu);
		us = (cpu - cpu0[q]) * 1e6 / nj;
		printf(
		    "  queue bench%u on %s:%d: %.1f commands/job, %.0f "
		    "bytes/job, %.0f us of Redis CPU/job (one core: "
		    "%.0f jobs/s, %.0f hosts at %g jobs/s)\n",
		    q, host[q], port[q], (double)(calls - calls0[q] - 3) / nj,
		    (double)(bytes - bytes0[q]) / nj, us, us > 0 ? 1e6 / us : 0,
		    us > 0 ? 1e6 / us / rate : 0, rate);
	}
	printf("  %.0f jobs/s (%u jobs in %.2f s)\n", nq * nj / (t1 - t0),
	       nq * nj, t1 - t0);
	for (unsigned i = 0; i < nq * ns; i++)
		if (servetest_stop(&sv[i]) < 0)
			perror("stop");
	free(sv);
	return 0;
}
