/* airlock.c: the `airlock` command line: global options and the subcommand
 * table.
 *
 * Every subcommand is one row of `commands` (see cli.h for adding one).
 * main() parses only the global options (--help, --version) up to the first
 * non-option word, looks that word up in the table and hands the rest of
 * argv to al_cli_run() (cli.h): the command's options, then the row's
 * handler, whose return value is the exit code. The
 * command list in the usage text is built from the table, so it never names
 * a command that does not exist.
 *
 * Exit codes: 0 success, 1 the command found a problem (e.g. an invalid
 * job), 2 usage error, unreadable input or our own failure.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "version.h"

static int cmd_help(struct al_cli *cli, int argc, char **argv);
static int cmd_version(struct al_cli *cli, int argc, char **argv);

static const struct al_cmd help_cmd = {
    .name = "help",
    .summary = "show help for airlock or for one command",
    .usage = "usage: airlock help [COMMAND]\n"
	     "\n"
	     "Without COMMAND, list the commands; with it, show that\n"
	     "command's usage (the same as `airlock COMMAND --help`).\n",
    .args_max = 1,
    .args_error = "takes at most one command",
    .run = cmd_help,
};

static const struct al_cmd version_cmd = {
    .name = "version",
    .summary = "print the version",
    .usage = "usage: airlock version\n"
	     "\n"
	     "Print `airlock VERSION` (the same as `airlock --version`).\n",
    .run = cmd_version,
};

/* The subcommands, in the order the usage text lists them. */
static const struct al_cmd *const commands[] = {
    &al_cmd_run,
    &al_cmd_batch,
    &al_cmd_eval,
    &al_cmd_submit,
    &al_cmd_wait,
    &al_cmd_result,
    &al_cmd_status,
    &al_cmd_cancel,
    &al_cmd_session,
    &al_cmd_dead,
    &al_cmd_serve,
    &al_cmd_validate,
    &al_cmd_config,
    &al_cmd_image,
    &al_cmd_snapshot,
    &al_cmd_doctor,
    &al_cmd_report,
    &al_cmd_packages,
    &help_cmd,
    &version_cmd,
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct al_cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i]->name, name) == 0)
			return commands[i];
	return NULL;
}

static void main_usage(FILE *f)
{
	fputs(
	    "usage: airlock [--help] [--version] COMMAND [ARGS...]\n"
	    "\n"
	    "Airlock runs batch jobs of untrusted code, one microVM per job.\n"
	    "\n"
	    "commands:\n",
	    f);
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i]->name,
			commands[i]->summary);
	fputs("\n"
	      "Run `airlock help COMMAND` or `airlock COMMAND --help` for a\n"
	      "command's usage.\n",
	      f);
}

static int cmd_help(struct al_cli *cli, int argc, char **argv)
{
	const struct al_cmd *topic;

	(void)cli;
	if (argc == 0) {
		main_usage(stdout);
		return AL_EXIT_OK;
	}
	topic = find_cmd(argv[0]);
	if (!topic) {
		fprintf(stderr, "airlock: unknown command '%s'\n", argv[0]);
		fprintf(stderr, "try `airlock help --help`\n");
		return AL_EXIT_USAGE;
	}
	al_cli_usage(topic, stdout);
	return AL_EXIT_OK;
}

static int print_version(void)
{
	printf("airlock %s\n", AIRLOCK_VERSION);
	return AL_EXIT_OK;
}

static int cmd_version(struct al_cli *cli, int argc, char **argv)
{
	(void)cli, (void)argc, (void)argv;
	return print_version();
}

/* Flush stdout and turn a failed write (full disk, closed pipe) into an
 * error: a validator that silently loses its report is worse than none. */
static int finish(int rc)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("airlock: write error");
		return AL_EXIT_USAGE;
	}
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	const struct al_cmd *cmd;
	char prog[64];
	int c;

	/* "+": stop at the command name, its options are its own. */
	while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			main_usage(stdout);
			return finish(AL_EXIT_OK);
		case 'V':
			return finish(print_version());
		default:
			fputs("try `airlock --help`\n", stderr);
			return AL_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		main_usage(stderr);
		return AL_EXIT_USAGE;
	}
	cmd = find_cmd(argv[optind]);
	if (!cmd) {
		fprintf(stderr,
			"airlock: unknown command '%s'; try `airlock --help`\n",
			argv[optind]);
		return AL_EXIT_USAGE;
	}
	/* getopt prefixes its messages with argv[0]. */
	snprintf(prog, sizeof(prog), "airlock %s", cmd->name);
	argv[optind] = prog;
	return finish(al_cli_run(cmd, argc - optind, argv + optind));
}
