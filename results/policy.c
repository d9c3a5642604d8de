/* policy.c: a deployment's defaults and maxima for job limits.
 *
 * The decoders enforce the hard caps of caps.h; a policy (built in, or from
 * the config file) narrows them and supplies the defaults for absent
 * fields. Workers check every job against their policy before running it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const struct al_policy builtin = {
	.defaults = {
		.memory_mb = 512,
		.vcpus = 1,
		.wall_ms = 120000,
		.output_bytes = 1u << 20,
		.pids = 256,
		.disk_mb = 256,
		.file_size_mb = 64,
	},
	.max = {
		.memory_mb = 4096,
		.vcpus = 4,
		.wall_ms = 600000,
		.output_bytes = AL_OUTPUT_MAX,
		.pids = 1024,
		.disk_mb = 4096,
		.file_size_mb = 4096,
	},
	.step_timeout_ms = 10000,
	.step_timeout_max_ms = AL_TIMEOUT_MS_MAX,
	.template_ = "python",
	.templates = NULL,
	.networks = NULL,
};

const struct al_policy *al_policy_default(void)
{
	return &builtin;
}

static bool in_list(const char *const *list, const char *s)
{
	for (; list && *list; list++)
		if (strcmp(*list, s) == 0)
			return true;
	return false;
}

bool al_policy_snapshot(const struct al_policy *p, const char *name)
{
	return in_list(p->snapshots, name);
}

/* The allowed list as words, for a refusal. */
static void join(const char *const *list, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (; list && *list && n < len; list++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? " " : "",
				      *list);
}

/* A template the job may not name says which key (and file) allows it;
 * an allowed one with no image here says how to build it (issue 37). */
static void check_template(const char *t, const struct al_policy *p,
			   struct al_diags *d)
{
	char allowed[64];

	if (p->templates && !in_list(p->templates, t) &&
	    !in_list(p->snapshots, t)) {
		join(p->templates, allowed, sizeof(allowed));
		al_diags_add(d, "template",
			     "template \"%s\" is not in templates.allowed "
			     "(%s): add it there in %s",
			     t, allowed,
			     p->templates_from ? p->templates_from
					       : "the config file");
	} else if (!in_list(p->snapshots, t) &&
		   (in_list(p->unbuilt, t) ||
		    (p->templates && p->image_built &&
		     !p->image_built(t, p->image_built_arg))))
		al_diags_add(d, "template",
			     "template \"%s\" is allowed but has no image on "
			     "this host; fix: airlock image build %s",
			     t, t);
}

static void check_limit(const char *name, uint32_t v, uint32_t lo,
			uint32_t hi, struct al_diags *d)
{
	char path[64];

	if (v == 0 || (v >= lo && v <= hi))
		return;
	al__path_field(path, sizeof(path), "limits", name);
	al_diags_add(d, path, "must be %u..%u", lo, hi);
}

int al_job_check_policy(const struct al_job *job, const struct al_policy *p,
			struct al_diags *d)
{
	const struct al_limits *l = &job->limits, *m = &p->max;
	size_t before = d->n + d->dropped;
	char path[64];

	check_limit("memory_mb", l->memory_mb, AL_MEMORY_MB_MIN, m->memory_mb,
		    d);
	check_limit("vcpus", l->vcpus, 1, m->vcpus, d);
	check_limit("wall_ms", l->wall_ms, 1, m->wall_ms, d);
	check_limit("output_bytes", l->output_bytes, 1, m->output_bytes, d);
	check_limit("pids", l->pids, 1, m->pids, d);
	check_limit("disk_mb", l->disk_mb, 1, m->disk_mb, d);
	check_limit("file_size_mb", l->file_size_mb, 1, m->file_size_mb, d);
	if (job->language)
		al_diags_add(d, "language", "not expanded here: name the "
			     "template and give every step a cmd or sh");
	for (size_t i = 0; i < job->n_steps; i++) {
		uint32_t t = job->steps[i].timeout_ms;

		if (!job->language && !job->steps[i].argc &&
		    !job->steps[i].sh) {
			snprintf(path, sizeof(path), "steps[%zu]", i);
			al_diags_add(d, path, "must have exactly one of cmd "
				     "or sh");
		}

		if (t > p->step_timeout_max_ms) {
			snprintf(path, sizeof(path), "steps[%zu].timeout_ms",
				 i);
			al_diags_add(d, path, "must be 1..%u",
				     p->step_timeout_max_ms);
		}
	}
	if (job->template_)
		check_template(job->template_, p, d);
	else if (!job->language && p->template_)
		check_template(p->template_, p, d); /* the default's image */
	if (job->network && strcmp(job->network, "none") != 0 &&
	    !in_list(p->networks, job->network))
		al_diags_add(d, "network", "unknown network policy \"%s\"",
			     job->network);
	return d->n + d->dropped == before ? 0 : -EINVAL;
}

static uint32_t pick(uint32_t v, uint32_t dflt)
{
	return v ? v : dflt;
}

/* A job without limits.wall_ms: the default, or the sum of the timeouts
 * its steps set when that is longer (a build's 900 s step is not cut to
 * the default 120 s), up to the policy's maximum (docs/ci.md). */
static uint32_t default_wall(const struct al_job *job,
			     const struct al_policy *p)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < job->n_steps; i++)
		sum += job->steps[i].timeout_ms;
	if (sum <= p->defaults.wall_ms)
		return p->defaults.wall_ms;
	return sum < p->max.wall_ms ? (uint32_t)sum : p->max.wall_ms;
}

void al_job_limits(const struct al_job *job, const struct al_policy *p,
		   struct al_limits *ret)
{
	const struct al_limits *l = &job->limits, *f = &p->defaults;

	ret->memory_mb = pick(l->memory_mb, f->memory_mb);
	ret->vcpus = pick(l->vcpus, f->vcpus);
	ret->wall_ms = pick(l->wall_ms, default_wall(job, p));
	ret->output_bytes = pick(l->output_bytes, f->output_bytes);
	ret->pids = pick(l->pids, f->pids);
	ret->disk_mb = pick(l->disk_mb, f->disk_mb);
	ret->file_size_mb = pick(l->file_size_mb, f->file_size_mb);
}

uint32_t al_job_step_timeout(const struct al_job *job, size_t i,
			     const struct al_policy *p)
{
	if (i < job->n_steps && job->steps[i].timeout_ms)
		return job->steps[i].timeout_ms;
	return p->step_timeout_ms;
}
