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
 * A step status the guest reports is one of how processes end (OK RE SG
 * TO TL ML OL): its XX, RJ or SK become RE (al_step_result_from_guest),
 * so a guest cannot make the queue retry a job.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "clock.h"
#include "proto.h"
#include "worker.h"

void al_worker_init(struct al_worker *w, const struct sb_options *sb,
		    const struct al_policy *policy, const char *name)
{
	memset(w, 0, sizeof(*w));
	w->sb = sb;
	w->policy = policy;
	snprintf(w->name, sizeof(w->name), "%s", name ? name : "worker");
	w->last = AL_WORKER_TEMPLATES;
}

void al_worker_release(struct al_worker *w)
{
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

/* The pool of `name`'s template, opened (and pre-started) on first use. */
static struct sb_pool *find_pool(struct al_worker *w, const char *name,
				 int *ret)
{
	size_t i = w->n_templates;

	for (size_t k = 0; k < w->n_templates; k++)
		if (!strcmp(w->templates[k].img.name, name))
			return &w->pools[k];
	if (i == AL_WORKER_TEMPLATES) {
		*ret = -ENOSPC;
		return NULL;
	}
	*ret = sb_template_open(w->sb, name, &w->templates[i]);
	if (*ret < 0)
		return NULL;
	sb_pool_init(&w->pools[i], w->sb, &w->templates[i], w->sb->prestart);
	w->n_templates++;
	return &w->pools[i];
}

int al_worker_warm_count(const char *spec, const char *name)
{
	const char *p = spec;
	int found = 0;

	while (*p) {
		size_t len = strcspn(p, ": ");
		char *end;
		unsigned long n;

		if (*p == ' ') {
			p++;
			continue;
		}
		if (len == 0 || len > AL_NAME_MAX || p[len] != ':')
			return -1;
		n = strtoul(p + len + 1, &end, 10);
		if (end == p + len + 1 || (*end && *end != ' ') ||
		    n > SB_POOL_MAX)
			return -1;
		if (name && strlen(name) == len && !strncmp(p, name, len))
			found = (int)n;
		p = end;
	}
	return found;
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
			find_pool(w, name, &r);
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
	warm_open(w);
	for (size_t i = 0; i < w->n_templates; i++) {
		sb_pool_prepare(&w->pools[i]);
		sb_pool_set_warm(&w->pools[i], warm_want(w, i),
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

/* A VM for `name`, cold or restored; on failure *err says why. */
static int get_vm(struct al_worker *w, const char *name, bool net,
		  struct sb_options *o, const struct al_limits *lim,
		  struct sb_vm **ret, char *err, size_t errlen)
{
	bool fits = lim->memory_mb + AL_WORKER_RESERVE_MB <= o->memory_mb &&
		    lim->vcpus <= o->vcpus;
	struct sb_pool *pool;
	struct sb_image img;
	int r;

	*ret = NULL;
	if (w->cold || !fits) {
		if (!fits) {
			o->memory_mb = lim->memory_mb + AL_WORKER_RESERVE_MB;
			o->vcpus = lim->vcpus;
		}
		r = sb_image_open(o, name, &img);
		if (r == 0)
			r = sb_vm_boot(o, &img, ret);
	} else {
		pool = find_pool(w, name, &r);
		/* a networked job gets a clone of its own making */
		if (pool && (net || sb_pool_take(pool, ret) < 0))
			r = sb_pool_restore(pool, ret);
		if (pool) {
			w->last = (size_t)(pool - w->pools);
			w->warm_failed[w->last] = false;
		}
	}
	if (r < 0 && sb_vm_error(*ret)[0])
		snprintf(err, errlen, "%s", sb_vm_error(*ret));
	else if (r == -ENOENT)
		snprintf(err, errlen, "template %s: no image (run `airlock "
			 "image build %s`)", name, name);
	else if (r < 0)
		snprintf(err, errlen, "template %s: %s", name, strerror(-r));
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
		     slen(sr->name) + slen(sr->error);
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

static bool earlier_failed(const struct al_result *res, size_t i)
{
	for (size_t k = 0; k < i; k++)
		if (res->steps[k].status != AL_OK)
			return true;
	return false;
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
		int r;

		if (s->run_if == AL_RUN_SUCCESS && earlier_failed(res, i)) {
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
		r = sb_vm_run_step(vm, s, &sl, t, sr);
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
		if (s->name && !sr->name)
			sr->name = strdup(s->name);
		if (sl.output_bytes < lim->output_bytes &&
		    (sr->stdout_truncated || sr->stderr_truncated))
			return out_of_room(job, i, true, res);
	}
	return 0;
}

static void judge(const struct al_job *job, struct al_result *res)
{
	bool any = false, all = true;

	for (size_t i = 0; i < job->n_steps; i++) {
		const struct al_step *s = &job->steps[i];
		struct al_step_result *sr = &res->steps[i];

		if (!s->expect.present)
			continue;
		any = true;
		if (sr->status == AL_SK || sr->status == AL_XX) {
			all = false; /* did not run: no expect_ok */
			continue;
		}
		sr->expect_ok = sr->status == AL_OK &&
					al_expect_match(&s->expect,
							&sr->stdout_)
				? AL_TRUE
				: AL_FALSE;
		all &= sr->expect_ok == AL_TRUE;
	}
	if (any)
		res->verdict = all ? AL_VERDICT_ACCEPTED
				   : AL_VERDICT_WRONG_ANSWER;
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

/* With the VM up: limits, files, steps, collect. 1 = over budget. */
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

int al_worker_run(struct al_worker *w, const struct al_job *job,
		  uint64_t queued_ms, uint32_t attempt, struct al_result *res)
{
	const char *tmpl = job->template_ ? job->template_ : w->policy->template_;
	uint64_t t0 = al_now_ms();
	struct sb_options o = *w->sb;
	struct sb_vm *vm = NULL;
	struct al_limits lim;
	struct al_diags d;
	char err[300] = "";
	int r;

	r = result_init(job, job->id ? job->id : "-", w, attempt, res);
	if (r < 0)
		return r;
	al_diags_init(&d);
	if (al_job_check_policy(job, w->policy, &d) < 0)
		return reject(res, &d);
	al_job_limits(job, w->policy, &lim);
	o.ttl_ms = lim.wall_ms + 30000; /* hard stop past the job's budget */
	res->vm.template_ = strdup(tmpl);
	r = get_vm(w, tmpl, job->network && strcmp(job->network, "none"),
		   &o, &lim, &vm, err, sizeof(err));
	if (r == 0) {
		/* a pooled VMM too */
		sb_vm_set_deadline(vm, al_deadline_in(o.ttl_ms));
		res->vm.accel = sb_vm_accel(vm);
		res->vm.restored = sb_vm_restored(vm);
		res->vm.restore_ms = sb_vm_ready_ms(vm);
		r = in_vm(vm, w, job, &lim, al_deadline_in(lim.wall_ms), res);
	} else {
		for (size_t i = 0; i < job->n_steps; i++)
			res->steps[i].status = AL_SK;
		free(res->error);
		res->error = strdup(err);
	}
	sb_vm_destroy(vm);
	judge(job, res);
	res->status = r < 0 ? AL_XX : al_result_overall_status(res);
	if (r > 0 && res->status == AL_OK)
		res->status = AL_OL; /* the guest sent files past the budget */
	res->timing.queued_ms = queued_ms;
	res->timing.run_ms = al_now_ms() - t0;
	res->timing.total_ms = queued_ms + res->timing.run_ms;
	return r == -ENOMEM ? r : 0;
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
