/* cmd_serve.c: `airlock serve`, the dispatcher: jobs from Redis to worker
 * processes and results back (dispatcher/serve.c has the theory of
 * operation). Runs until SIGTERM or SIGINT, then drains.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "sbconfig.h"
#include "serve.h"

struct serve_opts {
	uint32_t workers; /* --workers, 0 = workers.count */
};

static const struct option opts[] = {
    {"workers", required_argument, NULL, 'w'},
    {NULL, 0, NULL, 0},
};

static int opt(struct al_cli *cli, int c, const char *arg)
{
	struct serve_opts *o = cli->opts;

	(void)c; /* --workers, the only one */
	return al_cli_opt_workers(cli, arg, &o->workers);
}

static int run(struct al_cli *cli, int argc, char **argv)
{
	const struct serve_opts *o = cli->opts;
	struct al_config *cfg = &cli->cfg;
	struct al_serve_opts so;
	struct al_policy policy;
	struct sb_options sb;
	struct alq_url url;
	char err[2048];

	(void)argc, (void)argv;
	if (!cfg->redis.url[0] || alq_url_parse(cfg->redis.url, &url) < 0) {
		al_cli_error(cli, "no Redis configured (--redis URL, "
				  "$AIRLOCK_REDIS or redis.url)");
		return AL_EXIT_USAGE;
	}
	if (o->workers > 0)
		cfg->workers.count = o->workers;
	if (al_sandbox_options(cfg, &sb, err, sizeof(err)) < 0) {
		al_cli_error(cli, "%s", err);
		return AL_EXIT_USAGE;
	}
	al_config_policy(cfg, &policy);
	al_cli_serve_opts(cfg, &url, &policy, &sb, &so);
	return al_serve_run(&so) < 0 ? AL_EXIT_USAGE : AL_EXIT_OK;
}

const struct al_cmd al_cmd_serve = {
    .name = "serve",
    .summary = "run the dispatcher: jobs from Redis through local workers",
    .usage =
	"usage: airlock serve [--workers N] [--redis URL] [--config PATH]\n"
	"                     [--queue NAME]\n"
	"\n"
	"Read jobs from the queue's Redis stream, run each in a fresh microVM\n"
	"on one of N local worker processes, store the results. Many serve\n"
	"processes, on one host or many, may share a queue. SIGTERM or SIGINT\n"
	"drains: no new jobs are read, running ones get workers.\n"
	"shutdown_grace_ms to finish, the rest are handed back to the queue.\n"
	"\n"
	"options:\n"
	"  -w, --workers N    worker processes (default workers.count, 0 =\n"
	"                     one per CPU)\n",
    .flags = AL_CMD_QUEUE | AL_CMD_CONFIG,
    .shortopts = "w:",
    .longopts = opts,
    .opts_size = sizeof(struct serve_opts),
    .opt = opt,
    .run = run,
};
