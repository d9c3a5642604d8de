/* bench_snapshot.c: jobs from a snapshot versus jobs that redo the setup.
 *
 *   airlock-bench-snapshot [--jobs N] [--units N] [--template NAME]
 *                          [--state-dir DIR] [--json FILE]
 *
 * The setup compiles a C project of `units` files plus a main (gcc -O2 in
 * the guest) into /work/app. Measures, in one run on this machine:
 *   create     snapshot creation (clone, setup, save): wall time, the
 *              save alone, disk size and the RAM that differs from base
 *   snapshot   N jobs naming the snapshot, each running /work/app
 *   redo       N jobs of the base template, each compiling the project
 *              and then running it (what a job does without snapshots)
 *   hit        creating the same snapshot again (a cache hit)
 * Every job's output is checked (the same checksum each time). Prints a
 * table and writes the figures as JSON. Needs built images (`c`).
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "opts.h"
#include "sandbox.h"
#include "worker.h"

#define SNAP "bench-snapshot"
#define STEP_MS 300000 /* a compile under TCG on a loaded host */
#define FNS 6          /* functions per unit */

struct series {
	uint64_t *v; /* per-job run_ms */
	size_t n;
	uint64_t total_ms; /* wall time of all N, one after another */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static uint64_t pct(struct series *s, double p)
{
	qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
	return s->n ? s->v[(size_t)(p * (double)(s->n - 1) + 0.5)] : 0;
}

/* One unit of the project: `fns` functions with loops for gcc -O2. */
static char *unit_source(int u, int fns)
{
	size_t cap = (size_t)fns * 512 + 256, len = 0;
	char *s = malloc(cap);

	for (int f = 0; s && f < fns; f++)
		len += (size_t)snprintf(s + len, cap - len,
			"static unsigned f%d(unsigned x) {\n"
			"  unsigned a[16];\n"
			"  for (int i = 0; i < 16; i++) a[i] = x * %d + i;\n"
			"  for (int r = 0; r < 8; r++)\n"
			"    for (int i = 1; i < 16; i++)\n"
			"      a[i] ^= (a[i - 1] << %d) + (a[i] >> 3) + %d;\n"
			"  return a[15] + a[%d];\n}\n",
			f, f + u + 1, f % 7 + 1, u * 31 + f, f % 16);
	if (!s)
		return NULL;
	len += (size_t)snprintf(s + len, cap - len,
				"unsigned unit%d(unsigned x) {\n", u);
	for (int f = 0; f < fns; f++)
		len += (size_t)snprintf(s + len, cap - len, "  x = f%d(x);\n", f);
	snprintf(s + len, cap - len, "  return x;\n}\n");
	return s;
}

/* The setup job (compile) and the run job (app), as JSON text. */
static char *job_json(const char *tmpl, int units, bool compile, bool run)
{
	json_t *files = json_object(), *steps = json_array(), *job;
	char main_c[4096], *out;
	size_t n = 0;

	n += (size_t)snprintf(main_c + n, sizeof(main_c) - n,
			      "#include <stdio.h>\n");
	for (int u = 0; u < units; u++)
		n += (size_t)snprintf(main_c + n, sizeof(main_c) - n,
				      "unsigned unit%d(unsigned);\n", u);
	n += (size_t)snprintf(main_c + n, sizeof(main_c) - n,
			      "int main(void) {\n  unsigned x = 1;\n");
	for (int u = 0; u < units; u++)
		n += (size_t)snprintf(main_c + n, sizeof(main_c) - n,
				      "  x = unit%d(x);\n", u);
	snprintf(main_c + n, sizeof(main_c) - n,
		 "  printf(\"%%u\\n\", x);\n  return 0;\n}\n");
	if (compile) {
		json_object_set_new(files, "src/main.c", json_string(main_c));
		for (int u = 0; u < units; u++) {
			char name[32], *src = unit_source(u, FNS);

			snprintf(name, sizeof(name), "src/u%d.c", u);
			json_object_set_new(files, name, json_string(src));
			free(src);
		}
		json_array_append_new(steps, json_pack(
			"{s:s,s:s,s:i}", "name", "build", "sh",
			"cd /work/src && for f in *.c; do gcc -O2 -c $f || "
			"exit 1; done && gcc -o /work/app *.o",
			"timeout_ms", STEP_MS));
	}
	if (run)
		json_array_append_new(steps, json_pack(
			"{s:s,s:s,s:i}", "name", "run", "sh", "/work/app",
			"timeout_ms", 60000));
	job = json_pack("{s:s,s:o,s:o,s:{s:i}}", "template", tmpl, "files",
			files, "steps", steps, "limits", "wall_ms",
			STEP_MS + 60000);
	out = json_dumps(job, JSON_COMPACT);
	json_decref(job);
	return out;
}

static int decode(const char *text, struct al_job *job)
{
	struct al_diags d;
	char buf[1024];

	al_diags_init(&d);
	if (al_job_from_json(text, strlen(text), job, &d) == 0)
		return 0;
	al_diags_format(&d, buf, sizeof(buf));
	fprintf(stderr, "bench job invalid: %s\n", buf);
	return -EINVAL;
}

/* N jobs of `text`; each must end OK with the same last output. */
static int run_jobs(struct al_worker *w, const char *text, size_t n,
		    struct series *s, char *want, size_t wlen)
{
	struct al_job job = {0};
	uint64_t t0 = al_now_ms();
	int r = decode(text, &job);

	for (size_t i = 0; r == 0 && i < n; i++) {
		struct al_result res;
		const struct al_blob *out;

		if (al_worker_run(w, &job, 0, 1, &res) < 0)
			r = -ENOMEM;
		out = res.n_steps ? &res.steps[res.n_steps - 1].stdout_
				  : NULL;
		if (r == 0 && (res.status != AL_OK || !out || !out->len)) {
			fprintf(stderr, "job %zu: %s %s\n", i,
				al_status_name(res.status),
				res.error ? res.error : "");
			r = -EIO;
		} else if (r == 0 && !want[0]) {
			snprintf(want, wlen, "%.*s", (int)out->len,
				 (const char *)out->data);
		} else if (r == 0 && (out->len != strlen(want) ||
				      memcmp(out->data, want, out->len))) {
			fprintf(stderr, "job %zu: another checksum\n", i);
			r = -EIO;
		}
		if (r == 0)
			s->v[s->n++] = res.timing.run_ms;
		al_result_release(&res);
	}
	s->total_ms = al_now_ms() - t0;
	al_job_release(&job);
	return r;
}

/* Create the snapshot; its info and the setup step's own time. */
static int create(struct al_worker *w, const char *text,
		  struct sb_snapshot_info *info, uint64_t *setup_ms,
		  uint64_t *wall_ms)
{
	struct al_job job = {0};
	struct al_result res;
	uint64_t t0 = al_now_ms();
	int r = decode(text, &job);

	if (r == 0) {
		r = al_worker_snapshot(w, SNAP, &job, &res, info);
		*wall_ms = al_now_ms() - t0;
		if (r < 0)
			fprintf(stderr, "create: %s %s\n",
				al_status_name(res.status),
				res.error ? res.error : "");
		*setup_ms = res.n_steps ? res.steps[0].wall_ms : 0;
		al_result_release(&res);
	}
	al_job_release(&job);
	return r;
}

static void usage(void)
{
	fprintf(stderr, "usage: airlock-bench-snapshot [--jobs N] [--units N] "
			"[--template NAME] [--state-dir DIR] [--json FILE]\n");
}

struct bench {
	int jobs, units;
	const char *tmpl, *json_path;
	struct sb_options o;
};

static int parse(int argc, char **argv, struct bench *b)
{
	static const struct al_opt lo[] = {
	    {"jobs", 'n', AL_OPT_ARG},
	    {"units", 'u', AL_OPT_ARG},
	    {"template", 't', AL_OPT_ARG},
	    {"state-dir", 's', AL_OPT_ARG},
	    {"json", 'j', AL_OPT_ARG},
	    {NULL, 0, 0},
	};
	int c;

	sb_options_init(&b->o);
	b->jobs = 20;
	b->units = 8;
	b->tmpl = "c";
	b->json_path = NULL;
	while ((c = al_opts_next(argc, argv, lo)) != -1) {
		if (c == 'n')
			b->jobs = atoi(optarg);
		else if (c == 'u')
			b->units = atoi(optarg);
		else if (c == 't')
			b->tmpl = optarg;
		else if (c == 's')
			snprintf(b->o.state_dir, sizeof(b->o.state_dir), "%s",
				 optarg);
		else if (c == 'j')
			b->json_path = optarg;
		else
			return -EINVAL;
	}
	return b->jobs > 0 && b->jobs <= 1000 && b->units > 0 &&
			       b->units <= 64 ? 0 : -EINVAL;
}

static void report(const struct bench *b, const struct sb_snapshot_info *in,
		   uint64_t create_ms, uint64_t setup_ms, uint64_t hit_ms,
		   struct series *snap, struct series *redo)
{
	json_t *j;

	printf("snapshot of %s: setup step %llu ms; create %llu ms (save "
	       "%llu ms); %.1f MiB on disk, %.1f MiB of RAM differs; "
	       "re-create (cache hit) %llu ms\n", b->tmpl,
	       (unsigned long long)setup_ms, (unsigned long long)create_ms,
	       (unsigned long long)in->save_ms, in->disk_bytes / 1048576.0,
	       in->mem_bytes / 1048576.0, (unsigned long long)hit_ms);
	printf("%-22s %6s %10s %10s %10s %10s\n", "jobs", "n", "total ms",
	       "p50 ms", "p90 ms", "max ms");
	printf("%-22s %6zu %10llu %10llu %10llu %10llu\n", "from the snapshot",
	       snap->n, (unsigned long long)snap->total_ms,
	       (unsigned long long)pct(snap, 0.5),
	       (unsigned long long)pct(snap, 0.9),
	       (unsigned long long)pct(snap, 1.0));
	printf("%-22s %6zu %10llu %10llu %10llu %10llu\n", "each redoing setup",
	       redo->n, (unsigned long long)redo->total_ms,
	       (unsigned long long)pct(redo, 0.5),
	       (unsigned long long)pct(redo, 0.9),
	       (unsigned long long)pct(redo, 1.0));
	if (!b->json_path)
		return;
	j = json_pack("{s:s,s:i,s:i,s:{s:I,s:I,s:I,s:I,s:I,s:I},"
		      "s:{s:I,s:I,s:I},s:{s:I,s:I,s:I}}",
		      "template", b->tmpl, "jobs", b->jobs, "units", b->units,
		      "create", "setup_ms", (json_int_t)setup_ms, "wall_ms",
		      (json_int_t)create_ms, "save_ms", (json_int_t)in->save_ms,
		      "disk_bytes", (json_int_t)in->disk_bytes, "mem_bytes",
		      (json_int_t)in->mem_bytes, "cache_hit_ms",
		      (json_int_t)hit_ms, "snapshot", "total_ms",
		      (json_int_t)snap->total_ms, "p50_ms",
		      (json_int_t)pct(snap, 0.5), "max_ms",
		      (json_int_t)pct(snap, 1.0), "redo", "total_ms",
		      (json_int_t)redo->total_ms, "p50_ms",
		      (json_int_t)pct(redo, 0.5), "max_ms",
		      (json_int_t)pct(redo, 1.0));
	if (json_dump_file(j, b->json_path, JSON_INDENT(2)) < 0)
		fprintf(stderr, "cannot write %s\n", b->json_path);
	json_decref(j);
}

int main(int argc, char **argv)
{
	static const char *const snaps[] = {SNAP, NULL};
	struct sb_snapshot_info info = {0};
	struct series snap = {0}, redo = {0};
	uint64_t create_ms = 0, setup_ms = 0, hit_ms = 0, x;
	char want[64] = "", *setup = NULL, *use = NULL, *both = NULL;
	struct al_policy pol = *al_policy_default();
	struct al_worker w;
	struct bench b;
	int r;

	if (parse(argc, argv, &b) < 0) {
		usage();
		return 2;
	}
	pol.snapshots = snaps;
	al_worker_init(&w, &b.o, &pol, "bench-snapshot");
	setup = job_json(b.tmpl, b.units, true, false);
	use = job_json(SNAP, b.units, false, true);
	both = job_json(b.tmpl, b.units, true, true);
	snap.v = calloc((size_t)b.jobs, sizeof(uint64_t));
	redo.v = calloc((size_t)b.jobs, sizeof(uint64_t));
	sb_snapshot_remove(&b.o, SNAP); /* time a real build */
	r = setup && use && both && snap.v && redo.v ? 0 : -ENOMEM;
	if (r == 0)
		r = create(&w, setup, &info, &setup_ms, &create_ms) == 0 ? 0
									: -EIO;
	if (r == 0)
		r = create(&w, setup, &(struct sb_snapshot_info){0}, &x,
			   &hit_ms) == 1 ? 0 : -EIO;
	if (r == 0)
		r = run_jobs(&w, use, (size_t)b.jobs, &snap, want, sizeof(want));
	if (r == 0)
		r = run_jobs(&w, both, (size_t)b.jobs, &redo, want,
			     sizeof(want));
	if (r == 0)
		report(&b, &info, create_ms, setup_ms, hit_ms, &snap, &redo);
	al_worker_release(&w);
	sb_snapshot_remove(&b.o, SNAP);
	free(setup);
	free(use);
	free(both);
	free(snap.v);
	free(redo.v);
	return r == 0 ? 0 : 1;
}
