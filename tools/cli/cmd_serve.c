/* cmd_serve.c: `airlock serve`, the dispatcher: jobs from Redis to worker
 * processes and results back (dispatcher/serve/serve.c has the theory of
 * operation), and with --http / http.listen the HTTP API next to it
 * (tools/api/http.h), with metrics.listen a metrics-only listener. Runs until
 * SIGTERM or SIGINT, then drains; the listeners close after the drain.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "callback.h"
#include "cli.h"
#include "door.h"
#include "gwrun.h"
#include "http.h"
#include "log.h"
#include "sbconfig.h"
#include "serve.h"
#include "sessions.h"

struct serve_opts {
	uint32_t workers; /* --workers, 0 = workers.count */
	const char *http; /* --http ADDR, NULL = http.listen */
	bool unjailed;	  /* --unjailed: serve even without the jail */
};

enum { OPT_HTTP = 0x200, OPT_UNJAILED };

static const struct al_opt opts[] = {
    {"workers", 'w', AL_OPT_ARG | AL_OPT_SHORT},
    {"http", OPT_HTTP, AL_OPT_ARG},
    {"unjailed", OPT_UNJAILED, 0},
    {NULL, 0, 0},
};

static int opt(struct al_cli *cli, int c, const char *arg)
{
	struct serve_opts *o = cli->opts;

	if (c == OPT_HTTP) {
		o->http = arg;
		return AL_EXIT_OK;
	}
	if (c == OPT_UNJAILED) {
		o->unjailed = true;
		return AL_EXIT_OK;
	}
	return al_cli_opt_workers(cli, arg, &o->workers);
}

/* What runs next to the dispatcher: callbacks, API, metrics listener. */
struct front {
	struct al_metrics metrics;
	struct al_callbacks *cb;
	struct al_http_opts api_o, met_o;
	struct al_http *api, *met;
};

static void front_stop(struct front *f)
{
	al_http_stop(f->api);
	al_http_stop(f->met);
	al_callbacks_stop(f->cb);
	al_principals_release(&f->api_o.principals);
}

/* Start the listeners asked for; 0 or an exit code (errors said). */
static int front_start(struct al_cli *cli, const char *http,
		       const struct alq_url *url, const struct al_policy *pol,
		       struct front *f)
{
	struct al_config *cfg = &cli->cfg;
	char err[512];
	int r = 0;

	al_metrics_init(&f->metrics);
	f->api_o = (struct al_http_opts){.listen = http, .cfg = cfg,
					 .policy = pol, .url = *url,
					 .metrics = &f->metrics,
					 .doors = &al_doors};
	if (http[0])
		r = al_principals_load(cfg, &f->api_o.principals, err,
				       sizeof(err));
	if (r < 0) {
		al_cli_error(cli, "%s", err);
		return AL_EXIT_USAGE;
	}
	f->met_o = f->api_o;
	f->met_o.principals = (struct al_principals){0}; /* not its to free */
	f->met_o.listen = cfg->metrics.listen;
	f->met_o.metrics_only = true;
	if (http[0] && cfg->http.callback_allow.n)
		r = al_callbacks_start(
		    url, cfg->queue.name, cfg->queue.partitions,
		    cfg->redis.command_timeout_ms, &cfg->http.callback_allow,
		    cfg->http.callback_attempts, &f->metrics, &f->cb);
	if (r < 0)
		snprintf(err, sizeof(err), "callbacks: %s", strerror(-r));
	f->api_o.callbacks = f->cb;
	if (r == 0 && http[0])
		r = al_http_start(&f->api_o, &f->api, err, sizeof(err));
	if (r == 0 && f->met_o.listen[0])
		r = al_http_start(&f->met_o, &f->met, err, sizeof(err));
	if (r < 0) {
		al_cli_error(cli, "%s", err);
		front_stop(f);
		return AL_EXIT_USAGE;
	}
	if (http[0])
		al_info("http: listening on %s (%s)", http,
			f->api_o.principals.n ? "bearer tokens"
					      : "loopback clients only");
	if (f->met_o.listen[0])
		al_info("metrics: listening on %s", f->met_o.listen);
	return AL_EXIT_OK;
}

/* The session host beside the dispatcher (dispatcher/session/host.c),
 * when workers.max_sessions > 0: its pid, 0 for none, -1 failed (said). */
static pid_t sessions_start(struct al_cli *cli,
			    const struct al_serve_opts *so)
{
	const struct al_config *cfg = &cli->cfg;
	struct al_sess_opts o;
	pid_t pid;

	if (!cfg->workers.max_sessions)
		return 0;
	al_config_sess_opts(cfg, so, &o);
	pid = al_sess_host_spawn(&o);
	if (pid < 0) {
		al_cli_error(cli, "sessions: cannot start the host: %s",
			     strerror((int)-pid));
		return -1;
	}
	return pid;
}

static void sessions_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static int run(struct al_cli *cli, int argc, char **argv)
{
	const struct serve_opts *o = cli->opts;
	struct al_config *cfg = &cli->cfg;
	struct al_serve_opts so;
	struct al_policy policy;
	struct sb_options sb;
	struct alq_url url;
	struct front f = {0};
	char err[2048];
	pid_t sess, gw = 0;
	int rc;

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
	if (!sb.jail && !o->unjailed) {
		/* a service runs other people's jobs: no jail must be asked
		 * for, not found out (issue 23; docs/operations.md) */
		al_cli_error(cli,
			     "not root: VMMs would run unjailed, as uid %u "
			     "with this user's files and network "
			     "(docs/operations.md, \"Users other than "
			     "root\"); run serve as root, or pass --unjailed "
			     "to serve anyway",
			     (unsigned)geteuid());
		return AL_EXIT_USAGE;
	}
	al_cli_warn_unjailed(&sb);
	if (o->http && o->http[0] && !al_config_listen_valid(o->http))
		return al_cli_usage_error(cli, "--http: not HOST:PORT: %s",
					  o->http);
	al_config_policy(cfg, &policy);
	al_config_serve_opts(cfg, &url, &policy, &sb, &so);
	/* a job naming a template with no image here is refused when it is
	 * submitted (HTTP) or read, not run as XX three times (issue 37) */
	if (cfg->templates.check_images)
		al_config_policy_live(&policy, &sb);
	/* before any thread starts: the gateway's keeper and the session
	 * host are forked */
	if (al_gw_wanted(cfg)) {
		gw = al_gw_spawn(cfg, err, sizeof(err));
		if (gw < 0) {
			al_cli_error(cli, "%s", err);
			return AL_EXIT_USAGE;
		}
	}
	sess = sessions_start(cli, &so);
	if (sess < 0) {
		al_gw_stop(gw);
		return AL_EXIT_USAGE;
	}
	rc = front_start(cli, o->http ? o->http : cfg->http.listen, &url,
			 &policy, &f);
	if (rc != AL_EXIT_OK) {
		sessions_stop(sess);
		al_gw_stop(gw);
		return rc;
	}
	so.metrics = &f.metrics;
	rc = al_serve_run(&so) < 0 ? AL_EXIT_USAGE : AL_EXIT_OK;
	sessions_stop(sess);
	al_gw_stop(gw);
	front_stop(&f);
	return rc;
}

const struct al_cmd al_cmd_serve = {
    .name = "serve",
    .summary = "run the dispatcher: jobs from Redis through local workers",
    .usage =
	"usage: airlock serve [--workers N] [--http HOST:PORT] [--unjailed]\n"
	"                     [--redis URL] [--config PATH] [--queue NAME]\n"
	"\n"
	"Read jobs from the queue's Redis stream, run each in a fresh microVM\n"
	"on one of N local worker processes, store the results. Many serve\n"
	"processes, on one host or many, may share a queue. SIGTERM or SIGINT\n"
	"drains: no new jobs are read, running ones get workers.\n"
	"shutdown_grace_ms to finish, the rest are handed back to the queue.\n"
	"With a [network.packages] policy in the config, serve also keeps the\n"
	"package gateway (airlock-gateway, or $AIRLOCK_GATEWAY) running in a\n"
	"network namespace of its own on 10.202.0.2:3141, as its own uid,\n"
	"serving STATE/packages (docs/packages.md); it needs root.\n"
	"\n"
	"options:\n"
	"  -w, --workers N    worker processes (default workers.count, 0 =\n"
	"                     one per CPU)\n"
	"      --http HOST:PORT  serve the HTTP API there too (default\n"
	"                     http.listen; docs/http.md)\n"
	"      --unjailed     serve even though this user cannot jail the\n"
	"                     VMMs (not root: each QEMU runs as this user;\n"
	"                     docs/operations.md). Refused without it\n",
    .flags = AL_CMD_QUEUE | AL_CMD_CONFIG,
    .options = opts,
    .opts_size = sizeof(struct serve_opts),
    .opt = opt,
    .run = run,
};
