/* cmd_config.c: `airlock config`, print or check the effective config.
 *
 * Loads the config the way every other command does (al_cli_load: --config,
 * else $AIRLOCK_CONFIG, else the installed config (al_config_system_path),
 * else built-ins;
 * then $AIRLOCK_REDIS) and prints the result as INI, which reads back to the
 * same values: the quickest answer to "what is this host really running
 * with?". With --check it prints nothing on success, for scripts and
 * package post-install hooks.
 *
 * Exit codes: 0 valid, 1 the config has problems (one line each on stderr,
 * `FILE:LINE: SECTION.KEY: reason`), 2 usage error or unreadable file.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli.h"

static const struct al_opt opts[] = {
    {"check", 'k', 0}, /* print nothing when valid */
    {NULL, 0, 0},
};

static int run_config(struct al_cli *cli, int argc, char **argv)
{
	int r;

	(void)argc, (void)argv;
	r = al_cli_load(cli);
	if (r < 0)
		return r == -EINVAL ? AL_EXIT_FAIL : AL_EXIT_USAGE;
	if (!cli->flag['k'] && al_config_dump(&cli->cfg, stdout) < 0)
		return AL_EXIT_USAGE; /* main() reports the write error */
	return AL_EXIT_OK;
}

const struct al_cmd al_cmd_config = {
    .name = "config",
    .summary = "print or check the effective config",
    .usage =
	"usage: airlock config [--config PATH] [--check]\n"
	"\n"
	"Print the effective configuration as INI: the built-in defaults,\n"
	"overridden by the config file (--config PATH, else $AIRLOCK_CONFIG,\n"
	"else the installed PREFIX/etc/airlock/airlock.conf when it exists,\n"
	"the file the installed systemd unit names), then by $AIRLOCK_REDIS\n"
	"for redis.url. The first line names the file read. A password in\n"
	"redis.url is printed as REDACTED. Every key is in docs/config.md.\n"
	"\n"
	"Problems are printed on stderr, one per line, as\n"
	"FILE:LINE: SECTION.KEY: reason; the exit code is then 1.\n"
	"\n"
	"options:\n"
	"      --check        validate only, print nothing when valid\n",
    .options = opts,
    .run = run_config,
};
