/* cmd_config.c: `airlock config`, print or check the effective config.
 *
 * Loads the config the way every other command will (config.h: --config,
 * else $AIRLOCK_CONFIG, else /etc/airlock/airlock.conf, else built-ins;
 * then $AIRLOCK_REDIS) and prints the result as INI, which reads back to the
 * same values: the quickest answer to "what is this host really running
 * with?". With --check it prints nothing on success, for scripts and
 * package post-install hooks.
 *
 * Exit codes: 0 valid, 1 the config has problems (one line each on stderr,
 * `FILE:LINE: SECTION.KEY: reason`), 2 usage error or unreadable file.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli.h"
#include "config.h"

extern const struct al_cmd al_cmd_config;

static int run_config(const struct al_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"check", no_argument, NULL, 'k'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct al_config cfg;
	const char *path = NULL;
	char err[4096];
	bool check = false;
	int c, rc;

	optind = 0;
	while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			path = optarg;
			break;
		case 'k':
			check = true;
			break;
		case 'h':
			al_cli_usage(cmd, stdout);
			return AL_EXIT_OK;
		default:
			return al_cli_bad_usage(cmd);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "airlock config: takes no arguments\n");
		return al_cli_bad_usage(cmd);
	}
	al_config_init(&cfg);
	rc = al_config_load_default(&cfg, path, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "%s\n", err);
		rc = rc == -EINVAL ? AL_EXIT_FAIL : AL_EXIT_USAGE;
	} else if (!check && al_config_dump(&cfg, stdout) < 0) {
		rc = AL_EXIT_USAGE; /* main() reports the write error */
	} else {
		rc = AL_EXIT_OK;
	}
	al_config_release(&cfg);
	return rc;
}

const struct al_cmd al_cmd_config = {
    .name = "config",
    .summary = "print or check the effective config",
    .usage =
	"usage: airlock config [--config PATH] [--check]\n"
	"\n"
	"Print the effective configuration as INI: the built-in defaults,\n"
	"overridden by the config file (--config PATH, else $AIRLOCK_CONFIG,\n"
	"else /etc/airlock/airlock.conf when it exists), then by\n"
	"$AIRLOCK_REDIS for redis.url. A password in redis.url is printed\n"
	"as REDACTED. Every key is described in docs/config.md.\n"
	"\n"
	"Problems are printed on stderr, one per line, as\n"
	"FILE:LINE: SECTION.KEY: reason; the exit code is then 1.\n"
	"\n"
	"options:\n"
	"  -c, --config PATH  read PATH instead of searching for the config\n"
	"      --check        validate only, print nothing when valid\n"
	"  -h, --help         show this help\n",
    .run = run_config,
};
