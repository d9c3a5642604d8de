/* cmd_status.c: `airlock status`, the queue at a glance. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"

#define LIVE_MS 60000u /* a dispatcher silent this long is not counted */

static int run(struct al_cli *cli, int argc, char **argv)
{
	struct alq_client cl = {0};
	struct alq_status st;
	unsigned serves = 0, workers = 0, busy = 0;
	uint64_t last5 = 0;

	(void)argc, (void)argv;
	if (al_cli_open(cli, &cl) < 0)
		return AL_EXIT_USAGE;
	if (alq_client_status(&cl, &st) < 0) {
		al_cli_error(cli, "%s", cl.err);
		alq_client_close(&cl);
		return AL_EXIT_USAGE;
	}
	alq_client_close(&cl);
	for (size_t i = 0; i < st.n_serves; i++) {
		if (st.serves[i].age_ms > LIVE_MS)
			continue;
		serves++;
		workers += st.serves[i].workers;
		busy += st.serves[i].busy;
	}
	for (int i = 1; i < 5; i++)
		last5 += st.tput[i];
	printf("queue %s\n", cli->cfg.queue.name);
	if (st.depth >= 0)
		printf("  waiting      %lld\n", (long long)st.depth);
	else
		printf("  waiting      unknown\n");
	printf("  running      %lld (claimed, not yet acknowledged)\n",
	       (long long)st.pending);
	printf("  dispatchers  %u live (%lld consumers known)\n", serves,
	       (long long)st.consumers);
	printf("  workers      %u (%u busy)\n", workers, busy);
	printf("  dead letters %lld\n", (long long)st.dead);
	printf("  throughput   %llu this minute, %.1f/min over the 4 before\n",
	       (unsigned long long)st.tput[0], (double)last5 / 4.0);
	for (size_t i = 0; i < st.n_serves; i++)
		printf("  serve %-40s %u workers, %u busy, seen %llu s ago%s\n",
		       st.serves[i].name, st.serves[i].workers,
		       st.serves[i].busy,
		       (unsigned long long)st.serves[i].age_ms / 1000,
		       st.serves[i].age_ms > LIVE_MS ? " (silent)" : "");
	return AL_EXIT_OK;
}

const struct al_cmd al_cmd_status = {
    .name = "status",
    .summary = "show the queue: depth, running, workers, dead letters",
    .usage = "usage: airlock status [--redis URL] [--config PATH]\n"
	     "                      [--queue NAME]\n"
	     "\n"
	     "Print the queue's depth (jobs not yet picked up), the jobs\n"
	     "running (claimed, not yet acknowledged), live dispatchers and\n"
	     "their workers, dead letters and recent throughput.\n",
    .flags = AL_CMD_QUEUE | AL_CMD_CONFIG,
    .run = run,
};
