/* cmd_report.c: `airlock report`, a grader's report over a results file
 * (report.h), or every result printed as `airlock result` does. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "report.h"

struct report_opts {
	const char *dir;  /* -o DIR, NULL = print the results as text */
	const char *jobs; /* --jobs JOBS.jsonl, NULL = no diffs */
};

static const struct al_opt opts[] = {
    {"output", 'o', AL_OPT_ARG | AL_OPT_SHORT},
    {"jobs", 'J', AL_OPT_ARG},
    {NULL, 0, 0},
};

static int opt(struct al_cli *cli, int c, const char *arg)
{
	struct report_opts *o = cli->opts;

	if (c == 'o')
		o->dir = arg;
	else
		o->jobs = arg;
	return 0;
}

static int run(struct al_cli *cli, int argc, char **argv)
{
	const struct report_opts *o = cli->opts;
	char err[1024];
	int r;

	(void)argc;
	if (o->jobs && !o->dir)
		return al_cli_usage_error(cli, "--jobs needs -o DIR");
	r = o->dir ? al_report_write(argv[0], o->jobs, o->dir, err,
				     sizeof(err))
		   : al_report_print(argv[0], err, sizeof(err));
	if (r < 0) {
		al_cli_error(cli, "%s", err);
		return AL_EXIT_USAGE;
	}
	if (o->dir)
		printf("report: %s/index.html, %s/submissions.csv, "
		       "%s/tests.csv, %s/cases.csv\n",
		       o->dir, o->dir, o->dir, o->dir);
	return AL_EXIT_OK;
}

const struct al_cmd al_cmd_report = {
    .name = "report",
    .summary = "a grader's report (HTML, CSV) over a results file",
    .usage =
	"usage: airlock report [-o DIR [--jobs JOBS.jsonl]] RESULTS.jsonl\n"
	"\n"
	"Read RESULTS.jsonl (as `airlock batch -o` writes it). With -o, write\n"
	"DIR/index.html (verdict counts, a pass table with a row per\n"
	"submission and a column per test, each failed submission's compile\n"
	"error or first failing test), DIR/submissions.csv (a row per\n"
	"submission: verdict, Judge0 status id, score, tests passed, compile\n"
	"output) and DIR/tests.csv (a row per test: status, verdict, time,\n"
	"memory, score) and DIR/cases.csv (a row per test of the steps'\n"
	"test reports, JUnit XML or TAP: suite, name, status, time, message;\n"
	"the page shows their counts and the tests that did not pass).\n"
	"With --jobs, the jobs the results came from give the\n"
	"first failing test's diff against its expected output. Without -o,\n"
	"print every result as `airlock result` does. Exit 0 written, 2 on\n"
	"an unreadable or invalid file.\n"
	"\n"
	"options:\n"
	"  -o, --output DIR      write the report into DIR (created)\n"
	"      --jobs FILE       the JSONL jobs, for expected outputs\n",
    .options = opts,
    .opts_size = sizeof(struct report_opts),
    .args_min = 1,
    .args_max = 1,
    .args_error = "takes one RESULTS.jsonl",
    .opt = opt,
    .run = run,
};
