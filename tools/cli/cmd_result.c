/* cmd_result.c: `airlock result`, print a stored result. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct al_opt opts[] = {
    {"json", 'j', AL_OPT_SHORT}, /* the whole record */
    {NULL, 0, 0},
};

static int run(struct al_cli *cli, int argc, char **argv)
{
	struct al_result res = {0};
	struct alq_client cl = {0};
	struct al_diags d;
	char err[2048], *buf = NULL, *json = NULL;
	size_t len = 0;
	int r, rc = AL_EXIT_USAGE;

	(void)argc;
	if ((r = al_cli_open_job(cli, argv[0], &cl)))
		return r;
	r = alq_client_result(&cl, argv[0], &buf, &len);
	if (r == -ENOENT) {
		al_cli_error(cli, "%s: no result (not done, unknown or expired)",
			     argv[0]);
		rc = AL_EXIT_FAIL;
		goto out;
	}
	if (r < 0) {
		al_cli_error(cli, "%s",
			     r == -E2BIG ? "result over the size cap" : cl.err);
		goto out;
	}
	al_diags_init(&d);
	if (al_result_from_msgpack(buf, len, &res, &d) < 0) {
		al_diags_format(&d, err, sizeof(err));
		al_cli_error(cli, "stored result is invalid: %s", err);
		goto out;
	}
	if (cli->flag['j']) {
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
	     "as one line of JSON. Exit 0 printed, 1 no result, 2 failure.\n"
	     "\n"
	     "options:\n"
	     "  -j, --json         print the result record as JSON\n",
    .flags = AL_CMD_QUEUE | AL_CMD_CONFIG,
    .options = opts,
    .args_min = 1,
    .args_max = 1,
    .args_error = "takes one job id",
    .run = run,
};
