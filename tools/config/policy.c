/* policy.c: the config turned into the job policy of results/ (struct
 * al_policy): limits, the allowed templates, network policies, snapshots
 * and languages. Apart from config.c because it reads the templates'
 * language lines (languages.c), which in turn use config.c's templates
 * dir: config.c -> nothing here, policy.c -> languages.c -> config.c.
 */
#include <stddef.h>
#include <stdio.h>

#include "config.h"

static const char *const *names_ptrs(struct al_config_names *l)
{
	if (!l->n)
		return NULL;
	for (size_t i = 0; i < l->n; i++)
		l->ptr[i] = l->name[i];
	l->ptr[l->n] = NULL;
	return l->ptr;
}

static const char *const *policy_ptrs(struct al_config *cfg)
{
	if (!cfg->network.n)
		return NULL;
	for (size_t i = 0; i < cfg->network.n; i++)
		cfg->network.ptr[i] = cfg->network.policy[i].name;
	cfg->network.ptr[cfg->network.n] = NULL;
	return cfg->network.ptr;
}

/* Where templates.allowed comes from, for a refusal that names the key
 * and the file to change. */
static void templates_from(struct al_config *cfg)
{
	char sys[1024];

	if (cfg->source[0])
		snprintf(cfg->templates.from, sizeof(cfg->templates.from), "%s",
			 cfg->source);
	else if (al_config_system_path(sys, sizeof(sys)) == 0)
		snprintf(cfg->templates.from, sizeof(cfg->templates.from),
			 "%s (or --config FILE)", sys);
	else
		snprintf(cfg->templates.from, sizeof(cfg->templates.from),
			 "the config file");
}

void al_config_policy(struct al_config *cfg, struct al_policy *ret)
{
	char err[8];

	/* problems are for `airlock validate`: a bad line is left out */
	(void)al_config_languages(cfg, err, sizeof(err));
	*ret = (struct al_policy){
	    .defaults = cfg->limits.defaults,
	    .max = cfg->limits.max,
	    .step_timeout_ms = cfg->limits.step_timeout_ms,
	    .step_timeout_max_ms = cfg->limits.step_timeout_ms_max,
	    .template_ = cfg->templates.default_,
	    .templates = names_ptrs(&cfg->templates.allowed),
	    .networks = policy_ptrs(cfg),
	    .snapshots = names_ptrs(&cfg->snapshots.allowed),
	    .languages = cfg->languages.list,
	    .n_languages = cfg->languages.n,
	    .templates_from = cfg->templates.from,
	    .time_scale = cfg->templates.time_scale,
	};
	templates_from(cfg);
}
