/* cli.h: what the `airlock` subcommands share: the command row, the
 * command table, exit codes, and the set-up every command gets from
 * al_cli_run(): options, --help, the config and error messages.
 *
 * Theory of operation. main() (airlock.c) parses the global options, finds
 * the row of the command named and calls al_cli_run(), which
 *
 *  1. parses the command's options with getopt_long, argv[0] being
 *     "airlock NAME" so getopt's own messages name the command. Every
 *     command takes -h/--help (print its usage on stdout, exit 0) and
 *     -c/--config PATH; AL_CMD_QUEUE commands also take --redis URL and
 *     --queue NAME. The command's own options (its row's options table)
 *     go to its opt() one at a time, with cli->opts, a zeroed
 *     struct of opts_size bytes, to keep them in; a row without opt() has
 *     only options without an argument, and each sets cli->flag[code].
 *  2. on an unknown option or a missing argument prints getopt's message
 *     and "try `airlock NAME --help`", exit 2; opt() does the same for a
 *     bad value with al_cli_usage_error().
 *  3. checks the number of operands against the row's args_min and
 *     args_max: a usage error with args_error otherwise.
 *  4. for AL_CMD_CONFIG commands, loads the config into cli->cfg with
 *     al_cli_load() (the file from --config, $AIRLOCK_CONFIG or the system
 *     path, then the common options); exit 2 when that fails.
 *  5. calls run() with the operands only (argv[0] is the first one) and
 *     returns its exit code.
 *
 * A command that loads the config its own way (validate only with
 * --config, config's own exit code) calls al_cli_load() itself. Handlers
 * print errors with al_cli_error(): `airlock NAME: ...`.
 *
 * Adding a command:
 *
 *  1. Write tools/cli/cmd_NAME.c defining `const struct al_cmd al_cmd_NAME`
 *     with its name, one-line summary, usage text (synopsis, description,
 *     its own options: al_cli_usage() appends the common ones), options
 *     and handlers.
 *  2. Declare it below and add `&al_cmd_NAME` to the table in airlock.c.
 *  3. Add the file to tools/CMakeLists.txt.
 */
#ifndef AL_CLI_H
#define AL_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "opts.h"
#include "queue.h"
#include "readfile.h"
#include "serve.h"

/* Exit codes of every subcommand. */
enum {
	AL_EXIT_OK = 0,	   /* success: every job valid, command done */
	AL_EXIT_FAIL = 1,  /* the command found a problem (an invalid job) */
	AL_EXIT_USAGE = 2, /* bad usage, unreadable file, our own failure */
	AL_EXIT_CONFLICT = 4, /* submit: the id is another payload's */
};

/* What a command's row says about its set-up. */
enum {
	AL_CMD_QUEUE = 1 << 0,	  /* takes --redis URL and --queue NAME */
	AL_CMD_IN_ORDER = 1 << 1, /* options end at the first operand */
	AL_CMD_CONFIG = 1 << 2,	  /* load the config before run() */
};

struct al_cli;

struct al_cmd {
	const char *name;	       /* what the user types: `airlock NAME` */
	const char *summary;	       /* one line for the command list */
	const char *usage;	       /* synopsis, description, own options */
	unsigned flags;		       /* AL_CMD_* */
	const struct al_opt *options;  /* own options (opts.h), or NULL */
	size_t opts_size;	       /* bytes of cli->opts, 0 = none */
	int args_min, args_max;	       /* operands taken; max -1 = any */
	const char *args_error;	       /* else; NULL = "takes no arguments" */
	/* Take one own option (getopt's code); 0, or the exit code. NULL:
	 * the own options are flags (cli->flag). */
	int (*opt)(struct al_cli *cli, int c, const char *arg);
	/* The command, given its operands; returns the exit code. */
	int (*run)(struct al_cli *cli, int argc, char **argv);
};

/* One command's invocation: the common options and the config. */
struct al_cli {
	const struct al_cmd *cmd; /* the command running */
	const char *config;	  /* --config PATH, NULL = search */
	const char *redis;	  /* --redis URL, NULL = config / env */
	const char *queue;	  /* --queue NAME, NULL = queue.name */
	void *opts;		  /* the command's own options, zeroed */
	bool flag[128];		  /* own flags given, by code (no opt()) */
	struct al_config cfg;	  /* filled by al_cli_load() */
};

/* The commands, in airlock.c's table (help and version are its own). */
extern const struct al_cmd al_cmd_run, al_cmd_batch, al_cmd_submit,
    al_cmd_wait, al_cmd_result, al_cmd_status, al_cmd_serve, al_cmd_validate,
    al_cmd_config, al_cmd_image, al_cmd_doctor, al_cmd_cancel, al_cmd_dead,
    al_cmd_snapshot, al_cmd_session;
extern const struct al_cmd al_cmd_eval;
extern const struct al_cmd al_cmd_report;
extern const struct al_cmd al_cmd_packages;

/* Parse argv (argv[0] is the command's name) as above and run cmd. */
int al_cli_run(const struct al_cmd *cmd, int argc, char **argv);

/* Load the config and apply the common options over it; sets the log
 * level. Problems are printed on stderr, one per line. 0, or -errno:
 * -EINVAL for an invalid config or option value. */
int al_cli_load(struct al_cli *cli);

struct alq_client;
/* Connect the blocking client to the configured Redis (after
 * al_cli_load()); on failure says why. 0 or -errno. */
int al_cli_open(const struct al_cli *cli, struct alq_client *c);
/* Say on stderr, once, which way this command's jobs run (issue 27):
 * `embedded` (a private redis-server and dispatcher, no redis.url), or
 * through the configured Redis, c connected to it: how many `serve`
 * processes heartbeat on the queue (their names), or that none does yet
 * and the jobs wait for one. Silent below log.level info. Returns the
 * number of live dispatchers (0 for embedded or none), or -errno when
 * the status could not be read (said too). */
int al_cli_say_backend(const struct al_cli *cli, struct alq_client *c,
		       bool embedded);
struct al_step_result;
/* A step's captured stdout and stderr, to ours (as `run` shows them). */
void al_cli_print_output(const struct al_step_result *s);
/* For the commands that take one job ID: check it, then al_cli_open.
 * 0, or the exit code to return (a usage error said). */
int al_cli_open_job(const struct al_cli *cli, const char *id,
		    struct alq_client *c);
/* --workers N of serve and batch, 1..1024: 0, or a usage error's exit
 * code. */
int al_cli_opt_workers(const struct al_cli *cli, const char *arg,
		       uint32_t *ret);

/* One line of an input file, '\n' kept, with its 1-based number; 0 to
 * go on, anything else stops the reading and is returned. */
typedef int (*al_cli_line_fn)(void *ctx, char *line, size_t len,
			      size_t lineno);
/* Call fn on each non-blank line of path ("-": stdin), the JSON Lines
 * input of batch and eval: 0, fn's value, or -errno from fopen. */
int al_cli_each_line(const char *path, al_cli_line_fn fn, void *ctx);

/* Print cmd's usage text and the common options to f. */
void al_cli_usage(const struct al_cmd *cmd, FILE *f);
/* `airlock NAME: MESSAGE` on stderr. */
void al_cli_error(const struct al_cli *cli, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A usage error: al_cli_error(), then a pointer at --help on stderr;
 * returns AL_EXIT_USAGE. */
int al_cli_usage_error(const struct al_cli *cli, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* --- the queue commands' plumbing (cli.c) ----------------------------- */

/* "redis ENDPOINT (SETTING): WHY" into err: which server and which
 * setting named it (--redis, $AIRLOCK_REDIS or redis.url); WHY loses
 * the client's "redis: " prefix. */
void al_cli_redis_error(const struct al_config *cfg, const struct alq_url *u,
			const char *why, char *err, size_t errlen);

/* Connect the blocking client to cfg->redis.url; err as above. */
int al_cli_connect(const struct al_config *cfg, struct alq_client *c, char *err,
		   size_t errlen);

/* SIGINT/SIGTERM set a flag (no SA_RESTART: blocking reads return) that
 * al_cli_interrupted() reports; a second one exits at once (130). */
struct sb_options;
/* Say, once a command is about to run VMs here, when they run unjailed
 * (not root: issue 23; docs/operations.md, "Users other than root"). */
void al_cli_warn_unjailed(const struct sb_options *sb);
void al_cli_catch_signals(void);
bool al_cli_interrupted(void);

/* A human summary of `r` on f: status, steps, outputs (escaped, at most
 * `max_out` bytes of each stream). */
void al_cli_print_result(const struct al_result *r, FILE *f, size_t max_out);
/* The exit code `airlock run` gives for a result: the last step's exit
 * code, 128+N for signal N, 124 TO, 152 TL (128+SIGXCPU), 137 ML, 125
 * RJ/XX. */
int al_cli_exit_code(const struct al_result *r);

/* Length of the UTF-8 sequence at p[0..n) that a terminal or a page may
 * show as it is; 0 when it is invalid, a C1 control or a bidirectional
 * control (U+202A..E, U+2066..9), which could make text read otherwise
 * than it is: the caller escapes those bytes. */
size_t al_cli_utf8_printable(const uint8_t *p, size_t n);

#endif
