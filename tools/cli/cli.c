/* cli.c: the set-up every `airlock` command shares (cli.h): its options,
 * --help, the common options, the config and error messages; and the
 * queue commands' plumbing: the connection, result printing and exit
 * codes, SIGINT.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "log.h"
#include "sandbox.h" /* struct sb_options */
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
    "                     PREFIX/etc/airlock/airlock.conf of an installed\n"
    "                     airlock, /etc/airlock/ for the prefix /usr and\n"
    "                     for a build tree, when it exists)\n";

static const char queue_usage[] =
    "      --redis URL    redis://[[USER]:PASSWORD@]HOST[:PORT][/DB],\n"
    "                     unix://[[USER]:PASSWORD@]/PATH or\n"
    "                     redis+sentinel://HOST[:PORT][,HOST[:PORT]]...\n"
    "                     [/MASTER[/DB]] (default $AIRLOCK_REDIS, then\n"
    "                     redis.url)\n"
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
	memcpy(all + *len, o, n * sizeof(*o));
	*len += n;
	return true;
}

/* The getopt tables of cmd: the common options, then its own. */
static int build_opts(const struct al_cmd *cmd, struct option *all,
		      char *shorts, size_t shorts_len)
{
	size_t len = 0;
	char own[48];
	int w;

	if (!add_opts(all, &len, common_opts, 2) ||
	    ((cmd->flags & AL_CMD_QUEUE) &&
	     !add_opts(all, &len, queue_opts, 2)) ||
	    al_opts_long(cmd->options, all + len, OPTS_MAX - len) < 0 ||
	    al_opts_short(cmd->options, own, sizeof(own)) < 0)
		return -E2BIG;
	w = snprintf(shorts, shorts_len, "%shc:%s",
		     cmd->flags & AL_CMD_IN_ORDER ? "+" : "", own);
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

int al_cli_say_backend(const struct al_cli *cli, struct alq_client *c,
		       bool embedded)
{
	uint64_t fresh = 3ull * cli->cfg.queue.heartbeat_ms + 1000;
	struct alq_status st;
	char names[256] = "", where[400];
	size_t used = 0, live = 0;
	struct alq_url u;
	int r;

	if (embedded) {
		/* said by the long commands; `run`, called often, says it
		 * at log.level debug only (issue 37) */
		if (al_log_level >= (strcmp(cli->cmd->name, "run")
					 ? AL_LOG_INFO
					 : AL_LOG_DEBUG))
			fprintf(stderr,
				"airlock %s: embedded: a private "
				"redis-server and dispatcher for this "
				"command (no redis.url configured)\n",
				cli->cmd->name);
		return 0;
	}
	r = alq_client_status(c, &st);
	if (r < 0) {
		al_cli_error(cli, "%s", c->err[0] ? c->err : strerror(-r));
		return r;
	}
	for (size_t i = 0; i < st.n_serves; i++) {
		int n;

		if (st.serves[i].age_ms > fresh)
			continue; /* a crashed serve's last heartbeat */
		live++;
		n = snprintf(names + used, sizeof(names) - used, "%s%s",
			     used ? ", " : "", st.serves[i].name);
		if (n > 0 && (size_t)n < sizeof(names) - used)
			used += (size_t)n;
	}
	if (al_log_level < AL_LOG_INFO)
		return (int)live;
	if (alq_url_parse(cli->cfg.redis.url, &u) == 0)
		alq_url_display(&u, where, sizeof(where));
	else
		snprintf(where, sizeof(where), "?");
	explicit_bzero(&u, sizeof(u));
	if (live)
		fprintf(stderr,
			"airlock %s: via serve: queue %s on %s, %zu "
			"dispatcher%s (%s)\n",
			cli->cmd->name, cli->cfg.queue.name, where, live,
			live == 1 ? "" : "s", names);
	else
		fprintf(stderr,
			"airlock %s: via queue %s on %s: no serve "
			"heartbeats on it now; the jobs wait for one\n",
			cli->cmd->name, cli->cfg.queue.name, where);
	return (int)live;
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

int al_cli_each_line(const char *path, al_cli_line_fn fn, void *ctx)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "re") : stdin;
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t len;
	int r = 0;

	if (!f)
		return -errno;
	while (r == 0 && (len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (strspn(line, " \t\r\n") != (size_t)len)
			r = fn(ctx, line, (size_t)len, lineno);
	}
	free(line);
	if (f != stdin)
		fclose(f);
	return r;
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
				 "HOST[:PORT][/DB], unix://[[USER]:PASSWORD@]"
				 "/PATH or redis+sentinel://[[USER]:PASSWORD@]"
				 "HOST[:PORT][,HOST[:PORT]]...[/MASTER[/DB]]%s",
				 strncmp(cli->redis, "rediss://", 9)
				     ? ""
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

/* A password in redis.url, in a config file everyone may read: say so
 * (the installed config is 0644 by design: users and `airlock config`
 * read it; the password belongs in $AIRLOCK_REDIS, docs/operations.md). */
static void warn_redis_password(const struct al_config *cfg)
{
	struct alq_url u;
	struct stat st;
	bool pass;

	if (cfg->redis_from_env || cfg->redis_from_cli || !cfg->source[0] ||
	    !cfg->redis.url[0] || alq_url_parse(cfg->redis.url, &u) < 0)
		return;
	pass = u.pass[0];
	explicit_bzero(&u, sizeof(u));
	if (!pass || stat(cfg->source, &st) < 0 || !(st.st_mode & S_IROTH))
		return;
	al_warn("redis.url in %s holds a password, and every user can read "
		"that file (mode %04o): set the URL in $AIRLOCK_REDIS instead "
		"(the systemd unit reads it from an EnvironmentFile of mode "
		"0600), or chmod 0640 the config (docs/operations.md, "
		"\"Secrets\")",
		cfg->source, (unsigned)(st.st_mode & 07777));
}

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
	warn_redis_password(&cli->cfg);
	return 0;
}

/* --- the queue commands' plumbing -------------------------------------- */

void al_cli_redis_error(const struct al_config *cfg, const struct alq_url *u,
			const char *why, char *err, size_t errlen)
{
	char where[300];

	alq_url_display(u, where, sizeof(where));
	if (strncmp(why, "redis: ", 7) == 0)
		why += 7;
	snprintf(err, errlen, "redis %s (%s): %s", where,
		 cfg->redis_from_cli   ? "--redis"
		 : cfg->redis_from_env ? "$AIRLOCK_REDIS"
				       : "redis.url",
		 why);
}

int al_cli_connect(const struct al_config *cfg, struct alq_client *c, char *err,
		   size_t errlen)
{
	struct alq_url u;
	int r;

	if (alq_url_parse(cfg->redis.url, &u) < 0) {
		snprintf(err, errlen,
			 "no Redis configured (--redis URL, "
			 "$AIRLOCK_REDIS or redis.url)");
		return -EINVAL;
	}
	r = alq_client_open(c, &u, cfg->queue.name,
			    cfg->redis.command_timeout_ms);
	if (r < 0)
		al_cli_redis_error(cfg, &u, c->err, err, errlen);
	c->wait_replicas = cfg->redis.wait_replicas;
	c->wait_ms = cfg->redis.wait_ms;
	c->partitions = cfg->queue.partitions;
	return r;
}

size_t al_cli_utf8_printable(const uint8_t *p, size_t n)
{
	size_t len = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc0 ? 2 : 0;

	if (len == 0 || len > n || !al_utf8_valid(p, len))
		return 0;
	if (len == 3 && p[0] == 0xe2 &&
	    ((p[1] == 0x80 && p[2] >= 0xaa && p[2] <= 0xae) ||
	     (p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)))
		return 0;
	if (len == 2 && p[0] == 0xc2 && p[1] < 0xa0)
		return 0; /* C1 controls */
	return len;
}

/* Print bytes as text: valid UTF-8 as it is, control bytes and invalid
 * UTF-8 escaped as \xNN. */
static void print_escaped(FILE *f, const struct al_blob *b, size_t max)
{
	size_t n = b->len < max ? b->len : max;

	for (size_t i = 0; i < n; i++) {
		unsigned char ch = b->data[i];
		size_t u;

		if (ch == '\n') {
			fputs("\n      ", f);
		} else if (ch == '\t' || (ch >= 0x20 && ch < 0x7f)) {
			fputc(ch, f);
		} else if (ch >= 0x80 &&
			   (u = al_cli_utf8_printable(b->data + i, n - i))) {
			fwrite(b->data + i, 1, u, f);
			i += u - 1;
		} else {
			fprintf(f, "\\x%02x", ch);
		}
	}
	if (n < b->len)
		fprintf(f, "... (%zu more bytes)", b->len - n);
}

static void print_verdict(const struct al_result *r, FILE *f)
{
	char text[64];

	if (r->verdict == AL_VERDICT_NONE)
		return;
	al_verdict_text(r->verdict, al_result_verdict_signal(r), text,
			sizeof(text));
	fprintf(f, " (%s", text);
	if (r->graded)
		fprintf(f, ", score %llu/%llu", (unsigned long long)r->score,
			(unsigned long long)r->max_score);
	fputc(')', f);
}

#define TESTS_SHOWN 20 /* not-passed tests listed per step */

static void print_counts(FILE *f, const char *indent,
			 const struct al_test_counts *c)
{
	fprintf(f,
		"%stests: %llu, %llu passed, %llu failed, %llu error, "
		"%llu skipped\n",
		indent, (unsigned long long)c->total,
		(unsigned long long)c->passed, (unsigned long long)c->failed,
		(unsigned long long)c->error, (unsigned long long)c->skipped);
}

static void print_str(FILE *f, const char *s, size_t max)
{
	struct al_blob b = {(uint8_t *)s, s ? strlen(s) : 0};

	print_escaped(f, &b, max);
}

/* A step's test reports: counts, then the tests that did not pass. */
static void print_tests(const struct al_step_result *s, FILE *f)
{
	size_t shown = 0, left = 0;

	print_counts(f, "    ", &s->test_counts);
	for (size_t k = 0; k < s->n_tests; k++) {
		const struct al_test_case *t = &s->tests[k];
		const char *nl;

		if (t->status == AL_TEST_PASSED || t->status == AL_TEST_SKIPPED)
			continue;
		if (shown++ == TESTS_SHOWN) {
			left++;
			continue;
		}
		fprintf(f, "      %s: ", al_test_status_name(t->status));
		if (t->suite) {
			print_str(f, t->suite, AL_TEST_NAME_MAX);
			fputs("::", f);
		}
		print_str(f, t->name, AL_TEST_NAME_MAX);
		fprintf(f, " (%llu ms)", (unsigned long long)t->time_ms);
		if (t->message) { /* its first line */
			struct al_blob m = {(uint8_t *)t->message,
					    strlen(t->message)};

			nl = strchr(t->message, '\n');
			m.len = nl ? (size_t)(nl - t->message) : m.len;
			fputs(": ", f);
			print_escaped(f, &m, 200);
		}
		fputc('\n', f);
	}
	if (left)
		fprintf(f, "      ... and %zu more\n", left);
	if (s->reports_error) {
		fputs("    reports: ", f);
		print_str(f, s->reports_error, AL_ERROR_MAX);
		fputc('\n', f);
	}
}

static void print_step(const struct al_step_result *s, size_t i, FILE *f,
		       size_t max_out)
{
	char text[64];

	fprintf(f, "  step %zu%s%s%s: %s", i, s->name ? " (" : "",
		s->name ? s->name : "", s->name ? ")" : "",
		al_status_name(s->status));
	if (s->has_exit_code)
		fprintf(f, ", exit %d", s->exit_code);
	if (s->signal)
		fprintf(f, ", signal %d%s%s", s->signal,
			al_signal_name(s->signal) ? " " : "",
			al_signal_name(s->signal) ? al_signal_name(s->signal)
						  : "");
	if (s->expect_ok != AL_UNSET)
		fprintf(f, ", expect %s",
			s->expect_ok == AL_TRUE ? "ok" : "failed");
	if (s->verdict != AL_VERDICT_NONE) {
		al_verdict_text(s->verdict, s->signal, text, sizeof(text));
		fprintf(f, ", %s, score %u", text, s->score);
	}
	fprintf(f, ", %llu ms wall, %llu ms cpu\n",
		(unsigned long long)s->wall_ms, (unsigned long long)s->cpu_ms);
	if (s->compile_output.len) {
		fputs("    compile_output: ", f);
		print_escaped(f, &s->compile_output, max_out);
		fputc('\n', f);
	}
	if (s->stdout_.len) {
		fputs("    stdout: ", f);
		print_escaped(f, &s->stdout_, max_out);
		fputc('\n', f);
	}
	if (s->stderr_.len) {
		fputs("    stderr: ", f);
		print_escaped(f, &s->stderr_, max_out);
		fputc('\n', f);
	}
	if (s->has_tests)
		print_tests(s, f);
}

void al_cli_print_result(const struct al_result *r, FILE *f, size_t max_out)
{
	fprintf(f, "job %s: %s", r->id ? r->id : "-",
		al_status_name(r->status));
	print_verdict(r, f);
	fprintf(f, ", attempt %u", r->attempt);
	if (r->worker)
		fprintf(f, ", worker %s", r->worker);
	fputc('\n', f);
	if (r->vm.template_)
		fprintf(f, "  vm: %s, %s, %s in %llu ms\n", r->vm.template_,
			al_accel_name(r->vm.accel),
			r->vm.restored ? "restored" : "cold boot",
			(unsigned long long)r->vm.restore_ms);
	fprintf(f, "  time: queued %llu ms, run %llu ms\n",
		(unsigned long long)r->timing.queued_ms,
		(unsigned long long)r->timing.run_ms);
	if (r->error)
		fprintf(f, "  error: %s\n", r->error);
	if (r->has_tests)
		print_counts(f, "  ", &r->test_counts);
	for (size_t i = 0; i < r->n_steps; i++)
		print_step(&r->steps[i], i, f, max_out);
}

int al_cli_exit_code(const struct al_result *r)
{
	const struct al_step_result *s = NULL;

	if (r->status == AL_RJ || r->status == AL_XX)
		return 125;
	for (size_t i = r->n_steps; i-- > 0;) {
		if (r->steps[i].status != AL_SK) {
			s = &r->steps[i];
			break;
		}
	}
	if (!s)
		return 125;
	switch (s->status) {
	case AL_TO:
		return 124;
	case AL_TL:
		return 128 + SIGXCPU; /* as a shell reports RLIMIT_CPU */
	case AL_ML:
		return 137;
	case AL_SG:
		return 128 + (s->signal > 0 && s->signal < 128 ? s->signal : 0);
	case AL_XX:
	case AL_RJ:
		return 125;
	default:
		if (s->has_exit_code)
			return s->exit_code & 0xff;
		return s->signal ? 128 + s->signal : 125;
	}
}

static volatile sig_atomic_t interrupted;

/* The first Ctrl-C drains (running jobs finish, their results are kept
 * for --resume) and says so at once: a silent drain of a long job looks
 * like a hang (issue 37). The second stops now. write(2): signal-safe. */
static void on_interrupt(int sig)
{
	static const char drain[] =
	    "\nairlock: interrupted: draining, running jobs finish and are "
	    "kept (--resume goes on from them); Ctrl-C again to stop now\n";
	static const char now[] = "\nairlock: stopped; --resume goes on "
				  "from the results kept so far\n";
	ssize_t w;

	(void)sig;
	if (interrupted) {
		w = write(STDERR_FILENO, now, sizeof(now) - 1);
		(void)w;
		_exit(130);
	}
	interrupted = 1;
	w = write(STDERR_FILENO, drain, sizeof(drain) - 1);
	(void)w;
}

void al_cli_warn_unjailed(const struct sb_options *sb)
{
	if (sb->jail)
		return;
	al_warn("not root: VMs run unjailed: each QEMU runs as uid %u in "
		"this user's namespaces, with this user's files and network, "
		"and can rewrite this user's template memory; a guest that "
		"escapes QEMU is this user. Results say \"jailed\": false "
		"(docs/operations.md, \"Users other than root\")",
		(unsigned)geteuid());
}

void al_cli_catch_signals(void)
{
	struct sigaction sa = {.sa_handler = on_interrupt};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

bool al_cli_interrupted(void)
{
	return interrupted != 0;
}
