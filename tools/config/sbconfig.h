/* sbconfig.h: from the config file to the sandbox's, the dispatcher's and
 * the session host's options (sbconfig.c). */
#ifndef AL_SBCONFIG_H
#define AL_SBCONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "queue.h"
#include "sandbox.h"
#include "serve.h"
#include "sessions.h"

/* Fill `o` from cfg: state dir, QEMU, accelerator, VM size, pre-started
 * VMMs, the VMM user (resolved to uid/gid, plus the kvm group when the
 * host has one) and host cgroup caps. -ENOENT with err set when the
 * configured user does not exist. */
int al_sandbox_options(const struct al_config *cfg, struct sb_options *o,
		       char *err, size_t errlen);

/* The allowed templates with no image on this host, into policy->unbuilt
 * (cfg holds the list): a job naming one is refused at submit, not run
 * as XX three times and dead-lettered. For the short commands whose jobs
 * run here (run, batch, eval with the embedded Redis), after
 * al_config_policy(); not serve, which outlives an image build. */
void al_config_policy_local(struct al_config *cfg, struct al_policy *policy);
/* serve's: the same refusal, asked of `sb`'s state dir at each submit
 * (an image built while serve runs is seen at once). `sb` must outlive
 * the policy's use. For a serve that runs workers on this host. */
void al_config_policy_live(struct al_policy *policy,
			   const struct sb_options *sb);

/* Dispatcher options from the config; `url`, `policy` and `sb` must
 * outlive *ret. workers.count 0 becomes the number of online CPUs. */
void al_config_serve_opts(const struct al_config *cfg,
			  const struct alq_url *url,
			  const struct al_policy *policy,
			  const struct sb_options *sb,
			  struct al_serve_opts *ret);

/* The session host's options beside the dispatcher of `so` (whose url,
 * policy and sb must outlive *ret): the [sessions] keys and
 * workers.max_sessions over al_sess_opts_init(). */
void al_config_sess_opts(const struct al_config *cfg,
			 const struct al_serve_opts *so,
			 struct al_sess_opts *ret);

/* Is the address (AF_INET: 4 bytes, AF_INET6: 16) one no target of ours
 * may have: the list the VMs' network rules use (sb_net_always_denied).
 * The API's result callbacks check their targets with it, through the
 * config room rather than sandbox.h (tools/api/README.md). */
bool al_config_addr_denied(int family, const void *addr);

#endif
