/* cmd_session.c: `airlock session`, a live VM worked in turn by turn
 * (docs/sessions.md; dispatcher/session/sessions.h does the work).
 *
 * Subcommands, a table: create, exec, put, get, list, extend, rm, cancel. Each
 * speaks to the queue's Redis, so any machine with the CLI reaches any
 * session; `exec` streams the exec's output as it is stored and exits
 * with the command's code, and `exec --attach N --offset B` reattaches to
 * exec N (running or finished) from byte B. Ctrl-C during `exec` cancels
 * the exec (SIGINT to its processes, SIGKILL 2 s later) and waits for its
 * end; a second Ctrl-C detaches at once. Ctrl-C during `--attach`, and
 * SIGTERM always, only detach: a client that goes away never ends an
 * exec. `cancel ID N [--signal NAME]` signals a running exec.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "readfile.h"
#include "sessions.h"

#define CHUNK	 (64u << 10)
#define POLL_NS	 (50 * 1000 * 1000)
#define FILE_MAX (16u << 20)

struct sub {
	const char *name;
	int (*run)(struct al_cli *cli, struct alq_client *c, int argc,
		   char **argv);
	const char *usage;
};

/* "WHAT: ERR", unless ERR says WHAT already ("fork: fork: ..." or
 * "extend: extend refused ..." otherwise). */
static void say(struct al_cli *cli, const char *what, const char *err)
{
	size_t n = strlen(what);

	if (!strncmp(err, what, n) && (err[n] == ':' || err[n] == ' '))
		al_cli_error(cli, "%s", err);
	else
		al_cli_error(cli, "%s: %s", what, err);
}

/* The asker's mistake (an unknown or ended session, a refused request),
 * not our failure: exit AL_EXIT_USAGE rather than run's 125. */
static bool user_error(int r)
{
	return r == -ENOENT || r == -ESRCH || r == -EINVAL || r == -ERANGE ||
	       r == -E2BIG;
}

static void nap(void)
{
	struct timespec ts = {0, POLL_NS};

	nanosleep(&ts, NULL);
}

/* Print JSON text (one line). */
static void print_json(const char *text)
{
	printf("%s\n", text);
}

/* "K=V" into obj[K] = V; -1 when there is no '='. */
static int pair(json_t *obj, const char *kv)
{
	const char *eq = strchr(kv, '=');
	char *k;

	if (!eq || eq == kv)
		return -1;
	k = strndup(kv, (size_t)(eq - kv));
	if (!k)
		return -1;
	json_object_set_new(obj, k, json_string(eq + 1));
	free(k);
	return 0;
}

static int usage_err(struct al_cli *cli, const char *sub, const char *what)
{
	return al_cli_usage_error(cli, "session %s: %s", sub, what);
}

/* --- create ----------------------------------------------------------------
 */

static int do_create(struct al_cli *cli, struct alq_client *c, int argc,
		     char **argv)
{
	static const struct al_opt lo[] = {
	    {"template", 't', AL_OPT_ARG | AL_OPT_SHORT},
	    {"ttl", 'T', AL_OPT_ARG},
	    {"idle", 'I', AL_OPT_ARG},
	    {"network", 'n', AL_OPT_ARG | AL_OPT_SHORT},
	    {"env", 'e', AL_OPT_ARG | AL_OPT_SHORT},
	    {"meta", 'm', AL_OPT_ARG | AL_OPT_SHORT},
	    {"body", 'b', AL_OPT_ARG},
	    {"timeout-ms", 'w', AL_OPT_ARG}, /* the unit in the name */
	    {"timeout", 'w', AL_OPT_ARG},    /* its old name, the same */
	    {"quiet", 'q', AL_OPT_SHORT},
	    {"saveable", 'S', 0},
	    {"hibernate", 'H', AL_OPT_ARG},
	    {NULL, 0, 0},
	};
	json_t *body = json_object(), *env = json_object(),
	       *meta = json_object();
	uint32_t timeout = cli->cfg.sessions.create_timeout_ms;
	bool quiet = false;
	char *out = NULL, *text;
	int o, r;

	optind = 0;
	while ((o = al_opts_next(argc, argv, lo)) != -1) {
		switch (o) {
		case 't':
			json_object_set_new(body, "template",
					    json_string(optarg));
			break;
		case 'n':
			json_object_set_new(body, "network",
					    json_string(optarg));
			break;
		case 'T':
			json_object_set_new(body, "ttl_s",
					    json_integer(atoll(optarg)));
			break;
		case 'I':
			json_object_set_new(body, "idle_s",
					    json_integer(atoll(optarg)));
			break;
		case 'e':
			if (pair(env, optarg) < 0)
				return usage_err(cli, "create", "--env K=V");
			break;
		case 'm':
			if (pair(meta, optarg) < 0)
				return usage_err(cli, "create", "--meta K=V");
			break;
		case 'b': {
			json_t *b = json_loads(optarg, 0, NULL);

			if (!json_is_object(b))
				return usage_err(cli, "create",
						 "--body: not a JSON object");
			json_object_update(body, b);
			json_decref(b);
			break;
		}
		case 'w':
			timeout = (uint32_t)atol(optarg);
			break;
		case 'q':
			quiet = true;
			break;
		case 'S':
			json_object_set_new(body, "saveable", json_true());
			break;
		case 'H':
			json_object_set_new(body, "hibernate_s",
					    json_integer(atoll(optarg)));
			break;
		default:
			return usage_err(cli, "create", "bad option");
		}
	}
	if (optind != argc)
		return usage_err(cli, "create", "takes no operands");
	if (json_object_size(env))
		json_object_set(body, "env", env);
	if (json_object_size(meta))
		json_object_set(body, "metadata", meta);
	json_decref(env);
	json_decref(meta);
	text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	r = text ? al_sess_create(c, text, timeout, &out) : -ENOMEM;
	free(text);
	if (r < 0) {
		say(cli, "create", c->err);
		return AL_EXIT_FAIL;
	}
	if (quiet) {
		json_t *j = json_loads(out, 0, NULL);

		printf("%s\n", json_string_value(json_object_get(j, "id")));
		json_decref(j);
	} else {
		print_json(out);
	}
	free(out);
	return AL_EXIT_OK;
}

/* --- exec ------------------------------------------------------------------
 */

/* airlock run's exit codes, from an exec record. */
static int exit_code(json_t *x)
{
	const char *st = json_string_value(json_object_get(x, "status"));
	long long code = json_integer_value(json_object_get(x, "exit_code"));
	long long sig = json_integer_value(json_object_get(x, "signal"));

	if (!st)
		return 125;
	if (!strcmp(st, "TO"))
		return 124;
	if (!strcmp(st, "TL"))
		return 128 + SIGXCPU;
	if (!strcmp(st, "ML"))
		return 137;
	if (!strcmp(st, "XX") || !strcmp(st, "RJ"))
		return 125;
	if (!strcmp(st, "SG"))
		return 128 + (int)(sig > 0 && sig < 128 ? sig : 0);
	if (code >= 0)
		return (int)(code & 0xff);
	return sig ? 128 + (int)sig : 125;
}

/* Copy what is new of stream fd to `f`; its new offset. */
static int drain(struct alq_client *c, const char *id, uint64_t n, int fd,
		 uint64_t *off, FILE *f)
{
	for (;;) {
		char *buf = NULL;
		size_t len = 0;
		int r =
		    al_sess_exec_read(c, id, n, fd, *off, CHUNK, &buf, &len);

		if (r < 0)
			return r;
		if (len)
			fwrite(buf, 1, len, f);
		free(buf);
		*off += len;
		if (len < CHUNK) {
			fflush(f);
			return 0;
		}
	}
}

/* Ctrl-C while `exec` follows its exec: the first asks for a cancel, a
 * second exits at once (130), as al_cli_catch_signals does. */
static volatile sig_atomic_t ctrl_c;

static void on_ctrl_c(int sig)
{
	(void)sig;
	if (ctrl_c)
		_exit(130);
	ctrl_c = 1;
}

static void catch_ctrl_c(void)
{
	struct sigaction sa = {.sa_handler = on_ctrl_c};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
}

/* Ctrl-C came: cancel exec n (SIGINT, then SIGKILL after the grace). */
static void cancel_on_ctrl_c(struct al_cli *cli, struct alq_client *c,
			     const char *id, uint64_t n)
{
	char *out = NULL;

	fprintf(stderr,
		"airlock session: exec %llu: cancelling (Ctrl-C again "
		"detaches)\n",
		(unsigned long long)n);
	if (al_sess_exec_signal(c, id, n, "INT", -1, &out) < 0 &&
	    !strstr(c->err, "already ended"))
		say(cli, "cancel", c->err);
	free(out);
}

/* Stream exec n from offsets until it is done; its exit code. With
 * `cancel`, Ctrl-C cancels it (see ctrl_c). */
static int follow(struct al_cli *cli, struct alq_client *c, const char *id,
		  uint64_t n, uint64_t off1, uint64_t off2, bool cancel)
{
	uint64_t last_check = 0;
	bool cancelled = false;

	if (cancel)
		catch_ctrl_c();
	for (;;) {
		char *xs = NULL, *rec = NULL;
		json_t *x;
		bool done;
		int r = al_sess_exec_get(c, id, n, &xs);

		if (r < 0) {
			say(cli, "exec", c->err);
			return 125;
		}
		x = json_loads(xs, JSON_ALLOW_NUL, NULL);
		free(xs);
		done = !strcmp(json_string_value(json_object_get(x, "state"))
				   ?: "",
			       "done");
		if (drain(c, id, n, 1, &off1, stdout) < 0 ||
		    drain(c, id, n, 2, &off2, stderr) < 0) {
			json_decref(x);
			say(cli, "exec", c->err);
			return 125;
		}
		if (done) {
			const char *e =
			    json_string_value(json_object_get(x, "error"));

			if (e && e[0])
				al_cli_error(cli, "exec %llu: %s",
					     (unsigned long long)n, e);
			r = exit_code(x);
			json_decref(x);
			return r;
		}
		json_decref(x);
		if (al_now_ms() - last_check >= 1000) {
			/* a lost or ended session ends the wait */
			last_check = al_now_ms();
			r = al_sess_get(c, id, &rec);
			if (r == 0 && strstr(rec, "\"state\":\"ended\"")) {
				al_cli_error(cli,
					     "exec %llu: the session "
					     "ended: %s",
					     (unsigned long long)n, rec);
				free(rec);
				return 125;
			}
			free(rec);
		}
		if (al_cli_interrupted())
			return 130;
		if (cancel && ctrl_c && !cancelled) {
			cancelled = true;
			cancel_on_ctrl_c(cli, c, id, n);
		}
		al_sess_exec_nap(c, id, n, POLL_NS / 1000000); /* or its end */
	}
}

static int do_exec(struct al_cli *cli, struct alq_client *c, int argc,
		   char **argv)
{
	static const struct al_opt lo[] = {
	    {"sh", 's', AL_OPT_ARG},
	    {"cwd", 'C', AL_OPT_ARG},
	    {"env", 'e', AL_OPT_ARG | AL_OPT_SHORT},
	    {"timeout-ms", 't', AL_OPT_ARG},
	    {"cpu-ms", 'u', AL_OPT_ARG},
	    {"stdin", 'i', AL_OPT_ARG},
	    {"attach", 'a', AL_OPT_ARG},
	    {"offset", 'o', AL_OPT_ARG},
	    {"err-offset", 'O', AL_OPT_ARG},
	    {"detach", 'd', 0},
	    {NULL, 0, 0},
	};
	json_t *body = json_object(), *env = json_object();
	uint64_t attach = 0, off1 = 0, off2 = 0, n;
	bool detach = false;
	const char *id;
	char *text;
	int o, r;

	optind = 0;
	while ((o = al_opts_next(argc, argv, lo)) != -1) {
		switch (o) {
		case 's':
			json_object_set_new(body, "sh", json_string(optarg));
			break;
		case 'C':
			json_object_set_new(body, "cwd", json_string(optarg));
			break;
		case 'e':
			if (pair(env, optarg) < 0)
				return usage_err(cli, "exec", "--env K=V");
			break;
		case 't':
			json_object_set_new(body, "timeout_ms",
					    json_integer(atoll(optarg)));
			break;
		case 'u':
			json_object_set_new(body, "cpu_ms",
					    json_integer(atoll(optarg)));
			break;
		case 'i': {
			char *data = NULL;
			size_t len = 0;

			if (al_read_file(optarg, FILE_MAX, &data, &len) < 0) {
				al_cli_error(cli,
					     "exec: %s: cannot read it "
					     "(at most %u bytes)",
					     optarg, FILE_MAX);
				return AL_EXIT_USAGE;
			}
			json_object_set_new(body, "stdin",
					    al_sess_blob_json(data, len));
			free(data);
			break;
		}
		case 'a':
			attach = strtoull(optarg, NULL, 10);
			break;
		case 'o':
			off1 = strtoull(optarg, NULL, 10);
			break;
		case 'O':
			off2 = strtoull(optarg, NULL, 10);
			break;
		case 'd':
			detach = true;
			break;
		default:
			return usage_err(cli, "exec", "bad option");
		}
	}
	if (optind >= argc)
		return usage_err(cli, "exec", "needs a session id");
	id = argv[optind++];
	if (attach) {
		json_decref(body);
		json_decref(env);
		return follow(cli, c, id, attach, off1, off2, false);
	}
	if (!json_object_get(body, "sh")) {
		json_t *cmd = json_array();

		if (optind < argc && !strcmp(argv[optind], "--"))
			optind++;
		if (optind >= argc)
			return usage_err(cli, "exec",
					 "needs --sh SCRIPT or "
					 "-- CMD [ARG...]");
		for (; optind < argc; optind++)
			json_array_append_new(cmd, json_string(argv[optind]));
		json_object_set_new(body, "cmd", cmd);
	}
	if (json_object_size(env))
		json_object_set(body, "env", env);
	json_decref(env);
	text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	r = text ? al_sess_exec_start(c, id, text, 0, &n) : -ENOMEM;
	free(text);
	if (r < 0) {
		say(cli, "exec", c->err);
		/* no such session is the caller's, not Airlock's failure: 1,
		 * as docker exec on an unknown container (issue 37); other
		 * refusals of the request are usage (2) */
		return r == -ENOENT	 ? AL_EXIT_FAIL
		       : user_error(r) ? AL_EXIT_USAGE
				       : 125;
	}
	fprintf(stderr, "airlock session: exec %llu\n", (unsigned long long)n);
	if (detach) {
		printf("%llu\n", (unsigned long long)n);
		return AL_EXIT_OK;
	}
	return follow(cli, c, id, n, 0, 0, true);
}

static int do_cancel(struct al_cli *cli, struct alq_client *c, int argc,
		     char **argv)
{
	static const struct al_opt lo[] = {
	    {"signal", 's', AL_OPT_ARG | AL_OPT_SHORT},
	    {"grace-ms", 'g', AL_OPT_ARG},
	    {NULL, 0, 0},
	};
	const char *sig = "TERM";
	int64_t grace = -1;
	char *out = NULL, *end;
	uint64_t n;
	int o, r;

	optind = 0;
	while ((o = al_opts_next(argc, argv, lo)) != -1) {
		switch (o) {
		case 's':
			sig = optarg;
			break;
		case 'g':
			grace = strtoll(optarg, &end, 10);
			if (*end || grace < 0)
				return usage_err(cli, "cancel",
						 "--grace-ms takes N >= 0");
			break;
		default:
			return usage_err(cli, "cancel", "bad option");
		}
	}
	if (argc - optind != 2)
		return usage_err(cli, "cancel", "takes ID EXEC");
	n = strtoull(argv[optind + 1], &end, 10);
	if (*end || !n)
		return usage_err(cli, "cancel", "EXEC is an exec number");
	r = al_sess_exec_signal(c, argv[optind], n, sig, grace, &out);
	if (r < 0) {
		say(cli, "cancel", c->err);
		return r == -EINVAL && !strncmp(c->err, sig, strlen(sig))
			   ? AL_EXIT_USAGE
			   : AL_EXIT_FAIL;
	}
	print_json(out);
	free(out);
	return AL_EXIT_OK;
}

/* --- files: through exec, so the guest's own rules confine them ---------- */

/* Directories as tar (dispatcher/session/files.c): `--tar FILE|-`,
 * `--dir`, `--max-bytes N`, `--max-files N` taken out of argv. */
struct taropt {
	const char *tar; /* FILE, "-", or NULL */
	bool dir;
	uint64_t max_bytes;
	uint32_t max_files;
};

static int tar_opts(struct al_cli *cli, const char *sub, int *argc,
		    char **argv, struct taropt *o)
{
	int k = 0;

	o->tar = NULL;
	o->dir = false;
	o->max_bytes = AL_TAR_BYTES_DEFAULT;
	o->max_files = AL_TAR_FILES_DEFAULT;
	for (int i = 0; i < *argc; i++) {
		char *end;
		unsigned long long v;

		if (!strcmp(argv[i], "--dir")) {
			o->dir = true;
			continue;
		}
		if (strcmp(argv[i], "--tar") && strcmp(argv[i], "--max-bytes") &&
		    strcmp(argv[i], "--max-files")) {
			argv[k++] = argv[i];
			continue;
		}
		if (i + 1 >= *argc)
			return usage_err(cli, sub, "an option needs a value");
		if (!strcmp(argv[i], "--tar")) {
			o->tar = argv[++i];
			continue;
		}
		v = strtoull(argv[i + 1], &end, 10);
		if (*end || end == argv[i + 1] ||
		    (argv[i][6] == 'b' ? v > AL_TAR_BYTES_MAX
				       : v > AL_TAR_FILES_MAX))
			return usage_err(cli, sub,
					 "--max-bytes is at most 1 GiB, "
					 "--max-files at most 100000");
		if (argv[i][6] == 'b')
			o->max_bytes = v;
		else
			o->max_files = (uint32_t)v;
		i++;
	}
	*argc = k;
	return 0;
}

static int put_tar(struct al_cli *cli, struct alq_client *c, const char *id,
		   const char *local, const struct taropt *o,
		   const char *remote)
{
	uint8_t *tar = NULL;
	char *data = NULL, err[200];
	size_t len = 0;
	int r;

	if (o->tar) {
		/* what a tar within the caps can take, and 1 MiB more so
		 * that the decoder says which cap a larger one breaks */
		uint64_t cap = o->max_bytes +
			       ((uint64_t)o->max_files + 2) * 1024 + 10240;

		r = al_read_file(o->tar, cap + (1u << 20), &data, &len);
		if (r < 0) {
			al_cli_error(cli, "put: %s: %s", o->tar,
				     r == -EFBIG || r == -E2BIG
					 ? "over the caps (--max-bytes, "
					   "--max-files)"
					 : strerror(-r));
			return AL_EXIT_FAIL;
		}
		tar = (uint8_t *)data;
	} else if (al_sess_tar_dir(local, o->max_bytes, o->max_files, &tar,
				   &len, err, sizeof(err)) < 0) {
		al_cli_error(cli, "put: %s: %s", local, err);
		return AL_EXIT_FAIL;
	}
	r = al_sess_put_tar(c, id, remote, tar, len, o->max_bytes,
			    o->max_files);
	free(tar);
	if (r < 0) {
		al_cli_error(cli, "%s", c->err);
		return AL_EXIT_FAIL;
	}
	return AL_EXIT_OK;
}

static int get_tar(struct al_cli *cli, struct alq_client *c, const char *id,
		   const char *remote, const struct taropt *o,
		   const char *local)
{
	uint8_t *tar = NULL;
	size_t len = 0;
	char err[200];
	int r;

	if (al_sess_get_tar(c, id, remote, o->max_bytes, o->max_files, &tar,
			    &len) < 0) {
		al_cli_error(cli, "%s", c->err);
		return AL_EXIT_FAIL;
	}
	if (o->tar) {
		FILE *f = strcmp(o->tar, "-") ? fopen(o->tar, "wbx") : stdout;

		r = f && fwrite(tar, 1, len, f) == len ? 0 : -EIO;
		if (f && (f != stdout ? fclose(f) : fflush(f)) != 0)
			r = -EIO;
		if (r < 0)
			al_cli_error(cli, "get: %s: cannot write it (exists?)",
				     o->tar);
	} else {
		r = al_sess_untar(local, tar, len, o->max_bytes, o->max_files,
				  err, sizeof(err));
		if (r < 0)
			al_cli_error(cli, "get: %s", err);
	}
	free(tar);
	return r < 0 ? AL_EXIT_FAIL : AL_EXIT_OK;
}

static int do_put(struct al_cli *cli, struct alq_client *c, int argc,
		  char **argv)
{
	json_t *body;
	char *data = NULL, *text;
	size_t len = 0;
	uint64_t n;
	struct taropt to;
	struct stat st;
	int r;

	if (tar_opts(cli, "put", &argc, argv, &to))
		return AL_EXIT_USAGE;
	if (to.tar && argc == 3)
		return put_tar(cli, c, argv[1], NULL, &to, argv[2]);
	if (argc == 4 && stat(argv[2], &st) == 0 && S_ISDIR(st.st_mode))
		return put_tar(cli, c, argv[1], argv[2], &to, argv[3]);
	if (argc != 4 || to.tar)
		return usage_err(cli, "put", "takes ID LOCAL REMOTE or ID --tar FILE REMOTE");
	if (al_read_file(argv[2], FILE_MAX, &data, &len) < 0) {
		al_cli_error(cli, "put: %s: cannot read it (at most %u bytes)",
			     argv[2], FILE_MAX);
		return AL_EXIT_USAGE;
	}
	body = json_pack("{s:[s,s,s,s,s],s:o}", "cmd", "sh", "-c",
			 "mkdir -p \"$(dirname \"$1\")\" && cat > \"$1\"",
			 "put", argv[3], "stdin", al_sess_blob_json(data, len));
	free(data);
	if (!body) {
		al_cli_error(cli, "put: out of memory");
		return AL_EXIT_FAIL;
	}
	text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	r = text ? al_sess_exec_start(c, argv[1], text, 0, &n) : -ENOMEM;
	free(text);
	if (r < 0) {
		say(cli, "put", c->err);
		return AL_EXIT_FAIL;
	}
	r = follow(cli, c, argv[1], n, 0, 0, false);
	return r == 0 ? AL_EXIT_OK : AL_EXIT_FAIL;
}

static int do_get(struct al_cli *cli, struct alq_client *c, int argc,
		  char **argv)
{
	char *out = NULL;
	FILE *f;
	uint64_t n;
	struct taropt to;
	int r;

	if (tar_opts(cli, "get", &argc, argv, &to))
		return AL_EXIT_USAGE;
	if (to.tar && argc == 3)
		return get_tar(cli, c, argv[1], argv[2], &to, NULL);
	if (to.dir && argc == 4)
		return get_tar(cli, c, argv[1], argv[2], &to, argv[3]);
	if (to.tar || to.dir)
		return usage_err(cli, "get", "takes ID --dir REMOTE LOCAL or ID --tar FILE REMOTE");
	if (argc == 2) {
		if (al_sess_get(c, argv[1], &out) < 0) {
			say(cli, "get", c->err);
			return AL_EXIT_FAIL;
		}
		print_json(out);
		free(out);
		return AL_EXIT_OK;
	}
	if (argc != 3 && argc != 4)
		return usage_err(cli, "get", "takes ID [REMOTE [LOCAL]]");
	json_t *body = json_pack("{s:[s,s]}", "cmd", "cat", argv[2]);
	char *text = json_dumps(body, JSON_COMPACT);

	json_decref(body);
	r = text ? al_sess_exec_start(c, argv[1], text, 0, &n) : -ENOMEM;
	free(text);
	if (r < 0) {
		say(cli, "get", c->err);
		return AL_EXIT_FAIL;
	}
	f = argc == 4 ? fopen(argv[3], "wbx") : stdout;
	if (!f) {
		al_cli_error(cli, "get: %s: cannot create it (exists?)",
			     argv[3]);
		return AL_EXIT_FAIL;
	}
	{
		uint64_t off1 = 0, off2 = 0;
		FILE *saved = stdout;

		(void)saved;
		for (;;) {
			char *xs = NULL;
			json_t *x;
			bool done;

			if (al_sess_exec_get(c, argv[1], n, &xs) < 0)
				break;
			x = json_loads(xs, JSON_ALLOW_NUL, NULL);
			free(xs);
			done = !strcmp(
			    json_string_value(json_object_get(x, "state"))
				?: "",
			    "done");
			drain(c, argv[1], n, 1, &off1, f);
			drain(c, argv[1], n, 2, &off2, stderr);
			if (done) {
				r = exit_code(x);
				if (!r && json_integer_value(json_object_get(
					      x, "stdout_bytes")) >
					      (json_int_t)off1) {
					al_cli_error(cli,
						     "get: %s: larger "
						     "than sessions.output_"
						     "max_bytes",
						     argv[2]);
					r = AL_EXIT_FAIL;
				}
				json_decref(x);
				break;
			}
			json_decref(x);
			nap();
		}
	}
	if (f != stdout)
		fclose(f);
	return r == 0 ? AL_EXIT_OK : AL_EXIT_FAIL;
}

/* --- list, extend, rm ------------------------------------------------------
 */

static int do_list(struct al_cli *cli, struct alq_client *c, int argc,
		   char **argv)
{
	const char *state = NULL;
	json_t *meta = json_object(), *all, *s;
	char *out = NULL;
	size_t i;

	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--state") && a + 1 < argc)
			state = argv[++a];
		else if ((!strcmp(argv[a], "--meta") ||
			  !strcmp(argv[a], "-m")) && /* as create's */
			 a + 1 < argc && pair(meta, argv[a + 1]) == 0)
			a++;
		else
			return usage_err(cli, "list",
					 "[--state S] [-m|--meta K=V]");
	}
	if (al_sess_list(c, state, meta, &out) < 0) {
		json_decref(meta);
		say(cli, "list", c->err);
		return AL_EXIT_FAIL;
	}
	all = json_loads(out, 0, NULL);
	free(out);
	json_array_foreach(json_object_get(all, "sessions"), i, s)
	{
		char *t = json_dumps(s, JSON_COMPACT);

		if (t)
			print_json(t);
		free(t);
	}
	json_decref(all);
	json_decref(meta);
	return AL_EXIT_OK;
}

static int do_extend(struct al_cli *cli, struct alq_client *c, int argc,
		     char **argv)
{
	char *out = NULL;
	int r;

	if (argc != 3 || atol(argv[2]) <= 0)
		return usage_err(cli, "extend", "takes ID TTL_S");
	r = al_sess_extend(c, argv[1], (uint32_t)atol(argv[2]), &out);
	if (r < 0) {
		say(cli, "extend", c->err);
		return AL_EXIT_FAIL;
	}
	print_json(out);
	free(out);
	return AL_EXIT_OK;
}

static int do_rm(struct al_cli *cli, struct alq_client *c, int argc,
		 char **argv)
{
	char *out = NULL;

	if (argc != 2)
		return usage_err(cli, "rm", "takes ID");
	if (al_sess_delete(c, argv[1], &out) < 0) {
		say(cli, "rm", c->err);
		return AL_EXIT_FAIL;
	}
	print_json(out);
	free(out);
	return AL_EXIT_OK;
}

static int do_snapshot(struct al_cli *cli, struct alq_client *c, int argc,
		       char **argv)
{
	char *out = NULL;

	if (argc != 3)
		return usage_err(cli, "snapshot", "takes ID NAME");
	if (al_sess_snapshot(c, argv[1], argv[2], &out) < 0) {
		say(cli, "snapshot", c->err);
		return AL_EXIT_FAIL;
	}
	print_json(out);
	free(out);
	return AL_EXIT_OK;
}

static int do_fork(struct al_cli *cli, struct alq_client *c, int argc,
		   char **argv)
{
	static const struct al_opt lo[] = {
	    {"n", 'n', AL_OPT_ARG | AL_OPT_SHORT},
	    {"timeout-ms", 'w', AL_OPT_ARG}, /* the unit in the name */
	    {"timeout", 'w', AL_OPT_ARG},    /* its old name, the same */
	    {"saveable", 'S', 0},
	    {NULL, 0, 0},
	};
	uint32_t timeout = cli->cfg.sessions.create_timeout_ms;
	bool saveable = false;
	long n = 1;
	char *out = NULL;
	int o, r;

	optind = 0;
	while ((o = al_opts_next(argc, argv, lo)) != -1) {
		if (o == 'n')
			n = atol(optarg);
		else if (o == 'w')
			timeout = (uint32_t)atol(optarg);
		else if (o == 'S')
			saveable = true;
		else
			return usage_err(cli, "fork", "bad option");
	}
	if (optind != argc - 1)
		return usage_err(cli, "fork", "takes ID [-n N]");
	if (n < 1 || n > AL_SESS_FORK_MAX)
		return usage_err(cli, "fork", "-n: 1..16");
	r = al_sess_fork(c, argv[optind], (unsigned)n, saveable, timeout,
			 &out);
	if (out)
		print_json(out);
	free(out);
	if (r < 0) {
		say(cli, "fork", c->err);
		return AL_EXIT_FAIL;
	}
	return AL_EXIT_OK;
}

static const struct sub subs[] = {
    {"create", do_create, NULL}, {"exec", do_exec, NULL},
    {"put", do_put, NULL},	 {"get", do_get, NULL},
    {"list", do_list, NULL},	 {"extend", do_extend, NULL},
    {"rm", do_rm, NULL},	 {"cancel", do_cancel, NULL},
    {"snapshot", do_snapshot, NULL}, {"fork", do_fork, NULL},
};

/* The common options after the subcommand (`session create --redis URL`,
 * as every other command takes them after its name): taken out of argv
 * (up to a `--`), and the config loaded again with them. 1 when some
 * were, 0 when none, or the exit code of a usage error (negated). */
static int sub_common_opts(struct al_cli *cli, int *argc, char **argv)
{
	static const char *const names[] = {"--redis", "--queue", "--config"};
	const char **dst[] = {&cli->redis, &cli->queue, &cli->config};
	int out = 1, found = 0, i;

	for (i = 1; i < *argc && strcmp(argv[i], "--"); i++) {
		size_t k, n = 0;

		for (k = 0; k < 3; k++) {
			n = strlen(names[k]);
			if (!strncmp(argv[i], names[k], n) &&
			    (argv[i][n] == 0 || argv[i][n] == '='))
				break;
		}
		if (k == 3) {
			argv[out++] = argv[i];
			continue;
		}
		if (argv[i][n] == '=')
			*dst[k] = argv[i] + n + 1;
		else if (i + 1 < *argc)
			*dst[k] = argv[++i];
		else
			return -al_cli_usage_error(cli, "%s needs a value",
						   names[k]);
		found = 1;
	}
	for (; i < *argc; i++)
		argv[out++] = argv[i];
	argv[out] = NULL;
	*argc = out;
	if (!found)
		return 0;
	al_config_release(&cli->cfg);
	al_config_init(&cli->cfg);
	return al_cli_load(cli) < 0 ? -AL_EXIT_USAGE : 1;
}

static int run(struct al_cli *cli, int argc, char **argv)
{
	struct alq_client c = {0};
	int r;

	r = sub_common_opts(cli, &argc, argv);
	if (r < 0)
		return -r;
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		if (strcmp(argv[0], subs[i].name))
			continue;
		if (al_cli_open(cli, &c) < 0)
			return AL_EXIT_USAGE;
		al_cli_catch_signals();
		r = subs[i].run(cli, &c, argc, argv);
		alq_client_close(&c);
		return r;
	}
	return al_cli_usage_error(cli, "no such subcommand: %s", argv[0]);
}

const struct al_cmd al_cmd_session = {
    .name = "session",
    .summary = "a live VM worked in turn by turn (create, exec, rm ...)",
    .usage =
	"usage: airlock session [--redis URL] [--config PATH] [--queue NAME]\n"
	"                       SUBCOMMAND ARGS...\n"
	"\n"
	"  create [-t TEMPLATE] [--ttl S] [--idle S] [-n NETWORK] [-e K=V]...\n"
	"         [-m K=V]... [--body JSON] [--timeout-ms MS] [--saveable]\n"
	"         [--hibernate S] [-q]\n"
	"      start a session; prints its record (-q: its id). It ends at\n"
	"      its ttl (sessions.ttl_default_s), after --idle seconds\n"
	"      without a request, or on rm. Waits up to --timeout-ms\n"
	"      (sessions.create_timeout_ms) for a host with room.\n"
	"      --saveable: its RAM a private copy, so that `snapshot` can\n"
	"      save it (costs the copy at create and its RAM; see\n"
	"      docs/sessions.md). --hibernate S: after S seconds without a\n"
	"      request its VM is saved and its VMM ends; the next request\n"
	"      restores it (sessions.hibernate_default_s; implies\n"
	"      --saveable).\n"
	"  exec ID [--sh SCRIPT | -- CMD ARG...] [--cwd D] [-e K=V]...\n"
	"       [--timeout-ms N] [--cpu-ms N] [--stdin FILE] [--detach]\n"
	"      run a command in it; streams stdout and stderr; exits with\n"
	"      the command's code (124 timed out, 125 Airlock failed;\n"
	"      1 and a message when there is no such session).\n"
	"      Prints `exec N` on stderr first. Ctrl-C cancels the exec\n"
	"      (SIGINT, SIGKILL 2 s later) and waits for its end; a second\n"
	"      Ctrl-C detaches (the exec goes on).\n"
	"  exec ID --attach N [--offset B] [--err-offset B]\n"
	"      reattach to exec N, running or done, from byte B of stdout\n"
	"      (and of stderr); the exec never stopped for a lost client.\n"
	"  put ID LOCAL REMOTE    write a file (at most 16 MiB); a local\n"
	"                         directory goes as a tar into REMOTE\n"
	"  put ID --tar FILE|- REMOTE  extract a ustar stream into REMOTE\n"
	"  get ID [REMOTE [LOCAL]]  its record; or a file's contents\n"
	"  get ID --dir REMOTE LOCAL   directory REMOTE into LOCAL\n"
	"  get ID --tar FILE|- REMOTE  directory REMOTE as a ustar stream\n"
	"      Tars: --max-bytes N (contents, default 256 MiB, at most\n"
	"      1 GiB), --max-files N (default 10000); paths relative with\n"
	"      no . or .. part, symlinks pointing down, no device nodes,\n"
	"      or refused whole before anything is written.\n"
	"  list [--state S] [-m|--meta K=V]  records, one JSON a line\n"
	"  extend ID TTL_S        end it TTL_S from now (never past\n"
	"                         sessions.ttl_max_s from its start)\n"
	"  rm ID                  destroy it\n"
	"  cancel ID EXEC [--signal NAME] [--grace-ms N]\n"
	"      signal running exec EXEC's processes: TERM (default), KILL,\n"
	"      INT, HUP, QUIT (cancels: SIGKILL after N ms, default 2000;\n"
	"      0 never), USR1, USR2 (no kill unless --grace-ms). Its record\n"
	"      then says `cancelled` and `signals_sent`; exit 1 when the\n"
	"      exec has already ended.\n"
	"  fork ID [-n N] [--saveable] [--timeout-ms MS]\n"
	"                         N (1..16) new sessions from its current\n"
	"                         state (created --saveable), on its host;\n"
	"                         prints their records with fork_ms\n"
	"                         (--saveable: the forks can be forked and\n"
	"                         saved in turn)\n"
	"  snapshot ID NAME       save the live session (created --saveable)\n"
	"                         as snapshot NAME on its host; jobs and\n"
	"                         sessions name it when [snapshots] allowed\n"
	"                         lists it. An existing NAME is refused.\n"
	"\n"
	"docs/sessions.md has the clocks, the routing and the HTTP and\n"
	"Python forms. Exit: 0 ok, 1 refused or failed, 2 usage.\n",
    .flags = AL_CMD_QUEUE | AL_CMD_IN_ORDER | AL_CMD_CONFIG,
    .args_min = 1,
    .args_max = 4096,
    .args_error =
	"needs a subcommand (create, exec, put, get, list, extend, rm, "
	"cancel, snapshot, fork)",
    .run = run,
};
