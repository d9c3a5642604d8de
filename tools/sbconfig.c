/* sbconfig.c: from the config file to the sandbox's options. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include "sbconfig.h"

int al_sandbox_options(const struct al_config *cfg, struct sb_options *o,
		       char *err, size_t errlen)
{
	const struct passwd *pw;
	const struct group *kvm;
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
	o->vmm_overhead_mb = cfg->sandbox.vmm_memory_overhead_mb;
	o->vmm_cpu_percent = cfg->sandbox.vmm_cpu_max;
	if (!cfg->sandbox.vmm_user[0])
		return 0; /* the sandbox's default: nobody when root */
	pw = getpwnam(cfg->sandbox.vmm_user);
	if (!pw) {
		snprintf(err, errlen, "sandbox.vmm_user: no user '%s'",
			 cfg->sandbox.vmm_user);
		return -ENOENT;
	}
	/* config.c refuses "root"; another name for uid 0 is refused too */
	if (pw->pw_uid == 0) {
		snprintf(err, errlen, "sandbox.vmm_user: '%s' is uid 0 (root)",
			 cfg->sandbox.vmm_user);
		return -EPERM;
	}
	o->vmm_uid = pw->pw_uid;
	o->vmm_gid = pw->pw_gid;
	kvm = getgrnam("kvm");
	o->kvm_gid = kvm ? kvm->gr_gid : 0;
	return 0;
}
