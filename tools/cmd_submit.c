/* cmd_submit.c: `airlock submit`, put one job on the queue and print its
 * id. Submitting an id twice enqueues it once (the id is the idempotency
 * key); the second submit prints the id and says so on stderr.
 */
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
	    AL_CLI_COMMON_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	struct al_cli_common co = {0};
	struct al_prepared prep = {0};
	struct al_job job = {0};
	struct al_config cfg;
	struct al_policy policy;
	struct alq_client cl = {0};
	struct al_diags d;
	char err[2048], *text = NULL;
	size_t len;
	bool dup = false;
	int c, r, rc = AL_EXIT_USAGE;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (al_cli_common_opt(c, optarg, &co))
			continue;
		if (c == 'h') {
			al_cli_usage(cmd, stdout);
			return AL_EXIT_OK;
		}
		return al_cli_bad_usage(cmd);
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "airlock submit: takes one JOB.json or -\n");
		return al_cli_bad_usage(cmd);
	}
	if (al_cli_load(&co, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return AL_EXIT_USAGE;
	}
	al_config_policy(&cfg, &policy);
	r = al_cli_read_file(argv[optind], AL_JOB_MAX_BYTES, &text, &len);
	if (r < 0) {
		fprintf(stderr, "airlock submit: %s: %s\n", argv[optind],
			r == -E2BIG ? "over the job size cap" : strerror(-r));
		return AL_EXIT_USAGE;
	}
	al_diags_init(&d);
	if (al_job_from_json(text, len, &job, &d) < 0) {
		for (size_t i = 0; i < d.n; i++)
			fprintf(stderr, "%s: %s%s%s\n", argv[optind],
				d.items[i].path, d.items[i].path[0] ? ": " : "",
				d.items[i].reason);
		rc = AL_EXIT_FAIL;
		goto out;
	}
	if (al_cli_prepare(&job, &policy, NULL, &prep) < 0) {
		fprintf(stderr, "airlock submit: out of memory\n");
		goto out;
	}
	if (al_cli_connect(&cfg, &cl, err, sizeof(err)) < 0) {
		fprintf(stderr, "airlock submit: %s\n", err);
		goto out;
	}
	r = alq_client_submit(&cl, prep.id, prep.payload, prep.len,
			      prep.wall_ms, &dup);
	if (r < 0) {
		fprintf(stderr, "airlock submit: %s\n", cl.err);
		goto out;
	}
	if (dup)
		fprintf(stderr,
			"airlock submit: %s was submitted before; "
			"not enqueued again\n",
			prep.id);
	printf("%s\n", prep.id);
	rc = AL_EXIT_OK;
out:
	alq_client_close(&cl);
	al_job_release(&job);
	free(prep.payload);
	free(text);
	return rc;
}

const struct al_cmd al_cmd_submit = {
    .name = "submit",
    .summary = "put a job on the queue and print its id",
    .usage =
	"usage: airlock submit [--redis URL] [--config PATH] [--queue NAME]\n"
	"                      JOB.json|-\n"
	"\n"
	"Submit one JSON job (a file, or - for stdin) and print its id. A job\n"
	"without an id gets a fresh one. The id is the idempotency key: a\n"
	"second submit of the same id enqueues nothing (and says so on\n"
	"stderr). Exit 0 submitted, 1 invalid job, 2 other failure.\n",
    .run = run,
};
