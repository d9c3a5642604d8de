/* cmd_snapshot.c: `airlock snapshot create|list|rm`: templates made by a
 * setup job (docs/snapshots.md).
 *
 * create runs the setup job's steps in a fresh clone of its template on
 * this host, in this process (no queue: a snapshot lives in this host's
 * state dir), and saves that VM when every step is OK; the steps' output
 * is printed as `airlock run` prints it. list and rm read and remove what
 * the state dir holds.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "sbconfig.h"
#include "worker.h"

#define LIST_MAX 256

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

static int cmd_snapshot(struct al_cli *cli, int argc, char **argv)
{
	static const struct {
		const char *verb;
		int args;
	} verbs[] = {{"create", 3}, {"list", 1}, {"rm", 2}};
	struct sb_options sb;
	char err[512];
	size_t v;
	int r;

	for (v = 0; v < sizeof(verbs) / sizeof(verbs[0]); v++)
		if (!strcmp(argv[0], verbs[v].verb))
			break;
	if (v == sizeof(verbs) / sizeof(verbs[0]))
		return al_cli_usage_error(cli, "create, list or rm?");
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
	if (v == 1)
		return list(cli, &sb);
	r = sb_snapshot_remove(&sb, argv[1]);
	if (r < 0) {
		al_cli_error(cli, "rm %s: %s", argv[1],
			     r == -ENOENT ? "no such snapshot" : strerror(-r));
		return AL_EXIT_FAIL;
	}
	return AL_EXIT_OK;
}

static const struct al_opt opts[] = {
    {"json", 'j', 0}, /* create: a JSON record */
    {NULL, 0, 0},
};

const struct al_cmd al_cmd_snapshot = {
	.name = "snapshot",
	.summary = "create, list or remove snapshots (set up once, run many)",
	.usage = "usage: airlock snapshot create NAME SETUP.json [--json] "
		 "[--config PATH]\n"
		 "       airlock snapshot list [--config PATH]\n"
		 "       airlock snapshot rm NAME [--config PATH]\n\n"
		 "create runs the steps of the job in SETUP.json in a fresh "
		 "clone of its\ntemplate on this host and, when every step is "
		 "OK, saves that VM (its\n/work and /tmp included) as template "
		 "NAME: jobs naming NAME start from\nit. The same template and "
		 "setup again is a cache hit. A failed step saves\nnothing and "
		 "exits 1. Jobs may name NAME once snapshots.allowed lists "
		 "it.\nlist shows each snapshot's size, age and base; rm "
		 "removes one (jobs\nrunning from it finish). Needs root. See "
		 "docs/snapshots.md.\n"
		 "\n"
		 "options:\n"
		 "      --json         create: print a JSON record (result, "
		 "sizes, times)\n",
	.flags = AL_CMD_CONFIG,
	.options = opts,
	.args_min = 1,
	.args_max = 3,
	.args_error = "create, list or rm?",
	.run = cmd_snapshot,
};
