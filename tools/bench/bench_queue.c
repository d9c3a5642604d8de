/* bench_queue.c: what the queue costs on top of the sandbox, and how the
 * same trivial command fares under gVisor and bubblewrap.
 *
 * In one run, for the trivial job `true` in the python template:
 *
 *  1. queue latency: a private redis-server and a dispatcher with W
 *     workers (the embedded mode's code); jobs submitted one at a time,
 *     each timed from submit to "result stored" (the done signal): p50/p99;
 *  2. queue throughput: N jobs submitted at once, jobs/s until the last
 *     result is stored;
 *  3. the sandbox alone: al_worker_run() in this process, same job: p50/p99;
 *     queue overhead = (1) / (3);
 *  4. `runsc do true` and `bwrap ... true` (fork+exec each time), p50/p99,
 *     when installed.
 *
 * A table on stdout, the same figures as JSON with --json FILE. A program,
 * not a timed test: figures depend on the machine (TCG vs KVM above all).
 *
 * usage: airlock-bench-queue [--state-dir DIR] [--jobs N] [--workers W]
 *                            [--json FILE] [--gap MS]
 *
 * --gap MS: sleep MS before each latency job, the idle time a worker
 * needs to have a warm clone ready (docs/warm.md); default 0.
 *        airlock-bench-queue --humaneval [--dataset FILE] [--airlock BIN]
 *                            [--state-dir DIR] [--workers W] [--json FILE]
 *
 * --humaneval: HumanEval's canonical solutions through `airlock batch`,
 * runsc, bwrap and python3 instead (bench_humaneval.c).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_humaneval.h"
#include "embed.h"
#include "log.h"
#include "opts.h"
#include "worker.h"

struct series {
	const char *name; /* row label */
	double *ms;	  /* samples */
	size_t n;	  /* samples taken */
	double p50, p99;  /* percentiles */
	double per_s;	  /* throughput, 0 = not measured */
	const char *note; /* why absent */
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void finish(struct series *s)
{
	if (!s->n)
		return;
	qsort(s->ms, s->n, sizeof(double), cmp_d);
	s->p50 = s->ms[s->n / 2];
	s->p99 = s->ms[(s->n * 99) / 100 < s->n ? (s->n * 99) / 100 : s->n - 1];
}

static const char job_json[] = "{\"template\":\"python\",\"cmd\":[\"true\"]}";

static int prepare(struct alq_prepared *p, const char *id)
{
	struct al_job job = {0};
	struct al_diags d;
	int r;

	al_diags_init(&d);
	if (al_job_from_json(job_json, strlen(job_json), &job, &d) < 0)
		return -EINVAL;
	r = alq_prepare(&job, al_policy_default(), id, p);
	al_job_release(&job);
	return r;
}

/* Submit p (its payload freed) and wait up to 5 minutes for its result. */
static int submit_wait(struct alq_client *cl, struct alq_prepared *p)
{
	bool dup;
	int r = alq_client_submit(cl, p->id, p->payload, p->len, p->wall_ms,
				  &dup);

	free(p->payload);
	return r < 0 ? r : alq_client_wait(cl, p->id, 300000);
}

/* ms between the latency run's jobs (--gap): the idle time a worker has
 * to get a warm clone ready (docs/warm.md); 0 = back to back. */
static unsigned gap_ms;

static int bench_queue(const struct sb_options *sb, unsigned jobs,
		       unsigned workers, struct series *lat,
		       struct series *tput)
{
	struct al_serve_opts so;
	struct alq_client cl = {0};
	struct al_embed e;
	char dir[] = "/tmp/al-bench-XXXXXX", err[512], id[64];
	struct alq_submit *subs = NULL;
	int r;

	al_embed_init(&e);
	if (!mkdtemp(dir))
		return -errno;
	r = al_embed_redis(&e, dir, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "bench: %s\n", err);
		goto out;
	}
	al_serve_opts_init(&so);
	so.workers = workers;
	so.sb = sb;
	so.heartbeat_ms = 1000;
	r = al_embed_serve(&e, &so);
	if (r < 0)
		goto out;
	{
		struct alq_url u;

		alq_url_parse(e.url, &u);
		r = alq_client_open(&cl, &u, so.queue, 5000);
		if (r < 0)
			goto out;
	}
	/* warm up: templates opened, VMMs pre-started in every worker */
	for (unsigned i = 0; i < workers * 2; i++) {
		struct alq_prepared p;

		snprintf(id, sizeof(id), "warm-%u", i);
		if ((r = prepare(&p, id)) < 0 || (r = submit_wait(&cl, &p)) < 0)
			goto out;
	}
	for (unsigned i = 0; i < jobs; i++) {
		struct alq_prepared p;
		double t0;

		snprintf(id, sizeof(id), "lat-%u", i);
		if ((r = prepare(&p, id)) < 0)
			goto out;
		if (gap_ms)
			usleep(gap_ms * 1000u);
		t0 = now_ms();
		if ((r = submit_wait(&cl, &p)) < 0)
			goto out;
		lat->ms[lat->n++] = now_ms() - t0;
	}
	subs = calloc(jobs, sizeof(*subs));
	if (!subs) {
		r = -ENOMEM;
		goto out;
	}
	{
		char(*ids)[64] = calloc(jobs, 64);
		double t0;

		if (!ids) {
			r = -ENOMEM;
			goto out;
		}
		for (unsigned i = 0; i < jobs; i++) {
			struct alq_prepared p;

			snprintf(ids[i], 64, "tp-%u", i);
			prepare(&p, ids[i]);
			subs[i].id = ids[i];
			subs[i].payload = p.payload;
			subs[i].len = p.len;
			subs[i].wall_ms = p.wall_ms;
		}
		t0 = now_ms();
		r = alq_client_submit_many(&cl, subs, jobs);
		for (unsigned i = 0; r == 0 && i < jobs; i++) {
			double t1;

			r = alq_client_wait(&cl, ids[i], 300000);
			t1 = now_ms();
			tput->ms[tput->n++] = t1 - t0;
		}
		if (r == 0)
			tput->per_s = jobs / ((tput->ms[tput->n - 1]) / 1e3);
		for (unsigned i = 0; i < jobs; i++)
			free((void *)subs[i].payload);
		free(ids);
	}
out:
	free(subs);
	alq_client_close(&cl);
	al_embed_stop(&e, 30000);
	rmdir(dir);
	return r;
}

static int bench_direct(const struct sb_options *sb, unsigned jobs,
			struct series *s)
{
	struct al_worker w;
	struct al_job job = {0};
	struct al_diags d;

	al_diags_init(&d);
	if (al_job_from_json(job_json, strlen(job_json), &job, &d) < 0)
		return -EINVAL;
	al_worker_init(&w, sb, al_policy_default(), "bench");
	for (unsigned i = 0; i < jobs + 2; i++) {
		struct al_result res = {0};
		double t0 = now_ms();

		if (al_worker_run(&w, &job, 0, 1, &res) < 0 ||
		    res.status != AL_OK) {
			fprintf(stderr, "bench: direct run: %s\n",
				res.error ? res.error : "failed");
			al_result_release(&res);
			break;
		}
		al_result_release(&res);
		if (i >= 2) /* the first two warm up */
			s->ms[s->n++] = now_ms() - t0;
	}
	al_worker_release(&w);
	al_job_release(&job);
	return 0;
}

static bool in_path(const char *name)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", name);
	return system(cmd) == 0;
}

static void bench_exec(char *const argv[], unsigned jobs, struct series *s)
{
	for (unsigned i = 0; i < jobs; i++) {
		double t0 = now_ms();
		int st;
		pid_t pid = fork();

		if (pid == 0) {
			execvp(argv[0], argv);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			s->note = "failed to run";
			s->n = 0;
			return;
		}
		s->ms[s->n++] = now_ms() - t0;
	}
}

static void print_row(const struct series *s, double base)
{
	if (!s->n) {
		printf("%-34s %s\n", s->name, s->note ? s->note : "-");
		return;
	}
	printf("%-34s %9.1f %9.1f", s->name, s->p50, s->p99);
	if (s->per_s)
		printf(" %8.2f/s", s->per_s);
	else
		printf("  %9s", "");
	if (base > 0)
		printf("  x%.2f", s->p50 / base);
	printf("\n");
}

static void json_row(FILE *f, const struct series *s, bool last)
{
	fprintf(f,
		"  {\"name\": \"%s\", \"samples\": %zu, \"p50_ms\": %.2f, "
		"\"p99_ms\": %.2f, \"jobs_per_s\": %.3f, \"note\": \"%s\"}%s\n",
		s->name, s->n, s->p50, s->p99, s->per_s, s->note ? s->note : "",
		last ? "" : ",");
}

int main(int argc, char **argv)
{
	static const struct al_opt opts[] = {
	    {"state-dir", 's', AL_OPT_ARG},
	    {"jobs", 'n', AL_OPT_ARG},
	    {"workers", 'w', AL_OPT_ARG},
	    {"json", 'j', AL_OPT_ARG},
	    {"humaneval", 'H', 0},
	    {"gap", 'G', AL_OPT_ARG},
	    {"dataset", 'D', AL_OPT_ARG},
	    {"airlock", 'A', AL_OPT_ARG},
	    {NULL, 0, 0},
	};
	struct he_opts he = {.dataset = "../shared/datasets/HumanEval.jsonl.gz"};
	char self[4096] = "";
	bool humaneval = false, state_set = false;
	const char *json = NULL;
	unsigned jobs = 40, workers = 2;
	struct sb_options sb;
	struct series s[6] = {
	    {.name = "queue: submit -> stored (1 at a time)"},
	    {.name = "queue: N at once (time to k-th)"},
	    {.name = "sandbox alone (al_worker_run)"},
	    {.name = "runsc do true"},
	    {.name = "bwrap true"},
	};
	char *bw[] = {"bwrap",
		      "--ro-bind",
		      "/",
		      "/",
		      "--dev",
		      "/dev",
		      "--proc",
		      "/proc",
		      "--unshare-all",
		      "--die-with-parent",
		      "true",
		      NULL};
	char *rs[] = {"runsc", "--rootless", "--network=none",
		      "do",    "true",	     NULL};
	int c;

	sb_options_init(&sb);
	snprintf(sb.state_dir, sizeof(sb.state_dir), "/var/tmp/airlock-test");
	snprintf(sb.run_dir, sizeof(sb.run_dir), "/tmp/airlock-bench-run");
	while ((c = al_opts_next(argc, argv, opts)) != -1) {
		switch (c) {
		case 's':
			snprintf(sb.state_dir, sizeof(sb.state_dir), "%s",
				 optarg);
			state_set = true;
			break;
		case 'H':
			humaneval = true;
			break;
		case 'G':
			gap_ms = (unsigned)atoi(optarg);
			break;
		case 'D':
			he.dataset = optarg;
			break;
		case 'A':
			he.airlock = optarg;
			break;
		case 'n':
			jobs = (unsigned)atoi(optarg);
			break;
		case 'w':
			workers = (unsigned)atoi(optarg);
			break;
		case 'j':
			json = optarg;
			break;
		default:
			fprintf(stderr,
				"usage: airlock-bench-queue [--state-dir "
				"DIR] [--jobs N] [--workers W] "
				"[--json FILE] [--gap MS]\n"
				"       airlock-bench-queue --humaneval "
				"[--dataset FILE] [--airlock BIN] "
				"[--state-dir DIR] [--workers W] "
				"[--json FILE]\n");
			return 2;
		}
	}
	if (humaneval) {
		/* airlock next to this program (both in build/tools) */
		if (!he.airlock &&
		    readlink("/proc/self/exe", self, sizeof(self) - 16) > 0) {
			char *slash = strrchr(self, '/');

			strcpy(slash ? slash + 1 : self, "airlock");
			he.airlock = self;
		}
		he.state_dir = state_set ? sb.state_dir : NULL;
		he.workers = workers;
		he.json = json;
		return bench_humaneval(&he) < 0 ? 1 : 0;
	}
	if (jobs < 2 || jobs > 10000 || workers < 1 || workers > 64)
		return 2;
	al_log_level = AL_LOG_WARN;
	for (int i = 0; i < 5; i++)
		s[i].ms = calloc(jobs + 4, sizeof(double));
	if (bench_queue(&sb, jobs, workers, &s[0], &s[1]) < 0)
		fprintf(stderr, "bench: the queue run failed\n");
	bench_direct(&sb, jobs, &s[2]);
	if (in_path("runsc"))
		bench_exec(rs, jobs, &s[3]);
	else
		s[3].note = "not installed (Debian 12: apt install runsc)";
	if (in_path("bwrap"))
		bench_exec(bw, jobs, &s[4]);
	else
		s[4].note = "not installed (apt install bubblewrap)";
	for (int i = 0; i < 5; i++)
		finish(&s[i]);
	printf("%-34s %9s %9s %10s  %s\n", "what (trivial job `true`)",
	       "p50 ms", "p99 ms", "throughput", "vs sandbox alone");
	print_row(&s[0], s[2].p50);
	print_row(&s[1], 0);
	print_row(&s[2], 0);
	print_row(&s[3], s[2].p50);
	print_row(&s[4], s[2].p50);
	if (json) {
		FILE *f = fopen(json, "we");

		if (f) {
			fprintf(f,
				"{\"jobs\": %u, \"workers\": %u, "
				"\"gap_ms\": %u, \"rows\": [\n",
				jobs, workers, gap_ms);
			for (int i = 0; i < 5; i++)
				json_row(f, &s[i], i == 4);
			fprintf(f, "], \"queue_overhead_ratio\": %.3f}\n",
				s[2].p50 > 0 ? s[0].p50 / s[2].p50 : 0.0);
			fclose(f);
		}
	}
	for (int i = 0; i < 5; i++)
		free(s[i].ms);
	return 0;
}
