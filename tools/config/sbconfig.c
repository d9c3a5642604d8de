/* sbconfig.c: from the config file to the options of the layers below:
 * the sandbox's (struct sb_options), the dispatcher's (struct
 * al_serve_opts) and the session host's (struct al_sess_opts). With the key table (config.c) these are where a
 * default written in the config meets the layers' own (test_defaults).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sbconfig.h"

/* The sandbox's events through the logger (log.level, log.format). */
static void log_event(enum sb_log_level level, const char *msg)
{
	if (level == SB_LOG_WARN)
		al_warn("%s", msg);
	else
		al_info("%s", msg);
}

int al_sandbox_options(const struct al_config *cfg, struct sb_options *o,
		       char *err, size_t errlen)
{
	int r;

	sb_options_init(o);
	r = al_config_state_dir(cfg, o->state_dir, sizeof(o->state_dir));
	if (r < 0) {
		snprintf(err, errlen, "state dir: %s", strerror(-r));
		return r;
	}
	snprintf(o->qemu, sizeof(o->qemu), "%s", cfg->sandbox.qemu);
	o->accel = cfg->sandbox.accel == AL_CONFIG_ACCEL_KVM   ? SB_ACCEL_KVM
		   : cfg->sandbox.accel == AL_CONFIG_ACCEL_TCG ? SB_ACCEL_TCG
							       : SB_ACCEL_AUTO;
	o->memory_mb = cfg->sandbox.vm_memory_mb;
	o->vcpus = cfg->sandbox.vm_vcpus;
	o->prestart = cfg->sandbox.prestart;
	snprintf(o->warm, sizeof(o->warm), "%s", cfg->pool.warm);
	o->warm_last = cfg->pool.warm_last;
	o->warm_max_age_s = cfg->pool.max_age_s;
	o->warm_zygote = cfg->pool.warm_zygote;
	o->net_ready = cfg->pool.net_ready;
	o->worker_memory_mb = cfg->workers.memory_mb;
	o->snapshot_max_mb = cfg->snapshots.max_disk_mb;
	o->snapshot_no_build = !cfg->snapshots.build_on_demand;
	o->vmm_overhead_mb = cfg->sandbox.vmm_memory_overhead_mb;
	o->tcg_tb_mb = cfg->sandbox.tcg_tb_size_mb;
	o->vmm_cpu_percent = cfg->sandbox.vmm_cpu_max;
	o->vmm_uid_base = cfg->sandbox.vmm_uid_base;
	o->vmm_uid_count = cfg->sandbox.vmm_uid_count;
	o->net_policies = cfg->network.policy;
	o->n_net_policies = cfg->network.n;
	snprintf(o->net_dns, sizeof(o->net_dns), "%s", cfg->network.dns);
	o->log = log_event;
	return 0;
}

void al_config_serve_opts(const struct al_config *cfg,
			  const struct alq_url *url,
			  const struct al_policy *policy,
			  const struct sb_options *sb,
			  struct al_serve_opts *ret)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	al_serve_opts_init(ret);
	ret->url = *url;
	snprintf(ret->queue, sizeof(ret->queue), "%s", cfg->queue.name);
	ret->connect_timeout_ms = cfg->redis.connect_timeout_ms;
	ret->command_timeout_ms = cfg->redis.command_timeout_ms;
	ret->workers = cfg->workers.count ? cfg->workers.count
					  : (uint32_t)(cpus > 0 ? cpus : 1);
	ret->max_deliveries = cfg->queue.max_deliveries;
	ret->result_ttl_s = cfg->queue.result_ttl_s;
	ret->visibility_slack_ms = cfg->queue.visibility_slack_ms;
	ret->heartbeat_ms = cfg->queue.heartbeat_ms;
	ret->trim_interval_ms = cfg->queue.trim_interval_ms;
	ret->dead_letter = cfg->queue.dead_letter;
	ret->partitions = cfg->queue.partitions;
	ret->shutdown_grace_ms = cfg->workers.shutdown_grace_ms;
	ret->policy = policy;
	ret->sb = sb;
}

void al_config_sess_opts(const struct al_config *cfg,
			 const struct al_serve_opts *so,
			 struct al_sess_opts *ret)
{
	al_sess_opts_init(ret, so);
	ret->max_sessions = cfg->workers.max_sessions;
	ret->ttl_default_s = cfg->sessions.ttl_default_s;
	ret->ttl_max_s = cfg->sessions.ttl_max_s;
	ret->idle_default_s = cfg->sessions.idle_default_s;
	ret->hibernate_default_s = cfg->sessions.hibernate_default_s;
	ret->keep_s = cfg->sessions.keep_s;
	ret->output_max = cfg->sessions.output_max_bytes;
	ret->output_budget = cfg->sessions.output_budget_bytes;
	ret->snapshots_per_principal = cfg->sessions.snapshots_per_principal;
	ret->spare = cfg->sessions.spare;
}

bool al_config_addr_denied(int family, const void *addr)
{
	return sb_net_always_denied(family, addr);
}

static bool image_built(const char *name, const void *sb)
{
	return sb_image_built(sb, name);
}

void al_config_policy_live(struct al_policy *policy,
			   const struct sb_options *sb)
{
	policy->image_built = image_built;
	policy->image_built_arg = sb;
}

void al_config_policy_local(struct al_config *cfg, struct al_policy *policy)
{
	const struct al_config_names *a = &cfg->templates.allowed;
	struct sb_options o;
	struct sb_image img;
	char err[256];
	size_t n = 0;

	if (!a->n || al_sandbox_options(cfg, &o, err, sizeof(err)) < 0)
		return; /* any template / no sandbox: the workers will say */
	for (size_t i = 0; i < a->n; i++)
		if (sb_image_open(&o, a->name[i], &img) == -ENOENT)
			cfg->templates.unbuilt[n++] = a->name[i];
	cfg->templates.unbuilt[n] = NULL;
	policy->unbuilt = cfg->templates.unbuilt;
}
