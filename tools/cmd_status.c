/* cmd_status.c: `airlock status`, the queue at a glance. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"

#define LIVE_MS 60000u /* a dispatcher silent this long is not counted */

/* --json: the same figures, one object; -1 where unknown. */
static void print_json(const char *queue, const struct alq_status *st)
{
	json_t *serves = json_array(), *j;

	for (size_t i = 0; i < st->n_serves; i++)
		json_array_append_new(
		    serves, json_pack("{s:s, s:i, s:i, s:I, s:b}", "name",
				      st->serves[i].name, "workers",
				      (int)st->serves[i].workers, "busy",
				      (int)st->serves[i].busy, "age_ms",
				      (json_int_t)st->serves[i].age_ms, "live",
				      st->serves[i].age_ms <= LIVE_MS));
	j = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:o}", "queue", queue,
		      "waiting", (json_int_t)st->depth, "running",
		      (json_int_t)st->pending, "consumers",
		      (json_int_t)st->consumers, "dead_letters",
		      (json_int_t)st->dead, "done_this_minute",
		      (json_int_t)st->tput[0], "serves", serves);
	json_dumpf(j, stdout, JSON_INDENT(2));
	putchar('\n');
	json_decref(j);
}

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
	if (cli->flag['j']) {
		print_json(cli->cfg.queue.name, &st);
		return AL_EXIT_OK;
	}
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

static const struct option status_opts[] = {
    {"json", no_argument, NULL, 'j'},
    {NULL, 0, NULL, 0},
};

const struct al_cmd al_cmd_status = {
    .name = "status",
    .summary = "show the queue: depth, running, workers, dead letters",
    .usage = "usage: airlock status [--json] [--redis URL] [--config PATH]\n"
	     "                      [--queue NAME]\n"
	     "\n"
	     "Print the queue's depth (jobs not yet picked up), the jobs\n"
	     "running (claimed, not yet acknowledged), live dispatchers and\n"
	     "their workers, dead letters and recent throughput.\n"
	     "\n"
	     "options:\n"
	     "      --json         the same as one JSON object\n",
    .flags = AL_CMD_QUEUE | AL_CMD_CONFIG,
    .longopts = status_opts,
    .run = run,
};
