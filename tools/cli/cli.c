/* cli.c: the set-up every `airlock` command shares (cli.h): its options,
 * --help, the common options, the config and error messages.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "log.h"
#include "results.h"

#define OPTS_MAX 24 /* long options of one command, common ones included */

/* getopt_long codes of the common long-only options. */
enum { OPT_REDIS = 0x100, OPT_QUEUE };

static const struct option common_opts[] = {
    {"help", no_argument, NULL, 'h'},
    {"config", required_argument, NULL, 'c'},
};

static const struct option queue_opts[] = {
    {"redis", required_argument, NULL, OPT_REDIS},
    {"queue", required_argument, NULL, OPT_QUEUE},
};

static const char common_usage[] =
    "\n"
    "common options:\n"
    "  -c, --config PATH  config file (default $AIRLOCK_CONFIG, then\n"
    "                     /etc/airlock/airlock.conf when it exists)\n";

static const char queue_usage[] =
    "      --redis URL    redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or\n"
    "                     unix://[[USER]:PASSWORD@]/PATH (default\n"
    "                     $AIRLOCK_REDIS, then redis.url)\n"
    "      --queue NAME   queue name (default queue.name)\n";

void al_cli_usage(const struct al_cmd *cmd, FILE *f)
{
	fputs(cmd->usage, f);
	fputs(common_usage, f);
	if (cmd->flags & AL_CMD_QUEUE)
		fputs(queue_usage, f);
	fputs("  -h, --help         show this help\n", f);
}

static void verror(const struct al_cli *cli, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void verror(const struct al_cli *cli, const char *fmt, va_list ap)
{
	fprintf(stderr, "airlock %s: ", cli->cmd->name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void al_cli_error(const struct al_cli *cli, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(cli, fmt, ap);
	va_end(ap);
}

int al_cli_usage_error(const struct al_cli *cli, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(cli, fmt, ap);
	va_end(ap);
	fprintf(stderr, "try `airlock %s --help`\n", cli->cmd->name);
	return AL_EXIT_USAGE;
}

/* Append n options to the table at *len; false when it is full. */
static bool add_opts(struct option *all, size_t *len, const struct option *o,
		     size_t n)
{
	if (*len + n >= OPTS_MAX)
		return false;
	if (n) /* o may be NULL then: memcpy's arguments must not be */
		memcpy(all + *len, o, n * sizeof(*o));
	*len += n;
	return true;
}

/* The getopt tables of cmd: the common options, then its own. */
static int build_opts(const struct al_cmd *cmd, struct option *all,
		      char *shorts, size_t shorts_len)
{
	size_t len = 0, own = 0;
	int w;

	while (cmd->longopts && cmd->longopts[own].name)
		own++;
	if (!add_opts(all, &len, common_opts, 2) ||
	    ((cmd->flags & AL_CMD_QUEUE) &&
	     !add_opts(all, &len, queue_opts, 2)) ||
	    !add_opts(all, &len, cmd->longopts, own))
		return -E2BIG;
	memset(&all[len], 0, sizeof(all[len]));
	w = snprintf(shorts, shorts_len, "%shc:%s",
		     cmd->flags & AL_CMD_IN_ORDER ? "+" : "",
		     cmd->shortopts ? cmd->shortopts : "");
	return w < 0 || (size_t)w >= shorts_len ? -E2BIG : 0;
}

/* Step 1 of cli.h: the options. -1 to go on, else the exit code. */
static int parse(struct al_cli *cli, int argc, char **argv)
{
	const struct al_cmd *cmd = cli->cmd;
	struct option all[OPTS_MAX];
	char shorts[64];
	int c, rc;

	if (build_opts(cmd, all, shorts, sizeof(shorts)) < 0) {
		al_cli_error(cli, "too many options"); /* a bug in its row */
		return AL_EXIT_USAGE;
	}
	optind = 0; /* airlock.c parsed its own options first */
	while ((c = getopt_long(argc, argv, shorts, all, NULL)) != -1) {
		switch (c) {
		case 'h':
			al_cli_usage(cmd, stdout);
			return AL_EXIT_OK;
		case 'c':
			cli->config = optarg;
			break;
		case OPT_REDIS:
			cli->redis = optarg;
			break;
		case OPT_QUEUE:
			cli->queue = optarg;
			break;
		case '?':
		case ':':
			fprintf(stderr, "try `airlock %s --help`\n", cmd->name);
			return AL_EXIT_USAGE;
		default:
			if (!cmd->opt) {
				cli->flag[c & 127] = true;
				break;
			}
			rc = cmd->opt(cli, c, optarg);
			if (rc)
				return rc;
		}
	}
	return -1;
}

/* Steps 3 to 5 of cli.h: operands, config, the command. */
static int run(struct al_cli *cli, int argc, char **argv)
{
	const struct al_cmd *cmd = cli->cmd;

	if (argc < cmd->args_min ||
	    (cmd->args_max >= 0 && argc > cmd->args_max))
		return al_cli_usage_error(
		    cli, "%s",
		    cmd->args_error ? cmd->args_error : "takes no arguments");
	if ((cmd->flags & AL_CMD_CONFIG) && al_cli_load(cli) < 0)
		return AL_EXIT_USAGE;
	return cmd->run(cli, argc, argv);
}

int al_cli_run(const struct al_cmd *cmd, int argc, char **argv)
{
	struct al_cli cli = {.cmd = cmd};
	int rc;

	al_config_init(&cli.cfg);
	if (cmd->opts_size) {
		cli.opts = calloc(1, cmd->opts_size);
		if (!cli.opts) {
			al_cli_error(&cli, "out of memory");
			return AL_EXIT_USAGE;
		}
	}
	rc = parse(&cli, argc, argv);
	if (rc < 0)
		rc = run(&cli, argc - optind, argv + optind);
	al_config_release(&cli.cfg);
	free(cli.opts);
	return rc;
}

int al_cli_open(const struct al_cli *cli, struct alq_client *c)
{
	char err[512];
	int r = al_cli_connect(&cli->cfg, c, err, sizeof(err));

	if (r < 0)
		al_cli_error(cli, "%s", err);
	return r;
}

void al_cli_print_output(const struct al_step_result *s)
{
	fwrite(s->stdout_.data ? (void *)s->stdout_.data : "", 1,
	       s->stdout_.len, stdout);
	fflush(stdout);
	fwrite(s->stderr_.data ? (void *)s->stderr_.data : "", 1,
	       s->stderr_.len, stderr);
}

int al_cli_open_job(const struct al_cli *cli, const char *id,
		    struct alq_client *c)
{
	if (!al_id_valid(id, strlen(id)))
		return al_cli_usage_error(cli, "takes one job id");
	return al_cli_open(cli, c) < 0 ? AL_EXIT_USAGE : 0;
}

int al_cli_opt_workers(const struct al_cli *cli, const char *arg, uint32_t *ret)
{
	char *end;
	long n = strtol(arg, &end, 10);

	if (*end || n < 1 || n > 1024)
		return al_cli_usage_error(cli, "--workers: must be 1..1024");
	*ret = (uint32_t)n;
	return 0;
}

/* --redis and --queue over the config; 0 or -EINVAL with err set. */
static int apply_queue_opts(struct al_cli *cli, char *err, size_t errlen)
{
	struct al_config *cfg = &cli->cfg;
	struct alq_url u;
	size_t n;

	if (cli->redis) {
		if (strlen(cli->redis) > AL_CONFIG_STR_MAX ||
		    (cli->redis[0] && alq_url_parse(cli->redis, &u) < 0)) {
			snprintf(err, errlen,
				 "--redis: must be redis://[[USER]:PASSWORD@]"
				 "HOST[:PORT][/DB] or unix://[[USER]:PASSWORD@]"
				 "/PATH%s",
				 strncmp(cli->redis, "rediss://", 9) ? ""
								     : AL_NO_TLS);
			return -EINVAL;
		}
		snprintf(cfg->redis.url, sizeof(cfg->redis.url), "%s",
			 cli->redis);
		cfg->redis_from_cli = true;
	}
	if (cfg->redis.url[0] && alq_url_parse(cfg->redis.url, &u) < 0) {
		snprintf(err, errlen,
			 "redis.url: not a redis:// or unix:// URL");
		return -EINVAL;
	}
	if (cli->queue) {
		n = strlen(cli->queue);
		if (n == 0 || n > AL_NAME_MAX ||
		    strspn(cli->queue,
			   "abcdefghijklmnopqrstuvwxyz0123456789_-") != n) {
			snprintf(
			    err, errlen,
			    "--queue: must be [a-z0-9_-]+, at most %d bytes",
			    AL_NAME_MAX);
			return -EINVAL;
		}
		snprintf(cfg->queue.name, sizeof(cfg->queue.name), "%s",
			 cli->queue);
	}
	return 0;
}

/* log.level of the config to the dispatcher's log level. */
static const enum al_log_level log_levels[] = {
    [AL_CONFIG_LOG_ERROR] = AL_LOG_ERROR,
    [AL_CONFIG_LOG_WARN] = AL_LOG_WARN,
    [AL_CONFIG_LOG_INFO] = AL_LOG_INFO,
    [AL_CONFIG_LOG_DEBUG] = AL_LOG_DEBUG,
};

int al_cli_load(struct al_cli *cli)
{
	char err[2048];
	int r;

	r = al_config_load_default(&cli->cfg, cli->config, err, sizeof(err));
	if (r == 0 && (cli->cmd->flags & AL_CMD_QUEUE))
		r = apply_queue_opts(cli, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "%s\n", err);
		return r;
	}
	if ((size_t)cli->cfg.log.level <
	    sizeof(log_levels) / sizeof(log_levels[0]))
		al_log_level = log_levels[cli->cfg.log.level];
	al_log_format = cli->cfg.log.format == AL_CONFIG_LOG_JSON ? AL_LOG_JSON
								  : AL_LOG_TEXT;
	return 0;
}
