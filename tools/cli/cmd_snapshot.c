/* cmd_snapshot.c: `airlock snapshot create|list|rm`: templates made by a
 * setup job (docs/snapshots.md).
 *
 * create runs the setup job's steps in a fresh clone of its template on
 * this host, in this process (not through the queue: a snapshot build
 * lives in this host's state dir), and saves that VM when every step is
 * OK; the steps' output is printed as `airlock run` prints it. With a
 * Redis configured it then publishes the snapshot's definition there
 * (dispatcher/serve/snapdef.h) for the other hosts to build from. list and rm
 * read and remove what the state dir holds, and the published
 * definitions.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "queue.h"
#include "sbconfig.h"
#include "snapdef.h"
#include "worker.h"

#define LIST_MAX 256

/* Publish NAME's definition (its setup job as built here) through the
 * configured Redis, and record this host's build of it. */
static int publish(struct al_cli *cli, const struct sb_options *sb,
		   const char *name, const struct al_job *job)
{
	struct al_snapdef d = {0};
	struct alq_client c = {0};
	struct sb_image img;
	char host[ALQ_SNAPDEF_HOST_MAX], *mp = NULL;
	size_t len = 0;
	int r;

	snprintf(d.name, sizeof(d.name), "%s", name);
	snprintf(d.base, sizeof(d.base), "%s",
		 job->template_ ? job->template_ : cli->cfg.templates.default_);
	r = sb_image_open(sb, d.base, &img);
	if (r == 0)
		r = al_worker_setup_hash(job, d.setup_sha);
	if (r == 0)
		r = al_job_to_msgpack(job, &mp, &len);
	if (r < 0) {
		al_cli_error(cli, "publish %s: %s", name, strerror(-r));
		return AL_EXIT_FAIL;
	}
	snprintf(d.image, sizeof(d.image), "%s", img.hash);
	d.setup = mp;
	d.setup_len = len;
	al_snapdef_key(&d, d.key);
	alq_snapdef_host(sb->state_dir, host);
	r = al_cli_open(cli, &c);
	if (r == 0) {
		r = alq_snapdef_publish(&c, cli->cfg.queue.name, &d, host);
		if (r == 0)
			r = alq_snapdef_record(&c, cli->cfg.queue.name, name, host,
					       d.key);
		if (r < 0)
			al_cli_error(cli, "publish %s: %s", name, c.err);
		alq_client_close(&c);
	}
	free(mp);
	if (r < 0)
		return AL_EXIT_FAIL;
	fprintf(stderr, "airlock snapshot: %s published on queue %s (key %s: "
		"base %s, image %s, setup %.12s); hosts build it on demand\n",
		name, cli->cfg.queue.name, d.key, d.base, d.image, d.setup_sha);
	return AL_EXIT_OK;
}

/* May jobs name `name` under this config? */
static bool name_allowed(const struct al_config *cfg, const char *name)
{
	const struct al_config_names *s = &cfg->snapshots.allowed;

	if (!cfg->templates.allowed.n)
		return true; /* any name */
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->name[i], name))
			return true;
	return false;
}

static void print_steps(const struct al_result *res)
{
	for (size_t i = 0; i < res->n_steps; i++) {
		const struct al_step_result *s = &res->steps[i];

		al_cli_print_output(s);
		fprintf(stderr, "airlock snapshot: step %zu%s%s: %s (exit %d, "
			"%llu ms)\n", i, s->name ? " " : "", s->name ? s->name : "",
			al_status_name(s->status), s->exit_code,
			(unsigned long long)s->wall_ms);
	}
}

static void print_json(const char *name, int r, const struct al_result *res,
		       const struct sb_snapshot_info *info)
{
	char *rj = NULL;
	json_t *o, *rv;

	al_result_to_json(res, &rj);
	rv = rj ? json_loads(rj, 0, NULL) : NULL;
	o = json_pack("{s:s,s:b,s:b,s:I,s:I,s:I,s:I,s:o?}", "name", name,
		      "created", r == 0, "cached", r == 1,
		      "build_ms", (json_int_t)info->build_ms,
		      "save_ms", (json_int_t)info->save_ms,
		      "disk_bytes", (json_int_t)info->disk_bytes,
		      "mem_bytes", (json_int_t)info->mem_bytes, "result", rv);
	json_dumpf(o, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(o);
	free(rj);
}

static int create(struct al_cli *cli, const char *name, const char *path)
{
	struct sb_snapshot_info info = {0};
	struct al_result res = {0};
	struct al_job job = {0};
	struct al_worker w;
	struct al_policy pol;
	struct sb_options sb;
	struct al_diags d;
	char err[1024], *text = NULL;
	size_t len;
	int r, rc = AL_EXIT_USAGE;

	if (!name_allowed(&cli->cfg, name))
		al_cli_error(cli, "warning: jobs cannot name %s until "
			     "snapshots.allowed lists it", name);
	r = al_read_file(path, AL_JOB_MAX_BYTES, &text, &len);
	if (r < 0) {
		al_cli_error(cli, "%s: %s", path, strerror(-r));
		return AL_EXIT_USAGE;
	}
	al_diags_init(&d);
	if (al_job_from_json(text, len, &job, &d) < 0) {
		al_diags_format(&d, err, sizeof(err));
		al_cli_error(cli, "%s: %s", path, err);
		goto out;
	}
	if (al_sandbox_options(&cli->cfg, &sb, err, sizeof(err)) < 0) {
		al_cli_error(cli, "%s", err);
		goto out;
	}
	al_config_policy(&cli->cfg, &pol);
	al_cli_warn_unjailed(&sb);
	al_worker_init(&w, &sb, &pol, "snapshot");
	r = al_worker_snapshot(&w, name, &job, &res, &info);
	al_worker_release(&w);
	if (cli->flag['j'])
		print_json(name, r, &res, &info);
	else if (r != 1) /* a cache hit ran nothing */
		print_steps(&res);
	rc = r >= 0 ? AL_EXIT_OK : r == -ECANCELED ? AL_EXIT_FAIL
						    : AL_EXIT_USAGE;
	if (r == 1)
		fprintf(stderr, "airlock snapshot: %s is up to date (same base "
			"and setup)\n", name);
	else if (r == 0)
		fprintf(stderr, "airlock snapshot: %s created in %llu ms (save "
			"%llu ms): %.1f MiB on disk, %.1f MiB of RAM differs "
			"from %s\n", name, (unsigned long long)info.build_ms,
			(unsigned long long)info.save_ms,
			info.disk_bytes / 1048576.0,
			info.mem_bytes / 1048576.0, info.base);
	else
		al_cli_error(cli, "%s not created: %s%s%s", name,
			     al_status_name(res.status),
			     res.error ? ": " : "", res.error ? res.error : "");
	if (r >= 0 && cli->cfg.redis.url[0] && !cli->flag['l'])
		rc = publish(cli, &sb, name, &job);
out:
	al_result_release(&res);
	al_job_release(&job);
	free(text);
	return rc;
}

static void age(int64_t created, char *buf, size_t len)
{
	int64_t s = (int64_t)time(NULL) - created;

	if (s < 120)
		snprintf(buf, len, "%llds", (long long)s);
	else if (s < 7200)
		snprintf(buf, len, "%lldm", (long long)s / 60);
	else if (s < 172800)
		snprintf(buf, len, "%lldh", (long long)s / 3600);
	else
		snprintf(buf, len, "%lldd", (long long)s / 86400);
}

static int list(struct al_cli *cli, const struct sb_options *sb)
{
	struct sb_snapshot_info *all = calloc(LIST_MAX, sizeof(*all));
	int n = all ? sb_snapshot_list(sb, all, LIST_MAX) : -ENOMEM;

	if (n < 0) {
		al_cli_error(cli, "list: %s", strerror(-n));
		free(all);
		return AL_EXIT_USAGE;
	}
	if (n == 0)
		printf("no snapshots in %s/snapshots\n", sb->state_dir);
	else
		printf("%-20s %-10s %9s %9s %6s %s\n", "snapshot", "base",
		       "disk", "ram-diff", "age", "state");
	for (int i = 0; i < n; i++) {
		char a[32];

		age(all[i].created, a, sizeof(a));
		printf("%-20s %-10s %5.1f MiB %5.1f MiB %6s %s%s%s\n",
		       all[i].name, all[i].base,
		       all[i].disk_bytes / 1048576.0,
		       all[i].mem_bytes / 1048576.0, a,
		       all[i].stale ? "stale" : all[i].in_use ? "in use"
								: "ready",
		       all[i].origin[0] ? " from " : "", all[i].origin);
	}
	free(all);
	return AL_EXIT_OK;
}

/* One published definition and the hosts that built it. */
static void list_def(struct al_cli *cli, struct alq_client *c,
		     const char *name, struct alq_snapdef_built *hosts)
{
	const char *q = cli->cfg.queue.name;
	struct al_snapdef d;
	char *setup = NULL, a[32];
	int n, r = alq_snapdef_get(c, q, name, &d, &setup);

	if (r < 0) {
		printf("%-20s %s\n", name, r == -ENOENT ? "(removed)"
			: r == -EBADMSG ? "(malformed definition)" : c->err);
		return;
	}
	free(setup);
	printf("%-20s %-10s %-32s %s\n", name, d.base, d.key, d.image);
	n = alq_snapdef_hosts(c, q, name, hosts, ALQ_SNAPDEF_LIST_MAX);
	if (n < 0)
		al_cli_error(cli, "hosts of %s: %s", name, c->err);
	for (int i = 0; i < n; i++) {
		age((int64_t)(hosts[i].at_ms / 1000), a, sizeof(a));
		printf("    %-50s %s (%s, %s ago)\n", hosts[i].host,
		       hosts[i].key, strcmp(hosts[i].key, d.key) ? "older"
								 : "current", a);
	}
}

/* The definitions published on the configured Redis. */
static int list_published(struct al_cli *cli)
{
	struct alq_snapdef_built *hosts = NULL;
	char (*names)[AL_NAME_MAX + 1] = NULL;
	struct alq_client c = {0};
	int n, r = al_cli_open(cli, &c);

	if (r < 0)
		return AL_EXIT_FAIL;
	names = calloc(ALQ_SNAPDEF_LIST_MAX, sizeof(*names));
	hosts = calloc(ALQ_SNAPDEF_LIST_MAX, sizeof(*hosts));
	n = names && hosts ? alq_snapdef_names(&c, cli->cfg.queue.name, names,
					       ALQ_SNAPDEF_LIST_MAX)
			   : -ENOMEM;
	if (n < 0)
		al_cli_error(cli, "published snapshots: %s",
			     n == -ENOMEM ? strerror(ENOMEM) : c.err);
	else if (n == 0)
		printf("\nno snapshot published on queue %s\n",
		       cli->cfg.queue.name);
	else
		printf("\npublished on queue %s:\n%-20s %-10s %-32s %s\n",
		       cli->cfg.queue.name, "snapshot", "base", "key", "image");
	for (int i = 0; i < n; i++)
		list_def(cli, &c, names[i], hosts);
	alq_client_close(&c);
	free(names);
	free(hosts);
	return n < 0 ? AL_EXIT_FAIL : AL_EXIT_OK;
}

/* rm: this host's build, and the published definition (unless --local). */
static int rm(struct al_cli *cli, const struct sb_options *sb, const char *name)
{
	struct alq_client c = {0};
	int r = sb_snapshot_remove(sb, name), p = -ENOENT;

	if (r < 0 && r != -ENOENT)
		al_cli_error(cli, "rm %s: %s", name, strerror(-r));
	if (cli->cfg.redis.url[0] && !cli->flag['l']) {
		p = al_cli_open(cli, &c) < 0
			    ? -EIO
			    : alq_snapdef_remove(&c, cli->cfg.queue.name, name);
		if (p < 0 && p != -ENOENT)
			al_cli_error(cli, "rm %s: %s", name, c.err);
		else if (p == 0)
			fprintf(stderr, "airlock snapshot: %s's definition "
				"removed from queue %s (other hosts keep their "
				"builds: jobs there run from them until "
				"`snapshot rm` there, or take %s out of "
				"snapshots.allowed)\n", name,
				cli->cfg.queue.name, name);
		alq_client_close(&c);
	}
	if (r == -ENOENT && p == -ENOENT)
		al_cli_error(cli, "rm %s: no such snapshot", name);
	return (r == 0 || p == 0) && (r == 0 || r == -ENOENT) &&
			       (p == 0 || p == -ENOENT)
		       ? AL_EXIT_OK
		       : AL_EXIT_FAIL;
}

/* pull: build this host's NAME from its published definition now, as a
 * worker would on its first job of NAME (whatever build_on_demand says:
 * the operator asks), and record the build. */
static int pull(struct al_cli *cli, struct sb_options *sb, const char *name)
{
	const char *q = cli->cfg.queue.name;
	struct alq_client c = {0};
	struct al_snapdef d;
	struct al_worker w;
	struct al_policy pol;
	char *setup = NULL, err[512] = "", host[ALQ_SNAPDEF_HOST_MAX];
	int r;

	if (!cli->cfg.redis.url[0]) {
		al_cli_error(cli, "pull %s: no Redis configured (redis.url)",
			     name);
		return AL_EXIT_USAGE;
	}
	if (al_cli_open(cli, &c) < 0)
		return AL_EXIT_FAIL;
	r = alq_snapdef_get(&c, q, name, &d, &setup);
	if (r < 0) {
		al_cli_error(cli, "pull %s: %s", name, r == -ENOENT
			     ? "not published on this queue"
			     : r == -EBADMSG ? "its published definition is "
					       "malformed" : c.err);
		alq_client_close(&c);
		return AL_EXIT_FAIL;
	}
	sb->snapshot_no_build = false; /* asked for: build it */
	al_config_policy(&cli->cfg, &pol);
	al_cli_warn_unjailed(sb);
	al_worker_init(&w, sb, &pol, "snapshot");
	w.snapdef = &d;
	r = al_worker_snapshot_ensure(&w, name, err, sizeof(err));
	w.snapdef = NULL;
	al_worker_release(&w);
	if (r == 0) {
		alq_snapdef_host(sb->state_dir, host);
		if (alq_snapdef_record(&c, q, name, host, d.key) < 0)
			al_cli_error(cli, "pull %s: recording the build: %s",
				     name, c.err);
		fprintf(stderr, "airlock snapshot: %s is built here from its "
			"published definition (key %s)\n", name, d.key);
	} else {
		al_cli_error(cli, "pull %s: %s", name, err[0] ? err
							      : strerror(-r));
	}
	alq_client_close(&c);
	free(setup);
	return r == 0 ? AL_EXIT_OK : AL_EXIT_FAIL;
}

static int cmd_snapshot(struct al_cli *cli, int argc, char **argv)
{
	static const struct {
		const char *verb;
		int args;
	} verbs[] = {{"create", 3}, {"list", 1}, {"rm", 2}, {"pull", 2}};
	struct sb_options sb;
	char err[512];
	size_t v;
	int r;

	for (v = 0; v < sizeof(verbs) / sizeof(verbs[0]); v++)
		if (!strcmp(argv[0], verbs[v].verb))
			break;
	if (v == sizeof(verbs) / sizeof(verbs[0]))
		return al_cli_usage_error(cli, "create, list, rm or pull?");
	if (argc != verbs[v].args)
		return al_cli_usage_error(cli, "%s takes %d argument%s",
					  verbs[v].verb, verbs[v].args - 1,
					  verbs[v].args == 2 ? "" : "s");
	if (v == 0)
		return create(cli, argv[1], argv[2]);
	if (al_sandbox_options(&cli->cfg, &sb, err, sizeof(err)) < 0) {
		al_cli_error(cli, "%s", err);
		return AL_EXIT_USAGE;
	}
	if (v == 1) {
		r = list(cli, &sb);
		if (r == AL_EXIT_OK && cli->cfg.redis.url[0])
			r = list_published(cli);
		return r;
	}
	if (v == 3)
		return pull(cli, &sb, argv[1]);
	return rm(cli, &sb, argv[1]);
}

static const struct al_opt opts[] = {
    {"json", 'j', 0},  /* create: a JSON record */
    {"local", 'l', 0}, /* create, rm: this host only, not Redis */
    {NULL, 0, 0},
};

const struct al_cmd al_cmd_snapshot = {
	.name = "snapshot",
	.summary = "create, list or remove snapshots (set up once, run many)",
	.usage = "usage: airlock snapshot create NAME SETUP.json [--json] "
		 "[--local] [--config PATH]\n"
		 "       airlock snapshot list [--config PATH]\n"
		 "       airlock snapshot rm NAME [--local] [--config PATH]\n"
		 "       airlock snapshot pull NAME [--config PATH]\n\n"
		 "create runs the steps of the job in SETUP.json in a fresh "
		 "clone of its\ntemplate on this host and, when every step is "
		 "OK, saves that VM (its\n/work and /tmp included) as template "
		 "NAME: jobs naming NAME start from\nit. The same template and "
		 "setup again is a cache hit. A failed step saves\nnothing and "
		 "exits 1. Jobs may name NAME once snapshots.allowed lists "
		 "it.\nWith a Redis configured (redis.url), create then "
		 "publishes NAME's\ndefinition (setup job, base, base image "
		 "hash) on the queue: every serve\nhost builds NAME from it "
		 "when a job naming NAME reaches it and its own\nbuild differs "
		 "(snapshots.build_on_demand), or refuses the job.\nlist shows "
		 "each local snapshot's size, age and base, then the published"
		 "\ndefinitions and which hosts built which key; rm removes the "
		 "local build\nand the published definition (jobs running from "
		 "it finish); pull builds NAME\nhere from its published "
		 "definition now, as a host's first job of NAME\nwould "
		 "(also with build_on_demand off). Needs root.\nSee "
		 "docs/snapshots.md.\n"
		 "\n"
		 "options:\n"
		 "      --json         create: print a JSON record (result, "
		 "sizes, times)\n"
		 "      --local        create, rm: this host's build only; "
		 "publish or remove\n"
		 "                     nothing in Redis\n",
	.flags = AL_CMD_CONFIG,
	.options = opts,
	.args_min = 1,
	.args_max = 3,
	.args_error = "create, list, rm or pull?",
	.run = cmd_snapshot,
};
