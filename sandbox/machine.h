/* machine.h: the QEMU command line of a VM. Internal to sandbox/.
 *
 * Built in one place so that a template and its clones describe the same
 * machine (a clone loads device state that must match it bit for bit),
 * and pure: options, image and this spec in, argv out, no I/O. The
 * template key hashes this argv (template.c), and tests/unit/
 * test_machine.c pins it exactly, so a change to it is a decision.
 */
#ifndef AL_SB_MACHINE_H
#define AL_SB_MACHINE_H

#include <stdbool.h>
#include <stdint.h>

#include "sandbox.h"
#include "vmm.h"

/* How guest RAM is backed: anonymous (cold boot), a shared memfd (a
 * template being made) or a private copy-on-write map of a sealed one (a
 * clone). The memfd is the VMM's fd VMM_FD_MEM, opened as
 * /proc/self/fd/N (QEMU 7.2 takes no fd for a memory backend). */
struct machine_mem {
	int fd;           /* the memfd (becomes VMM_FD_MEM), -1: anonymous */
	bool share;       /* share=on (template) or off (clone) */
	bool incoming;    /* -incoming defer (clone) */
};

/* What differs between the VMs of one options + image pair. */
struct machine_spec {
	const char *qemu;        /* QEMU binary path, argv[0] */
	enum al_accel accel;     /* kvm or tcg */
	struct machine_mem mem;  /* RAM backing */
	uint32_t cid;            /* vsock guest CID, 0 = virtio-serial */
	bool net;                /* a NIC on the tap VMM_FD_TAP (net.c) */
	bool kernel_stub;        /* -kernel is VMM_FD_KERNEL, no -initrd */
	uint32_t tb_mb;          /* TCG tb-size in MiB, 0 = QEMU's default */
};

/* Append the command line to `a` (a->err says if it did not fit). */
void sb__machine_argv(struct vmm_argv *a, const struct sb_options *o,
		      const struct sb_image *img, const struct machine_spec *m);

#endif
