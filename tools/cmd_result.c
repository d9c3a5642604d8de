/* cmd_result.c: `airlock result`, print a stored result. */
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
	    {"json", no_argument, NULL, 'j'},
	    AL_CLI_COMMON_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	struct al_cli_common co = {0};
	struct al_result res = {0};
	struct al_config cfg;
	struct alq_client cl = {0};
	struct al_diags d;
	char err[2048], *buf = NULL, *json = NULL;
	bool as_json = false;
	size_t len = 0;
	int c, r, rc = AL_EXIT_USAGE;

	optind = 0;
	while ((c = getopt_long(argc, argv, "hj", opts, NULL)) != -1) {
		if (al_cli_common_opt(c, optarg, &co))
			continue;
		if (c == 'h') {
			al_cli_usage(cmd, stdout);
			return AL_EXIT_OK;
		}
		if (c != 'j')
			return al_cli_bad_usage(cmd);
		as_json = true;
	}
	if (optind + 1 != argc ||
	    !al_id_valid(argv[optind], strlen(argv[optind]))) {
		fprintf(stderr, "airlock result: takes one job id\n");
		return al_cli_bad_usage(cmd);
	}
	if (al_cli_load(&co, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return AL_EXIT_USAGE;
	}
	if (al_cli_connect(&cfg, &cl, err, sizeof(err)) < 0) {
		fprintf(stderr, "airlock result: %s\n", err);
		return AL_EXIT_USAGE;
	}
	r = alq_client_result(&cl, argv[optind], &buf, &len);
	if (r == -ENOENT) {
		fprintf(stderr,
			"airlock result: %s: no result (not done, "
			"unknown or expired)\n",
			argv[optind]);
		rc = AL_EXIT_FAIL;
		goto out;
	}
	if (r < 0) {
		fprintf(stderr, "airlock result: %s\n",
			r == -E2BIG ? "result over the size cap" : cl.err);
		goto out;
	}
	al_diags_init(&d);
	if (al_result_from_msgpack(buf, len, &res, &d) < 0) {
		al_diags_format(&d, err, sizeof(err));
		fprintf(stderr,
			"airlock result: stored result is invalid: "
			"%s\n",
			err);
		goto out;
	}
	if (as_json) {
		if (al_result_to_json(&res, &json) < 0)
			goto out;
		printf("%s\n", json);
	} else {
		al_cli_print_result(&res, stdout, 4096);
	}
	rc = AL_EXIT_OK;
out:
	free(json);
	free(buf);
	al_result_release(&res);
	alq_client_close(&cl);
	return rc;
}

const struct al_cmd al_cmd_result = {
    .name = "result",
    .summary = "print a job's result",
    .usage = "usage: airlock result [--json] [--redis URL] [--config PATH]\n"
	     "                      [--queue NAME] ID\n"
	     "\n"
	     "Print the stored result of job ID: a summary (outputs escaped,\n"
	     "4096 bytes per stream at most), or with --json the whole record\n"
	     "as one line of JSON. Exit 0 printed, 1 no result, 2 failure.\n",
    .run = run,
};
