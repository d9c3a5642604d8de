/* cmd_batch.c: `airlock batch`, a JSONL file of jobs through the queue,
 * results back as JSONL in input order.
 *
 * Steps: read and decode every line (an undecodable line gets a local RJ
 * result, so the output still has one line per input line; a line without
 * an id gets one derived from its content, so a rerun maps it to the same
 * job); then the job set (jobset.h) submits, waits, stores each result as
 * it arrives in OUT.partial and, at the end, writes them in input order
 * through OUT.tmp renamed to OUT. With --resume, jobs already in OUT or
 * OUT.partial are not submitted again.
 *
 * A file that is not JSONL at all is refused before anything runs: one
 * JSON document spread over lines (`jq .` output: its first line, "{" or
 * "[", is no complete value) or a JSON array of jobs. Line by line it
 * would be dozens of RJ results that all say the same thing. While the
 * first line leaves it open, the text is kept (up to DOC_MAX) and parsed
 * whole at the end; a file that is not one JSON value after all (a
 * truncated first job in a real JSONL file) keeps its per-line results.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "sbconfig.h"
#include "report.h"
#include "jobset.h"
#include "worker.h"

#define LINE_MAX_ (AL_JOB_MAX_BYTES + 2)
#define DOC_MAX	  (64u << 20) /* a whole-file JSON document we recognise */

/* One seen content hash (for the n-th repeat of an id-less line). */
struct seen {
	char id[AL_ID_MAX + 1]; /* the derived base id, "" = free slot */
	unsigned n;		/* times seen */
};

struct loader {
	struct al_jobset *set;	   /* where the jobs go */
	const struct al_policy *p; /* for wall times */
	struct seen *seen;	   /* open-addressing table of derived ids */
	size_t cap, used;	   /* its slots (a power of 2), used ones */
	size_t lines;		   /* non-blank lines read */
	size_t rejected;	   /* of them, not valid jobs (local RJ) */
	bool doc_on;		   /* the file may be one JSON document */
	char *doc;		   /* its text so far, while doc_on */
	size_t doc_len, doc_cap;   /* its length, allocation */
};

static struct seen *seen_slot(struct seen *t, size_t cap, const char *id)
{
	/* the id is "h-" and hex digits of a hash: its own good hash */
	size_t i = (size_t)strtoull(id + 2 + 8, NULL, 16) & (cap - 1);

	while (t[i].id[0] && strcmp(t[i].id, id))
		i = (i + 1) & (cap - 1);
	return &t[i];
}

/* How many times (this one included) has this derived id been seen?
 * 0 when out of memory. */
static unsigned seen_count(struct loader *l, const char *id)
{
	struct seen *s;

	if ((l->used + 1) * 2 > l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		struct seen *t = calloc(cap, sizeof(*t));

		if (!t)
			return 0;
		for (size_t i = 0; i < l->cap; i++)
			if (l->seen[i].id[0])
				*seen_slot(t, cap, l->seen[i].id) = l->seen[i];
		free(l->seen);
		l->seen = t;
		l->cap = cap;
	}
	s = seen_slot(l->seen, l->cap, id);
	if (!s->id[0]) {
		snprintf(s->id, sizeof(s->id), "%s", id);
		l->used++;
	}
	return ++s->n;
}

/* A line that is not a valid job: a local RJ result. */
static int add_rejected(struct loader *l, struct al_diags *d, size_t len,
			size_t lineno)
{
	struct al_result res;
	char id[AL_ID_MAX + 1], *json = NULL;
	int r;

	if (len > LINE_MAX_)
		al_diags_add(d, "", "line over %u bytes", AL_JOB_MAX_BYTES);
	if (d->id[0])
		snprintf(id, sizeof(id), "%s", d->id);
	else
		snprintf(id, sizeof(id), "line-%zu", lineno);
	if (al_worker_reject(id, d, &res) < 0 ||
	    al_result_to_json(&res, &json) < 0) {
		al_result_release(&res);
		return -ENOMEM;
	}
	al_result_release(&res);
	r = al_jobset_add_local(l->set, id, json);
	free(json);
	return r;
}

/* A valid job: derive its id if it has none, encode and add it. */
static int add_job(struct loader *l, struct al_job *job, size_t lineno)
{
	struct alq_prepared p;
	char id[AL_ID_MAX + 1], *mp = NULL;
	size_t len = 0;
	unsigned nth;

	if (!job->id) {
		if (al_job_to_msgpack(job, &mp, &len) < 0)
			return -ENOMEM;
		al_jobset_derive_id(mp, len, 1, id);
		nth = seen_count(l, id);
		if (!nth) {
			free(mp);
			return -ENOMEM;
		}
		al_jobset_derive_id(mp, len, nth, id);
		free(mp);
	}
	if (alq_prepare(job, l->p, job->id ? NULL : id, &p) < 0)
		return -ENOMEM;
	if (al_jobset_add(l->set, &p) < 0)
		return -ENOMEM;
	l->set->jobs[l->set->n - 1].line = lineno; /* named on conflicts */
	return 0;
}

/* Could a file starting with this line be one JSON document rather than
 * JSONL? Yes when the line is not a complete JSON value but the start of
 * one, or is an array (never a job). */
static bool doc_start(const char *line, size_t len)
{
	json_error_t err;
	json_t *v;
	bool r;

	if (len > LINE_MAX_)
		return false;
	v = json_loadb(line, len, JSON_DECODE_ANY, &err);
	r = v ? json_is_array(v)
	      : json_error_code(&err) == json_error_premature_end_of_input;
	json_decref(v);
	return r;
}

/* Keep a line of what may be one document; drop it all past DOC_MAX. */
static int doc_add(struct loader *l, const char *line, size_t len)
{
	if (l->doc_len + len > DOC_MAX) {
		l->doc_on = false;
		return 0;
	}
	if (l->doc_len + len > l->doc_cap) {
		size_t cap = l->doc_cap ? l->doc_cap : 65536;
		char *nd;

		while (cap < l->doc_len + len)
			cap *= 2;
		if (!(nd = realloc(l->doc, cap)))
			return -ENOMEM;
		l->doc = nd;
		l->doc_cap = cap;
	}
	memcpy(l->doc + l->doc_len, line, len);
	l->doc_len += len;
	return 0;
}

/* Is the whole file one JSON document (not a one-line job)? Says what
 * it is and returns -EINVAL; 0 when it is JSONL. */
static int doc_refuse(struct al_cli *cli, struct loader *l, const char *path)
{
	json_t *v = l->doc_on
			? json_loadb(l->doc, l->doc_len, JSON_DECODE_ANY, NULL)
			: NULL;

	if (!v)
		return 0;
	if (json_is_array(v))
		al_cli_error(cli,
			     "%s: one JSON array (of %zu values) over %zu "
			     "line%s, not JSONL: batch takes one job object "
			     "a line (jq -c '.[]' FILE); nothing was run",
			     path, json_array_size(v), l->lines,
			     l->lines == 1 ? "" : "s");
	else
		al_cli_error(cli,
			     "%s: one JSON document spread over %zu lines, not "
			     "JSONL: batch takes one job object a line (jq -c "
			     ". FILE); nothing was run",
			     path, l->lines);
	json_decref(v);
	return -EINVAL;
}

/* One non-blank line: a job, or a local RJ result. */
static int load_line(struct loader *l, const char *line, size_t len,
		     size_t lineno)
{
	struct al_job job = {0};
	struct al_diags d;
	int r;

	al_diags_init(&d);
	/* the policy validate, submit and serve apply */
	if (len > LINE_MAX_ || al_job_from_json(line, len, &job, &d) < 0 ||
	    al_job_expand_language(&job, l->p, &d) < 0 ||
	    al_job_check_policy(&job, l->p, &d) < 0) {
		if (job.id && !d.id[0])
			snprintf(d.id, sizeof(d.id), "%s", job.id);
		l->rejected++;
		r = add_rejected(l, &d, len, lineno);
	} else {
		r = add_job(l, &job, lineno);
	}
	al_job_release(&job);
	return r;
}

/* One non-blank line of JOBS.jsonl (al_cli_line_fn). */
static int loader_line(void *ctx, char *line, size_t len, size_t lineno)
{
	struct loader *l = ctx;
	int r = 0;

	if (!l->lines++)
		l->doc_on = doc_start(line, len);
	if (l->doc_on)
		r = doc_add(l, line, len);
	if (r == 0)
		r = load_line(l, line, len, lineno);
	return r;
}

/* Read JOBS.jsonl: one job per non-blank line. -EINVAL (said) when the
 * file is one JSON document instead. */
static int load(struct al_cli *cli, struct loader *l, const char *path)
{
	int r = al_cli_each_line(path, loader_line, l);

	if (r == 0)
		r = doc_refuse(cli, l, path);
	free(l->doc);
	l->doc = NULL;
	l->doc_on = false;
	return r;
}

struct batch_opts {
	const char *output; /* -o, NULL = stdout */
	uint32_t workers;   /* --workers, 0 = workers.count */
	bool resume;	    /* --resume */
	bool allow_dups;    /* --allow-duplicates */
	const char *report; /* --report DIR (needs -o), NULL = none */
	bool exit_code;	    /* --exit-code: 3 when a job failed */
};

static const struct al_opt opts[] = {
    {"output", 'o', AL_OPT_ARG | AL_OPT_SHORT},
    {"workers", 'w', AL_OPT_ARG | AL_OPT_SHORT},
    {"resume", 'R', 0},
    {"allow-duplicates", 'D', 0},
    {"report", 'P', AL_OPT_ARG},
    {"exit-code", 'E', 0},
    {NULL, 0, 0},
};

static int opt(struct al_cli *cli, int c, const char *arg)
{
	struct batch_opts *o = cli->opts;

	switch (c) {
	case 'o':
		o->output = arg;
		return 0;
	case 'R':
		o->resume = true;
		return 0;
	case 'D':
		o->allow_dups = true;
		return 0;
	case 'P':
		o->report = arg;
		return 0;
	case 'E':
		o->exit_code = true;
		return 0;
	default:
		return al_cli_opt_workers(cli, arg, &o->workers);
	}
}

/* --exit-code: did a job fail? Its status is not OK, or its verdict is
 * neither accepted nor none (an OK run whose output was wrong). */
static bool some_job_failed(const struct al_jobset *s)
{
	if (s->counts[AL_OK] < s->done)
		return true;
	for (int v = 0; v < AL_VERDICT_COUNT; v++)
		if (v != AL_VERDICT_NONE && v != AL_VERDICT_ACCEPTED &&
		    s->verdicts[v])
			return true;
	return false;
}

/* --report DIR: the grader's report over what was just written, with
 * the jobs file for expected outputs (not stdin, read already). */
static int write_report(struct al_cli *cli, const struct batch_opts *o,
			const char *jobs)
{
	char err[1024];
	int r;

	r = al_report_write(o->output, strcmp(jobs, "-") ? jobs : NULL,
			    o->report, err, sizeof(err));
	if (r < 0)
		al_cli_error(cli, "--report: %s", err);
	else
		printf("report: %s/index.html\n", o->report);
	return r;
}

static int run(struct al_cli *cli, int argc, char **argv)
{
	const struct batch_opts *o = cli->opts;
	bool to_file = o->output && strcmp(o->output, "-");
	struct al_jobset_opts so = {.name = "batch",
				    .resume = o->resume,
				    .allow_duplicates = o->allow_dups,
				    .workers = o->workers};
	struct al_policy policy;
	struct al_jobset set;
	struct loader l = {.set = &set, .p = &policy};
	char store[4096];
	int r, rc = AL_EXIT_USAGE;

	(void)argc;
	al_jobset_init(&set);
	al_config_policy(&cli->cfg, &policy);
	if (!cli->cfg.redis.url[0]) /* embedded: the jobs run here */
		al_config_policy_local(&cli->cfg, &policy);
	if (o->resume && !to_file)
		return al_cli_usage_error(cli, "--resume needs -o FILE");
	if (o->report && !to_file)
		return al_cli_usage_error(cli, "--report needs -o FILE");
	if (to_file) {
		if (snprintf(store, sizeof(store), "%s.partial", o->output) >=
		    (int)sizeof(store))
			return al_cli_usage_error(cli, "-o: path too long");
		so.store = store;
		so.previous = o->output;
	}
	r = load(cli, &l, argv[0]);
	free(l.seen);
	if (r < 0) {
		if (r != -EINVAL)
			al_cli_error(cli, "%s: %s", argv[0], strerror(-r));
		goto out;
	}
	r = al_jobset_run(&set, cli, &so);
	if (r == -EINTR)
		rc = 130;
	if (r < 0)
		goto out;
	r = al_jobset_write(&set, o->output);
	if (r < 0) {
		al_cli_error(cli, "writing results: %s", strerror(-r));
		goto out;
	}
	al_jobset_drop_store(&set);
	al_jobset_summary(&set, to_file ? stdout : stderr,
			  to_file ? o->output : "stdout");
	rc = AL_EXIT_OK;
	if (o->report && write_report(cli, o, argv[0]) < 0)
		rc = AL_EXIT_USAGE;
	else if (o->exit_code && some_job_failed(&set))
		rc = 3; /* a CI script's "the build failed" */
	/* as validate and submit: an invalid job is the caller's problem */
	if (l.rejected) {
		al_cli_error(
		    cli, "%zu of %zu lines %s (RJ results, not run): exit 1",
		    l.rejected, l.lines,
		    l.rejected == 1 ? "is not a valid job"
				    : "are not valid jobs");
		rc = AL_EXIT_FAIL;
	}
	if (set.conflicts) { /* each line named as it was found */
		al_cli_error(cli, "%zu of %zu lines: id taken by another "
			     "payload (RJ results, not run): exit 1",
			     set.conflicts, l.lines);
		rc = AL_EXIT_FAIL;
	}
out:
	al_jobset_release(&set);
	return rc;
}

const struct al_cmd al_cmd_batch = {
    .name = "batch",
    .summary = "run a JSONL file of jobs, results as JSONL in input order",
    .usage =
	"usage: airlock batch [-o RESULTS.jsonl [--resume]] [--workers N]\n"
	"                     [--allow-duplicates] [--redis URL]\n"
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
	"With -o, each result is appended to FILE.partial as it arrives and\n"
	"FILE is replaced only at the end (through FILE.tmp), so an "
	"interrupted\n"
	"batch loses nothing: rerun it with --resume and the jobs already in\n"
	"FILE or FILE.partial are not run again, nor are those whose results\n"
	"are in Redis (the embedded Redis keeps an append-only file in the\n"
	"state dir for this). A job without an id gets one derived from its\n"
	"content (h-HASH), so a rerun maps it to the same job. Ids must be\n"
	"distinct: a repeated id is an error (it would share one result),\n"
	"or, with --allow-duplicates, a warning and one shared result when\n"
	"the lines are the same job (never for different jobs). An id that\n"
	"Redis holds for another job gets an RJ line naming it (exit 1).\n"
	"\n"
	"A file that is one JSON document instead (pretty-printed over\n"
	"lines, or a JSON array of jobs) is refused with one error before\n"
	"anything runs: make it JSONL first (jq -c '.[]' or jq -c .).\n"
	"\n"
	"Exit 0 when every line was a valid job and every job has a result\n"
	"(whatever its status); 1 when some line was not a valid job (the\n"
	"others ran, and every line has its result, RJ for those); 2 on\n"
	"failure or a file that is not JSONL; 130 interrupted. With\n"
	"--exit-code, 3 when every line was valid but some job failed: its\n"
	"status is not OK or its verdict is not accepted (for CI scripts).\n"
	"\n"
	"options:\n"
	"  -o, --output FILE     write the results to FILE\n"
	"  -w, --workers N       embedded workers (default workers.count)\n"
	"      --resume          skip jobs already done (needs -o)\n"
	"      --allow-duplicates  a repeated id warns and shares a result\n"
	"      --report DIR      also write a grader's report into DIR (needs\n"
	"                        -o; see `airlock report --help`)\n"
	"      --exit-code       exit 3 when some job failed (docs/ci.md)\n",
    .flags = AL_CMD_QUEUE | AL_CMD_CONFIG,
    .options = opts,
    .opts_size = sizeof(struct batch_opts),
    .args_min = 1,
    .args_max = 1,
    .args_error = "takes one JOBS.jsonl",
    .opt = opt,
    .run = run,
};
