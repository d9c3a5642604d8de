/* sbconfig.h: from the config file to the sandbox's options. */
#ifndef AL_SBCONFIG_H
#define AL_SBCONFIG_H

#include <stddef.h>

#include "config.h"
#include "sandbox.h"

/* Fill `o` from cfg: state dir, QEMU, accelerator, VM size, pre-started
 * VMMs, the VMM user (resolved to uid/gid, plus the kvm group when the
 * host has one) and host cgroup caps. -ENOENT with err set when the
 * configured user does not exist. */
int al_sandbox_options(const struct al_config *cfg, struct sb_options *o,
		       char *err, size_t errlen);

#endif
