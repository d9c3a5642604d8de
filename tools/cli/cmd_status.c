/* cmd_status.c: `airlock status [ID]`, the queue at a glance, or where one
 * job is (alq_job_status: unknown, queued, running, done, dead,
 * cancelled). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#include <jansson.h>

#define LIVE_MS 60000u /* a dispatcher silent this long is not counted */

static const struct al_opt opts[] = {
    {"json", 'j', AL_OPT_SHORT},
    {NULL, 0, 0},
};

static void print_job_json(const char *id, const struct alq_job *j)
{
	json_t *o = json_pack("{s:s, s:s}", "id", id, "state",
			      alq_state_name(j->state));
	char *text;

	if (!o)
		return;
	if (j->sid[0])
		json_object_set_new(o, "entry", json_string(j->sid));
	if (j->state == ALQ_RUNNING) {
		json_object_set_new(o, "dispatcher", json_string(j->consumer));
		json_object_set_new(o, "attempt", json_integer(j->attempt));
	}
	if (j->state >= ALQ_DONE) {
		json_object_set_new(o, "status",
				    json_string(al_status_name(j->status)));
		json_object_set_new(o, "attempt", json_integer(j->attempt));
		if (j->worker[0])
			json_object_set_new(o, "worker",
					    json_string(j->worker));
		if (j->error[0])
			json_object_set_new(o, "error", json_string(j->error));
	}
	text = json_dumps(o, JSON_COMPACT);
	if (text)
		printf("%s\n", text);
	free(text);
	json_decref(o);
}

static void print_job(const char *id, const struct alq_job *j)
{
	printf("%s: %s", id, alq_state_name(j->state));
	if (j->state == ALQ_RUNNING)
		printf(" on %s, attempt %u", j->consumer, j->attempt);
	if (j->state >= ALQ_DONE)
		printf(" (%s, attempt %u%s%s)", al_status_name(j->status),
		       j->attempt, j->worker[0] ? ", worker " : "", j->worker);
	if ((j->state == ALQ_DEAD || j->state == ALQ_CANCELLED) && j->error[0])
		printf(": %s", j->error);
	printf("\n");
}

/* `airlock status ID`: exit 0 known, 1 unknown, 2 failure. */
static int job_status(struct al_cli *cli, const char *id)
{
	struct alq_client cl = {0};
	struct alq_job j;
	int r;

	if (!al_id_valid(id, strlen(id)))
		return al_cli_usage_error(cli, "%s: not a valid job id", id);
	if (al_cli_open(cli, &cl) < 0)
		return AL_EXIT_USAGE;
	r = alq_job_status(&cl, id, &j);
	if (r < 0)
		al_cli_error(cli, "%s", cl.err);
	alq_client_close(&cl);
	if (r < 0)
		return AL_EXIT_USAGE;
	if (cli->flag['j'])
		print_job_json(id, &j);
	else
		print_job(id, &j);
	return j.state == ALQ_UNKNOWN ? AL_EXIT_FAIL : AL_EXIT_OK;
}

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

	if (argc == 1)
		return job_status(cli, argv[0]);
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

const struct al_cmd al_cmd_status = {
    .name = "status",
    .summary = "show the queue, or where one job is",
    .usage = "usage: airlock status [--json] [--redis URL] [--config PATH]\n"
	     "                      [--queue NAME] [ID]\n"
	     "\n"
	     "Without ID: print the queue's depth (jobs not yet picked up),\n"
	     "the jobs running (claimed, not yet acknowledged), live\n"
	     "dispatchers and their workers, dead letters and recent\n"
	     "throughput.\n"
	     "\n"
	     "With ID: where that job is: unknown (never submitted, or its\n"
	     "result expired), queued, running (on which dispatcher, which\n"
	     "attempt), done (its status), dead (an XX result and a dead\n"
	     "letter: `airlock dead`) or cancelled (CX). Exit 0 known, 1\n"
	     "unknown, 2 failure.\n"
	     "\n"
	     "options:\n"
	     "  -j, --json         without ID: the queue as one JSON object;\n"
	     "                     with ID: one line of JSON: id, state,\n"
	     "                     entry, dispatcher, attempt, status, worker,\n"
	     "                     error\n",
    .flags = AL_CMD_QUEUE | AL_CMD_CONFIG,
    .options = opts,
    .args_min = 0,
    .args_max = 1,
    .args_error = "takes at most one job id",
    .run = run,
};
