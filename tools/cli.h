/* cli.h: what the `airlock` subcommands share: the command table row type,
 * exit codes and usage helpers.
 *
 * Adding a command:
 *
 *  1. Write tools/cmd_NAME.c defining `const struct al_cmd al_cmd_NAME`
 *     with its name, one-line summary, full usage text and handler.
 *  2. Declare it below and add `&al_cmd_NAME` to the table in airlock.c.
 *  3. Add the file to tools/CMakeLists.txt.
 *
 * A handler gets argv with argv[0] set to "airlock NAME" (so getopt's own
 * messages name the command), parses its options with getopt_long and
 * returns the process exit code. `--help` is each handler's job: print
 * cmd->usage with al_cli_usage() on stdout and return AL_EXIT_OK.
 */
#ifndef AL_CLI_H
#define AL_CLI_H

#include <stdio.h>

/* Exit codes of every subcommand. */
enum {
	AL_EXIT_OK = 0,	   /* success: every job valid, command done */
	AL_EXIT_FAIL = 1,  /* the command found a problem (an invalid job) */
	AL_EXIT_USAGE = 2, /* bad usage, unreadable file, our own failure */
};

struct al_cmd {
	const char *name;    /* what the user types: `airlock NAME` */
	const char *summary; /* one line for the command list, no period */
	const char *usage;   /* full help: synopsis, description, options */
	int (*run)(const struct al_cmd *cmd, int argc, char **argv);
};

extern const struct al_cmd al_cmd_validate;
extern const struct al_cmd al_cmd_config;
extern const struct al_cmd al_cmd_image;
extern const struct al_cmd al_cmd_doctor;

/* Print cmd's usage text to f. */
void al_cli_usage(const struct al_cmd *cmd, FILE *f);
/* After a usage error getopt (or the caller) reported: point at --help on
 * stderr and return AL_EXIT_USAGE. */
int al_cli_bad_usage(const struct al_cmd *cmd);

#endif
