/* cmd_run.c: `airlock run`, one command in one fresh microVM, as if it ran
 * here: its stdout and stderr are ours, its exit code is ours.
 *
 * The job goes through the queue like any other (so what `run` shows is
 * what `serve` does): to the configured Redis, or, with none, to an
 * embedded redis-server and dispatcher that live for this command only
 * (embed.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "embed.h"
#include "sbconfig.h"

struct run_opts {
	const char *template_;		 /* -t */
	const char *language;		 /* -l: the operand is its source */
	uint32_t timeout_ms;		 /* --timeout, 0 = policy */
	uint32_t memory_mb;		 /* --memory, 0 = policy */
	const char *stdin_path;		 /* --stdin */
	const char *files[AL_FILES_MAX]; /* --file LOCAL[:GUEST] */
	size_t n_files;			 /* entries in files */
	bool json;			 /* --json */
};

static int add_file(struct al_job *job, const char *spec)
{
	const char *colon = strchr(spec, ':');
	const char *guest = colon ? colon + 1 : strrchr(spec, '/');
	struct al_file *f = &job->files[job->n_files];
	char *local;
	size_t len;
	int r;

	local = colon ? strndup(spec, (size_t)(colon - spec)) : strdup(spec);
	if (!local)
		return -ENOMEM;
	guest = colon ? guest : (guest ? guest + 1 : spec);
	r = al_read_file(local, AL_JOB_MAX_BYTES, (char **)&f->content.data,
			     &len);
	if (r < 0) {
		fprintf(stderr, "airlock run: --file %s: %s\n", local,
			r == -E2BIG ? "too big" : strerror(-r));
		free(local);
		return r;
	}
	free(local);
	f->content.len = len;
	f->path = strdup(guest);
	job->n_files++;
	return f->path ? 0 : -ENOMEM;
}

/* The language's source file has a fixed name (java: Main.java): a FILE
 * of another name is placed under it, which is said (issue 37: javac then
 * names a file the user never wrote). */
static void say_renamed(const char *lang, const struct al_policy *pol,
			const char *file)
{
	const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;

	for (size_t i = 0; i < pol->n_languages; i++)
		if (!strcmp(pol->languages[i].name, lang) &&
		    strcmp(pol->languages[i].file, base))
			fprintf(stderr,
				"airlock run: note: %s goes into the VM as %s, "
				"the file language %s compiles%s\n",
				base, pol->languages[i].file, lang,
				!strcmp(lang, "java") || !strcmp(lang, "kotlin")
				    ? ": its public class must be Main"
				    : "");
}

/* With --language: the source file FILE as `source_code`, the step left
 * without a command, and the job expanded as a worker would (its
 * template, a compile step, the run command). */
static int language_job(const struct run_opts *ro, const struct al_policy *pol,
			const char *file, struct al_job *job)
{
	struct al_diags d;
	size_t len;
	int r;

	if (!(job->language = strdup(ro->language)))
		return -ENOMEM;
	r = al_read_file(file, AL_JOB_MAX_BYTES, (char **)&job->source.data,
			 &len);
	if (r < 0) {
		fprintf(stderr, "airlock run: %s: %s\n", file,
			r == -E2BIG ? "too big" : strerror(-r));
		return r;
	}
	job->source.len = len;
	job->has_source = true;
	say_renamed(ro->language, pol, file);
	al_diags_init(&d);
	r = al_job_expand_language(job, pol, &d);
	for (size_t i = 0; r < 0 && i < d.n; i++)
		fprintf(stderr, "airlock run: %s%s%s\n", d.items[i].path,
			d.items[i].path[0] ? ": " : "", d.items[i].reason);
	return r;
}

/* The job from the options and the command; validated by a round trip
 * through the decoder, which reports every problem. */
static int build_job(const struct run_opts *ro, const struct al_policy *pol,
		     int argc, char **argv, struct al_job *ret)
{
	struct al_job job = {0};
	struct al_step *s;
	struct al_diags d;
	char *mp = NULL;
	size_t mplen = 0;
	int r = -ENOMEM;

	job.steps = calloc(1, sizeof(*job.steps));
	job.files = calloc(ro->n_files ? ro->n_files : 1, sizeof(*job.files));
	if (!job.steps || !job.files)
		goto out;
	job.n_steps = 1;
	s = &job.steps[0];
	s->argv = calloc((size_t)argc + 1, sizeof(*s->argv));
	if (!s->argv)
		goto out;
	for (int i = 0; !ro->language && i < argc; i++)
		if (!(s->argv[i] = strdup(argv[i])))
			goto out;
	s->argc = ro->language ? 0 : (size_t)argc;
	if (ro->template_ && !(job.template_ = strdup(ro->template_)))
		goto out;
	for (size_t i = 0; i < ro->n_files; i++)
		if ((r = add_file(&job, ro->files[i])) < 0)
			goto out;
	if (ro->stdin_path) {
		size_t len;

		r = al_read_file(ro->stdin_path, AL_JOB_MAX_BYTES,
				     (char **)&s->stdin_.data, &len);
		if (r < 0) {
			fprintf(stderr, "airlock run: --stdin %s: %s\n",
				ro->stdin_path,
				r == -E2BIG ? "too big" : strerror(-r));
			goto out;
		}
		s->stdin_.len = len;
		s->has_stdin = true;
	}
	if (ro->timeout_ms) {
		s->timeout_ms = ro->timeout_ms;
		/* the VM's wall time must cover the step */
		if (ro->timeout_ms + 10000u > pol->defaults.wall_ms)
			job.limits.wall_ms = ro->timeout_ms + 10000u;
	}
	job.limits.memory_mb = ro->memory_mb;
	if (ro->language && (r = language_job(ro, pol, argv[0], &job)) < 0)
		goto out;
	r = al_job_to_msgpack(&job, &mp, &mplen);
	if (r < 0)
		goto out;
	al_diags_init(&d);
	r = al_job_from_msgpack(mp, mplen, ret, &d);
	for (size_t i = 0; r < 0 && i < d.n; i++)
		fprintf(stderr, "airlock run: %s%s%s\n", d.items[i].path,
			d.items[i].path[0] ? ": " : "", d.items[i].reason);
out:
	free(mp);
	al_job_release(&job);
	return r;
}

/* Submit, wait (interruptible), fetch. */
static int execute(const struct al_cli *cli, struct al_embed *e,
		   struct alq_prepared *p, struct al_result *res)
{
	struct alq_client cl = {0};
	struct al_diags d;
	char *buf = NULL;
	size_t len = 0;
	bool dup;
	int r;

	if (al_cli_open(cli, &cl) < 0)
		return -EIO;
	if (al_cli_say_backend(cli, &cl, e != NULL) < 0) {
		alq_client_close(&cl);
		return -EIO;
	}
	r = alq_client_submit(&cl, p->id, p->payload, p->len, p->wall_ms, &dup);
	while (r == 0) {
		int st;

		r = alq_client_wait(&cl, p->id, 500);
		if (r < 0 && al_cli_interrupted()) {
			r = -EINTR; /* the signal broke the blocking read */
			break;
		}
		if (r != -ETIMEDOUT)
			break;
		r = 0;
		if (al_cli_interrupted()) {
			r = -EINTR;
		} else if (e && al_embed_serve_gone(e, &st)) {
			fprintf(stderr, "airlock run: the embedded dispatcher "
					"stopped\n");
			r = -ECHILD;
		}
	}
	if (r == 0)
		r = alq_client_result(&cl, p->id, &buf, &len);
	if (r == 0) {
		al_diags_init(&d);
		r = al_result_from_msgpack(buf, len, res, &d);
	}
	if (r < 0 && r != -EINTR && r != -ECHILD)
		fprintf(stderr, "airlock run: %s\n",
			cl.err[0] ? cl.err : strerror(-r));
	free(buf);
	alq_client_close(&cl);
	return r;
}

static void print_outputs(const struct al_result *res)
{
	for (size_t i = 0; i < res->n_steps; i++) {
		const struct al_step_result *s = &res->steps[i];

		al_cli_print_output(s);
		if (s->status == AL_CE && s->compile_output.len)
			fwrite(s->compile_output.data, 1,
			       s->compile_output.len, stderr);
		if (s->stdout_truncated || s->stderr_truncated)
			fprintf(stderr, "airlock run: output truncated at "
					"the output limit\n");
	}
	if (res->error)
		fprintf(stderr, "airlock run: %s: %s\n",
			al_status_name(res->status), res->error);
	else if (res->status == AL_TO)
		fprintf(stderr, "airlock run: timed out\n");
	else if (res->status == AL_TL)
		fprintf(stderr, "airlock run: CPU time limit exceeded\n");
}

static const struct al_opt opts[] = {
    {"template", 't', AL_OPT_ARG | AL_OPT_SHORT},
    {"language", 'l', AL_OPT_ARG | AL_OPT_SHORT},
    {"timeout", 'T', AL_OPT_ARG},
    {"memory", 'm', AL_OPT_ARG},
    {"file", 'f', AL_OPT_ARG},
    {"stdin", 'i', AL_OPT_ARG},
    {"json", 'j', 0},
    {NULL, 0, 0},
};

/* --timeout SECONDS and --memory MB. */
static int opt_number(struct al_cli *cli, struct run_opts *ro, int c,
		      const char *arg)
{
	char *end;
	double v = strtod(arg, &end);

	if (c == 'T') {
		if (*end || !(v >= 0.001 && v <= AL_TIMEOUT_MS_MAX / 1000))
			return al_cli_usage_error(cli, "--timeout: seconds, "
						       "0.001..600");
		ro->timeout_ms = (uint32_t)(v * 1000);
		return 0;
	}
	if (*end || v < AL_MEMORY_MB_MIN || v > AL_MEMORY_MB_MAX)
		return al_cli_usage_error(cli, "--memory: MiB, %u..%u",
					  AL_MEMORY_MB_MIN, AL_MEMORY_MB_MAX);
	ro->memory_mb = (uint32_t)v;
	return 0;
}

static int opt(struct al_cli *cli, int c, const char *arg)
{
	struct run_opts *ro = cli->opts;

	switch (c) {
	case 't':
		ro->template_ = arg;
		return 0;
	case 'l':
		ro->language = arg;
		return 0;
	case 'f':
		if (ro->n_files == AL_FILES_MAX)
			return al_cli_usage_error(cli, "at most %u --file",
						  AL_FILES_MAX);
		ro->files[ro->n_files++] = arg;
		return 0;
	case 'i':
		ro->stdin_path = arg;
		return 0;
	case 'j':
		ro->json = true;
		return 0;
	default:
		return opt_number(cli, ro, c, arg);
	}
}

static int run(struct al_cli *cli, int argc, char **argv)
{
	const struct run_opts *ro = cli->opts;
	struct al_config *cfg = &cli->cfg;
	struct alq_prepared prep = {0};
	struct al_result res = {0};
	struct al_job job = {0};
	struct al_policy policy;
	struct al_embed e;
	bool embedded;
	char err[2048], *json = NULL;
	int r, rc = 125;

	al_embed_init(&e);
	al_config_policy(cfg, &policy);
	if (!cfg->redis.url[0]) /* embedded: the jobs run here */
		al_config_policy_local(cfg, &policy);
	if (ro->language && argc != 1) {
		al_cli_usage_error(cli, "--language takes one FILE, the "
					"program's source");
		return AL_EXIT_USAGE;
	}
	if (build_job(ro, &policy, argc, argv, &job) < 0)
		return AL_EXIT_USAGE;
	if (alq_prepare(&job, &policy, NULL, &prep) < 0)
		goto out;
	al_cli_catch_signals();
	embedded = !cfg->redis.url[0];
	if (embedded) {
		cfg->workers.count = 1;
		if (al_embed_start(&e, cfg, &policy, err, sizeof(err)) < 0) {
			al_cli_error(cli, "%s", err);
			goto out;
		}
	}
	r = execute(cli, embedded ? &e : NULL, &prep, &res);
	if (r == -EINTR) {
		rc = 130;
		goto out;
	}
	if (r < 0)
		goto out;
	if (ro->json) {
		if (al_result_to_json(&res, &json) == 0)
			printf("%s\n", json);
	} else {
		print_outputs(&res);
	}
	rc = al_cli_exit_code(&res);
out:
	al_embed_stop(&e, cfg->workers.shutdown_grace_ms);
	free(json);
	free(prep.payload);
	al_result_release(&res);
	al_job_release(&job);
	return rc;
}

const struct al_cmd al_cmd_run = {
    .name = "run",
    .summary = "run one command in a fresh microVM",
    .usage =
	"usage: airlock run [-t TEMPLATE] [--timeout SECONDS] [--memory MB]\n"
	"                   [--file LOCAL[:GUEST]]... [--stdin FILE] [--json]\n"
	"                   [--redis URL] [--config PATH] [--queue NAME]\n"
	"                   -- CMD [ARG...]\n"
	"       airlock run -l LANGUAGE [options] FILE\n"
	"\n"
	"Run CMD in a fresh microVM of TEMPLATE (default templates.default)\n"
	"and print its stdout and stderr. With a Redis configured, the job\n"
	"goes to its queue, run by the `airlock serve` there (a submit and\n"
	"a wait); with none, a private redis-server and one local worker\n"
	"run for this command only. A line on stderr says which (at\n"
	"log.level info).\n"
	"\n"
	"With --language, FILE is a program in LANGUAGE (a `language`\n"
	"line of a template: c, cpp, python, java, ...; docs/languages.md):\n"
	"it is compiled, when the language compiles, and run in the\n"
	"template that declares it; a compile error prints the compiler's\n"
	"output and ends the job (compile_error).\n"
	"\n"
	"options:\n"
	"  -t, --template T     VM template\n"
	"  -l, --language LANG  run FILE, a program in LANG\n"
	"  --timeout SECONDS    the command's timeout (also widens the VM's\n"
	"                       wall time to fit)\n"
	"  --memory MB          guest memory\n"
	"  --file LOCAL[:GUEST] copy LOCAL into the work dir (as GUEST, a\n"
	"                       relative path; default its base name)\n"
	"  --stdin FILE         feed FILE to the command's standard input\n"
	"  --json               print the result record instead of output\n"
	"\n"
	"exit status: the command's exit code; 128+N when killed by signal\n"
	"N; 124 timed out; 137 memory limit; 125 the job was rejected (RJ)\n"
	"or Airlock failed (XX); 2 usage; 130 interrupted.\n",
    .flags = AL_CMD_QUEUE | AL_CMD_IN_ORDER | AL_CMD_CONFIG,
    .options = opts,
    .opts_size = sizeof(struct run_opts),
    .args_min = 1,
    .args_max = -1,
    .args_error = "no command (airlock run [OPTIONS] -- CMD [ARG...])",
    .opt = opt,
    .run = run,
};
