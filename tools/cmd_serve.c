/* cmd_serve.c: `airlock serve`, the dispatcher: jobs from Redis to worker
 * processes and results back (dispatcher/serve.c has the theory of
 * operation). Runs until SIGTERM or SIGINT, then drains.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "sbconfig.h"
#include "serve.h"

static int run(const struct al_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"workers", required_argument, NULL, 'w'},
	    AL_CLI_COMMON_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	struct al_cli_common co = {0};
	struct al_serve_opts so;
	struct al_config cfg;
	struct al_policy policy;
	struct sb_options sb;
	struct alq_url url;
	long workers = -1;
	char err[2048], *end;
	int c, r;

	optind = 0;
	while ((c = getopt_long(argc, argv, "hw:", opts, NULL)) != -1) {
		if (al_cli_common_opt(c, optarg, &co))
			continue;
		switch (c) {
		case 'h':
			al_cli_usage(cmd, stdout);
			return AL_EXIT_OK;
		case 'w':
			workers = strtol(optarg, &end, 10);
			if (*end || workers < 1 || workers > 1024) {
				fprintf(stderr, "airlock serve: --workers: "
						"must be 1..1024\n");
				return al_cli_bad_usage(cmd);
			}
			break;
		default:
			return al_cli_bad_usage(cmd);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "airlock serve: takes no arguments\n");
		return al_cli_bad_usage(cmd);
	}
	if (al_cli_load(&co, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return AL_EXIT_USAGE;
	}
	if (!cfg.redis.url[0] || alq_url_parse(cfg.redis.url, &url) < 0) {
		fprintf(stderr, "airlock serve: no Redis configured (--redis "
				"URL, $AIRLOCK_REDIS or redis.url)\n");
		return AL_EXIT_USAGE;
	}
	if (workers > 0)
		cfg.workers.count = (uint32_t)workers;
	if (al_sandbox_options(&cfg, &sb, err, sizeof(err)) < 0) {
		fprintf(stderr, "airlock serve: %s\n", err);
		return AL_EXIT_USAGE;
	}
	al_config_policy(&cfg, &policy);
	al_cli_serve_opts(&cfg, &url, &policy, &sb, &so);
	r = al_serve_run(&so);
	al_config_release(&cfg);
	return r < 0 ? AL_EXIT_USAGE : AL_EXIT_OK;
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
	"  -w, --workers N   worker processes (default workers.count, 0 =\n"
	"                    one per CPU)\n"
	"  --redis URL       redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or\n"
	"                    unix://[[USER]:PASSWORD@]/PATH (default\n"
	"                    $AIRLOCK_REDIS, then redis.url)\n"
	"  --config PATH     config file (default $AIRLOCK_CONFIG, then\n"
	"                    /etc/airlock/airlock.conf)\n"
	"  --queue NAME      queue name (default queue.name)\n",
    .run = run,
};
