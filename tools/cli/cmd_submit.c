/* cmd_submit.c: `airlock submit`, put one job on the queue and print its
 * id. Submitting an id twice enqueues it once (the id is the idempotency
 * key); the second submit prints the id and says so on stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int run(struct al_cli *cli, int argc, char **argv)
{
	struct alq_prepared prep = {0};
	struct al_job job = {0};
	struct al_policy policy;
	struct alq_client cl = {0};
	struct al_diags d;
	char *text = NULL;
	size_t len;
	bool dup = false;
	int r, rc = AL_EXIT_USAGE;

	(void)argc;
	al_config_policy(&cli->cfg, &policy);
	r = al_read_file(argv[0], AL_JOB_MAX_BYTES, &text, &len);
	if (r < 0) {
		al_cli_error(cli, "%s: %s", argv[0],
			     r == -E2BIG ? "over the job size cap"
					 : strerror(-r));
		return AL_EXIT_USAGE;
	}
	al_diags_init(&d);
	/* the policy validate and serve apply: refuse here what a worker
	 * would reject (RJ) later */
	if (al_job_from_json(text, len, &job, &d) < 0 ||
	    al_job_expand_language(&job, &policy, &d) < 0 ||
	    al_job_check_policy(&job, &policy, &d) < 0) {
		for (size_t i = 0; i < d.n; i++)
			fprintf(stderr, "%s: %s%s%s\n", argv[0],
				d.items[i].path, d.items[i].path[0] ? ": " : "",
				d.items[i].reason);
		rc = AL_EXIT_FAIL;
		goto out;
	}
	if (alq_prepare(&job, &policy, NULL, &prep) < 0) {
		al_cli_error(cli, "out of memory");
		goto out;
	}
	if (al_cli_open(cli, &cl) < 0)
		goto out;
	r = alq_client_submit(&cl, prep.id, prep.payload, prep.len,
			      prep.wall_ms, &dup);
	if (r == -EEXIST) { /* the id is another payload's: refused */
		al_cli_error(cli, "%s; not enqueued (choose another id)",
			     cl.err);
		rc = AL_EXIT_CONFLICT;
		goto out;
	}
	if (r < 0) {
		al_cli_error(cli, "%s", cl.err);
		goto out;
	}
	if (dup)
		al_cli_error(cli, "%s was submitted before; not enqueued again",
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
	"second submit of the same id and the same job enqueues nothing (and\n"
	"says so on stderr); the same id with another job is refused (exit\n"
	"4). The job is checked against the config's policy first\n"
	"(limits, allowed templates: what `airlock validate` checks); a job\n"
	"it rejects is not enqueued. Exit 0 submitted, 1 invalid job, 2\n"
	"other failure, 4 id conflict.\n",
    .flags = AL_CMD_QUEUE | AL_CMD_CONFIG,
    .args_min = 1,
    .args_max = 1,
    .args_error = "takes one JOB.json or -",
    .run = run,
};
