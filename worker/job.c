/* job.c: one job, start to finish, in one fresh VM.
 *
 * Step rules: steps run in order in the same VM. A step with
 * "if": "success" is skipped (SK) once any earlier step was not OK. The
 * job's wall_ms bounds the sum: each step's timeout is cut to what is left,
 * and a step that would start with nothing left is TO without running.
 * When the VM itself fails (QEMU dies, the agent stops answering, a frame
 * is malformed) the step is XX with what failed, the rest are SK, and the
 * VM is destroyed: the queue decides whether to retry. Verdicts are
 * decided here, on the host, from the output the guest reported.
 *
 * Result budget. A result is at most AL_RESULT_MAX_BYTES encoded, and the
 * worker never holds more than that of it: 256 steps of 2 x 16 MiB would
 * be 8 GiB. result_bytes() is an upper bound of the encoded size so far
 * (every step counted, run or not). Each step runs with its output_bytes
 * cut to what the result still has room for (half each stream), so no
 * step can push it over; the host cuts the streams to that cap itself
 * (agent_client.c), whatever the guest sends. A step whose output the
 * budget cut is OL and ends the job: the steps after it are SK. A step
 * with no room left at all is OL without running. Collected files get
 * what room is left (at most AL_OUTPUT_MAX); files the job did not ask
 * for are dropped and a reply over the room is refused, both noted in
 * `error`, the latter making the job OL.
 *
 * Network. A job whose `network` names a policy (sb_options'
 * net_policies) runs in the networked variant of its template, restored
 * into a network slot (sandbox/net/net.h: namespace, tap, veth, rules,
 * resolver), never a pre-started VMM. The slot is one the worker made
 * ready while idle (w->net, [pool] net_ready) given the job's policy, or
 * one opened from scratch when none is ready; it is closed after the
 * job's result is sent (al_worker_idle), never reused. A host that cannot make one (no netns, nf_tables or tun) makes the
 * job RJ with what is missing; `none` jobs never touch any of it. The
 * result's `network` object has the policy, the allowed bytes and the
 * first refused destinations.
 *
 * A step status the guest reports is one of how processes end (OK RE SG
 * TO TL ML OL): its XX, RJ or SK become RE (al_step_result_from_guest),
 * so a guest cannot make the queue retry a job.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "clock.h"
#include "pkglist.h"
#include "proto.h"
#include "testreport.h"
#include "worker.h"

void al_worker_init(struct al_worker *w, const struct sb_options *sb,
		    const struct al_policy *policy, const char *name)
{
	memset(w, 0, sizeof(*w));
	w->sb = sb;
	w->policy = policy;
	snprintf(w->name, sizeof(w->name), "%s", name ? name : "worker");
	w->last = AL_WORKER_TEMPLATES;
	sb_net_pool_init(&w->net, sb);
}

void al_worker_release(struct al_worker *w)
{
	sb_net_pool_release(&w->net);
	for (size_t i = 0; i < w->n_templates; i++)
		sb_pool_release(&w->pools[i]);
	memset(w->templates, 0, sizeof(w->templates));
	w->n_templates = 0;
	w->last = AL_WORKER_TEMPLATES;
}

static int set_error(char **dst, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int set_error(char **dst, const char *fmt, ...)
{
	va_list ap;
	int n;

	free(*dst);
	va_start(ap, fmt);
	n = vasprintf(dst, fmt, ap);
	va_end(ap);
	if (n < 0) {
		*dst = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* The pool of `name`'s template (or its networked variant), opened (and
 * pre-started, when not networked) on first use. */
static struct sb_pool *find_pool(struct al_worker *w, const char *name,
				 bool snap, bool net, int *ret)
{
	size_t i = w->n_templates;

	for (size_t k = 0; k < w->n_templates; k++) {
		if (!w->templates[k].img.name[0] && i == w->n_templates)
			i = k; /* a free slot: a snapshot that went */
		if (strcmp(w->templates[k].img.name, name) != 0 ||
		    w->templates[k].net != net)
			continue;
		if (sb_template_current(&w->templates[k]))
			return &w->pools[k];
		/* a snapshot removed or re-created: open it again here */
		sb_pool_release(&w->pools[k]);
		i = k;
		break;
	}
	if (i == AL_WORKER_TEMPLATES) {
		*ret = -ENOSPC;
		return NULL;
	}
	*ret = sb_template_open_net(w->sb, name, net, &w->templates[i]);
	/* no image of that name: a snapshot, only when snapshots.allowed
	 * lists it (whatever templates.allowed says: empty means any image,
	 * never any snapshot) */
	if (*ret == -ENOENT && !net && !snap && sb_snapshot_exists(w->sb, name))
		*ret = -EPERM;
	else if (*ret == -ENOENT && !net && snap)
		*ret = sb_snapshot_open(w->sb, name, &w->templates[i]);
	if (*ret < 0) {
		if (i < w->n_templates) /* the slot of a removed snapshot */
			w->templates[i].img.name[0] = 0;
		return NULL;
	}
	sb_pool_init(&w->pools[i], w->sb, &w->templates[i],
		     net ? 0 : w->sb->prestart);
	w->n_templates += i == w->n_templates;
	return &w->pools[i];
}

int al_worker_warm_count(const char *spec, const char *name)
{
	unsigned long n = 0;
	int r = al_name_count(spec, name, 0, SB_POOL_MAX, &n);

	return r < 0 ? -1 : r ? (int)n : 0;
}

/* Open the pools `sb->warm` names (once: a template that cannot be
 * opened is left to its first job to report). */
static void warm_open(struct al_worker *w)
{
	const char *p = w->sb->warm;

	while (*p) {
		size_t len = strcspn(p, ": ");
		char name[AL_NAME_MAX + 1];
		int r;

		if (len && len <= AL_NAME_MAX) {
			snprintf(name, sizeof(name), "%.*s", (int)len, p);
			find_pool(w, name, al_policy_snapshot(w->policy, name),
				  false, &r);
		}
		p += len;
		p += strspn(p, "0123456789: ");
	}
}

/* Warm clones pool i keeps: the config's, and warm_last for the template
 * of the last job. */
static unsigned warm_want(const struct al_worker *w, size_t i)
{
	int n = al_worker_warm_count(w->sb->warm, w->templates[i].img.name);
	unsigned want = n > 0 ? (unsigned)n : 0;

	if (i == w->last && want < w->sb->warm_last)
		want = w->sb->warm_last;
	return want;
}

void al_worker_idle(struct al_worker *w)
{
	/* the last job's slot goes, a ready one comes (net.h) */
	sb_net_pool_fill(&w->net, w->job_waiting, w->job_waiting_arg);
	warm_open(w);
	for (size_t i = 0; i < w->n_templates; i++) {
		sb_pool_prepare(&w->pools[i]);
		/* a networked pool's clones need their job's slot: none warm */
		sb_pool_set_warm(&w->pools[i],
				 w->templates[i].net ? 0 : warm_want(w, i),
				 w->sb->warm_max_age_s * 1000ull);
		if (w->warm_failed[i] || w->cold)
			continue;
		if (sb_pool_warm(&w->pools[i], w->job_waiting,
				 w->job_waiting_arg) < 0)
			w->warm_failed[i] = true;
	}
}

int al_worker_idle_ms(const struct al_worker *w)
{
	for (size_t i = 0; i < w->n_templates; i++)
		if (w->pools[i].want_warm && !w->warm_failed[i])
			return 1000;
	return -1;
}

/* Why get_vm failed, in err: the VM's own words when it has some. */
static void get_vm_error(const struct al_worker *w, const char *name,
			 bool snap, const struct sb_vm *vm, int r, char *err,
			 size_t errlen)
{
	if (sb_vm_error(vm)[0])
		snprintf(err, errlen, "%s", sb_vm_error(vm));
	else if ((r == -ENOENT || r == -ESTALE) && snap)
		snprintf(err, errlen, "snapshot %s: %s on worker %s (create "
			 "it there: `airlock snapshot create %s SETUP.json`)",
			 name, r == -ENOENT ? "not on this host"
					    : "stale (its base template changed)",
			 w->name, name);
	else if (r == -EPERM)
		snprintf(err, errlen, "template %s: a snapshot that "
			 "snapshots.allowed does not list", name);
	else if (r == -ENOENT)
		snprintf(err, errlen, "template %s: no image (run `airlock "
			 "image build %s`)", name, name);
	else
		snprintf(err, errlen, "template %s: %s", name, strerror(-r));
}

/* A VM for `name` (`snap`: a snapshot snapshots.allowed lists, the
 * job's policy read once by the caller), cold or restored, in network
 * slot `net` (NULL = none; the VM's whatever happens); on failure *err
 * says why. */
static int get_vm(struct al_worker *w, const char *name, bool snap,
		  struct sb_options *o, const struct al_limits *lim,
		  struct sb_net *net, struct sb_vm **ret, char *err,
		  size_t errlen)
{
	bool fits = lim->memory_mb + AL_WORKER_RESERVE_MB <= o->memory_mb &&
		    lim->vcpus <= o->vcpus;
	struct sb_vm_want want = {.net = net, .lim = lim,
				  .saveable = w->saveable};
	int r = 0;

	*ret = NULL;
	if (!fits && snap) {
		sb_net_close(net);
		snprintf(err, errlen, "snapshot %s: the job asks for more "
			 "than its VM has (memory_mb <= %u, vcpus <= %u)", name,
			 o->memory_mb - AL_WORKER_RESERVE_MB, o->vcpus);
		return -E2BIG;
	}
	if ((w->cold || !fits) && !snap) {
		if (!fits) {
			o->memory_mb = lim->memory_mb + AL_WORKER_RESERVE_MB;
			o->vcpus = lim->vcpus;
		}
		want.image = name;
	} else {
		want.pool = find_pool(w, name, snap, net != NULL, &r);
	}
	if (want.pool && !w->saveable && !net) {
		w->last = (size_t)(want.pool - w->pools);
		w->warm_failed[w->last] = false;
	}
	if (want.pool || want.image)
		r = sb_vm_get(o, &want, ret);
	else
		sb_net_close(net);
	if (r < 0)
		get_vm_error(w, name, snap, *ret, r, err, errlen);
	return r;
}

/* Bounds of the encoded result: the fixed part (id, worker, vm, timing,
 * meta, error) and what a step or file adds besides its bytes. */
#define RESULT_BASE_BYTES (AL_META_MAX_BYTES + AL_ERROR_MAX + (16u << 10))
#define STEP_BYTES 512u
#define FILE_BYTES 16u
#define RESULT_BUDGET (AL_RESULT_MAX_BYTES - RESULT_BASE_BYTES)

static size_t slen(const char *s)
{
	return s ? strlen(s) : 0;
}

/* An upper bound of the result's msgpack size, less the fixed part. */
static uint64_t result_bytes(const struct al_result *res)
{
	uint64_t n = 0;

	for (size_t i = 0; i < res->n_steps; i++) {
		const struct al_step_result *sr = &res->steps[i];

		n += STEP_BYTES + sr->stdout_.len + sr->stderr_.len +
		     sr->compile_output.len + sr->checker_output.len +
		     slen(sr->name) + slen(sr->error) + slen(sr->reports_error);
		for (size_t k = 0; k < sr->n_tests; k++)
			n += al_report_record_bytes(&sr->tests[k]);
	}
	for (size_t i = 0; i < res->n_files; i++)
		n += FILE_BYTES + slen(res->files[i].path) +
		     res->files[i].content.len;
	return n;
}

/* Bytes the result still has room for. */
static uint64_t budget_room(const struct al_result *res)
{
	uint64_t used = result_bytes(res);

	return used < RESULT_BUDGET ? RESULT_BUDGET - used : 0;
}

/* Step i cannot run for lack of room: OL, and the rest SK. */
static int out_of_room(const struct al_job *job, size_t i, bool ran,
		       struct al_result *res)
{
	res->steps[i].status = AL_OL;
	for (size_t k = i + 1; k < job->n_steps; k++)
		res->steps[k].status = AL_SK;
	return set_error(&res->error,
			 "step %zu %s: the result would pass %u bytes", i,
			 ran ? "output cut" : "not run", AL_RESULT_MAX_BYTES);
}

/* Did a step before i fail: any step, or (setup_only) one that is not
 * a test, so later tests run after a failed one (`if: setup_ok`)? */
static bool earlier_failed(const struct al_job *job,
			   const struct al_result *res, size_t i,
			   bool setup_only)
{
	for (size_t k = 0; k < i; k++)
		if (res->steps[k].status != AL_OK &&
		    !(setup_only && al_step_is_test(&job->steps[k])))
			return true;
	return false;
}

/* A compile step that failed: CE, its output moved to compile_output
 * (stderr, where compilers write, then stdout), so a grader reads the
 * compiler's message in a field of its own (Judge0's compile_output). */
static int compile_failed(struct al_step_result *sr)
{
	struct al_blob *co = &sr->compile_output;
	size_t n = sr->stderr_.len + sr->stdout_.len;

	free(co->data);
	co->data = malloc(n + 1);
	if (!co->data)
		return -ENOMEM;
	if (sr->stderr_.len)
		memcpy(co->data, sr->stderr_.data, sr->stderr_.len);
	if (sr->stdout_.len)
		memcpy(co->data + sr->stderr_.len, sr->stdout_.data,
		       sr->stdout_.len);
	co->data[n] = '\0';
	co->len = n;
	free(sr->stdout_.data);
	free(sr->stderr_.data);
	sr->stdout_ = (struct al_blob){0};
	sr->stderr_ = (struct al_blob){0};
	sr->status = AL_CE;
	return 0;
}

/* A fresh token for an attested step: 32 hex digits from getrandom. */
static int attest_token(char out[33])
{
	uint8_t b[16];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -errno ?: -EIO;
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return 0;
}

/* Run step s; an attested one (results/attest.c) with `token` (made
 * here) before its stdin, to be checked by the caller once the guest's
 * report is held to what a guest may say. The token lives only here.
 * The guest gets what it needs to run the step and no more: never the
 * expected output (a submission cannot read answers that are not in its
 * VM), nor what only the host decides (if, compile, weight), so an
 * image's agent older than these fields still runs the step. */
static int run_one(struct sb_vm *vm, const struct al_step *s,
		   const struct al_limits *sl, uint32_t t,
		   struct al_step_result *sr, char token[33])
{
	struct al_step cp = *s;
	int r;

	token[0] = '\0';
	cp.expect = (struct al_expect){0};
	cp.run_if = AL_RUN_ALWAYS;
	cp.compile = false;
	cp.has_weight = false;
	cp.weight = 0;
	cp.check = (struct al_check){0};
	cp.reports = NULL; /* read on the host after the step */
	cp.n_reports = 0;
	if (!s->attest)
		return sb_vm_run_step(vm, &cp, sl, t, sr);
	cp.attest = false;
	cp.has_stdin = true;
	r = attest_token(token);
	if (r == 0)
		r = al_attest_stdin(token, &s->stdin_, &cp.stdin_);
	if (r < 0)
		return r;
	r = sb_vm_run_step(vm, &cp, sl, t, sr);
	free(cp.stdin_.data);
	return r;
}

/* Checkers (docs/schema.md, "Checkers"). A hostile submission must
 * neither read nor change the checker and its answer, nor change the
 * output it is judged on. So:
 *  - the checker's files, the input, the output and the answer enter the
 *    VM only after the submission's step has ended, and when a step ends
 *    the agent has killed its whole cgroup (sandbox/agent/exec.c): no
 *    process of the submission is left to see or touch them;
 *  - they go into a fresh directory with a name of 128 random bits in
 *    the agent's checker area (CHECK_AREA): a tmpfs of its own, root's,
 *    outside the work dir, so no directory the job user can write is the
 *    checker's or above it (no /work/node_modules a Node checker walks
 *    up to), a full disk of the submission's leaves the checker room,
 *    and the agent empties the area as every step ends, so the
 *    submission's later steps find nothing;
 *  - `output` is what the host captured from the step, not a file the
 *    submission wrote; HOME is the checker's directory (no dot files or
 *    user site-packages a submission left in the job's home);
 *  - expected outputs of `expect` never enter the VM at all (run_one).
 * The checker runs as the job user: another uid would guard nothing more
 * once no process of the submission is left. */
#define CHECK_DIR_PREFIX ".airlock-check-"
/* where the agent puts CHECK_DIR_PREFIX paths: a root-owned tmpfs of its
 * own (sandbox/agent/agent.h, AL_CHECKER_AREA), emptied as a step ends */
#define CHECK_AREA "/run/airlock-checkers"
static const char check_script[] =
    "d=$1; shift; cd \"" CHECK_AREA "/$d\" 2>/dev/null || { echo "
    "\"airlock: the checker's directory cannot be entered\" >&2; exit 3; "
    "}; HOME=$PWD; export HOME; exec \"$@\" input output answer";

/* The checker's files under dir: its own, input, output, answer. */
static int check_files(const char *dir, const struct al_step *s,
		       const struct al_step_result *sr, struct al_file **ret,
		       size_t *ret_n)
{
	const struct al_check *c = &s->check;
	size_t n = c->n_files + 3;
	struct al_file *f = calloc(n, sizeof(*f));
	const struct {
		const char *name;
		const struct al_blob *b;
	} own[3] = {{"input", &s->stdin_},
		    {"output", &sr->stdout_},
		    {"answer", &c->answer}};

	if (!f)
		return -ENOMEM;
	*ret = f;
	*ret_n = n;
	for (size_t i = 0; i < n; i++) {
		const char *name = i < 3 ? own[i].name : c->files[i - 3].path;

		f[i].content = i < 3 ? *own[i].b : c->files[i - 3].content;
		if (asprintf(&f[i].path, "%s/%s", dir, name) < 0) {
			f[i].path = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

/* The checker's verdict from how it ended (testlib: 0 ok, 1 wrong
 * answer, 2 presentation error; 3 fail and anything else is the
 * checker's own failure, never the submission's). */
static enum al_verdict check_verdict(const struct al_step_result *cr)
{
	if (!cr->has_exit_code || cr->status == AL_TO || cr->status == AL_TL)
		return AL_VERDICT_INTERNAL_ERROR;
	if (cr->exit_code == 0)
		return AL_VERDICT_ACCEPTED;
	if (cr->exit_code == 1 || cr->exit_code == 2)
		return AL_VERDICT_WRONG_ANSWER;
	return AL_VERDICT_INTERNAL_ERROR;
}

/* Keep the checker's stderr, then its stdout, at most
 * AL_CHECKER_OUTPUT_MAX bytes, in sr->checker_output. */
static int check_output(const struct al_step_result *cr,
			struct al_step_result *sr)
{
	size_t a = cr->stderr_.len, b = cr->stdout_.len;
	uint8_t *p;

	a = a > AL_CHECKER_OUTPUT_MAX ? AL_CHECKER_OUTPUT_MAX : a;
	b = a + b > AL_CHECKER_OUTPUT_MAX ? AL_CHECKER_OUTPUT_MAX - a : b;
	p = malloc(a + b + 1);
	if (!p)
		return -ENOMEM;
	if (a)
		memcpy(p, cr->stderr_.data, a);
	if (b)
		memcpy(p + a, cr->stdout_.data, b);
	p[a + b] = '\0';
	free(sr->checker_output.data);
	sr->checker_output = (struct al_blob){p, a + b};
	return 0;
}

/* The agent answered that the checker's files could not be placed: the
 * VM is alive and what refused them is the guest's state after the
 * submission ran (its disk filled, /work chmod'ed or removed). That is
 * the submission's doing, so the test's failure (runtime error, the
 * reason in checker_output), never our XX: an XX is retried and ends as
 * internal_error, which a submission must not be able to choose. */
static int checker_refused(struct sb_vm *vm, struct al_step_result *sr)
{
	char *why = NULL;
	int n = asprintf(&why,
			 "the checker's files could not be placed "
			 "(the submission's disk or work dir): %s",
			 sb_vm_error(vm));

	if (n < 0)
		return -ENOMEM;
	free(sr->checker_output.data);
	sr->checker_output = (struct al_blob){(uint8_t *)why, (size_t)n};
	sr->verdict = AL_VERDICT_RUNTIME_ERROR;
	return 0;
}

/* Run step s's checker on its result sr (an OK step): sr->verdict says
 * what it judged. Returns 0, or <0 when the VM failed. */
static int run_checker(struct sb_vm *vm, struct al_worker *w,
		       const struct al_step *s, const struct al_limits *lim,
		       struct al_deadline wall, struct al_step_result *sr)
{
	char dir[sizeof(CHECK_DIR_PREFIX) + 32], hex[33];
	struct al_step cs = {0};
	struct al_step_result cr = {0};
	struct al_limits cl = *lim;
	struct al_file *files = NULL;
	size_t n_files = 0;
	char **argv = NULL;
	int left = al_deadline_poll_ms(wall), r;
	uint32_t t = s->check.timeout_ms ? s->check.timeout_ms
					 : w->policy->step_timeout_ms;

	if (left == 0) {
		sr->verdict = AL_VERDICT_TIME_LIMIT; /* no wall left to judge */
		return 0;
	}
	if (left > 0 && t > (uint32_t)left)
		t = (uint32_t)left;
	r = attest_token(hex);
	if (r < 0)
		return r;
	snprintf(dir, sizeof(dir), CHECK_DIR_PREFIX "%s", hex);
	r = check_files(dir, s, sr, &files, &n_files);
	if (r == 0)
		r = sb_vm_put_files(vm, files, n_files);
	for (size_t i = 0; files && i < n_files; i++)
		free(files[i].path);
	free(files);
	if (r == -EPROTO)
		return checker_refused(vm, sr);
	if (r < 0)
		return r;
	argv = calloc(s->check.argc + 6, sizeof(*argv));
	if (!argv)
		return -ENOMEM;
	argv[0] = "/bin/sh";
	argv[1] = "-c";
	argv[2] = (char *)check_script;
	argv[3] = "airlock-check";
	argv[4] = dir;
	for (size_t i = 0; i < s->check.argc; i++)
		argv[5 + i] = s->check.argv[i];
	cs.argv = argv;
	cs.argc = s->check.argc + 5;
	if (cl.output_bytes > AL_CHECKER_OUTPUT_MAX)
		cl.output_bytes = AL_CHECKER_OUTPUT_MAX;
	r = sb_vm_run_step(vm, &cs, &cl, t, &cr);
	free(argv);
	if (r < 0)
		return r;
	if (al_step_result_from_guest(&cr) == 0 && check_output(&cr, sr) < 0)
		r = -ENOMEM;
	sr->verdict = check_verdict(&cr); /* the agent removed its files */
	al_step_result_release(&cr);
	return r;
}

/* The step's report files parsed into sr (docs/schema.md, "Test
 * reports"), what came back of them: tests, counts, reports_error. */
static int parse_reports(const struct al_step *s, const struct al_msg_files *f,
			 struct al_report_out *out)
{
	for (size_t i = 0; i < s->n_reports; i++) {
		const struct al_file *file = NULL;

		for (size_t k = 0; k < f->n_files && !file; k++)
			if (!strcmp(f->files[k].path, s->reports[i].path))
				file = &f->files[k];
		if (!file) {
			al_report_problem(out, (uint32_t)i,
					  "%s: no such file after the step",
					  s->reports[i].path);
			continue;
		}
		if (al_report_parse(s->reports[i].format, (uint32_t)i,
				    file->content.data, file->content.len,
				    out) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Bring step s's `reports` back (as `collect` does: the agent reads
 * them beneath the work dir, no symlink followed, capped) and read them
 * on the host into sr. 0, or <0 when the VM failed. */
static int read_reports(struct sb_vm *vm, const struct al_step *s,
			struct al_result *res, struct al_step_result *sr)
{
	struct al_report_out out = {0};
	size_t kept = 0;
	uint64_t room = budget_room(res) / 2, max = AL_REPORT_MAX_BYTES;
	struct al_msg_files f = {0};
	char *paths[AL_REPORTS_MAX];
	int r;

	for (size_t i = 0; i < s->n_reports; i++)
		paths[i] = s->reports[i].path;
	for (size_t i = 0; i < res->n_steps; i++)
		kept += res->steps[i].n_tests;
	out.max_tests = kept < AL_TESTS_JOB_MAX ? AL_TESTS_JOB_MAX - kept : 0;
	out.max_tests =
	    out.max_tests < AL_TESTS_MAX ? out.max_tests : AL_TESTS_MAX;
	out.max_bytes = room < (8u << 20) ? room : (8u << 20);
	sr->has_tests = true;
	r = sb_vm_get_files(vm, paths, s->n_reports, max, &f);
	if (r == -EMSGSIZE)
		snprintf(out.error, sizeof(out.error),
			 "report files larger than %llu bytes in all; none "
			 "read",
			 (unsigned long long)max);
	else if (r < 0)
		return r;
	else if (parse_reports(s, &f, &out) < 0)
		r = -ENOMEM;
	sb_files_release(&f);
	sr->tests = out.tests;
	sr->n_tests = out.n_tests;
	sr->test_counts = out.counts;
	out.tests = NULL;
	if (r != -ENOMEM && out.error[0] &&
	    !(sr->reports_error = strdup(out.error)))
		r = -ENOMEM;
	al_report_out_release(&out);
	return r == -ENOMEM ? r : 0;
}

/* Run steps [0, n): returns 0, or <0 when the VM failed (steps say how). */
static int run_steps(struct sb_vm *vm, struct al_worker *w,
		     const struct al_job *job, const struct al_limits *lim,
		     struct al_deadline wall, struct al_result *res)
{
	for (size_t i = 0; i < job->n_steps; i++) {
		const struct al_step *s = &job->steps[i];
		struct al_step_result *sr = &res->steps[i];
		int left = al_deadline_poll_ms(wall);
		uint32_t t = al_job_step_timeout(job, i, w->policy);
		struct al_limits sl;
		char token[33];
		int r;

		if (s->run_if != AL_RUN_ALWAYS &&
		    earlier_failed(job, res, i,
				   s->run_if == AL_RUN_SETUP_OK)) {
			sr->status = AL_SK;
			continue;
		}
		if (left == 0) {
			sr->status = AL_TO;
			continue;
		}
		if (left > 0 && t > (uint32_t)left)
			t = (uint32_t)left;
		sl = *lim;
		if (sl.output_bytes > budget_room(res) / 2)
			sl.output_bytes = (uint32_t)(budget_room(res) / 2);
		if (sl.output_bytes == 0)
			return out_of_room(job, i, false, res);
		r = run_one(vm, s, &sl, t, sr, token);
		if (r < 0) {
			sr->status = AL_XX;
			if (set_error(&sr->error, "step %zu: %s", i,
				      sb_vm_error(vm)))
				return -ENOMEM;
			for (size_t k = i + 1; k < job->n_steps; k++)
				res->steps[k].status = AL_SK;
			return set_error(&res->error, "step %zu: %s", i,
					 sb_vm_error(vm)) ?: r;
		}
		/* XX is ours alone: a guest's would be retried */
		if (al_step_result_from_guest(sr) < 0)
			return -ENOMEM;
		if (s->attest)
			al_attest_verify(token, sr);
		explicit_bzero(token, sizeof(token));
		if (s->name && !sr->name)
			sr->name = strdup(s->name);
		if (s->compile && sr->status != AL_OK &&
		    compile_failed(sr) < 0)
			return -ENOMEM;
		if (s->check.present && sr->status == AL_OK) {
			r = run_checker(vm, w, s, lim, wall, sr);
			if (r < 0) {
				sr->status = AL_XX;
				for (size_t k = i + 1; k < job->n_steps; k++)
					res->steps[k].status = AL_SK;
				return set_error(&res->error,
						 "step %zu: checker: %s", i,
						 sb_vm_error(vm)) ?: r;
			}
		}
		if (s->n_reports && sr->status != AL_XX) {
			r = read_reports(vm, s, res, sr);
			if (r < 0) {
				sr->status = AL_XX;
				for (size_t k = i + 1; k < job->n_steps; k++)
					res->steps[k].status = AL_SK;
				return set_error(&res->error,
						 "step %zu: reports: %s", i,
						 sb_vm_error(vm))
					   ?: r;
			}
		}
		if (sl.output_bytes < lim->output_bytes &&
		    (sr->stdout_truncated || sr->stderr_truncated))
			return out_of_room(job, i, true, res);
	}
	return 0;
}

/* Step i's name in its result, for every step, skipped ones too. */
static int name_steps(const struct al_job *job, struct al_result *res)
{
	for (size_t i = 0; i < job->n_steps && i < res->n_steps; i++) {
		const char *name = job->steps[i].name;

		if (name && !res->steps[i].name &&
		    !(res->steps[i].name = strdup(name)))
			return -ENOMEM;
	}
	return 0;
}

/* A test's verdict and score from its status and output. */
static void grade_test(const struct al_step *s, struct al_step_result *sr)
{
	bool ok = false;

	if (s->check.present && sr->status == AL_OK &&
	    sr->verdict != AL_VERDICT_NONE) {
		/* run_checker's verdict stands */
		sr->score = sr->verdict == AL_VERDICT_ACCEPTED
				    ? al_step_weight(s)
				    : 0;
		return;
	}
	if (s->expect.present && sr->status == AL_OK) {
		ok = al_expect_match(&s->expect, &sr->stdout_);
		sr->expect_ok = ok ? AL_TRUE : AL_FALSE;
	} else if (s->expect.present && sr->status != AL_SK &&
		   sr->status != AL_XX) {
		sr->expect_ok = AL_FALSE;
	} else if (!s->expect.present) {
		ok = true; /* a weighted step without expect: its exit */
	}
	sr->verdict = al_verdict_of_status(sr->status, ok);
	sr->score = sr->verdict == AL_VERDICT_ACCEPTED ? al_step_weight(s) : 0;
}

/* The job's test_counts: its steps' added up (issue 38). */
static void sum_tests(struct al_result *res)
{
	struct al_test_counts *c = &res->test_counts;

	for (size_t i = 0; i < res->n_steps; i++) {
		const struct al_test_counts *s = &res->steps[i].test_counts;

		if (!res->steps[i].has_tests)
			continue;
		res->has_tests = true;
		c->total += s->total;
		c->passed += s->passed;
		c->failed += s->failed;
		c->error += s->error;
		c->skipped += s->skipped;
	}
}

/* The job's verdict, score and each test's (docs/schema.md, "Grading"):
 * the verdict is the first failure in step order, a failed compile step
 * being a compile error and a failed step that is not a test the verdict
 * of its status; accepted when nothing failed. `status` is the job's:
 * XX makes it an internal error whatever the steps say. */
static int judge(const struct al_job *job, enum al_status status,
		 struct al_result *res)
{
	enum al_verdict v = AL_VERDICT_NONE;
	bool graded = false;

	for (size_t i = 0; i < job->n_steps; i++) {
		const struct al_step *s = &job->steps[i];
		struct al_step_result *sr = &res->steps[i];
		enum al_verdict sv = AL_VERDICT_NONE;

		if (al_step_is_test(s)) {
			grade_test(s, sr);
			graded = true;
			res->score += sr->score;
			res->max_score += al_step_weight(s);
			sv = sr->verdict;
		} else if (s->compile || sr->status != AL_SK) {
			sv = al_verdict_of_status(sr->status, true);
		}
		if (s->compile)
			graded = true;
		if (v == AL_VERDICT_NONE && sv != AL_VERDICT_NONE &&
		    sv != AL_VERDICT_ACCEPTED && sv != AL_VERDICT_SKIPPED)
			v = sv;
	}
	res->graded = graded;
	if (graded)
		res->verdict = status == AL_XX	       ? AL_VERDICT_INTERNAL_ERROR
			       : v == AL_VERDICT_NONE ? AL_VERDICT_ACCEPTED
						      : v;
	sum_tests(res);
	return name_steps(job, res);
}

/* Bring the `collect` files back into what room the result has left.
 * Returns 0, 1 when the guest sent more than that (no files, job OL), or
 * <0 when the VM failed. */
static int collect(struct sb_vm *vm, const struct al_job *job,
		   struct al_result *res)
{
	uint64_t room = budget_room(res),
		 per = job->n_collect * (uint64_t)(FILE_BYTES + AL_PATH_MAX);
	uint64_t max = room > per ? room - per : 0;
	struct al_msg_files f = {0};
	int r;

	if (!job->n_collect)
		return 0;
	if (max == 0 && res->error)
		return 1; /* the steps used it up: error says how */
	if (max == 0)
		return set_error(&res->error, "collect: no room left in the "
				 "result for files") ?: 1;
	max = max < AL_OUTPUT_MAX ? max : AL_OUTPUT_MAX;
	r = sb_vm_get_files(vm, job->collect, job->n_collect, max, &f);
	if (r == -EMSGSIZE)
		return set_error(&res->error, "collect: the guest sent more "
				 "than %llu bytes of files; none kept",
				 (unsigned long long)max) ?: 1;
	if (r < 0)
		return r;
	if (r > 0 && set_error(&res->error, "collect: dropped %d file(s) "
			       "the job did not ask for", r) < 0)
		r = -ENOMEM;
	res->files = f.files; /* hand-off: missing paths are left out */
	res->n_files = f.n_files;
	f.files = NULL;
	f.n_files = 0;
	sb_files_release(&f);
	return r < 0 ? r : 0;
}

/* What open_slot() and in_vm() return besides 0 and -errno. */
enum run_end {
	RUN_REJECTED = 1,    /* open_slot: no slot; the result is an RJ */
	RUN_OVER_BUDGET = 2, /* in_vm: the guest sent more files than the
			      * result has room for: the job is OL */
};

/* With the VM up: limits, files, steps, collect: 0, -errno or
 * RUN_OVER_BUDGET. */
static int in_vm(struct sb_vm *vm, struct al_worker *w,
		 const struct al_job *job, const struct al_limits *lim,
		 struct al_deadline wall, struct al_result *res)
{
	int r = sb_vm_setup(vm, lim);

	if (r == 0 && job->n_files)
		r = sb_vm_put_files(vm, job->files, job->n_files);
	if (r < 0) {
		for (size_t i = 0; i < job->n_steps; i++)
			res->steps[i].status = AL_SK;
		return set_error(&res->error, "before step 0: %s",
				 sb_vm_error(vm)) ?: r;
	}
	r = run_steps(vm, w, job, lim, wall, res);
	if (r != 0)
		return r;
	r = collect(vm, job, res);
	if (r > 0)
		return RUN_OVER_BUDGET;
	if (r < 0 && r != -ENOMEM)
		r = set_error(&res->error, "collect (after %zu steps): %s",
			      job->n_steps, sb_vm_error(vm)) ?: r;
	return r;
}

static int result_init(const struct al_job *job, const char *id,
		       struct al_worker *w, uint32_t attempt,
		       struct al_result *res)
{
	memset(res, 0, sizeof(*res));
	res->id = strdup(id);
	res->worker = strdup(w->name);
	res->attempt = attempt;
	/* said in every result: not root means no jail (issue 23) */
	res->vm.jailed = w->sb->jail ? AL_TRUE : AL_FALSE;
	res->steps = calloc(job->n_steps ? job->n_steps : 1,
			    sizeof(*res->steps));
	res->n_steps = job->n_steps;
	if (job->meta.len) {
		res->meta.data = malloc(job->meta.len + 1);
		if (res->meta.data) {
			memcpy(res->meta.data, job->meta.data, job->meta.len);
			res->meta.len = job->meta.len;
		}
	}
	if (!res->id || !res->worker || !res->steps ||
	    (job->meta.len && !res->meta.data))
		return -ENOMEM;
	return 0;
}

static int reject(struct al_result *res, const struct al_diags *d)
{
	char buf[AL_ERROR_MAX];

	al_diags_format(d, buf, sizeof(buf));
	res->status = AL_RJ;
	for (size_t i = 0; i < res->n_steps; i++)
		res->steps[i].status = AL_SK;
	res->error = strdup(buf);
	return res->error ? 0 : -ENOMEM;
}

/* The policy the job's `network` names: NULL for none (or no network). */
static const struct sb_net_policy *job_net_policy(const struct al_worker *w,
						  const struct al_job *job)
{
	if (!job->network || !strcmp(job->network, "none"))
		return NULL;
	for (size_t i = 0; i < w->sb->n_net_policies; i++)
		if (!strcmp(w->sb->net_policies[i].name, job->network))
			return &w->sb->net_policies[i];
	return NULL;
}

/* A slot for a networked job, or RJ when it names no defined policy or
 * this host cannot make one (*ret NULL, result filled: RUN_REJECTED). */
static int open_slot(struct al_worker *w, const struct al_job *job,
		     struct sb_net **ret, struct al_result *res, char *err,
		     size_t errlen)
{
	const struct sb_net_policy *p = job_net_policy(w, job);
	struct al_diags d;
	bool ready;
	char why[256];
	int r;

	*ret = NULL;
	if (!job->network || !strcmp(job->network, "none"))
		return 0;
	al_diags_init(&d);
	if (!p) {
		al_diags_add(&d, "network", "unknown network policy \"%s\"",
			     job->network);
		return reject(res, &d) < 0 ? -ENOMEM : RUN_REJECTED;
	}
	res->network.policy = strdup(p->name);
	r = sb_net_pool_take(&w->net, p, ret, &ready, why, sizeof(why));
	if (r == -EOPNOTSUPP || r == -EPERM) {
		al_diags_add(&d, "network", "this host cannot run networked "
			     "jobs (%s; see airlock doctor)", why);
		return reject(res, &d) < 0 ? -ENOMEM : RUN_REJECTED;
	}
	if (r < 0)
		snprintf(err, errlen, "network slot: %s", why[0] ? why
					: strerror(-r));
	return r;
}

/* Tell the package gateway which job a slot's address is, when it runs
 * here (STATE/packages/slots exists: docs/packages.md): it takes the job
 * from the source address, never from what the guest says. The file goes
 * before the slot is closed, so a reused address never names an old job.
 * addr gets the address ("" when nothing was written). */
static void gateway_slot(const struct al_worker *w, struct sb_net *net,
			 const char *job_id, char *addr, size_t len)
{
	char path[PATH_MAX];
	int fd, n;

	addr[0] = '\0';
	if (!net || !job_id || sb_net_source_addr(net, addr, len) < 0)
		return;
	n = snprintf(path, sizeof(path), "%s/packages/slots/%s",
		     w->sb->state_dir, addr);
	fd = n > 0 && (size_t)n < sizeof(path)
		     ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
				      O_CLOEXEC, 0644)
		     : -1;
	if (fd < 0) {
		addr[0] = '\0'; /* no gateway here */
		return;
	}
	/* half a name is no name: the gateway then says "unknown ADDR" */
	if (write(fd, job_id, strlen(job_id)) != (ssize_t)strlen(job_id) ||
	    write(fd, "\n", 1) != 1)
		unlink(path);
	close(fd);
}

static void gateway_slot_done(const struct al_worker *w, const char *addr)
{
	char path[PATH_MAX];

	if (addr[0] && snprintf(path, sizeof(path), "%s/packages/slots/%s",
				w->sb->state_dir, addr) < (int)sizeof(path))
		unlink(path);
}

/* The slot's figures into the result's `network` object. */
static void net_result(struct sb_vm *vm, struct al_result *res)
{
	struct sb_net *n = sb_vm_net(vm);
	struct sb_net_stats st;

	if (!n || sb_net_stats(n, &st) < 0)
		return;
	res->network.bytes_in = st.bytes_in;
	res->network.bytes_out = st.bytes_out;
	res->network.n_dropped = st.n_dropped < AL_NET_DROPPED_MAX
					 ? st.n_dropped
					 : AL_NET_DROPPED_MAX;
	for (size_t i = 0; i < res->network.n_dropped; i++)
		snprintf(res->network.dropped[i], sizeof(res->network.dropped[0]),
			 "%s", st.dropped[i]);
}

int al_worker_run(struct al_worker *w, const struct al_job *job,
		  uint64_t queued_ms, uint32_t attempt, struct al_result *res)
{
	const char *tmpl = job->template_ ? job->template_ : w->policy->template_;
	/* the policy asked once: is the template an allowed snapshot */
	bool snap = al_policy_snapshot(w->policy, tmpl);
	uint64_t t0 = al_now_ms();
	struct sb_options o = *w->sb;
	struct sb_vm *vm = NULL;
	struct sb_net *net = NULL;
	struct al_limits lim;
	struct al_diags d;
	char err[300] = "", gw_addr[48];
	off_t gw_mark = 0;
	bool no_vm, over = false;
	int r; /* 0 or -errno, once each call's own codes are taken out */

	r = result_init(job, job->id ? job->id : "-", w, attempt, res);
	if (r < 0)
		return r;
	al_diags_init(&d);
	if (al_job_check_policy(job, w->policy, &d) < 0)
		return reject(res, &d);
	al_job_limits(job, w->policy, &lim);
	o.ttl_ms = lim.wall_ms + 30000; /* hard stop past the job's budget */
	res->vm.template_ = strdup(tmpl);
	r = open_slot(w, job, &net, res, err, sizeof(err));
	if (r == RUN_REJECTED)
		return 0;
	gateway_slot(w, net, job->id, gw_addr, sizeof(gw_addr));
	if (gw_addr[0])
		gw_mark = al_pkglist_mark(w->sb->state_dir);
	if (r == 0 && w->snapdef && snap) {
		/* published through Redis: this host's build must be it */
		r = al_worker_snapshot_ensure(w, tmpl, err, sizeof(err));
		if (r < 0)
			sb_net_close(net);
	}
	if (r == 0)
		r = get_vm(w, tmpl, snap, &o, &lim, net, &vm, err, sizeof(err));
	no_vm = r < 0;
	if (r == 0) {
		/* a pooled VMM too */
		sb_vm_set_deadline(vm, al_deadline_in(o.ttl_ms));
		res->vm.accel = sb_vm_accel(vm);
		res->vm.restored = sb_vm_restored(vm);
		res->vm.restore_ms = sb_vm_ready_ms(vm);
		r = in_vm(vm, w, job, &lim, al_deadline_in(lim.wall_ms), res);
		over = r == RUN_OVER_BUDGET;
		if (over)
			r = 0;
		net_result(vm, res);
		/* the slot is closed once the result is sent (idle) */
		net = sb_vm_detach_net(vm);
	} else {
		net = NULL; /* get_vm closed it */
		for (size_t i = 0; i < job->n_steps; i++)
			res->steps[i].status = AL_SK;
		free(res->error);
		res->error = strdup(err);
	}
	sb_vm_destroy(vm);
	/* what the gateway served it: every answer is recorded before it is
	 * sent, and the VM is gone. Best effort: the audit log is the
	 * record (`airlock packages log --job ID`) */
	if (gw_addr[0] && res->network.policy)
		(void)al_pkglist_read(w->sb->state_dir, gw_mark, job->id,
				      &res->network);
	/* and what its slot dropped, beside its refused installs */
	if (gw_addr[0] && res->network.policy &&
	    !strcmp(res->network.policy, AL_PKGLIST_POLICY) &&
	    al_pkglist_dropped(w->sb->state_dir, job->id, gw_addr,
			       &res->network) < 0)
		sb_log(w->sb, SB_LOG_WARN,
		       "job=%s the audit records of its dropped connections "
		       "not all written", job->id);
	gateway_slot_done(w, gw_addr);
	sb_net_pool_put(&w->net, net);
	res->status = r < 0 ? AL_XX : al_result_overall_status(res);
	if (judge(job, res->status, res) < 0)
		r = -ENOMEM;
	/* a snapshot this host lacks, or a job too big for it: retrying on
	 * this host cannot help (docs/snapshots.md) */
	if (no_vm && (r == -ENOENT || r == -ESTALE || r == -E2BIG) && snap)
		res->status = AL_RJ;
	if (no_vm && r == -EPERM) /* a snapshot the policy does not list */
		res->status = AL_RJ;

	if (over && res->status == AL_OK)
		res->status = AL_OL; /* the guest sent files past the budget */
	res->timing.queued_ms = queued_ms;
	res->timing.run_ms = al_now_ms() - t0;
	res->timing.total_ms = queued_ms + res->timing.run_ms;
	return r == -ENOMEM ? r : 0;
}

int al_worker_open_vm(struct al_worker *w, const struct al_job *job,
		      uint64_t ttl_ms, struct sb_vm **ret_vm, char *err,
		      size_t errlen)
{
	const char *tmpl = job->template_ ? job->template_ : w->policy->template_;
	struct sb_options o = *w->sb;
	struct al_result res;
	struct sb_vm *vm = NULL;
	struct sb_net *net = NULL;
	struct al_limits lim;
	struct al_diags d;
	int r;

	*ret_vm = NULL;
	err[0] = '\0';
	r = result_init(job, job->id ? job->id : "-", w, 1, &res);
	al_diags_init(&d);
	if (r == 0 && al_job_check_policy(job, w->policy, &d) < 0) {
		al_diags_format(&d, err, errlen);
		r = -EINVAL;
		goto out;
	}
	al_job_limits(job, w->policy, &lim);
	o.ttl_ms = ttl_ms;
	if (r == 0)
		r = open_slot(w, job, &net, &res, err, errlen);
	if (r == RUN_REJECTED) {
		snprintf(err, errlen, "%s", res.error ? res.error : "rejected");
		r = -EINVAL;
		goto out;
	}
	/* a session's requests are audited with its id (the job's: the
	 * session's, dispatcher/session/run.c) */
	if (r == 0)
		gateway_slot(w, net, job->id, w->gw_addr, sizeof(w->gw_addr));
	if (r == 0)
		r = get_vm(w, tmpl, al_policy_snapshot(w->policy, tmpl), &o,
			   &lim, net, &vm, err, errlen);
	if (r < 0) {
		al_worker_close_vm(w);
		goto out; /* get_vm closed the slot */
	}
	sb_vm_set_deadline(vm, al_deadline_in(ttl_ms));
	r = sb_vm_setup(vm, &lim);
	if (r == 0 && job->n_files)
		r = sb_vm_put_files(vm, job->files, job->n_files);
	if (r < 0) {
		snprintf(err, errlen, "set-up: %s", sb_vm_error(vm));
		al_worker_close_vm(w);
		sb_vm_destroy(vm);
		goto out;
	}
	*ret_vm = vm;
out:
	al_result_release(&res);
	return r;
}

void al_worker_close_vm(struct al_worker *w)
{
	gateway_slot_done(w, w->gw_addr);
	w->gw_addr[0] = '\0';
}

int al_worker_reject(const char *id, const struct al_diags *d,
		     struct al_result *res)
{
	memset(res, 0, sizeof(*res));
	res->id = strdup(id && al_id_valid(id, strlen(id)) ? id : "-");
	if (!res->id)
		return -ENOMEM;
	return reject(res, d);
}

/* Run the setup's steps in the snapshot's VM; save it if all were OK. */
static int setup_run(struct al_worker *w, struct sb_options *o,
		     const struct al_job *job, const struct al_limits *lim,
		     struct sb_snapshot_build *b, struct sb_vm *vm,
		     struct al_result *res, struct sb_snapshot_info *info)
{
	int r;

	sb_vm_set_deadline(vm, al_deadline_in(o->ttl_ms));
	res->vm.accel = sb_vm_accel(vm);
	res->vm.restored = true;
	res->vm.restore_ms = sb_vm_ready_ms(vm);
	r = in_vm(vm, w, job, lim, al_deadline_in(lim->wall_ms), res);
	res->status = r < 0 ? AL_XX : al_result_overall_status(res);
	if (judge(job, res->status, res) < 0)
		return -ENOMEM;
	if (r > 0 && res->status == AL_OK)
		res->status = AL_OL;
	if (r < 0 || res->status != AL_OK) {
		sb_snapshot_abort(b);
		return r < 0 ? r : -ECANCELED;
	}
	r = sb_snapshot_commit(o, b, info);
	if (r < 0) {
		res->status = AL_XX;
		set_error(&res->error, "save snapshot: %s", strerror(-r));
	}
	return r;
}

int al_worker_snapshot(struct al_worker *w, const char *name,
		       const struct al_job *job, struct al_result *res,
		       struct sb_snapshot_info *info)
{
	const char *tmpl = job->template_ ? job->template_ : w->policy->template_;
	uint64_t t0 = al_now_ms();
	struct sb_options o = *w->sb;
	struct sb_snapshot_build b;
	struct sb_vm *vm = NULL;
	struct al_limits lim;
	struct al_diags d;
	char hash[65];
	int r;

	r = result_init(job, job->id ? job->id : "-", w, 1, res);
	if (r < 0)
		return r;
	al_diags_init(&d);
	if (al_job_check_policy(job, w->policy, &d) < 0)
		return reject(res, &d) ?: -EINVAL;
	al_job_limits(job, w->policy, &lim);
	o.ttl_ms = lim.wall_ms + 30000; /* hard stop past the job's budget */
	res->vm.template_ = strdup(tmpl);
	r = al_worker_setup_hash(job, hash);
	if (r == 0)
		r = sb_snapshot_begin(&o, name, tmpl, hash, &b, &vm);
	if (r == 0) {
		r = setup_run(w, &o, job, &lim, &b, vm, res, info);
	} else {
		for (size_t i = 0; i < job->n_steps; i++)
			res->steps[i].status = AL_SK;
		res->status = r == 1 ? AL_OK : AL_XX;
		if (r < 0)
			set_error(&res->error, "snapshot %s: %s", name,
				  sb_vm_error(vm)[0] ? sb_vm_error(vm)
						     : strerror(-r));
		sb_snapshot_abort(&b);
	}
	res->timing.run_ms = al_now_ms() - t0;
	res->timing.total_ms = res->timing.run_ms;
	return r;
}

/* Build (or find built) the published snapshot here. */
static int snapdef_build(struct al_worker *w, const struct al_snapdef *d,
			 const struct al_job *job, char *err, size_t errlen)
{
	struct sb_snapshot_info info = {0};
	struct al_result res = {0};
	size_t i = 0;
	int r;

	r = al_worker_snapshot(w, d->name, job, &res, &info);
	if (r == 0)
		sb_log(w->sb, SB_LOG_INFO, "snapshot=%s key=%s worker=%s: built "
		       "from its published definition in %llu ms", d->name,
		       d->key, w->name, (unsigned long long)info.build_ms);
	while (i + 1 < res.n_steps && res.steps[i].status == AL_OK)
		i++;
	if (r == -EINVAL || (r == -ECANCELED && !res.n_steps))
		snprintf(err, errlen, "snapshot %s: its published setup is "
			 "refused here: %s", d->name,
			 res.error ? res.error : "the policy");
	else if (r == -ECANCELED)
		snprintf(err, errlen, "snapshot %s: building it from its "
			 "published definition failed: setup step %zu ended %s "
			 "(exit %d)", d->name, i,
			 al_status_name(res.steps[i].status),
			 res.steps[i].exit_code);
	else if (r < 0)
		snprintf(err, errlen, "snapshot %s: building it from its "
			 "published definition failed: %s", d->name,
			 res.error ? res.error : strerror(-r));
	al_result_release(&res);
	if (r == -EINVAL || r == -ECANCELED)
		return -ESTALE;
	return r < 0 ? r : 0;
}

int al_worker_snapshot_ensure(struct al_worker *w, const char *name,
			      char *err, size_t errlen)
{
	const struct al_snapdef *d = w->snapdef;
	struct al_job setup = {0};
	int r;

	if (!d || strcmp(d->name, name) != 0)
		return 0; /* not published: this host's own, as before */
	if (!strcmp(w->snap_failed, d->key)) {
		/* its setup failed here: once per definition and worker, not
		 * once per job */
		snprintf(err, errlen, "%s", w->snap_failed_err);
		return -ESTALE;
	}
	r = al_snapdef_check(w, d, &setup, err, errlen);
	if (r == 1) {
		r = snapdef_build(w, d, &setup, err, errlen);
		if (r == -ESTALE) {
			snprintf(w->snap_failed, sizeof(w->snap_failed), "%s",
				 d->key);
			snprintf(w->snap_failed_err, sizeof(w->snap_failed_err),
				 "%s", err);
		}
	}
	al_job_release(&setup);
	return r;
}
