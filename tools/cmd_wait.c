/* cmd_wait.c: `airlock wait`, block until a job's result is stored. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"

static int run(const struct al_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"timeout", required_argument, NULL, 't'},
	    AL_CLI_COMMON_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	struct al_cli_common co = {0};
	struct al_config cfg;
	struct alq_client cl = {0};
	double timeout = 0;
	char err[2048], *end;
	int c, r;

	optind = 0;
	while ((c = getopt_long(argc, argv, "ht:", opts, NULL)) != -1) {
		if (al_cli_common_opt(c, optarg, &co))
			continue;
		if (c == 'h') {
			al_cli_usage(cmd, stdout);
			return AL_EXIT_OK;
		}
		if (c != 't')
			return al_cli_bad_usage(cmd);
		timeout = strtod(optarg, &end);
		if (*end || !(timeout > 0 && timeout <= 86400 * 30)) {
			fprintf(stderr, "airlock wait: --timeout: seconds, "
					"more than 0\n");
			return al_cli_bad_usage(cmd);
		}
	}
	if (optind + 1 != argc ||
	    !al_id_valid(argv[optind], strlen(argv[optind]))) {
		fprintf(stderr, "airlock wait: takes one job id\n");
		return al_cli_bad_usage(cmd);
	}
	if (al_cli_load(&co, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return AL_EXIT_USAGE;
	}
	if (al_cli_connect(&cfg, &cl, err, sizeof(err)) < 0) {
		fprintf(stderr, "airlock wait: %s\n", err);
		return AL_EXIT_USAGE;
	}
	r = alq_client_wait(&cl, argv[optind], (uint32_t)(timeout * 1000));
	if (r == -ETIMEDOUT)
		fprintf(stderr, "airlock wait: %s: no result yet\n",
			argv[optind]);
	else if (r < 0)
		fprintf(stderr, "airlock wait: %s\n", cl.err);
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
	     "--timeout). Exit 0 when it is, 1 on timeout, 2 on failure.\n"
	     "`airlock result ID` prints it.\n",
    .run = run,
};
