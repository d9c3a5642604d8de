/* cmd_batch.c: `airlock batch`, a JSONL file of jobs through the queue,
 * results back as JSONL in input order.
 *
 * Steps: read and decode every line (an undecodable line gets a local RJ
 * result, so the output still has one line per input line); submit the
 * rest pipelined (ids are idempotency keys: re-running a batch whose jobs
 * have ids reuses results still in Redis); wait for completions, up to
 * ALQ_WAIT_MANY ids at a time (EXISTS on the window, else BLPOP on their
 * done lists for a second, then the next window); then fetch every result
 * in input order and write it. The client survives a Redis restart: it
 * reconnects with backoff for up to RECONNECT_S and carries on.
 *
 * Progress goes to stderr: a bar redrawn in place on a terminal, a plain
 * line every PLAIN_EVERY_S otherwise.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "client.h"
#include "sbconfig.h"
#include "worker.h"

#define RECONNECT_S   120
#define PLAIN_EVERY_S 10
#define LINE_MAX_     (AL_JOB_MAX_BYTES + 2)

struct bjob {
	char id[AL_ID_MAX + 1]; /* its id */
	char *local;		/* JSON of a local RJ result, else NULL */
	bool done;		/* result stored */
	int8_t status;		/* its status, -1 unknown */
	int8_t verdict;		/* its verdict */
	uint64_t run_ms;	/* its run time */
};

struct batch {
	struct bjob *jobs;		/* in input order */
	size_t n;			/* entries in jobs */
	size_t done;			/* results in */
	size_t counts[AL_STATUS_COUNT]; /* by status */
	size_t accepted, wrong;		/* verdicts */
	double t0;			/* start, monotonic seconds */
	double last_draw;		/* last progress output */
	bool tty;			/* stderr is a terminal */
	struct al_config *cfg;		/* for reconnects */
	struct alq_client cl;		/* connection */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fmt_dur(char *buf, size_t len, double s)
{
	long v = (long)(s + 0.5);

	if (!isfinite(s) || s < 0)
		snprintf(buf, len, "--:--");
	else if (v >= 3600)
		snprintf(buf, len, "%ld:%02ld:%02ld", v / 3600, v / 60 % 60,
			 v % 60);
	else
		snprintf(buf, len, "%ld:%02ld", v / 60, v % 60);
}

static void progress(struct batch *b, bool force)
{
	double t = now_s(), el = t - b->t0;
	double rate = el > 0 ? (double)b->done / el : 0;
	char eta[32], counts[256] = "", bar[32];
	size_t o = 0;

	if (!force && t - b->last_draw < (b->tty ? 0.2 : PLAIN_EVERY_S))
		return;
	b->last_draw = t;
	for (int s = 0; s < AL_STATUS_COUNT; s++)
		if (b->counts[s] && o < sizeof(counts))
			o += (size_t)snprintf(counts + o, sizeof(counts) - o,
					      " %s %zu", al_status_name(s),
					      b->counts[s]);
	fmt_dur(eta, sizeof(eta),
		rate > 0 ? (double)(b->n - b->done) / rate : NAN);
	if (b->tty) {
		size_t fill = b->n ? b->done * 20 / b->n : 20;

		for (size_t i = 0; i < 20; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[20] = '\0';
		fprintf(stderr, "\r\033[K[%s] %zu/%zu%s  %.2f jobs/s  ETA %s",
			bar, b->done, b->n, counts, rate, eta);
	} else {
		fprintf(stderr, "batch: %zu/%zu done%s, %.2f jobs/s, ETA %s\n",
			b->done, b->n, counts, rate, eta);
	}
	fflush(stderr);
}

/* Read JOBS.jsonl: one job per non-blank line. */
static int load(struct batch *b, const char *path, const struct al_policy *pol,
		struct alq_submit **ret_subs, size_t *ret_n)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "re") : stdin;
	struct alq_submit *subs = NULL;
	char prefix[24], *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t len;
	uint32_t rnd = (uint32_t)(now_s() * 1e6) ^ ((uint32_t)getpid() << 12);

	if (!f)
		return -errno;
	snprintf(prefix, sizeof(prefix), "b%08x-", rnd);
	while ((len = getline(&line, &cap, f)) >= 0) {
		struct al_job job = {0};
		struct al_prepared p;
		struct al_diags d;
		struct bjob *bj;
		char idn[AL_ID_MAX + 1];

		lineno++;
		if (strspn(line, " \t\r\n") == (size_t)len)
			continue;
		bj = realloc(b->jobs, (b->n + 1) * sizeof(*bj));
		if (!bj)
			goto nomem;
		b->jobs = bj;
		bj = &b->jobs[b->n];
		memset(bj, 0, sizeof(*bj));
		bj->status = -1;
		snprintf(idn, sizeof(idn), "%s%zu", prefix, lineno);
		al_diags_init(&d);
		/* the policy validate, submit and serve apply */
		if ((size_t)len > LINE_MAX_ ||
		    al_job_from_json(line, (size_t)len, &job, &d) < 0 ||
		    al_job_check_policy(&job, pol, &d) < 0) {
			struct al_result res;

			if ((size_t)len > LINE_MAX_)
				al_diags_add(&d, "", "line over %u bytes",
					     AL_JOB_MAX_BYTES);
			snprintf(bj->id, sizeof(bj->id), "%s",
				 job.id ? job.id : d.id[0] ? d.id : idn);
			al_job_release(&job);
			if (al_worker_reject(bj->id, &d, &res) < 0 ||
			    al_result_to_json(&res, &bj->local) < 0) {
				al_result_release(&res);
				goto nomem;
			}
			al_result_release(&res);
			bj->done = true;
			bj->status = AL_RJ;
			b->counts[AL_RJ]++;
			b->done++;
			b->n++;
			continue;
		}
		if (al_cli_prepare(&job, pol, idn, &p) < 0) {
			al_job_release(&job);
			goto nomem;
		}
		al_job_release(&job);
		snprintf(bj->id, sizeof(bj->id), "%s", p.id);
		subs = realloc(subs, (*ret_n + 1) * sizeof(*subs));
		if (!subs) {
			free(p.payload);
			goto nomem;
		}
		memset(&subs[*ret_n], 0, sizeof(*subs));
		subs[*ret_n].id = NULL; /* set below: b->jobs may move */
		subs[*ret_n].payload = p.payload;
		subs[*ret_n].len = p.len;
		subs[*ret_n].wall_ms = p.wall_ms;
		(*ret_n)++;
		b->n++;
	}
	free(line);
	if (f != stdin)
		fclose(f);
	for (size_t i = 0, k = 0; i < b->n; i++)
		if (!b->jobs[i].local)
			subs[k++].id = b->jobs[i].id;
	*ret_subs = subs;
	return 0;
nomem:
	free(line);
	if (f != stdin)
		fclose(f);
	*ret_subs = subs;
	return -ENOMEM;
}

/* Reconnect after a lost connection (Redis restarting). */
static int reconnect(struct batch *b)
{
	double until = now_s() + RECONNECT_S;
	unsigned delay = 100;
	char err[512];

	fprintf(stderr, "%sbatch: lost Redis (%s); reconnecting\n",
		b->tty ? "\n" : "", b->cl.err);
	alq_client_close(&b->cl);
	while (now_s() < until && !al_cli_interrupted()) {
		struct timespec ts = {delay / 1000,
				      (long)(delay % 1000) * 1000000L};

		if (al_cli_connect(b->cfg, &b->cl, err, sizeof(err)) == 0)
			return 0;
		nanosleep(&ts, NULL);
		delay = delay * 2 > 5000 ? 5000 : delay * 2;
	}
	fprintf(stderr, "batch: Redis did not come back in %d s\n",
		RECONNECT_S);
	return -EIO;
}

/* Note the result of job i (fetched to count its status). */
static int collect(struct batch *b, size_t i)
{
	struct al_result res = {0};
	struct al_diags d;
	char *buf = NULL;
	size_t len = 0;
	int r;

	r = alq_client_result(&b->cl, b->jobs[i].id, &buf, &len);
	if (r == -ENOENT)
		return 0; /* expired between EXISTS and GET: count it as done */
	if (r < 0)
		return r;
	al_diags_init(&d);
	if (al_result_from_msgpack(buf, len, &res, &d) == 0) {
		b->jobs[i].status = (int8_t)res.status;
		b->jobs[i].verdict = (int8_t)res.verdict;
		b->jobs[i].run_ms = res.timing.run_ms;
	}
	al_result_release(&res);
	free(buf);
	return 0;
}

static void mark_done(struct batch *b, size_t i)
{
	struct bjob *j = &b->jobs[i];

	j->done = true;
	b->done++;
	if (j->status >= 0)
		b->counts[j->status]++;
	if (j->verdict == AL_VERDICT_ACCEPTED)
		b->accepted++;
	else if (j->verdict == AL_VERDICT_WRONG_ANSWER)
		b->wrong++;
}

/* One round over a window of outstanding jobs. */
static int wait_round(struct batch *b, size_t *cursor, struct al_embed *e)
{
	const char *ids[ALQ_WAIT_MANY];
	size_t idx[ALQ_WAIT_MANY], n = 0, k;
	bool done[ALQ_WAIT_MANY];
	size_t i = *cursor;
	int r, st;

	for (size_t seen = 0; seen < b->n && n < ALQ_WAIT_MANY; seen++) {
		if (!b->jobs[i].done) {
			ids[n] = b->jobs[i].id;
			idx[n++] = i;
		}
		i = (i + 1) % b->n;
	}
	*cursor = i;
	if (!n)
		return 0;
	if (e && al_embed_serve_gone(e, &st)) {
		fprintf(stderr, "\nbatch: the embedded dispatcher stopped\n");
		return -ECHILD;
	}
	r = alq_client_have_results(&b->cl, ids, n, done);
	for (size_t j = 0; r == 0 && j < n; j++) {
		if (!done[j])
			continue;
		r = collect(b, idx[j]);
		if (r == 0)
			mark_done(b, idx[j]);
	}
	if (r == 0) {
		for (size_t j = 0; j < n; j++)
			if (done[j])
				return 0;
		r = alq_client_wait_any(&b->cl, ids, n, 1000, &k);
		if (r == 0 && (r = collect(b, idx[k])) == 0)
			mark_done(b, idx[k]);
		if (r == -ETIMEDOUT)
			r = 0;
	}
	return r;
}

static int write_results(struct batch *b, FILE *out)
{
	for (size_t i = 0; i < b->n; i++) {
		struct al_result res = {0};
		struct al_diags d;
		char *buf = NULL, *json = NULL;
		size_t len = 0;
		int r;

		if (b->jobs[i].local) {
			fprintf(out, "%s\n", b->jobs[i].local);
			continue;
		}
		for (;;) {
			r = alq_client_result(&b->cl, b->jobs[i].id, &buf,
					      &len);
			if (r >= 0 || r == -ENOENT || r == -E2BIG ||
			    reconnect(b) < 0)
				break;
		}
		al_diags_init(&d);
		if (r < 0 || al_result_from_msgpack(buf, len, &res, &d) < 0 ||
		    al_result_to_json(&res, &json) < 0) {
			fprintf(stderr, "batch: %s: result %s\n", b->jobs[i].id,
				r == -ENOENT ? "expired" : "unreadable");
			fprintf(out,
				"{\"id\":\"%s\",\"status\":\"XX\","
				"\"error\":\"result lost\"}\n",
				b->jobs[i].id);
		} else {
			fprintf(out, "%s\n", json);
		}
		free(json);
		free(buf);
		al_result_release(&res);
	}
	return fflush(out) == 0 && !ferror(out) ? 0 : -EIO;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void summary(struct batch *b, FILE *f, const char *out_name)
{
	double el = now_s() - b->t0;
	uint64_t *runs = calloc(b->n ? b->n : 1, sizeof(*runs));
	size_t nr = 0;
	char dur[32];

	fmt_dur(dur, sizeof(dur), el);
	fprintf(f, "\n%-8s %8s %7s\n", "status", "jobs", "share");
	for (int s = 0; s < AL_STATUS_COUNT; s++)
		if (b->counts[s])
			fprintf(f, "%-8s %8zu %6.1f%%\n", al_status_name(s),
				b->counts[s],
				100.0 * (double)b->counts[s] / (double)b->n);
	fprintf(f, "%-8s %8zu\n", "total", b->n);
	if (b->accepted || b->wrong)
		fprintf(f, "verdicts: %zu accepted, %zu wrong answer\n",
			b->accepted, b->wrong);
	for (size_t i = 0; runs && i < b->n; i++)
		if (b->jobs[i].status >= 0 && !b->jobs[i].local)
			runs[nr++] = b->jobs[i].run_ms;
	if (nr) {
		qsort(runs, nr, sizeof(*runs), cmp_u64);
		fprintf(
		    f,
		    "run time per job: p50 %llu ms, p95 %llu ms, max "
		    "%llu ms\n",
		    (unsigned long long)runs[nr / 2],
		    (unsigned long long)
			runs[(nr * 95) / 100 < nr ? (nr * 95) / 100 : nr - 1],
		    (unsigned long long)runs[nr - 1]);
	}
	fprintf(f, "%zu jobs in %s (%.1f s), %.2f jobs/s; results: %s\n", b->n,
		dur, el, el > 0 ? (double)b->n / el : 0.0, out_name);
	free(runs);
}

struct batch_opts {
	const char *output; /* -o, NULL = stdout */
	uint32_t workers;   /* --workers, 0 = workers.count */
};

static const struct option opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"workers", required_argument, NULL, 'w'},
    {NULL, 0, NULL, 0},
};

static int opt(struct al_cli *cli, int c, const char *arg)
{
	struct batch_opts *o = cli->opts;

	if (c == 'o') {
		o->output = arg;
		return 0;
	}
	return al_cli_opt_workers(cli, arg, &o->workers);
}

static int run(struct al_cli *cli, int argc, char **argv)
{
	const struct batch_opts *o = cli->opts;
	const char *out_path = o->output;
	struct al_config *cfg = &cli->cfg;
	struct alq_submit *subs = NULL;
	struct al_serve_opts so;
	struct al_policy policy;
	struct sb_options sb;
	struct al_embed e;
	struct batch b;
	FILE *out = NULL;
	size_t n_subs = 0, cursor = 0;
	bool embedded;
	char err[2048];
	int r, rc = AL_EXIT_USAGE;

	memset(&b, 0, sizeof(b));
	al_embed_init(&e);
	(void)argc;
	al_config_policy(cfg, &policy);
	b.cfg = cfg;
	b.tty = isatty(STDERR_FILENO);
	r = load(&b, argv[0], &policy, &subs, &n_subs);
	if (r < 0) {
		al_cli_error(cli, "%s: %s", argv[0], strerror(-r));
		goto out;
	}
	out = out_path ? fopen(out_path, "we") : stdout;
	if (!out) {
		al_cli_error(cli, "%s: %s", out_path, strerror(errno));
		goto out;
	}
	al_cli_catch_signals();
	b.t0 = now_s();
	embedded = !cfg->redis.url[0];
	if (embedded) {
		if (o->workers)
			cfg->workers.count = o->workers;
		if (al_sandbox_options(cfg, &sb, err, sizeof(err)) < 0 ||
		    al_embed_start(&e, cfg, &policy, &sb, &so, err,
				   sizeof(err)) < 0) {
			al_cli_error(cli, "%s", err);
			goto out;
		}
	} else if (o->workers) {
		al_cli_error(cli, "--workers applies to the embedded pool "
				  "only; ignored with a Redis URL");
	}
	if (al_cli_open(cli, &b.cl) < 0)
		goto out;
	while ((r = alq_client_submit_many(&b.cl, subs, n_subs)) < 0)
		if (reconnect(&b) < 0)
			goto out;
	for (size_t i = 0; i < n_subs; i++) {
		if (subs[i].err < 0) {
			al_cli_error(cli, "%s: submit failed", subs[i].id);
			goto out;
		}
	}
	progress(&b, true);
	while (b.done < b.n && !al_cli_interrupted()) {
		r = wait_round(&b, &cursor, embedded ? &e : NULL);
		if (r == -ECHILD)
			goto out;
		if (al_cli_interrupted())
			break; /* the signal broke the blocking read */
		if (r < 0 && reconnect(&b) < 0)
			goto out;
		progress(&b, false);
	}
	progress(&b, true);
	if (b.tty)
		fputc('\n', stderr);
	if (al_cli_interrupted()) {
		al_cli_error(cli, "interrupted with %zu of %zu done", b.done,
			     b.n);
		rc = 130;
		goto out;
	}
	if (write_results(&b, out) < 0) {
		al_cli_error(cli, "writing results failed");
		goto out;
	}
	summary(&b, out == stdout ? stderr : stdout,
		out_path ? out_path : "stdout");
	rc = AL_EXIT_OK;
out:
	alq_client_close(&b.cl);
	al_embed_stop(&e, cfg->workers.shutdown_grace_ms);
	if (out && out != stdout)
		fclose(out);
	for (size_t i = 0; i < n_subs; i++)
		free((void *)subs[i].payload);
	free(subs);
	for (size_t i = 0; i < b.n; i++)
		free(b.jobs[i].local);
	free(b.jobs);
	return rc;
}

const struct al_cmd al_cmd_batch = {
    .name = "batch",
    .summary = "run a JSONL file of jobs, results as JSONL in input order",
    .usage =
	"usage: airlock batch [-o RESULTS.jsonl] [--workers N] [--redis URL]\n"
	"                     [--config PATH] [--queue NAME] JOBS.jsonl|-\n"
	"\n"
	"Submit every job of JOBS.jsonl (one JSON job per line), wait for all\n"
	"results and write them as JSONL in input order (to stdout without\n"
	"-o). A line that is not a valid job gets an RJ result naming the\n"
	"problem. Progress on stderr; a summary table at the end. With no\n"
	"Redis configured, a private redis-server and N local workers "
	"(default\n"
	"workers.count, 0 = one per CPU) run for this command only.\n"
	"\n"
	"Jobs with ids are idempotent: running the batch again reuses the\n"
	"results still in Redis. Exit 0 when every job has a result (whatever\n"
	"its status), 2 on failure, 130 interrupted.\n"
	"\n"
	"options:\n"
	"  -o, --output FILE  write the results to FILE\n"
	"  -w, --workers N    embedded workers (default workers.count)\n",
    .flags = AL_CMD_QUEUE | AL_CMD_CONFIG,
    .shortopts = "o:w:",
    .longopts = opts,
    .opts_size = sizeof(struct batch_opts),
    .args_min = 1,
    .args_max = 1,
    .args_error = "takes one JOBS.jsonl",
    .opt = opt,
    .run = run,
};
