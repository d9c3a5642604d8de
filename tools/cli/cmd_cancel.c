/* cmd_cancel.c: `airlock cancel`, stop a job: a queued one never runs, a
 * running one's VM is killed; either way its result is CX
 * (alq_job_cancel, docs/queue.md). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int run(struct al_cli *cli, int argc, char **argv)
{
	struct alq_client cl = {0};
	enum alq_state was;
	int r;

	(void)argc;
	if ((r = al_cli_open_job(cli, argv[0], &cl)))
		return r;
	r = alq_job_cancel(&cl, argv[0], cli->cfg.queue.result_ttl_s, &was);
	if (r < 0)
		al_cli_error(cli, "%s", cl.err);
	alq_client_close(&cl);
	if (r < 0)
		return AL_EXIT_USAGE;
	switch (was) {
	case ALQ_QUEUED:
		printf("%s: cancelled (it was queued: it will not run)\n",
		       argv[0]);
		return AL_EXIT_OK;
	case ALQ_RUNNING:
		printf("%s: cancelled (it was running: its VM is killed at "
		       "the dispatcher's next heartbeat)\n",
		       argv[0]);
		return AL_EXIT_OK;
	case ALQ_UNKNOWN:
		al_cli_error(cli, "%s: no such job", argv[0]);
		return AL_EXIT_FAIL;
	default:
		al_cli_error(cli, "%s: has a result already; not cancelled",
			     argv[0]);
		return AL_EXIT_FAIL;
	}
}

const struct al_cmd al_cmd_cancel = {
    .name = "cancel",
    .summary = "cancel a queued or running job",
    .usage = "usage: airlock cancel [--redis URL] [--config PATH]\n"
	     "                      [--queue NAME] ID\n"
	     "\n"
	     "Cancel job ID: its result becomes status CX at once (waiters\n"
	     "wake up). A queued job never runs; a running one is stopped\n"
	     "(the dispatcher holding it kills its worker and VM at its next\n"
	     "heartbeat, queue.heartbeat_ms). Exit 0 cancelled, 1 no such\n"
	     "job or it has a result already, 2 failure.\n",
    .flags = AL_CMD_QUEUE | AL_CMD_CONFIG,
    .args_min = 1,
    .args_max = 1,
    .args_error = "takes one job id",
    .run = run,
};
