/* cmd_dead.c: `airlock dead list|requeue`, the dead letters: jobs that
 * failed on Airlock's side max_deliveries times (alq_dead_list,
 * alq_dead_requeue, docs/queue.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

#define PAGE 256

static const struct al_opt opts[] = {
    {"all", 'a', AL_OPT_SHORT},
    {"json", 'j', AL_OPT_SHORT},
    {NULL, 0, 0},
};

static void print_dead(const struct alq_dead *d, bool json)
{
	json_t *o;
	char *text;

	if (!json) {
		printf("%s\t%s\t%u\t%s\n", d->id, d->sid, d->deliveries,
		       d->reason);
		return;
	}
	o = json_pack("{s:s, s:s, s:s, s:s, s:I}", "id", d->id, "dead_entry",
		      d->sid, "entry", d->entry, "reason", d->reason,
		      "deliveries", (json_int_t)d->deliveries);
	text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	if (text)
		printf("%s\n", text);
	free(text);
	json_decref(o);
}

static int list(struct al_cli *cli, struct alq_client *cl)
{
	struct alq_dead *page = calloc(PAGE, sizeof(*page));
	char after[ALQ_SID_MAX] = "";
	size_t n;
	int r;

	if (!page)
		return -ENOMEM;
	do {
		r = alq_dead_list(cl, after, page, PAGE, &n);
		for (size_t i = 0; r == 0 && i < n; i++)
			print_dead(&page[i], cli->flag['j']);
		if (r == 0 && n)
			snprintf(after, sizeof(after), "%s", page[n - 1].sid);
	} while (r == 0 && n == PAGE);
	free(page);
	return r;
}

static int requeue(struct al_cli *cli, struct alq_client *cl, int argc,
		   char **argv)
{
	size_t n, failed;
	int r;

	if (cli->flag['a']) {
		if (argc != 1)
			return al_cli_usage_error(cli, "requeue: an ID or "
						       "--all, not both");
		r = alq_dead_requeue_all(cl, &n, &failed);
		if (r < 0)
			return r;
		printf("requeued %zu dead jobs", n);
		if (failed)
			printf("; %zu could not be (payload expired)", failed);
		printf("\n");
		return failed ? AL_EXIT_FAIL : AL_EXIT_OK;
	}
	if (argc != 2 || !al_id_valid(argv[1], strlen(argv[1])))
		return al_cli_usage_error(cli, "requeue takes one job id or "
					       "--all");
	r = alq_dead_requeue(cl, argv[1]);
	if (r == -ENOENT || r == -ESTALE) {
		al_cli_error(cli, "%s", cl->err);
		return AL_EXIT_FAIL;
	}
	if (r == 0)
		printf("%s: requeued\n", argv[1]);
	return r;
}

static int run(struct al_cli *cli, int argc, char **argv)
{
	struct alq_client cl = {0};
	int r;

	if (!strcmp(argv[0], "list") && argc == 1 && !cli->flag['a']) {
		if (al_cli_open(cli, &cl) < 0)
			return AL_EXIT_USAGE;
		r = list(cli, &cl);
	} else if (!strcmp(argv[0], "requeue")) {
		if (al_cli_open(cli, &cl) < 0)
			return AL_EXIT_USAGE;
		r = requeue(cli, &cl, argc, argv);
	} else {
		return al_cli_usage_error(cli, "list, or requeue ID|--all");
	}
	if (r < 0)
		al_cli_error(cli, "%s", cl.err);
	alq_client_close(&cl);
	return r < 0 ? AL_EXIT_USAGE : r;
}

const struct al_cmd al_cmd_dead = {
    .name = "dead",
    .summary = "list or requeue dead letters",
    .usage = "usage: airlock dead list [--json] [--redis URL] [--config PATH]\n"
	     "                         [--queue NAME]\n"
	     "       airlock dead requeue ID|--all [--redis URL] ...\n"
	     "\n"
	     "Dead letters are jobs that failed on Airlock's side (status XX)\n"
	     "queue.max_deliveries times. `list` prints one per line, oldest\n"
	     "first: ID, dead-letter entry, deliveries, reason (tab-separated),\n"
	     "or with --json one JSON object per line. `requeue` submits the\n"
	     "job again (attempt 1; its XX result and dead letters go), one ID\n"
	     "or --all; a job whose payload expired with its result cannot be\n"
	     "requeued. Exit 0 done, 1 no such dead job or some could not be\n"
	     "requeued, 2 failure.\n"
	     "\n"
	     "options:\n"
	     "  -a, --all          requeue: every dead job\n"
	     "  -j, --json         list: one JSON object per line\n",
    .flags = AL_CMD_QUEUE | AL_CMD_CONFIG,
    .options = opts,
    .args_min = 1,
    .args_max = 2,
    .args_error = "list, or requeue ID|--all",
    .run = run,
};
