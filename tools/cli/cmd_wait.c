/* cmd_wait.c: `airlock wait`, block until a job's result is stored. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define EXIT_UNKNOWN 3 /* no such job */

struct wait_opts {
	double timeout; /* --timeout seconds, 0 = forever */
};

static const struct al_opt opts[] = {
    {"timeout", 't', AL_OPT_ARG | AL_OPT_SHORT},
    {NULL, 0, 0},
};

static int opt(struct al_cli *cli, int c, const char *arg)
{
	struct wait_opts *o = cli->opts;
	char *end;

	(void)c; /* --timeout, the only one */
	o->timeout = strtod(arg, &end);
	if (*end || !(o->timeout > 0 && o->timeout <= 86400 * 30))
		return al_cli_usage_error(cli,
					  "--timeout: seconds, more than 0");
	return 0;
}

static int run(struct al_cli *cli, int argc, char **argv)
{
	const struct wait_opts *o = cli->opts;
	struct alq_client cl = {0};
	struct alq_job j;
	int r;

	(void)argc;
	if ((r = al_cli_open_job(cli, argv[0], &cl)))
		return r;
	/* a mistyped id would never get a result: say so now */
	r = alq_job_status(&cl, argv[0], &j);
	if (r == 0 && j.state == ALQ_UNKNOWN) {
		al_cli_error(cli, "%s: no such job (never submitted, or its "
			     "result expired)", argv[0]);
		alq_client_close(&cl);
		return EXIT_UNKNOWN;
	}
	if (r == 0)
		r = alq_client_wait(&cl, argv[0],
				    (uint32_t)(o->timeout * 1000));
	if (r == -ETIMEDOUT)
		al_cli_error(cli, "%s: no result yet", argv[0]);
	else if (r < 0)
		al_cli_error(cli, "%s", cl.err);
	alq_client_close(&cl);
	return r == 0		 ? AL_EXIT_OK
	       : r == -ETIMEDOUT ? AL_EXIT_FAIL
				 : AL_EXIT_USAGE;
}

const struct al_cmd al_cmd_wait = {
    .name = "wait",
    .summary = "wait until a job has a result",
    .usage = "usage: airlock wait [--timeout SECONDS] [--redis URL]\n"
	     "                    [--config PATH] [--queue NAME] ID\n"
	     "\n"
	     "Block until the result of job ID is stored (forever, or up to\n"
	     "--timeout). Exit 0 when it is, 1 on timeout, 2 on failure, 3\n"
	     "at once when there is no such job (never submitted, or its\n"
	     "result expired).\n"
	     "`airlock result ID` prints it.\n"
	     "\n"
	     "options:\n"
	     "  -t, --timeout SECONDS  give up after SECONDS (exit 1)\n",
    .flags = AL_CMD_QUEUE | AL_CMD_CONFIG,
    .options = opts,
    .opts_size = sizeof(struct wait_opts),
    .args_min = 1,
    .args_max = 1,
    .args_error = "takes one job id",
    .opt = opt,
    .run = run,
};
