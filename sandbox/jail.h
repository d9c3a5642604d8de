/* jail.h: the VMM's jail, entered by vmm.c's child between clone and
 * exec (jail.c has the theory of operation). Internal to sandbox/; only
 * vmm.c calls it, and it calls nothing of ours back. */
#ifndef AL_JAIL_H
#define AL_JAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Files bound read-only into a jail at their own paths. */
#define VMM_JAIL_FILES 6

/* Who the VMM runs as: uid 0 keeps ours. */
struct vmm_creds {
	uid_t uid;     /* user to become, 0 = stay */
	gid_t gid;     /* its group */
	gid_t extra;   /* one supplementary group (kvm), 0 = none */
};

/* The jail (root only): new mount, pid, ipc, uts and net namespaces, a
 * small read-only tmpfs root holding /usr, ld.so.cache, a few /dev nodes,
 * its own /proc and `files`, then rlimits and no privileges at all. */
struct vmm_jail {
	const char *root;  /* empty root-owned dir to mount the root on;
			    * NULL = no jail (not root: nothing to drop) */
	const char *files[VMM_JAIL_FILES]; /* bound read-only, same path */
	size_t n_files;    /* entries used in files */
	bool kvm;          /* /dev/kvm (the vhost-vsock node is never in:
			    * QEMU gets an fd of it, VMM_FD_VSOCK) */
	uint64_t fsize;    /* RLIMIT_FSIZE: what QEMU may write to files */
};

/* In the child, enter the jail up to (not including) the
 * privilege drop; nothing allocates. On failure returns -1 with errno set
 * and *ret_step naming what failed. */
int sb__jail_enter(const struct vmm_jail *j, const char **ret_step);
/* Rlimits, no new privileges, an empty capability bounding set,
 * then the creds. Same contract as sb__jail_enter. */
int sb__jail_drop(const struct vmm_jail *j, const struct vmm_creds *c,
		  const char **ret_step);

#endif
